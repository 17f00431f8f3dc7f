//! `null:` — a target that does nothing, so a run measures the harness alone.
//! With `?trace=FILE` it writes each scenario command it is given to FILE, one line each (the
//! command, then its arguments, tab-separated), as YCSB's `basicdb.verbose` prints what a
//! workload would do: what the workload's draws were, without a store.

use aggro_core::mobile::{INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The trace file, shared by the connections (created by the first).
type TraceFile = Arc<Mutex<Option<BufWriter<std::fs::File>>>>;

/// The target that stores nothing.
#[derive(Clone, Debug, Default)]
pub struct NullTarget {
    /// Where scenario commands are traced, if anywhere.
    trace: Option<PathBuf>,
    file: TraceFile,
}

impl NullTarget {
    /// The null target, tracing scenario commands to `trace` when it is given.
    pub fn tracing(trace: Option<PathBuf>) -> Self {
        Self { trace, ..Self::default() }
    }
}

/// A connection to nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullConn;

/// A scenario connection to nowhere, writing what it is given to the trace when there is one.
#[derive(Debug)]
pub struct NullScenarioConn {
    trace: Option<(Arc<[Command]>, TraceFile)>,
}

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
    type Conn = NullScenarioConn;

    fn describe(&self) -> String {
        MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Null
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<NullScenarioConn, StoreError> {
        let Some(path) = &self.trace else { return Ok(NullScenarioConn { trace: None }) };
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            let created =
                std::fs::File::create(path).map_err(|e| StoreError::new(ErrorClass::Connect, format!("null:?trace={}: {e}", path.display())))?;
            *file = Some(BufWriter::new(created));
        }
        Ok(NullScenarioConn { trace: Some((commands, Arc::clone(&self.file))) })
    }

    async fn load(&self, _load: &Load, _rows: &Rows) -> Result<(), StoreError> {
        Ok(())
    }
}

impl ScenarioConn for NullScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        if let Some((commands, file)) = &self.trace {
            let mut line = label(&commands[command]);
            for a in args {
                line.push('\t');
                line.push_str(&a.to_text());
            }
            line.push('\n');
            let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(f) = file.as_mut() {
                f.write_all(line.as_bytes()).map_err(|e| StoreError::new(ErrorClass::Other, format!("null:?trace: {e}")))?;
            }
        }
        Ok(())
    }
}

impl Drop for NullScenarioConn {
    fn drop(&mut self) {
        if let Some((_, file)) = &self.trace
            && let Some(f) = file.lock().unwrap_or_else(|e| e.into_inner()).as_mut()
        {
            let _ = f.flush();
        }
    }
}

/// What a traced command is: an SQL or CQL statement's text, a Redis pipeline's (its arguments carry the
/// command names), a key-value batch's operations, a DynamoDB action.
fn label(command: &Command) -> String {
    match command {
        Command::Sql { text, .. } | Command::Cql { text, .. } => text.clone(),
        Command::Redis { lengths } => format!("redis {lengths:?}"),
        Command::Kv { ops } => format!("kv {ops:?}"),
        Command::Dynamo { action, .. } => action.clone(),
    }
}
