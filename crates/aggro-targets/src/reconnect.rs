//! A connection that is re-opened after it breaks, at most once a second,
//! so a server that dies mid-run shows as errors over time (not a storm of
//! connects), and one that comes back is used again.

use aggro_core::{ErrorClass, StoreError};
use std::future::Future;
use std::time::{Duration, Instant};

/// The least time between two attempts to open a connection.
pub const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// A connection, or the memory of when the last one was tried.
pub(crate) struct Reconnecting<T> {
    live: Option<T>,
    last_attempt: Option<Instant>,
}

// Each network target uses its own subset of these, and each target is a
// Cargo feature of its own: a build with some of them leaves others unused.
#[allow(dead_code)]
impl<T> Reconnecting<T> {
    /// Holds a connection just opened.
    pub(crate) fn new(live: T) -> Self {
        Self { live: Some(live), last_attempt: Some(Instant::now()) }
    }

    /// Holds nothing yet: the first `get` opens at once.
    pub(crate) fn idle() -> Self {
        Self { live: None, last_attempt: None }
    }

    /// The connection, opened with `open` if there is none and the last
    /// attempt is a second old; otherwise `Disconnected`.
    pub(crate) async fn get<F: Future<Output = Result<T, StoreError>>>(&mut self, open: impl FnOnce() -> F) -> Result<&mut T, StoreError> {
        if self.live.is_none() {
            if self.last_attempt.is_some_and(|t| t.elapsed() < RECONNECT_EVERY) {
                return Err(StoreError::new(ErrorClass::Disconnected, "connection lost; waiting to reconnect"));
            }
            self.last_attempt = Some(Instant::now());
            self.live = Some(open().await?);
        }
        Ok(self.live.as_mut().expect("set above"))
    }

    /// The connection, if one is held.
    pub(crate) fn current(&mut self) -> Option<&mut T> {
        self.live.as_mut()
    }

    /// Forgets the connection (it broke); the next `get` opens another.
    pub(crate) fn forget(&mut self) {
        self.live = None;
    }

    /// Forgets a connection the server ended as its protocol allows (HTTP's `Connection: close`): not
    /// a break, so the next `get` opens another at once.
    pub(crate) fn closed_by_server(&mut self) {
        self.live = None;
        self.last_attempt = None;
    }

    /// Forgets the connection if `broken` says so, letting it look at (and mend) itself first.
    pub(crate) fn drop_if(&mut self, broken: impl FnOnce(&mut T) -> bool) {
        if self.live.as_mut().is_some_and(broken) {
            self.live = None;
        }
    }

    /// Whether a connection is held.
    pub(crate) fn is_live(&self) -> bool {
        self.live.is_some()
    }
}
