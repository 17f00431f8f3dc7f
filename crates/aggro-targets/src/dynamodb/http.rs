//! A minimal HTTP/1.1 keep-alive client: one request in flight per
//! connection, `Content-Length` or chunked responses, bounded sizes.

use aggro_core::{ErrorClass, StoreError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

const MAX_BODY: usize = 64 * 1024 * 1024;
const MAX_HEADER_LINES: usize = 100;

/// One keep-alive connection.
pub struct Connection {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    out: Vec<u8>,
    line: String,
    /// The last response's body.
    pub body: Vec<u8>,
    /// The server asked to close after the last response.
    pub closing: bool,
}

fn io_error(e: std::io::Error) -> StoreError {
    StoreError::new(ErrorClass::Disconnected, format!("HTTP connection: {e}"))
}

fn protocol(why: &str) -> StoreError {
    StoreError::new(ErrorClass::Protocol, format!("bad HTTP response: {why}"))
}

impl Connection {
    /// Connects to `addr` (`HOST:PORT`).
    pub async fn connect(addr: &str) -> Result<Self, StoreError> {
        let (r, w) = crate::net::connect("the DynamoDB endpoint", addr).await?;
        Ok(Self {
            reader: BufReader::with_capacity(16 * 1024, r),
            writer: w,
            out: Vec::with_capacity(1024),
            line: String::with_capacity(128),
            body: Vec::with_capacity(1024),
            closing: false,
        })
    }

    /// Sends `POST /` with `headers` and `body`; returns the status, the body
    /// is left in [`Connection::body`].
    pub async fn post(&mut self, host: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<u16, StoreError> {
        use std::io::Write;
        self.out.clear();
        let _ = write!(self.out, "POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\n", body.len());
        for (k, v) in headers {
            let _ = write!(self.out, "{k}: {v}\r\n");
        }
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(body);
        self.writer.write_all(&self.out).await.map_err(io_error)?;
        self.read_response().await
    }

    async fn read_line(&mut self) -> Result<&str, StoreError> {
        self.line.clear();
        let n = (&mut self.reader).take(64 * 1024).read_line(&mut self.line).await.map_err(io_error)?;
        if n == 0 {
            return Err(StoreError::new(ErrorClass::Disconnected, "the server closed the connection"));
        }
        Ok(self.line.trim_end_matches(['\r', '\n']))
    }

    async fn read_response(&mut self) -> Result<u16, StoreError> {
        let status_line = self.read_line().await?;
        let status: u16 =
            status_line.strip_prefix("HTTP/1.").and_then(|r| r.get(2..5)).and_then(|s| s.parse().ok()).ok_or_else(|| protocol("no status line"))?;
        let (mut length, mut chunked) = (None, false);
        self.closing = false;
        for i in 0.. {
            if i > MAX_HEADER_LINES {
                return Err(protocol("too many headers"));
            }
            let line = self.read_line().await?;
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else { return Err(protocol("malformed header")) };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| protocol("bad content-length"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close") {
                self.closing = true;
            }
        }
        self.body.clear();
        if chunked {
            loop {
                let size = usize::from_str_radix(self.read_line().await?.split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| protocol("bad chunk size"))?;
                if self.body.len() + size > MAX_BODY {
                    return Err(protocol("body too large"));
                }
                if size == 0 {
                    while !self.read_line().await?.is_empty() {}
                    break;
                }
                let start = self.body.len();
                self.body.resize(start + size, 0);
                self.reader.read_exact(&mut self.body[start..]).await.map_err(io_error)?;
                if !self.read_line().await?.is_empty() {
                    return Err(protocol("chunk not terminated"));
                }
            }
        } else {
            let n = length.ok_or_else(|| protocol("neither content-length nor chunked"))?;
            if n > MAX_BODY {
                return Err(protocol("body too large"));
            }
            self.body.resize(n, 0);
            self.reader.read_exact(&mut self.body).await.map_err(io_error)?;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn serve(reply: &'static [u8]) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
            s.write_all(reply).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        });
        addr
    }

    #[tokio::test]
    async fn reads_length_and_chunked_bodies() {
        let addr = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").await;
        let mut c = Connection::connect(&addr).await.unwrap();
        assert_eq!(c.post("h", &[], b"x").await.unwrap(), 200);
        assert_eq!(c.body, b"{}");
        let addr = serve(b"HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").await;
        let mut c = Connection::connect(&addr).await.unwrap();
        assert_eq!(c.post("h", &[], b"x").await.unwrap(), 400);
        assert_eq!(c.body, b"abcde");
        assert!(c.closing);
    }

    #[tokio::test]
    async fn garbage_is_a_protocol_error() {
        for junk in [
            &b"SMTP ready\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let leaked: &'static [u8] = Box::leak(junk.to_vec().into_boxed_slice());
            let addr = serve(leaked).await;
            let mut c = Connection::connect(&addr).await.unwrap();
            let err = c.post("h", &[], b"x").await.unwrap_err();
            assert!(matches!(err.class, ErrorClass::Protocol | ErrorClass::Disconnected), "{junk:?}: {err}");
        }
    }
}
