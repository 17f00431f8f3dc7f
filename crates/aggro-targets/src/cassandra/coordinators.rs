//! Which node coordinated each of a loader's requests, and how long each took: the per-node view of
//! a run on Cassandra (`extra.nodes`). The driver names the coordinator of a reply only, so a request
//! that failed is tallied under [`NO_REPLY`]; the nodes the driver holds no connection to when the
//! run ends are marked down ([`CassandraTarget`](super::CassandraTarget)'s `nodes`).

use super::classify;
use crate::tally::{NodeTallies, Tally};
use aggro_core::StoreError;
use scylla::errors::ExecutionError;
use scylla::response::query_result::QueryResult;
use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Where failed requests are tallied: no node answered them.
pub(crate) const NO_REPLY: &str = "no reply";

/// One loader's tallies, added to the target's when it closes.
pub(crate) struct Coordinators {
    seen: Vec<(SocketAddr, Tally)>,
    failed: Tally,
    into: NodeTallies,
}

impl Coordinators {
    pub(crate) fn new(into: NodeTallies) -> Self {
        Self { seen: Vec::new(), failed: Tally::default(), into }
    }

    /// Awaits `request` (a statement or a batch sent through the session), tallied under the node
    /// that coordinated it.
    pub(crate) async fn run(&mut self, request: impl Future<Output = Result<QueryResult, ExecutionError>>) -> Result<QueryResult, StoreError> {
        let (result, took) = timed(request).await;
        self.note(result, took)
    }

    /// Tallies a request [`timed`] apart (one of several sent at once).
    pub(crate) fn note(&mut self, result: Result<QueryResult, ExecutionError>, took: Duration) -> Result<QueryResult, StoreError> {
        match result {
            Ok(result) => {
                let node = result.request_coordinator().connection_address();
                let tally = match self.seen.iter().position(|(a, _)| *a == node) {
                    Some(i) => &mut self.seen[i].1,
                    None => {
                        self.seen.push((node, Tally::default()));
                        &mut self.seen.last_mut().expect("just pushed").1
                    }
                };
                tally.commands += 1;
                tally.record_reply(took.as_nanos() as u64);
                Ok(result)
            }
            Err(e) => {
                self.failed.commands += 1;
                self.failed.errors += 1;
                Err(classify(e))
            }
        }
    }
}

/// Awaits `request`, and how long it took.
pub(crate) async fn timed<T>(request: impl Future<Output = T>) -> (T, Duration) {
    let at = Instant::now();
    let out = request.await;
    (out, at.elapsed())
}

impl Drop for Coordinators {
    fn drop(&mut self) {
        for (node, tally) in &self.seen {
            self.into.add(&node.to_string(), tally);
        }
        if self.failed.commands > 0 {
            self.into.add(NO_REPLY, &self.failed);
        }
    }
}
