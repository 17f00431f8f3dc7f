//! `cassandra://HOST:PORT[,HOST:PORT…][/KEYSPACE][?consistency=LEVEL]` — Apache Cassandra (or any
//! server speaking CQL's native protocol, ScyllaDB included), through the `scylla` driver: the
//! cluster's topology read from the nodes given, each statement prepared once and sent to a replica
//! of its partition (token-aware), at `LOCAL_QUORUM` unless the URL says otherwise.
//!
//! The mobile trio keeps each user in one row of counters, `mobile_users (id int PRIMARY KEY, gold
//! counter, tickets counter)`: a transfer is `UPDATE … SET gold = gold - 5, tickets = tickets + 1
//! WHERE id = ?`, one partition, so both columns change together or not at all, and no reader sees
//! one without the other — Cassandra's row-level isolation; no transaction spans two partitions.
//! Counters are not idempotent: a write that timed out may have been applied, and is never sent
//! again here (it counts as in doubt, and `verify` allows for it). The keyspace is made when missing
//! with `SimpleStrategy`, a replication factor of the nodes the URL names, up to 3, and is the
//! session's own: scenario files name their tables without it (the `cql` family, `scenario`).

mod coordinators;
mod mmo;
mod mobile;
mod scenario;

pub use mmo::CassandraMmoConn;
pub use mobile::CassandraConn;
pub use scenario::CqlScenarioConn;

use crate::tally::NodeTallies;
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, NewSessionError, RequestAttemptError};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// A keyspace of a Cassandra cluster.
#[derive(Clone)]
pub struct CassandraTarget {
    nodes: Vec<String>,
    keyspace: String,
    consistency: Consistency,
    /// One session for every loader (the driver multiplexes requests over its connections per node).
    session: Arc<OnceCell<Arc<Session>>>,
    /// What each node coordinated, added by each loader's handle as it closes.
    tallies: NodeTallies,
}

impl std::fmt::Debug for CassandraTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraTarget").field("nodes", &self.nodes).field("keyspace", &self.keyspace).finish()
    }
}

/// The consistency level a URL's `?consistency=` names.
pub fn consistency(name: &str) -> Option<Consistency> {
    Some(match name.to_ascii_lowercase().as_str() {
        "any" => Consistency::Any,
        "one" => Consistency::One,
        "two" => Consistency::Two,
        "three" => Consistency::Three,
        "quorum" => Consistency::Quorum,
        "local_quorum" => Consistency::LocalQuorum,
        "each_quorum" => Consistency::EachQuorum,
        "all" => Consistency::All,
        "local_one" => Consistency::LocalOne,
        _ => return None,
    })
}

/// A driver error as aggro counts it.
pub(crate) fn classify(e: ExecutionError) -> StoreError {
    let class = match &e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => match db {
            DbError::WriteTimeout { .. } => ErrorClass::InDoubt,
            DbError::ReadTimeout { .. } => ErrorClass::Timeout,
            DbError::Overloaded | DbError::RateLimitReached { .. } => ErrorClass::Throttled,
            DbError::Unavailable { .. } => ErrorClass::Connect,
            _ => ErrorClass::Server,
        },
        ExecutionError::RequestTimeout(_) => ErrorClass::InDoubt,
        ExecutionError::ConnectionPoolError(_) | ExecutionError::EmptyPlan => ErrorClass::Connect,
        ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_)) => ErrorClass::Disconnected,
        _ => ErrorClass::Other,
    };
    StoreError::new(class, format!("cassandra: {e}"))
}

fn session_error(nodes: &[String], e: NewSessionError) -> StoreError {
    StoreError::new(ErrorClass::Connect, format!("cannot connect to cassandra at {}: {e}", nodes.join(",")))
}

impl CassandraTarget {
    /// A target over `nodes` (`HOST:PORT`), keyspace `keyspace`, requests at `consistency`.
    pub fn new(nodes: Vec<String>, keyspace: String, consistency: Consistency) -> Self {
        Self { nodes, keyspace, consistency, session: Arc::default(), tallies: NodeTallies::default() }
    }

    /// The session, opened (and the keyspace made, when missing) on first use.
    pub(crate) async fn session(&self) -> Result<Arc<Session>, StoreError> {
        self.session
            .get_or_try_init(|| async {
                let session = SessionBuilder::new().known_nodes(&self.nodes).build().await.map_err(|e| session_error(&self.nodes, e))?;
                // The nodes the URL names, not those the driver has found so far (it finds the rest as it goes).
                let replicas = self.nodes.len().clamp(1, 3);
                let ks = &self.keyspace;
                let create =
                    format!("CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {replicas}}}");
                session.query_unpaged(create, ()).await.map_err(classify)?;
                for table in [
                    format!("CREATE TABLE IF NOT EXISTS {ks}.aggro_world (workload text PRIMARY KEY, record text)"),
                    format!("CREATE TABLE IF NOT EXISTS {ks}.aggro_runs (workload text, id text, entry text, PRIMARY KEY (workload, id))"),
                    format!("CREATE TABLE IF NOT EXISTS {ks}.mobile_users (id int PRIMARY KEY, gold counter, tickets counter)"),
                ] {
                    session.query_unpaged(table, ()).await.map_err(classify)?;
                }
                session.await_schema_agreement().await.map_err(|e| StoreError::new(ErrorClass::Server, format!("cassandra: {e}")))?;
                session.use_keyspace(ks, false).await.map_err(|e| StoreError::new(ErrorClass::Server, format!("cassandra: {e}")))?;
                Ok(Arc::new(session))
            })
            .await
            .cloned()
    }

    /// The URL without credentials, for reports.
    pub(crate) fn url(&self) -> String {
        format!("cassandra://{}/{}", self.nodes.join(","), self.keyspace)
    }

    /// `cql` prepared, at the target's consistency.
    pub(crate) async fn prepare(&self, session: &Session, cql: &str) -> Result<PreparedStatement, StoreError> {
        let mut p =
            session.prepare(cql.replace("{ks}", &self.keyspace)).await.map_err(|e| StoreError::new(ErrorClass::Server, format!("cassandra: {e}")))?;
        p.set_consistency(self.consistency);
        Ok(p)
    }

    /// Reads every row of `cql` (with `{ks}` the keyspace), a page of 5,000 at a time, handing each
    /// page's result to `page` (a scan for `verify`).
    pub(crate) async fn each_page(
        &self,
        cql: &str,
        mut page: impl FnMut(scylla::response::query_result::QueryResult) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let session = self.session().await?;
        let mut all = self.prepare(&session, cql).await?;
        all.set_page_size(5_000);
        let mut paging = scylla::response::PagingState::start();
        loop {
            let (result, next) = session.execute_single_page(&all, (), paging).await.map_err(classify)?;
            page(result)?;
            match next.into_paging_control_flow() {
                std::ops::ControlFlow::Continue(p) => paging = p,
                std::ops::ControlFlow::Break(()) => return Ok(()),
            }
        }
    }

    /// Runs `cql` (with `{ks}` the keyspace) once, with `values`.
    async fn run(
        &self,
        cql: &str,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<scylla::response::query_result::QueryResult, StoreError> {
        let session = self.session().await?;
        let p = self.prepare(&session, cql).await?;
        session.execute_unpaged(&p, values).await.map_err(classify)
    }
}

/// Runs `write` on every item, `at_once` of them in flight, until one fails.
pub(crate) async fn in_flight<I, F, W>(items: I, at_once: usize, write: F) -> Result<(), StoreError>
where
    I: IntoIterator,
    F: FnMut(I::Item) -> W,
    W: std::future::Future<Output = Result<(), StoreError>>,
{
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(items).map(write).buffer_unordered(at_once).try_for_each(|()| std::future::ready(Ok(()))).await
}

fn rows_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::new(ErrorClass::Protocol, format!("cassandra: {e}"))
}

impl WorldStore for CassandraTarget {
    /// Each node's requests, errors and reply times, and `down: true` on the nodes the driver holds
    /// no connection to as the run ends.
    fn nodes(&self) -> serde_json::Value {
        let mut nodes = self.tallies.to_json();
        let (Some(session), serde_json::Value::Array(list)) = (self.session.get(), &mut nodes) else { return nodes };
        for node in session.get_cluster_state().get_nodes_info().iter().filter(|n| !n.is_connected()) {
            let addr = node.address.to_string();
            match list.iter_mut().find(|n| n["node"] == addr.as_str()) {
                Some(n) => n["down"] = true.into(),
                None => list.push(serde_json::json!({ "node": addr, "commands": 0, "errors": 0, "down": true })),
            }
        }
        nodes
    }

    async fn holds_data(&self) -> Result<bool, StoreError> {
        for table in ["aggro_world", "mobile_users"] {
            let r = self.run(&format!("SELECT * FROM {{ks}}.{table} LIMIT 1"), ()).await?;
            if r.into_rows_result().map_err(rows_error)?.rows_num() > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        let r = self.run("SELECT record FROM {ks}.aggro_world WHERE workload = ?", (workload,)).await?;
        r.into_rows_result().map_err(rows_error)?.maybe_first_row::<(Option<String>,)>().map(|row| row.and_then(|(t,)| t)).map_err(rows_error)
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        self.run("INSERT INTO {ks}.aggro_world (workload, record) VALUES (?, ?)", (workload, record)).await.map(drop)
    }

    async fn log_run(&self, workload: &str, id: &str, entry: &str) -> Result<(), StoreError> {
        self.run("INSERT INTO {ks}.aggro_runs (workload, id, entry) VALUES (?, ?, ?)", (workload, id, entry)).await.map(drop)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        let r = self.run("SELECT entry FROM {ks}.aggro_runs WHERE workload = ?", (workload,)).await?;
        let rows = r.into_rows_result().map_err(rows_error)?;
        rows.rows::<(String,)>().map_err(rows_error)?.map(|row| row.map(|(e,)| e).map_err(rows_error)).collect()
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        self.run("DELETE FROM {ks}.aggro_runs WHERE workload = ?", (workload,)).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::consistency;
    use aggro_core::scenario::CQL_CONSISTENCIES;

    #[test]
    fn every_level_a_cql_step_may_name_is_one_the_driver_takes() {
        for name in CQL_CONSISTENCIES {
            assert!(consistency(name).is_some(), "{name}");
        }
        assert_eq!(consistency("LOCAL_QUORUM"), Some(scylla::statement::Consistency::LocalQuorum));
        assert_eq!(consistency("most"), None);
    }
}
