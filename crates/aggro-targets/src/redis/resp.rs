//! A minimal RESP2 client: encode commands into a reused buffer, pipeline
//! them in one write, parse replies from a buffered reader.
//!
//! One node's connection; `cluster.rs` routes commands among a
//! cluster's. Only what aggro needs: no pub/sub. Replies are
//! bounded (`MAX_BULK`, `MAX_ELEMENTS`) so a hostile or broken server cannot
//! make the client allocate without limit.

use aggro_core::scenario::Value;
use aggro_core::{ErrorClass, StoreError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

const MAX_BULK: usize = 512 * 1024 * 1024;
const MAX_ELEMENTS: usize = 1 << 24;

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK` and other simple strings.
    Status(String),
    /// `-ERR …`.
    Error(String),
    /// `:42`.
    Int(i64),
    /// `$…`; `None` is the null bulk string.
    Bulk(Option<Vec<u8>>),
    /// `*…`; `None` is the null array (an aborted EXEC).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as an integer (an integer reply or a numeric bulk string).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            Reply::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }
}

/// What one header line starts.
enum Item {
    Value(Reply),
    ArrayOf(usize),
}

/// A connection to one Redis node, speaking RESP2.
pub struct Node {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    out: Vec<u8>,
    line: Vec<u8>,
}

fn io_error(e: std::io::Error) -> StoreError {
    StoreError::new(ErrorClass::Disconnected, format!("redis connection: {e}"))
}

fn protocol(why: impl Into<String>) -> StoreError {
    StoreError::new(ErrorClass::Protocol, why.into())
}

impl Node {
    /// Connects to `addr` (`HOST:PORT`).
    pub async fn connect(addr: &str) -> Result<Self, StoreError> {
        let (r, w) = crate::net::connect("redis", addr).await?;
        Ok(Self { reader: BufReader::with_capacity(16 * 1024, r), writer: w, out: Vec::with_capacity(512), line: Vec::with_capacity(64) })
    }

    /// Appends a command to the pipeline buffer.
    pub fn push(&mut self, args: &[&[u8]]) {
        encode(&mut self.out, args);
    }

    /// Appends a command of `count` scenario values (numbers as their decimal text).
    pub fn push_values<'a>(&mut self, count: usize, args: impl Iterator<Item = &'a Value>) {
        encode_values(&mut self.out, count, args);
    }

    /// Queues commands encoded elsewhere ([`encode_values`]), leaving `encoded` empty (its buffer is
    /// kept when nothing else was queued).
    pub fn push_encoded(&mut self, encoded: &mut Vec<u8>) {
        if self.out.is_empty() {
            std::mem::swap(&mut self.out, encoded);
        } else {
            self.out.append(encoded);
        }
    }

    /// Sends everything pushed so far.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        let result = self.writer.write_all(&self.out).await.map_err(io_error);
        self.out.clear();
        result
    }

    /// Reads one reply.
    pub async fn read(&mut self) -> Result<Reply, StoreError> {
        // Nested arrays are read iteratively with an explicit stack, so a
        // hostile reply cannot overflow the call stack.
        let mut stack: Vec<(Vec<Reply>, usize)> = Vec::new();
        loop {
            let mut value = match self.read_scalar_or_header().await? {
                Item::ArrayOf(n) => {
                    // Grow as elements arrive: a header alone cannot make us allocate.
                    stack.push((Vec::with_capacity(n.min(1024)), n));
                    continue;
                }
                Item::Value(v) => v,
            };
            loop {
                match stack.last_mut() {
                    None => return Ok(value),
                    Some((items, n)) => {
                        items.push(value);
                        if items.len() < *n {
                            break;
                        }
                        let (items, _) = stack.pop().expect("non-empty");
                        value = Reply::Array(Some(items));
                    }
                }
            }
        }
    }

    /// A complete reply, or the header of a non-empty array.
    async fn read_scalar_or_header(&mut self) -> Result<Item, StoreError> {
        self.line.clear();
        let n = self.reader.read_until(b'\n', &mut self.line).await.map_err(io_error)?;
        if n == 0 {
            return Err(StoreError::new(ErrorClass::Disconnected, "redis closed the connection"));
        }
        if self.line.len() < 3 || !self.line.ends_with(b"\r\n") {
            return Err(protocol("malformed reply line"));
        }
        let body = &self.line[1..self.line.len() - 2];
        let text = || String::from_utf8_lossy(body).into_owned();
        let number = || -> Result<i64, StoreError> {
            std::str::from_utf8(body).ok().and_then(|s| s.parse().ok()).ok_or_else(|| protocol("bad number in reply"))
        };
        let value = match self.line[0] {
            b'+' => Reply::Status(text()),
            b'-' => Reply::Error(text()),
            b':' => Reply::Int(number()?),
            b'$' => {
                let len = number()?;
                if len < 0 {
                    return Ok(Item::Value(Reply::Bulk(None)));
                }
                let len = usize::try_from(len).map_err(|_| protocol("bad bulk length"))?;
                if len > MAX_BULK {
                    return Err(protocol("bulk reply too large"));
                }
                let mut data = vec![0; len + 2];
                self.reader.read_exact(&mut data).await.map_err(io_error)?;
                if !data.ends_with(b"\r\n") {
                    return Err(protocol("bulk reply not terminated"));
                }
                data.truncate(len);
                Reply::Bulk(Some(data))
            }
            b'*' => {
                let len = number()?;
                match usize::try_from(len) {
                    Err(_) => Reply::Array(None),
                    Ok(0) => Reply::Array(Some(Vec::new())),
                    Ok(n) if n > MAX_ELEMENTS => return Err(protocol("array reply too large")),
                    Ok(n) => return Ok(Item::ArrayOf(n)),
                }
            }
            _ => return Err(protocol("unknown reply type")),
        };
        Ok(Item::Value(value))
    }

    /// Sends one command and reads its reply; an error reply is a server error.
    pub async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, StoreError> {
        self.push(args);
        self.flush().await?;
        self.read().await.and_then(server_error)
    }
}

/// A reply, with an error reply turned into a server error (what a caller of one command wants).
pub fn server_error(reply: Reply) -> Result<Reply, StoreError> {
    match reply {
        Reply::Error(e) => Err(StoreError::new(ErrorClass::Server, e)),
        r => Ok(r),
    }
}

/// Appends a command to `out` as a RESP array of bulk strings.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    push_number(out, args.len());
    for a in args {
        out.push(b'$');
        push_number(out, a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends a command of `count` scenario values to `out` (numbers as their decimal text).
pub fn encode_values<'a>(out: &mut Vec<u8>, count: usize, args: impl Iterator<Item = &'a Value>) {
    use std::io::Write;
    out.push(b'*');
    push_number(out, count);
    let mut number = Vec::new();
    for a in args {
        let bytes: &[u8] = match a {
            Value::Text(t) => t.as_bytes(),
            Value::Null => b"",
            Value::Int(i) => {
                number.clear();
                let _ = write!(number, "{i}");
                &number
            }
            Value::Float(f) => {
                number.clear();
                let _ = write!(number, "{f}");
                &number
            }
        };
        out.push(b'$');
        push_number(out, bytes.len());
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
    }
}

fn push_number(out: &mut Vec<u8>, n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A connection whose server side is a script of raw bytes.
    async fn scripted(reply: &'static [u8]) -> Node {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(reply).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        });
        Node::connect(&addr).await.unwrap()
    }

    #[tokio::test]
    async fn parses_every_reply_type() {
        let mut c = scripted(b"+OK\r\n-ERR no\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n*2\r\n:1\r\n*1\r\n$0\r\n\r\n*0\r\n").await;
        assert_eq!(c.read().await.unwrap(), Reply::Status("OK".into()));
        assert_eq!(c.read().await.unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(c.read().await.unwrap(), Reply::Int(42));
        assert_eq!(c.read().await.unwrap(), Reply::Bulk(Some(b"abc".to_vec())));
        assert_eq!(c.read().await.unwrap(), Reply::Bulk(None));
        assert_eq!(c.read().await.unwrap(), Reply::Array(None));
        assert_eq!(c.read().await.unwrap(), Reply::Array(Some(vec![Reply::Int(1), Reply::Array(Some(vec![Reply::Bulk(Some(vec![]))]))])));
        assert_eq!(c.read().await.unwrap(), Reply::Array(Some(vec![])));
    }

    #[tokio::test]
    async fn garbage_is_a_protocol_error_not_a_panic() {
        for junk in [&b"?what\r\n"[..], b"$abc\r\n", b":\r\n", b"$5\r\nab\r\n", b"*99999999999\r\n", b"+no-crlf\n"] {
            let leaked: &'static [u8] = Box::leak(junk.to_vec().into_boxed_slice());
            let mut c = scripted(leaked).await;
            let err = c.read().await.unwrap_err();
            assert!(matches!(err.class, ErrorClass::Protocol | ErrorClass::Disconnected), "{junk:?}: {err}");
        }
    }

    #[test]
    fn commands_encode_as_resp_arrays() {
        let mut out = Vec::new();
        push_number(&mut out, 0);
        push_number(&mut out, 1234);
        assert_eq!(out, b"0\r\n1234\r\n");
    }
}
