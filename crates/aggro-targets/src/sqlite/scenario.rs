//! Scenario commands on SQLite: each SQL command a cached prepared
//! statement (`$n` read as `?n`), run in the loader's own thread; a failure
//! inside an open transaction rolls it back; bulk loads are prepared
//! INSERTs in one transaction per batch.

use super::{SqliteTarget, classify, schema_error};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use rusqlite::Connection;
use rusqlite::types::{Value as Sql, ValueRef};
use std::sync::Arc;

/// `$1` → `?1` outside quotes (SQLite reads `$1` as a named parameter, numbered by first appearance).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let (mut single, mut double) = (false, false);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' if !single && !double && chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('?');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

fn to_sql(v: &Value) -> Sql {
    match v {
        Value::Null => Sql::Null,
        Value::Int(i) => Sql::Integer(*i),
        Value::Float(f) => Sql::Real(*f),
        Value::Text(t) => Sql::Text(t.clone()),
    }
}

fn from_sql(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Float(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

/// One loader's SQLite connection with the scenario's statements.
pub struct SqliteScenarioConn {
    conn: Connection,
    statements: Vec<String>,
}

impl std::fmt::Debug for SqliteScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteScenarioConn").field("statements", &self.statements.len()).finish()
    }
}

impl SqliteScenarioConn {
    fn run(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> rusqlite::Result<()> {
        let mut stmt = self.conn.prepare_cached(&self.statements[command])?;
        for (i, a) in args.iter().enumerate() {
            stmt.raw_bind_parameter(i + 1, to_sql(a))?;
        }
        if stmt.column_count() == 0 {
            stmt.raw_execute()?;
            reply.rows = self.conn.changes();
            return Ok(());
        }
        let columns = stmt.column_count();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next()? {
            if reply.rows == 0 && reply.want_values {
                for c in 0..columns {
                    reply.values.push(from_sql(row.get_ref(c)?));
                }
            }
            reply.rows += 1;
        }
        Ok(())
    }
}

impl ScenarioConn for SqliteScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let result = self.run(command, args, reply).map_err(schema_error);
        if result.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        result
    }
}

impl ScenarioTarget for SqliteTarget {
    type Conn = SqliteScenarioConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Sql
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<SqliteScenarioConn, StoreError> {
        let conn = self.open()?;
        conn.set_prepared_statement_cache_capacity(commands.len() + 8);
        let mut statements = Vec::with_capacity(commands.len());
        for c in commands.iter() {
            let Command::Sql { text, .. } = c else {
                return Err(StoreError::new(ErrorClass::Data, "a SQLite target runs SQL commands only"));
            };
            let sql = numbered(text);
            conn.prepare_cached(&sql).map_err(|e| {
                let e = schema_error(e);
                StoreError::new(e.class, format!("{} (in {text:?})", e.message))
            })?;
            statements.push(sql);
        }
        Ok(SqliteScenarioConn { conn, statements })
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Table { table, columns } = load else {
            return Err(StoreError::new(ErrorClass::Data, "a SQLite target loads SQL rows only"));
        };
        let mut conn = self.open()?;
        let tx = conn.transaction().map_err(classify)?;
        {
            let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
            let sql = format!("INSERT INTO {table} ({}) VALUES ({})", columns.join(", "), marks.join(", "));
            let mut stmt = tx.prepare(&sql).map_err(schema_error)?;
            for row in rows {
                stmt.execute(rusqlite::params_from_iter(row.iter().map(to_sql))).map_err(classify)?;
            }
        }
        tx.commit().map_err(classify)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_parameters_become_numbered_ones() {
        assert_eq!(numbered("SELECT $2, '$1', $1 FROM t WHERE a = $10"), "SELECT ?2, '$1', ?1 FROM t WHERE a = ?10");
        assert_eq!(numbered("SELECT $x"), "SELECT $x");
    }
}
