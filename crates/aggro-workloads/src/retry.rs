//! The one conflict-retry policy of the workloads: a transaction the store refused for a conflict (a
//! serialization failure, a deadlock, a WATCH abort) runs again, as every serializable store's client
//! must, up to [`MAX_CONFLICT_RETRIES`] times; each retried conflict is counted under its operation.

use aggro_core::StoreError;
use aggro_runner::Steps;
use aggro_stats::OpId;

/// Conflicts retried before a request is counted as failed.
pub const MAX_CONFLICT_RETRIES: u32 = 10;

/// The retries one request has left. A loader runs its transaction in a loop and asks, on each
/// failure, whether to run it again:
///
/// ```ignore
/// let mut retries = ConflictRetries::default();
/// let done = loop {
///     match attempt().await {
///         Err(e) if retries.again(op, steps, &e) => {}
///         done => break done,
///     }
/// };
/// ```
#[derive(Default)]
pub struct ConflictRetries {
    used: u32,
}

impl ConflictRetries {
    /// Whether a request that failed with `e` runs again: a conflict, with retries left — counted
    /// under `op` in `steps`.
    pub fn again(&mut self, op: OpId, steps: &mut Steps, e: &StoreError) -> bool {
        if !e.class.is_conflict() || self.used >= MAX_CONFLICT_RETRIES {
            return false;
        }
        steps.count_failure(op, e.class);
        self.used += 1;
        true
    }
}
