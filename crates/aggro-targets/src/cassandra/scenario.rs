//! Scenario files on Cassandra: the `cql` family. Each command is a CQL statement prepared once
//! per connection, in the URL's keyspace and at its consistency (or the step's own `consistency`); a request binds its arguments to
//! the statement's `?` markers as the types the server gives them (an `int` column takes the
//! scenario's integer, a `text` one its text form), and its reply is the first row. A lightweight
//! transaction (`… IF …`) touches one row when applied and none when not, so a step's `rows = 1`
//! makes a refused condition its failure. Each loader's requests are tallied per coordinating node
//! (`coordinators`). Loaders share the session (the driver multiplexes
//! requests over its connections to each node); bulk loads are a prepared `INSERT` per row, many
//! in flight.

use super::coordinators::Coordinators;
use super::{CassandraTarget, classify, in_flight, rows_error};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use scylla::client::session::Session;
use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::serialize::SerializationError;
use scylla::serialize::row::{RowSerializationContext, SerializeRow};
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, RowWriter, WrittenCellProof};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{Counter, CqlTimestamp, CqlValue, Row};
use std::sync::Arc;

/// Rows a bulk load has in flight at once.
const LOAD_IN_FLIGHT: usize = 128;

/// The column a lightweight transaction's result starts with.
const APPLIED: &str = "[applied]";

/// One loader's handle: the shared session and the scenario's statements, prepared once.
pub struct CqlScenarioConn {
    session: Arc<Session>,
    statements: Arc<[PreparedStatement]>,
    nodes: Coordinators,
}

impl std::fmt::Debug for CqlScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CqlScenarioConn").field("statements", &self.statements.len()).finish()
    }
}

impl CassandraTarget {
    /// The scenario's commands prepared on the session (each must be CQL, none a `USE`).
    async fn prepare_all(&self, session: &Session, commands: &[Command]) -> Result<Arc<[PreparedStatement]>, StoreError> {
        let mut out = Vec::with_capacity(commands.len());
        for command in commands {
            let Command::Cql { text, consistency } = command else {
                return Err(StoreError::new(ErrorClass::Data, "a cassandra target runs CQL commands only (a step's `cql` form)"));
            };
            if text.split_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("USE")) {
                return Err(StoreError::new(
                    ErrorClass::Data,
                    format!("{text:?}: USE would change the keyspace of the session every loader shares; name the keyspace in the URL"),
                ));
            }
            let mut statement = self.prepare(session, text).await.map_err(|e| StoreError::new(e.class, format!("{} (in {text:?})", e.message)))?;
            if let Some(level) = consistency {
                let level = super::consistency(level)
                    .ok_or_else(|| StoreError::new(ErrorClass::Data, format!("{text:?}: unknown consistency level {level:?}")))?;
                statement.set_consistency(level);
            }
            out.push(statement);
        }
        Ok(out.into())
    }
}

impl ScenarioTarget for CassandraTarget {
    type Conn = CqlScenarioConn;

    fn describe(&self) -> String {
        self.url()
    }

    fn family(&self) -> Family {
        Family::Cql
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<CqlScenarioConn, StoreError> {
        Ok(self.connect_shared(commands, 1).await?.remove(0))
    }

    /// Every loader shares the session and one preparation of the statements.
    async fn connect_shared(&self, commands: Arc<[Command]>, loaders: usize) -> Result<Vec<CqlScenarioConn>, StoreError> {
        let session = self.session().await?;
        let statements = self.prepare_all(&session, &commands).await?;
        let conn =
            || CqlScenarioConn { session: Arc::clone(&session), statements: Arc::clone(&statements), nodes: Coordinators::new(self.tallies.clone()) };
        Ok((0..loaders.max(1)).map(|_| conn()).collect())
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Table { table, columns } = load else {
            return Err(StoreError::new(ErrorClass::Data, "a cassandra target loads rows into a table (populate.cql)"));
        };
        let session = self.session().await?;
        let markers = vec!["?"; columns.len()].join(", ");
        let insert = self.prepare(&session, &format!("INSERT INTO {table} ({}) VALUES ({markers})", columns.join(", "))).await?;
        // By index: a closure over borrowed rows would need to be general over their lifetime.
        in_flight(0..rows.len(), LOAD_IN_FLIGHT, |i| {
            let (session, insert, row) = (&session, &insert, &rows[i]);
            async move { session.execute_unpaged(insert, Bound(row)).await.map(drop).map_err(classify) }
        })
        .await
    }
}

impl ScenarioConn for CqlScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let statement = &self.statements[command];
        let result = self.nodes.run(self.session.execute_unpaged(statement, Bound(args))).await?;
        let Ok(rows) = result.into_rows_result() else { return Ok(()) };
        let applied = rows.column_specs().get_by_index(0).is_some_and(|c| c.name() == APPLIED);
        reply.rows = rows.rows_num() as u64;
        if !(reply.want_values || applied) {
            return Ok(());
        }
        let Some(first) = rows.maybe_first_row::<Row>().map_err(rows_error)? else { return Ok(()) };
        reply.values.extend(first.columns.into_iter().map(value_of));
        if applied {
            reply.rows = u64::from(reply.values.first() == Some(&Value::Int(1)));
        }
        Ok(())
    }
}

/// A request's arguments bound to a prepared statement's markers, each converted to its column's type.
struct Bound<'a>(&'a [Value]);

/// Why an argument cannot take its marker's type.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BindError(String);

impl SerializeRow for Bound<'_> {
    fn serialize(&self, ctx: &RowSerializationContext<'_>, writer: &mut RowWriter) -> Result<(), SerializationError> {
        let columns = ctx.columns();
        if columns.len() != self.0.len() {
            return Err(SerializationError::new(BindError(format!(
                "the statement has {} markers but the step gives {} params",
                columns.len(),
                self.0.len()
            ))));
        }
        for (column, value) in columns.iter().zip(self.0) {
            bind(value, column.typ(), writer.make_cell_writer())
                .map_err(|e| SerializationError::new(BindError(format!("{} ({value:?}): {e}", column.name()))))?;
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Writes `value` into `cell` as the native type `typ`.
fn bind<'b>(value: &Value, typ: &ColumnType, cell: CellWriter<'b>) -> Result<WrittenCellProof<'b>, SerializationError> {
    let ColumnType::Native(native) = typ else {
        return Err(SerializationError::new(BindError(format!("aggro binds native types only, not {typ:?}"))));
    };
    if *value == Value::Null {
        return Ok(cell.set_null());
    }
    let int = || value.as_int().ok_or_else(|| SerializationError::new(BindError("not a number".into())));
    let narrow = |bits: u32| {
        int().and_then(|i| {
            (i >> (bits - 1) == 0 || i >> (bits - 1) == -1)
                .then_some(i)
                .ok_or_else(|| SerializationError::new(BindError(format!("out of range for {typ:?}"))))
        })
    };
    let float = || value.as_float().ok_or_else(|| SerializationError::new(BindError("not a number".into())));
    match native {
        NativeType::Text | NativeType::Ascii => match value {
            Value::Text(t) => t.as_str().serialize(typ, cell),
            other => other.to_text().serialize(typ, cell),
        },
        NativeType::Blob => value.to_text().into_bytes().serialize(typ, cell),
        NativeType::Int => (narrow(32)? as i32).serialize(typ, cell),
        NativeType::SmallInt => (narrow(16)? as i16).serialize(typ, cell),
        NativeType::TinyInt => (narrow(8)? as i8).serialize(typ, cell),
        NativeType::BigInt => int()?.serialize(typ, cell),
        NativeType::Counter => Counter(int()?).serialize(typ, cell),
        NativeType::Timestamp => CqlTimestamp(int()?).serialize(typ, cell),
        NativeType::Boolean => (int()? != 0).serialize(typ, cell),
        NativeType::Double => float()?.serialize(typ, cell),
        NativeType::Float => (float()? as f32).serialize(typ, cell),
        other => Err(SerializationError::new(BindError(format!("aggro does not bind {other:?} columns")))),
    }
}

/// A column read back as a scenario value: numbers as numbers (a boolean as 1 or 0), the rest as text.
fn value_of(column: Option<CqlValue>) -> Value {
    match column {
        None | Some(CqlValue::Empty) => Value::Null,
        Some(CqlValue::Int(i)) => Value::Int(i.into()),
        Some(CqlValue::BigInt(i)) => Value::Int(i),
        Some(CqlValue::SmallInt(i)) => Value::Int(i.into()),
        Some(CqlValue::TinyInt(i)) => Value::Int(i.into()),
        Some(CqlValue::Counter(c)) => Value::Int(c.0),
        Some(CqlValue::Timestamp(t)) => Value::Int(t.0),
        Some(CqlValue::Boolean(b)) => Value::Int(b.into()),
        Some(CqlValue::Double(f)) => Value::Float(f),
        Some(CqlValue::Float(f)) => Value::Float(f.into()),
        Some(CqlValue::Text(t) | CqlValue::Ascii(t)) => Value::Text(t),
        Some(CqlValue::Blob(b)) => Value::Text(String::from_utf8_lossy(&b).into_owned()),
        Some(other) => Value::Text(format!("{other:?}")),
    }
}
