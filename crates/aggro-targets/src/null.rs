//! `null:` — a target that does nothing, so a run measures the harness alone.

use aggro_core::mobile::{INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use std::sync::Arc;

/// The target that stores nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullTarget;

/// A connection to nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullConn;

/// The null target keeps no world and no run log, so every run takes its shape from the flags.
impl WorldStore for NullTarget {
    async fn read_world(&self, _workload: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    fn holds_worlds(&self) -> bool {
        false
    }

    async fn write_world(&self, _workload: &str, _record: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn log_run(&self, _workload: &str, _id: &str, _entry: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn run_log(&self, _workload: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }

    async fn forget_runs(&self, _workload: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

impl MobileTarget for NullTarget {
    type Conn = NullConn;

    fn describe(&self) -> String {
        "null: (does nothing; measures the harness)".into()
    }

    async fn connect(&self) -> Result<NullConn, StoreError> {
        Ok(NullConn)
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        progress(ids.len() as u64);
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        Err(StoreError::new(ErrorClass::Data, "the null target stores nothing, so there is nothing to verify"))
    }
}

impl MobileConn for NullConn {
    async fn transfer(&mut self, _id: u32) -> Result<(), StoreError> {
        Ok(())
    }

    async fn add_gold(&mut self, _id: u32) -> Result<(), StoreError> {
        Ok(())
    }

    async fn read_gold(&mut self, _id: u32) -> Result<i64, StoreError> {
        Ok(INITIAL_GOLD)
    }
}

/// Scenario commands cost nothing here: the run measures the scenario
/// engine and the executor (arguments are still computed).
impl ScenarioTarget for NullTarget {
    type Conn = NullConn;

    fn describe(&self) -> String {
        MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Null
    }

    async fn connect(&self, _commands: Arc<[Command]>) -> Result<NullConn, StoreError> {
        Ok(NullConn)
    }

    async fn load(&self, _load: &Load, _rows: &Rows) -> Result<(), StoreError> {
        Ok(())
    }
}

impl ScenarioConn for NullConn {
    async fn exec(&mut self, _command: usize, _args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        Ok(())
    }
}
