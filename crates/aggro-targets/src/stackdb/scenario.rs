//! Scenario commands on stackdb: each step's key-value batch is one write
//! transaction (atomic; gets inside it see the batch's own puts), a batch
//! of gets alone reads without one. stackdb hashes its keys and keeps no
//! order, so `scan` is refused with that reason. Bulk loads are one
//! transaction per batch; a population first removes the database's files
//! (no command could drop them).

use super::{StackDbTarget, classify};
use aggro_core::scenario::{Command, Family, KvOp, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use stackdb::Database;
use std::path::PathBuf;
use std::sync::Arc;

/// One loader's handle on the shared database.
#[derive(Debug)]
pub struct StackDbScenarioConn {
    db: Arc<Database>,
    path: PathBuf,
    commands: Arc<[Command]>,
    text: String,
}

fn key_bytes<'a>(v: &'a Value, buf: &'a mut String) -> &'a [u8] {
    match v {
        Value::Text(t) => t.as_bytes(),
        other => {
            buf.clear();
            other.write_text(buf);
            buf.as_bytes()
        }
    }
}

fn text(bytes: Option<Vec<u8>>) -> Value {
    bytes.map_or(Value::Null, |b| Value::Text(String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())))
}

fn no_scan() -> StoreError {
    StoreError::new(
        ErrorClass::Other,
        "stackdb hashes its keys and keeps no order: a scan has no meaning there (YCSB workload E needs an ordered store)",
    )
}

impl ScenarioConn for StackDbScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let Command::Kv { ops } = &self.commands[command] else {
            return Err(StoreError::new(ErrorClass::Data, "a stackdb target runs key-value batches only"));
        };
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut key_buf = String::new();
        if ops.iter().all(|o| *o == KvOp::Get) {
            for a in args {
                let v = self.db.get(key_bytes(a, &mut key_buf)).map_err(err)?;
                reply.rows += v.is_some() as u64;
                if reply.want_values {
                    reply.values.push(text(v));
                }
            }
            return Ok(());
        }
        let mut txn = self.db.begin_write();
        let mut at = 0;
        for op in ops.iter() {
            let a = &args[at..at + op.arity()];
            at += op.arity();
            match op {
                KvOp::Get => {
                    let v = txn.get(key_bytes(&a[0], &mut key_buf)).map_err(err)?;
                    reply.rows += v.is_some() as u64;
                    reply.values.push(text(v));
                }
                KvOp::Put => {
                    self.text.clear();
                    a[1].write_text(&mut self.text);
                    txn.put(key_bytes(&a[0], &mut key_buf), self.text.as_bytes()).map_err(err)?;
                    reply.rows += 1;
                }
                KvOp::Add => {
                    let key = key_bytes(&a[0], &mut key_buf);
                    let old = txn.get(key).map_err(err)?;
                    let old = match old.as_deref().map(std::str::from_utf8) {
                        None => 0,
                        Some(Ok(t)) => {
                            t.trim().parse::<i64>().map_err(|_| StoreError::new(ErrorClass::Data, format!("add: {t:?} is not an integer")))?
                        }
                        Some(Err(_)) => return Err(StoreError::new(ErrorClass::Data, "add: the value is not text")),
                    };
                    let delta = a[1].as_int().ok_or_else(|| StoreError::new(ErrorClass::Data, "add: the delta is not an integer"))?;
                    let new = old + delta;
                    self.text.clear();
                    Value::Int(new).write_text(&mut self.text);
                    txn.put(key, self.text.as_bytes()).map_err(err)?;
                    reply.values.push(Value::Int(new));
                    reply.rows += 1;
                }
                KvOp::Delete => {
                    txn.delete(key_bytes(&a[0], &mut key_buf)).map_err(err)?;
                    reply.rows += 1;
                }
                KvOp::Scan => return Err(no_scan()),
            }
        }
        txn.commit().map_err(err)
    }
}

impl ScenarioTarget for StackDbTarget {
    type Conn = StackDbScenarioConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<StackDbScenarioConn, StoreError> {
        for c in commands.iter() {
            match c {
                Command::Kv { ops } if ops.contains(&KvOp::Scan) => return Err(no_scan()),
                Command::Kv { .. } => {}
                _ => return Err(StoreError::new(ErrorClass::Data, "a stackdb target runs key-value batches only")),
            }
        }
        Ok(StackDbScenarioConn { db: self.open()?, path: self.path.clone(), commands, text: String::new() })
    }

    async fn reset(&self, rows: u64) -> Result<(), StoreError> {
        // A key per row.
        self.create_for(rows).map(drop)
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        if *load != Load::Kv {
            return Err(StoreError::new(ErrorClass::Data, "a stackdb target loads key-value pairs only"));
        }
        let db = self.open()?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut txn = db.begin_write();
        let (mut key_buf, mut value) = (String::new(), String::new());
        for row in rows {
            value.clear();
            row[1].write_text(&mut value);
            txn.put(key_bytes(&row[0], &mut key_buf), value.as_bytes()).map_err(err)?;
        }
        txn.commit().map_err(err)
    }
}
