//! The login test's loader: query a random account by user name, load it,
//! update it, return its characters' ids — the paper's login, repeated.

use aggro_core::mmo::{MmoConn, WorldSpec, now_ms};
use aggro_core::rng::Rng;
use aggro_core::{ErrorClass, ErrorSamples};
use aggro_runner::{Loader, Steps};
use std::sync::Arc;

/// One login client.
pub struct LoginLoader<C> {
    conn: C,
    accounts: u32,
    seed: u64,
    samples: Arc<ErrorSamples>,
}

impl<C: MmoConn> LoginLoader<C> {
    /// A client logging into random accounts of `world`.
    pub fn new(conn: C, world: &WorldSpec, seed: u64, samples: Arc<ErrorSamples>) -> Self {
        Self { conn, accounts: world.accounts, seed, samples }
    }
}

impl<C: MmoConn> Loader for LoginLoader<C> {
    async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
        let account = Rng::stream(self.seed, seq).range_inclusive(0, self.accounts as u64 - 1) as u32;
        match self.conn.login(&WorldSpec::username(account), now_ms()).await {
            Ok(a) if a.id == account && !a.players.is_empty() => Ok(()),
            Ok(a) => {
                let e = aggro_core::StoreError::new(
                    ErrorClass::Data,
                    format!("login of account {account} returned account {} with {} players", a.id, a.players.len()),
                );
                self.samples.note(&e);
                Err(e.class)
            }
            Err(e) => {
                self.samples.note(&e);
                Err(e.class)
            }
        }
    }
}
