//! Scenario commands on PostgreSQL: each SQL command a prepared statement
//! (`s0`, `s1`, …) whose parameter types the server infers, executed with
//! text parameters in one round trip ([`Wire`]) on a connection loaders may
//! share ([`crate::pipeline`]: Bind, Execute and Sync per request, so one
//! request's error leaves the others' alone) — or, as its
//! [`SqlProtocol`] says, parsed with every request (`extended`) or sent
//! with its values written in as a simple query (`simple`, [`Inline`]);
//! bulk loads by `COPY … FROM STDIN`.

use super::PostgresTarget;
use super::inline::Inline;
use super::wire::{self, Wire};
use crate::pipeline::{Pipe, Pipelined};
use crate::reconnect::Reconnecting;
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, SqlProtocol, Value};
use aggro_core::{ErrorClass, StoreError};
use bytes::BytesMut;
use std::sync::Arc;

/// One loader's handle on a connection it may share with other loaders (the `pipeline` module).
pub struct PgScenarioConn {
    pipe: Pipe<Statements>,
    /// How each of the scenario's commands is sent.
    forms: Arc<[Form]>,
}

impl std::fmt::Debug for PgScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgScenarioConn").field("statements", &self.forms.len()).finish()
    }
}

/// How one command goes to the server.
#[derive(Debug)]
enum Form {
    /// As the statement prepared under this name on every connection.
    Prepared(String),
    /// Parsed with each request.
    Extended(String),
    /// With its values written in.
    Simple(Inline),
}

impl Form {
    fn of(index: usize, command: &Command) -> Result<Self, StoreError> {
        let Command::Sql { text, protocol } = command else {
            return Err(StoreError::new(ErrorClass::Data, "a PostgreSQL target runs SQL commands only"));
        };
        Ok(match protocol {
            SqlProtocol::Prepared => Form::Prepared(format!("s{index}")),
            SqlProtocol::Extended => Form::Extended(text.clone()),
            SqlProtocol::Simple => Form::Simple(Inline::parse(text)),
        })
    }

    fn encode(&self, batch: &mut BytesMut, args: &[Value]) -> Result<(), StoreError> {
        match self {
            Form::Prepared(name) => wire::encode_text(batch, name, args),
            Form::Extended(text) => wire::encode_unnamed(batch, text, args),
            Form::Simple(inline) => {
                inline.encode(batch, args);
                Ok(())
            }
        }
    }
}

/// A connection with the scenario's prepared statements prepared (again after it is re-opened).
struct Statements {
    target: PostgresTarget,
    commands: Arc<[Command]>,
    forms: Arc<[Form]>,
    live: Reconnecting<Wire>,
}

/// A statement's answer: the rows it touched or returned and its first row, or its error; and whether
/// a transaction is left open (to roll back after an error).
type Answer = (Result<(u64, Vec<Option<String>>), StoreError>, bool);

async fn open(target: &PostgresTarget, commands: &[Command], forms: &[Form]) -> Result<Wire, StoreError> {
    let mut wire = target.wire().await?;
    for (command, send) in commands.iter().zip(forms) {
        if let (Command::Sql { text, .. }, Form::Prepared(name)) = (command, send) {
            wire.prepare_untyped(name, text).await.map_err(|e| StoreError::new(e.class, format!("{} (in {text:?})", e.message)))?;
        }
    }
    Ok(wire)
}

impl Pipelined for Statements {
    type Batch = BytesMut;
    /// Whether the first row is kept.
    type Ask = bool;
    type Answer = Answer;
    type Known = ();

    async fn send(&mut self, batch: &mut BytesMut) -> Result<(), StoreError> {
        self.live.drop_if(|w| w.is_broken());
        let Self { target, commands, forms, live } = self;
        live.get(|| open(target, commands, forms)).await?.send_encoded(batch).await
    }

    async fn answer(&mut self, keep_row: &bool) -> Result<Answer, StoreError> {
        let wire = self.live.current().ok_or_else(|| StoreError::new(ErrorClass::Disconnected, "no connection"))?;
        let mut row = Vec::new();
        match wire.read_answer(keep_row.then_some(&mut row)).await {
            Err(e) if wire.is_broken() => Err(e),
            result => Ok((result.map(|rows| (rows, row)), wire.in_transaction())),
        }
    }

    fn drop_connection(&mut self) {
        self.live.forget();
    }

    fn discard(batch: &mut BytesMut) {
        batch.clear();
    }
}

/// Runs one request on `pipe`'s connection.
async fn run(
    pipe: &mut Pipe<Statements>,
    encode: impl FnOnce(&mut BytesMut) -> Result<(), StoreError>,
    keep_row: bool,
) -> Result<Answer, StoreError> {
    let mut encoded = Ok(());
    let answer = pipe
        .request(|batch, ()| {
            let mark = batch.len();
            encoded = encode(batch);
            if encoded.is_err() {
                batch.truncate(mark);
            }
            keep_row
        })
        .await;
    encoded?;
    answer
}

impl ScenarioConn for PgScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let Self { pipe, forms } = self;
        let (result, in_transaction) = run(pipe, |batch| forms[command].encode(batch, args), reply.want_values).await?;
        match result {
            Ok((rows, row)) => {
                reply.rows = rows;
                reply.values.extend(row.into_iter().map(|c| c.map_or(Value::Null, Value::Text)));
                Ok(())
            }
            Err(e) => {
                if in_transaction {
                    let _ = run(pipe, |batch| wire::encode_simple(batch, "ROLLBACK"), false).await;
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
        let mut one = self.connect_shared(commands, 1).await?;
        Ok(one.pop().expect("one handle"))
    }

    async fn connect_shared(&self, commands: Arc<[Command]>, loaders: usize) -> Result<Vec<PgScenarioConn>, StoreError> {
        let forms: Arc<[Form]> = commands.iter().enumerate().map(|(i, c)| Form::of(i, c)).collect::<Result<_, _>>()?;
        let wire = open(self, &commands, &forms).await?;
        let statements = Statements { target: self.clone(), commands, forms: Arc::clone(&forms), live: Reconnecting::new(wire) };
        Ok(Pipe::handles(statements, loaders).into_iter().map(|pipe| PgScenarioConn { pipe, forms: Arc::clone(&forms) }).collect())
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Table { table, columns } = load else {
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
