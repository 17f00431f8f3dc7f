//! The mobile trio on Cassandra: one row of counters per user (see the module above).

use super::coordinators::Coordinators;
use super::{CassandraTarget, classify, in_flight, rows_error};
use aggro_core::mobile::{GOLD_STEP, INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::{ErrorClass, StoreError};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::Counter;
use std::sync::Arc;

const TRANSFER: &str = "UPDATE {ks}.mobile_users SET gold = gold - ?, tickets = tickets + 1 WHERE id = ?";
const ADD_GOLD: &str = "UPDATE {ks}.mobile_users SET gold = gold + ? WHERE id = ?";
const READ_GOLD: &str = "SELECT gold FROM {ks}.mobile_users WHERE id = ?";
/// A user's row, made by adding its starting figures to counters that read 0 until written.
const CREATE_USER: &str = "UPDATE {ks}.mobile_users SET gold = gold + ?, tickets = tickets + 0 WHERE id = ?";

/// Users created at once while populating.
const POPULATE_IN_FLIGHT: usize = 256;
/// Users created between two progress reports.
const PROGRESS_EVERY: usize = 2048;

/// One loader's handle: the shared session and the trio's statements, prepared once.
pub struct CassandraConn {
    session: Arc<Session>,
    transfer: PreparedStatement,
    add_gold: PreparedStatement,
    read_gold: PreparedStatement,
    nodes: Coordinators,
}

impl std::fmt::Debug for CassandraConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraConn").finish_non_exhaustive()
    }
}

impl MobileTarget for CassandraTarget {
    type Conn = CassandraConn;

    fn describe(&self) -> String {
        self.url()
    }

    async fn connect(&self) -> Result<CassandraConn, StoreError> {
        let session = self.session().await?;
        Ok(CassandraConn {
            transfer: self.prepare(&session, TRANSFER).await?,
            add_gold: self.prepare(&session, ADD_GOLD).await?,
            read_gold: self.prepare(&session, READ_GOLD).await?,
            nodes: Coordinators::new(self.tallies.clone()),
            session,
        })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        let session = self.session().await?;
        let ks = &self.keyspace;
        let forget = [
            format!("DELETE FROM {ks}.aggro_world WHERE workload = 'mobile'"),
            format!("DELETE FROM {ks}.aggro_runs WHERE workload = 'mobile'"),
            format!("TRUNCATE {ks}.mobile_users"),
        ];
        for cql in forget {
            session.query_unpaged(cql, ()).await.map_err(classify)?;
        }
        let create = self.prepare(&session, CREATE_USER).await?;
        for (i, chunk) in ids.chunks(PROGRESS_EVERY).enumerate() {
            in_flight(chunk.iter().copied(), POPULATE_IN_FLIGHT, |id| {
                let (session, create) = (&session, &create);
                async move { session.execute_unpaged(create, (Counter(INITIAL_GOLD), id as i32)).await.map(drop).map_err(classify) }
            })
            .await?;
            progress((i * PROGRESS_EVERY + chunk.len()) as u64);
        }
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let mut rows = Vec::new();
        self.each_page("SELECT id, gold, tickets FROM {ks}.mobile_users", |page| {
            let page = page.into_rows_result().map_err(rows_error)?;
            for row in page.rows::<(i32, Option<Counter>, Option<Counter>)>().map_err(rows_error)? {
                let (id, gold, tickets) = row.map_err(rows_error)?;
                let gold = gold.ok_or_else(|| StoreError::new(ErrorClass::Data, format!("user {id} has no gold")))?;
                rows.push(UserRow { id: id as u32, gold: gold.0, tickets: Some(tickets.map_or(0, |t| t.0)) });
            }
            Ok(())
        })
        .await?;
        Ok(rows)
    }
}

impl MobileConn for CassandraConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.nodes.run(self.session.execute_unpaged(&self.transfer, (Counter(GOLD_STEP), id as i32))).await.map(drop)
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.nodes.run(self.session.execute_unpaged(&self.add_gold, (Counter(GOLD_STEP), id as i32))).await.map(drop)
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let r = self.nodes.run(self.session.execute_unpaged(&self.read_gold, (id as i32,))).await?;
        match r.into_rows_result().map_err(rows_error)?.maybe_first_row::<(Option<Counter>,)>().map_err(rows_error)? {
            Some((Some(gold),)) => Ok(gold.0),
            _ => Err(StoreError::new(ErrorClass::Data, format!("user {id} is not in the database"))),
        }
    }
}
