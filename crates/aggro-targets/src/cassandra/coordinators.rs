//! Which node coordinated each of a loader's requests, and how long each took: the per-node view of
//! a run on Cassandra (`extra.nodes`). The driver names the coordinator of a reply only, so a request
//! that failed is tallied under [`NO_REPLY`]; the nodes the driver holds no connection to when the
//! run ends are marked down ([`CassandraTarget`](super::CassandraTarget)'s `nodes`).

use super::classify;
use crate::tally::{NodeTallies, Tally};
use aggro_core::StoreError;
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use std::net::SocketAddr;
use std::time::Instant;

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

    /// Runs `statement` with `values`, tallied under the node that coordinated it.
    pub(crate) async fn execute(
        &mut self,
        session: &Session,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> Result<QueryResult, StoreError> {
        let at = Instant::now();
        match session.execute_unpaged(statement, values).await {
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
                tally.record_reply(at.elapsed().as_nanos() as u64);
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
