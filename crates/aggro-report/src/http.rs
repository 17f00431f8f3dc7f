//! A tiny HTTP/1.1 server for what a run shows while it goes (Prometheus
//! `/metrics`, the live report): one thread, one request per connection,
//! `GET` only, every answer computed by a handler from the path, on a thread
//! per connection (a handler may wait, as the live view's long poll does). It
//! never touches the run's own threads, so a slow or closed browser cannot
//! delay the run.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// One answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// Status line after `HTTP/1.1 `, such as `200 OK`.
    pub status: &'static str,
    /// Content-Type.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Response {
    /// `200 OK` with this type and body.
    pub fn ok(content_type: &'static str, body: String) -> Self {
        Self { status: "200 OK", content_type, body }
    }

    /// `404 Not Found`, saying what is served instead.
    pub fn not_found(served: &str) -> Self {
        Self { status: "404 Not Found", content_type: "text/plain; charset=utf-8", body: format!("served here: {served}\n") }
    }
}

/// What answers a `GET` for a path (query string included).
pub type Handler = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// A server on its own thread until dropped.
pub struct PageServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PageServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageServer").field("addr", &self.addr).finish()
    }
}

impl PageServer {
    /// Listens on `addr` (port 0: any free port) and answers with `handler`.
    pub fn start(addr: SocketAddr, name: &str, handler: Handler) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || serve(listener, handler, &s))?;
        Ok(Self { addr, stop, thread: Some(thread) })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Connections answered at once; more wait in the listen queue.
const MAX_OPEN: usize = 16;

fn serve(listener: TcpListener, handler: Handler, stop: &AtomicBool) {
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        if open.load(Ordering::Relaxed) >= MAX_OPEN {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        match listener.accept() {
            Ok((conn, _)) => {
                let (h, o) = (handler.clone(), open.clone());
                o.fetch_add(1, Ordering::Relaxed);
                let spawned = std::thread::Builder::new().name("page".into()).spawn(move || {
                    let _ = answer(conn, &*h);
                    o.fetch_sub(1, Ordering::Relaxed);
                });
                if spawned.is_err() {
                    open.fetch_sub(1, Ordering::Relaxed);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn answer(mut conn: TcpStream, handler: &(dyn Fn(&str) -> Response + Send + Sync)) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut req = Vec::new();
    let mut chunk = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&req);
    let r = match line.split_whitespace().take(2).collect::<Vec<_>>().as_slice() {
        ["GET", path] => handler(path),
        _ => Response { status: "400 Bad Request", content_type: "text/plain", body: "only GET is served\n".into() },
    };
    write!(
        conn,
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{}",
        r.status,
        r.content_type,
        r.body.len(),
        r.body
    )
}

/// Fetches `http://addr{path}`; the body of a `200`, an error otherwise.
pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    // Connection: close, so any server (a Node one keeps connections alive) ends the answer with the stream.
    write!(conn, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut resp = String::new();
    conn.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").ok_or_else(|| std::io::Error::other("no HTTP header"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(std::io::Error::other(head.lines().next().unwrap_or("").to_string()));
    }
    let chunked = head.lines().any(|l| l.to_ascii_lowercase().replace(' ', "") == "transfer-encoding:chunked");
    if chunked { unchunk(body) } else { Ok(body.to_string()) }
}

/// A chunked body's data: each chunk's size in hex, its bytes, up to the empty last chunk.
fn unchunk(mut body: &str) -> std::io::Result<String> {
    let bad = || std::io::Error::other("a malformed chunked body");
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").ok_or_else(bad)?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).map_err(|_| bad())?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(rest.get(..size).ok_or_else(bad)?);
        body = rest.get(size..).and_then(|r| r.strip_prefix("\r\n")).ok_or_else(bad)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_read_whole() {
        assert_eq!(unchunk("5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n").unwrap(), "hello, world");
        assert!(unchunk("zz\r\nhello\r\n").is_err());
        assert!(unchunk("9\r\nhello\r\n").is_err(), "a chunk longer than what came");
    }

    #[test]
    fn paths_are_answered_by_the_handler() {
        let handler: Handler = Arc::new(|path: &str| match path {
            "/a" => Response::ok("text/plain", "alpha".into()),
            _ => Response::not_found("/a"),
        });
        let server = PageServer::start("127.0.0.1:0".parse().unwrap(), "test-pages", handler).unwrap();
        assert_eq!(get(server.local_addr(), "/a").unwrap(), "alpha");
        let err = get(server.local_addr(), "/b").unwrap_err();
        assert!(err.to_string().contains("404"), "{err}");
        let mut c = TcpStream::connect(server.local_addr()).unwrap();
        write!(c, "POST /a HTTP/1.1\r\n\r\n").unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 400"), "{resp}");
    }
}
