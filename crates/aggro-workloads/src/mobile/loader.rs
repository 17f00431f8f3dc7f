//! One loader of the mobile workload: a connection and the request logic.

use super::{KeySpace, Workload};
use crate::retry::ConflictRetries;
use aggro_core::mobile::MobileConn;
use aggro_core::{ErrorClass, ErrorSamples, StoreError};
use aggro_runner::{Loader, Steps};
use aggro_stats::OpId;
use std::sync::Arc;

/// Drives one [`MobileConn`] with the requests the executor hands it.
pub struct MobileLoader<C> {
    conn: C,
    workload: Workload,
    keys: KeySpace,
    seed: u64,
    samples: Arc<ErrorSamples>,
}

impl<C: MobileConn> MobileLoader<C> {
    /// A loader over `conn`; failures' first messages go to `samples`.
    pub fn new(conn: C, workload: Workload, keys: KeySpace, seed: u64, samples: Arc<ErrorSamples>) -> Self {
        Self { conn, workload, keys, seed, samples }
    }

    /// Changes the workload, keeping the connection (for a following run).
    pub fn set_workload(&mut self, workload: Workload, seed: u64) {
        self.workload = workload;
        self.seed = seed;
    }
}

/// The two writing transactions of the workload.
#[derive(Clone, Copy)]
enum Txn {
    Transfer,
    AddGold,
}

impl<C: MobileConn> MobileLoader<C> {
    /// Runs a transaction, retrying conflicts (each counted under `op`), as
    /// the DynamoDB/Spanner tool and every serializable store's client must.
    async fn commit(&mut self, txn: Txn, id: u32, op: OpId, steps: &mut Steps) -> Result<(), ErrorClass> {
        let mut retries = ConflictRetries::default();
        loop {
            let attempt = match txn {
                Txn::Transfer => self.conn.transfer(id).await,
                Txn::AddGold => self.conn.add_gold(id).await,
            };
            match attempt {
                Err(e) if retries.again(op, steps, &e) => {}
                done => return done.map_err(|e| self.fail(&e)),
            }
        }
    }

    fn fail(&self, e: &StoreError) -> ErrorClass {
        self.samples.note(e);
        e.class
    }
}

impl<C: MobileConn> Loader for MobileLoader<C> {
    async fn run(&mut self, seq: u64, steps: &mut Steps) -> Result<(), ErrorClass> {
        let id = self.keys.stored_id_for(self.seed, seq);
        match self.workload {
            Workload::Write => self.commit(Txn::Transfer, id, 0, steps).await,
            Workload::ConsistentRead => {
                let start = steps.now();
                if let Err(class) = self.commit(Txn::AddGold, id, 1, steps).await {
                    steps.count_failure(1, class);
                    return Err(class);
                }
                steps.record_since(1, start);
                let start = steps.now();
                match self.conn.read_gold(id).await {
                    Ok(_) => {
                        steps.record_since(2, start);
                        Ok(())
                    }
                    Err(e) => {
                        steps.count_failure(2, e.class);
                        Err(self.fail(&e))
                    }
                }
            }
            Workload::Read => self.conn.read_gold(id).await.map(drop).map_err(|e| self.fail(&e)),
        }
    }
}
