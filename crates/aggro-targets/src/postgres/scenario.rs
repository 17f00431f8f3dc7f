//! Scenario commands on PostgreSQL: each SQL command a prepared statement
//! (`s0`, `s1`, …) whose parameter types the server infers, executed with
//! text parameters in one round trip on the loader's own socket
//! ([`Wire`]); bulk loads by `COPY … FROM STDIN`.

use super::PostgresTarget;
use super::wire::Wire;
use crate::reconnect::Reconnecting;
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use std::sync::Arc;

/// One loader's connection with the scenario's statements prepared.
pub struct PgScenarioConn {
    target: PostgresTarget,
    commands: Arc<[Command]>,
    names: Vec<String>,
    live: Reconnecting<Wire>,
    row: Vec<Option<String>>,
}

impl std::fmt::Debug for PgScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgScenarioConn").field("statements", &self.names.len()).finish()
    }
}

async fn open(target: &PostgresTarget, commands: &[Command], names: &[String]) -> Result<Wire, StoreError> {
    let mut wire = target.wire().await?;
    for (command, name) in commands.iter().zip(names) {
        let Command::Sql { text } = command else {
            return Err(StoreError::new(ErrorClass::Data, "a PostgreSQL target runs SQL commands only"));
        };
        wire.prepare_untyped(name, text).await.map_err(|e| StoreError::new(e.class, format!("{} (in {text:?})", e.message)))?;
    }
    Ok(wire)
}

impl ScenarioConn for PgScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        self.live.drop_if(Wire::is_broken);
        let (target, commands, names) = (&self.target, &self.commands, &self.names);
        let wire = self.live.get(|| open(target, commands, names)).await?;
        let row = reply.want_values.then_some(&mut self.row);
        match wire.execute_text(&self.names[command], args, row).await {
            Ok(rows) => {
                reply.rows = rows;
                reply.values.extend(self.row.drain(..).map(|c| c.map_or(Value::Null, Value::Text)));
                Ok(())
            }
            Err(e) => {
                if !wire.is_broken() && wire.in_transaction() {
                    let _ = wire.simple("ROLLBACK").await;
                }
                Err(e)
            }
        }
    }
}

/// COPY's text format: tab-separated, `\N` for NULL, backslash escapes.
fn copy_text(rows: &Rows, out: &mut Vec<u8>) {
    for row in rows {
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            if *v == Value::Null {
                out.extend_from_slice(b"\\N");
                continue;
            }
            for b in v.to_text().bytes() {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b => out.push(b),
                }
            }
        }
        out.push(b'\n');
    }
}

impl ScenarioTarget for PostgresTarget {
    type Conn = PgScenarioConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Sql
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<PgScenarioConn, StoreError> {
        let names: Vec<String> = (0..commands.len()).map(|i| format!("s{i}")).collect();
        let wire = open(self, &commands, &names).await?;
        Ok(PgScenarioConn { target: self.clone(), commands, names, live: Reconnecting::new(wire), row: Vec::new() })
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Sql { table, columns } = load else {
            return Err(StoreError::new(ErrorClass::Data, "a PostgreSQL target loads SQL rows only"));
        };
        let mut data = Vec::with_capacity(rows.len() * 64);
        copy_text(rows, &mut data);
        let mut wire = self.wire().await?;
        wire.copy_in(&format!("COPY {table} ({}) FROM STDIN", columns.join(", ")), &data).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_escapes_what_copy_reads_specially() {
        let mut out = Vec::new();
        copy_text(&[vec![Value::Int(1), Value::Text("a\tb\\c\nd".into()), Value::Null]], &mut out);
        assert_eq!(out, b"1\ta\\tb\\\\c\\nd\t\\N\n");
    }
}
