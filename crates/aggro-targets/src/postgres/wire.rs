//! A small PostgreSQL client for the mobile workload's hot path: prepared
//! statements, each executed in one round trip straight on the loader's
//! socket, as pgbench does.
//!
//! tokio-postgres hands every statement to a connection task through a
//! channel and the reply back through another: two task wake-ups and a
//! channel per round trip, about 3.5 µs of CPU per write transaction more
//! than pgbench here (docs/BENCHMARKS.md). This client keeps the socket in
//! the loader's own future. Messages are encoded and parsed by
//! `postgres-protocol` (the crate under tokio-postgres), so no framing is
//! written by hand — the hot path's acknowledgements, CommandComplete and
//! ReadyForQuery are read in place behind its `Header` (a `Message::parse`
//! costs a `Bytes` split and refcount per message); authentication covers trust, cleartext, MD5 and
//! SCRAM-SHA-256. TLS is not supported (tokio-postgres, used for
//! everything else, has none configured either).

use aggro_core::scenario::Value;
use aggro_core::{ErrorClass, StoreError};
use bytes::Buf;
use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::{Header, Message};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_postgres::error::SqlState;
use tokio_postgres::fallible_iterator::FallibleIterator;

/// The `int8` type's OID: every parameter of the hot path is one.
const INT8: u32 = 20;
/// Binary format code.
const BINARY: i16 = 1;
/// Text format code.
const TEXT: i16 = 0;

/// What one executed statement returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Executed {
    /// Rows the command touched (`UPDATE 1` → 1), or returned.
    pub rows: u64,
    /// The first column of the first row, when it is an `int8`.
    pub first: Option<i64>,
}

/// One connection.
pub struct Wire {
    reader: OwnedReadHalf,
    writer: OwnedWriteHalf,
    out: BytesMut,
    input: BytesMut,
    /// Whether the connection is unusable (an I/O or protocol failure).
    broken: bool,
    /// The transaction status of the last `ReadyForQuery`: `I` idle, `T` in a
    /// transaction, `E` in a failed one.
    status: u8,
}

fn io_error(e: std::io::Error) -> StoreError {
    StoreError::new(ErrorClass::Disconnected, format!("postgres connection: {e}"))
}

fn protocol(why: impl Into<String>) -> StoreError {
    StoreError::new(ErrorClass::Protocol, why.into())
}

/// An `ErrorResponse` as a classified error (the same classes as the
/// tokio-postgres path).
fn server_error(body: &postgres_protocol::message::backend::ErrorResponseBody) -> StoreError {
    let (mut code, mut message) = (String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        let value = String::from_utf8_lossy(f.value_bytes()).into_owned();
        match f.type_() {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    let state = SqlState::from_code(&code);
    let class = match state {
        SqlState::T_R_SERIALIZATION_FAILURE => ErrorClass::Conflict,
        SqlState::T_R_DEADLOCK_DETECTED => ErrorClass::Deadlock,
        SqlState::LOCK_NOT_AVAILABLE => ErrorClass::Locked,
        SqlState::UNDEFINED_TABLE => return StoreError::new(ErrorClass::Data, format!("db error: {message} (populate the workload first)")),
        _ => ErrorClass::Server,
    };
    StoreError::new(class, format!("db error: {message}"))
}

/// Appends Bind (parameters and results in `format`, each parameter written by `encode`), Execute and Sync
/// for prepared statement `name`.
fn encode_bind_execute<P>(
    out: &mut BytesMut,
    name: &str,
    format: i16,
    params: &[P],
    encode: impl FnMut(&P, &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>>,
) -> Result<(), StoreError> {
    frontend::bind("", name, [format], params, encode, [format], out).map_err(|_| protocol("cannot encode the parameters"))?;
    frontend::execute("", 0, out).map_err(io_error)?;
    frontend::sync(out);
    Ok(())
}

/// Appends a run of prepared statement `name` with `params` in text format (None is NULL), results in
/// text, and a Sync.
pub fn encode_text(out: &mut BytesMut, name: &str, params: &[Value]) -> Result<(), StoreError> {
    encode_bind_execute(out, name, TEXT, params, |v, buf| Ok(push_text(buf, v)))
}

/// Appends `sql` parsed as the unnamed statement (the server infers its parameters' types), then a run
/// of it as [`encode_text`] does: pgbench's `-M extended`.
pub fn encode_unnamed(out: &mut BytesMut, sql: &str, params: &[Value]) -> Result<(), StoreError> {
    frontend::parse("", sql, std::iter::empty(), out).map_err(io_error)?;
    encode_text(out, "", params)
}

/// Appends `v` as PostgreSQL reads a value in text; NULL appends nothing and says so.
pub(super) fn push_text(buf: &mut BytesMut, v: &Value) -> IsNull {
    match v {
        Value::Null => return IsNull::Yes,
        Value::Int(i) => push_decimal(buf, *i),
        Value::Float(f) => {
            use std::fmt::Write;
            let _ = write!(buf, "{f}");
        }
        Value::Text(t) => buf.extend_from_slice(t.as_bytes()),
    }
    IsNull::No
}

/// Appends `sql` as a simple query (`ROLLBACK`).
pub fn encode_simple(out: &mut BytesMut, sql: &str) -> Result<(), StoreError> {
    frontend::query(sql, out).map_err(io_error)
}

/// Appends `i` in decimal (the hot path's integer parameters; `write!`
/// costs several times as much).
fn push_decimal(buf: &mut BytesMut, i: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        buf.put_u8(b'-');
    }
    buf.extend_from_slice(&digits[at..]);
}

/// A message as [`Wire::next`] reads it.
enum Incoming {
    /// `ReadyForQuery` and its transaction status.
    Ready(u8),
    /// `CommandComplete` and the rows its tag counts.
    Complete(u64),
    /// Any other message, parsed.
    Full(Message),
}

impl Wire {
    /// Connects and authenticates as `config` says (its first host and port).
    pub async fn connect(config: &tokio_postgres::Config, what: &str) -> Result<Self, StoreError> {
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => return Err(StoreError::new(ErrorClass::Connect, format!("{what}: only TCP hosts are supported"))),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let (reader, writer) = crate::net::connect("postgres", &format!("{host}:{port}")).await?;
        let mut wire = Self { reader, writer, out: BytesMut::with_capacity(512), input: BytesMut::with_capacity(8192), broken: false, status: b'I' };
        let user = config.get_user().unwrap_or("postgres");
        let mut params = vec![("user", user), ("client_encoding", "UTF8")];
        if let Some(db) = config.get_dbname() {
            params.push(("database", db));
        }
        frontend::startup_message(params, &mut wire.out).map_err(io_error)?;
        wire.flush().await?;
        wire.authenticate(user, config.get_password().unwrap_or_default()).await?;
        wire.until_ready().await?;
        Ok(wire)
    }

    async fn authenticate(&mut self, user: &str, password: &[u8]) -> Result<(), StoreError> {
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.message().await? {
                Message::AuthenticationOk => return Ok(()),
                Message::AuthenticationCleartextPassword => frontend::password_message(password, &mut self.out).map_err(io_error)?,
                Message::AuthenticationMd5Password(body) => {
                    let hash = postgres_protocol::authentication::md5_hash(user.as_bytes(), password, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out).map_err(io_error)?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut offered = false;
                    while let Ok(Some(m)) = mechanisms.next() {
                        offered |= m == SCRAM_SHA_256;
                    }
                    if !offered {
                        return Err(StoreError::new(ErrorClass::Connect, "the server offers no SASL mechanism this client speaks"));
                    }
                    let s = ScramSha256::new(password, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out).map_err(io_error)?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL continue before SASL start"))?;
                    s.update(body.data()).map_err(|e| StoreError::new(ErrorClass::Connect, format!("SCRAM: {e}")))?;
                    frontend::sasl_response(s.message(), &mut self.out).map_err(io_error)?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or_else(|| protocol("SASL final before SASL start"))?;
                    s.finish(body.data()).map_err(|e| StoreError::new(ErrorClass::Connect, format!("SCRAM: {e}")))?;
                    continue;
                }
                Message::ErrorResponse(body) => {
                    let e = server_error(&body);
                    return Err(StoreError::new(ErrorClass::Connect, e.message));
                }
                _ => return Err(protocol("unexpected message during authentication")),
            }
            self.flush().await?;
        }
    }

    /// Prepares `sql` as statement `name`, every parameter an `int8`.
    pub async fn prepare(&mut self, name: &str, sql: &str, params: usize) -> Result<(), StoreError> {
        frontend::parse(name, sql, std::iter::repeat_n(INT8, params), &mut self.out).map_err(io_error)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        self.until_ready().await.map(drop)
    }

    /// Runs prepared statement `name` with `params`, results in binary.
    pub async fn execute(&mut self, name: &str, params: &[i64]) -> Result<Executed, StoreError> {
        self.bind_execute(name, BINARY, params, |v, buf| {
            buf.put_i64(*v);
            Ok(IsNull::No)
        })
        .await?;
        self.until_ready().await
    }

    /// Sends Bind (parameters and results in `format`, each parameter written by `encode`), Execute and Sync
    /// for prepared statement `name`.
    async fn bind_execute<P>(
        &mut self,
        name: &str,
        format: i16,
        params: &[P],
        encode: impl FnMut(&P, &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>>,
    ) -> Result<(), StoreError> {
        encode_bind_execute(&mut self.out, name, format, params, encode)?;
        self.flush().await
    }

    /// Runs `sql` through the simple query protocol (`BEGIN`, `COMMIT`).
    pub async fn simple(&mut self, sql: &str) -> Result<(), StoreError> {
        frontend::query(sql, &mut self.out).map_err(io_error)?;
        self.flush().await?;
        self.until_ready().await.map(drop)
    }

    /// Prepares `sql` as statement `name`, letting the server infer every
    /// parameter's type (what pgbench's `-M prepared` does).
    pub async fn prepare_untyped(&mut self, name: &str, sql: &str) -> Result<(), StoreError> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(io_error)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        self.until_ready().await.map(drop)
    }

    /// Sends requests encoded elsewhere ([`encode_text`], [`encode_simple`]) back to back, leaving `batch`
    /// empty; each is answered by its own [`Wire::read_answer`], in order.
    pub async fn send_encoded(&mut self, batch: &mut BytesMut) -> Result<(), StoreError> {
        if self.out.is_empty() {
            std::mem::swap(&mut self.out, batch);
        } else {
            self.out.unsplit(batch.split());
        }
        self.flush().await
    }

    /// Reads one request's answer: the rows it touched or returned (its first row's columns, as text, go
    /// to `first_row`), or its error once the server is ready again.
    pub async fn read_answer(&mut self, first_row: Option<&mut Vec<Option<String>>>) -> Result<u64, StoreError> {
        // No row buffer: nothing of the rows is kept (the rows count comes from CommandComplete).
        let mut row = first_row;
        if let Some(r) = row.as_deref_mut() {
            r.clear();
        }
        self.read_rows(row).await.map(|done| done.rows)
    }

    /// Whether the last command left a transaction open (or failed inside one).
    pub fn in_transaction(&self) -> bool {
        self.status != b'I'
    }

    /// `COPY … FROM STDIN` with `data` (text format, one line per row).
    pub async fn copy_in(&mut self, sql: &str, data: &[u8]) -> Result<u64, StoreError> {
        frontend::query(sql, &mut self.out).map_err(io_error)?;
        self.flush().await?;
        loop {
            match self.message().await? {
                Message::CopyInResponse(_) => break,
                Message::ErrorResponse(body) => {
                    let e = server_error(&body);
                    self.until_ready().await.ok();
                    return Err(e);
                }
                _ => {}
            }
        }
        for chunk in data.chunks(64 * 1024) {
            frontend::CopyData::new(chunk).map_err(io_error)?.write(&mut self.out);
            self.flush().await?;
        }
        frontend::copy_done(&mut self.out);
        self.flush().await?;
        self.until_ready().await.map(|d| d.rows)
    }

    /// Whether the connection failed and must be replaced.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    async fn flush(&mut self) -> Result<(), StoreError> {
        let result = self.writer.write_all(&self.out).await.map_err(io_error);
        self.out.clear();
        self.broken |= result.is_err();
        result
    }

    /// Reads up to `ReadyForQuery`: what the statement did, or its error
    /// (reported once the server is ready again, so the connection stays usable).
    async fn until_ready(&mut self) -> Result<Executed, StoreError> {
        self.read_rows(None).await
    }

    /// [`Wire::until_ready`], also keeping the first row's columns as text.
    async fn read_rows(&mut self, mut text_row: Option<&mut Vec<Option<String>>>) -> Result<Executed, StoreError> {
        let mut done = Executed::default();
        let mut failed: Option<StoreError> = None;
        loop {
            match self.next().await? {
                Incoming::Ready(status) => {
                    self.status = status;
                    return failed.map_or(Ok(done), Err);
                }
                Incoming::Complete(rows) => done.rows = rows,
                Incoming::Full(Message::ErrorResponse(body)) => failed = Some(server_error(&body)),
                Incoming::Full(Message::DataRow(body)) => match text_row.as_deref_mut() {
                    Some(row) if row.is_empty() => {
                        let buf = body.buffer();
                        let mut ranges = body.ranges();
                        while let Ok(Some(r)) = ranges.next() {
                            row.push(r.map(|r| String::from_utf8_lossy(&buf[r]).into_owned()));
                        }
                    }
                    Some(_) => {}
                    None if done.first.is_none() => {
                        // The first column (after the column count, which the
                        // parser keeps apart): a 4-byte length, then an int8's 8 bytes.
                        let b = body.buffer();
                        if b.len() >= 12 && b[..4] == 8i32.to_be_bytes() {
                            done.first = b[4..12].try_into().ok().map(i64::from_be_bytes);
                        }
                    }
                    None => {}
                },
                Incoming::Full(_) => {}
            }
        }
    }

    /// The next message. The hot path's bodiless acknowledgements are
    /// skipped and `CommandComplete`/`ReadyForQuery` are read in place
    /// behind their header (no `Bytes` split and refcount per message, as
    /// `Message::parse` makes); anything else is parsed whole.
    async fn next(&mut self) -> Result<Incoming, StoreError> {
        loop {
            let header = Header::parse(&self.input).map_err(|e| self.bad_message(&e))?;
            if let Some(header) = header
                && self.input.len() > header.len() as usize
            {
                let total = header.len() as usize + 1;
                match header.tag() {
                    // ParseComplete, BindComplete, CloseComplete, NoData.
                    b'1' | b'2' | b'3' | b'n' => self.input.advance(total),
                    b'Z' => {
                        if total != 6 {
                            return Err(self.bad_message(&std::io::Error::other("a ReadyForQuery of the wrong length")));
                        }
                        let status = self.input[5];
                        self.input.advance(total);
                        return Ok(Incoming::Ready(status));
                    }
                    b'C' => {
                        let tag = &self.input[5..total];
                        let tag = tag.strip_suffix(&[0]).unwrap_or(tag);
                        let rows = tag.rsplit(|b| *b == b' ').next().and_then(|n| std::str::from_utf8(n).ok()?.parse().ok()).unwrap_or(0);
                        self.input.advance(total);
                        return Ok(Incoming::Complete(rows));
                    }
                    _ => return self.message().await.map(Incoming::Full),
                }
                continue;
            }
            self.fill().await?;
        }
    }

    async fn message(&mut self) -> Result<Message, StoreError> {
        loop {
            match Message::parse(&mut self.input) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => self.fill().await?,
                Err(e) => return Err(self.bad_message(&e)),
            }
        }
    }

    fn bad_message(&mut self, e: &std::io::Error) -> StoreError {
        self.broken = true;
        protocol(format!("bad message from the server: {e}"))
    }

    /// Reads what the server has sent into the input buffer.
    async fn fill(&mut self) -> Result<(), StoreError> {
        self.input.reserve(4096);
        match self.reader.read_buf(&mut self.input).await {
            Ok(0) => {
                self.broken = true;
                Err(StoreError::new(ErrorClass::Disconnected, "connection closed"))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                self.broken = true;
                Err(io_error(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `ErrorResponse` with SQLSTATE `code`, as the server sends it.
    fn error_response(code: &str) -> StoreError {
        let mut fields = Vec::new();
        for (t, v) in [(b'S', "ERROR"), (b'C', code), (b'M', "it failed")] {
            fields.push(t);
            fields.extend_from_slice(v.as_bytes());
            fields.push(0);
        }
        fields.push(0);
        let mut buf = BytesMut::new();
        buf.put_u8(b'E');
        buf.put_i32(fields.len() as i32 + 4);
        buf.extend_from_slice(&fields);
        match Message::parse(&mut buf) {
            Ok(Some(Message::ErrorResponse(body))) => server_error(&body),
            _ => panic!("not an error response"),
        }
    }

    #[test]
    fn decimals_are_written_as_display_does() {
        for i in [0, 7, -7, 10, 1_234_567, i64::MAX, i64::MIN] {
            let mut buf = BytesMut::new();
            push_decimal(&mut buf, i);
            assert_eq!(&buf[..], i.to_string().as_bytes());
        }
    }

    #[test]
    fn server_errors_are_classified_as_the_tokio_postgres_path_does() {
        assert_eq!(error_response("40001").class, ErrorClass::Conflict);
        assert_eq!(error_response("40P01").class, ErrorClass::Deadlock);
        assert_eq!(error_response("55P03").class, ErrorClass::Locked);
        let missing = error_response("42P01");
        assert_eq!(missing.class, ErrorClass::Data);
        assert!(missing.message.contains("it failed") && missing.message.contains("populate"), "{}", missing.message);
        assert_eq!(error_response("23505").class, ErrorClass::Server);
    }
}
