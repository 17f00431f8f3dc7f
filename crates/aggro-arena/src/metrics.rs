//! Counters in the Prometheus text format (version 0.0.4), served over HTTP
//! at `/metrics` on a loopback address so a user's Prometheus and Grafana can
//! watch a long test. The server runs on its own thread and serves the text
//! the run last published (every interval); it never touches the run's loop.

use aggro_report::http::{Handler, PageServer, Response};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// A page of metrics being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// A monotonically increasing total (the name should end in `_total`).
    pub fn counter(&mut self, name: &str, help: &str, value: f64) -> &mut Self {
        self.metric(name, "counter", help, value)
    }

    /// A value that goes up and down.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) -> &mut Self {
        self.metric(name, "gauge", help, value)
    }

    fn metric(&mut self, name: &str, kind: &str, help: &str, value: f64) -> &mut Self {
        use std::fmt::Write;
        let _ = write!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
        self
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// Reads a Prometheus text page into name → value (comments skipped; a malformed line is an error).
pub fn parse(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').ok_or_else(|| format!("no value in {line:?}"))?;
        let value: f64 = value.parse().map_err(|_| format!("{value:?} is not a number in {line:?}"))?;
        out.insert(name.to_string(), value);
    }
    Ok(out)
}

/// A run's counters summed as its intervals close, with its CPU seconds, republished as a page after
/// each interval when a [`MetricsServer`] is serving.
#[derive(Debug)]
pub struct LivePage<'a, C> {
    server: Option<&'a MetricsServer>,
    total: C,
    cpu_s: f64,
}

impl<'a, C: Copy + Default + std::ops::AddAssign> LivePage<'a, C> {
    pub fn new(server: Option<&'a MetricsServer>) -> Self {
        Self { server, total: C::default(), cpu_s: 0.0 }
    }

    /// Adds a closed interval's counters and CPU (% of a core over `secs`); `page` renders the totals
    /// so far (counters, CPU seconds).
    pub fn interval(&mut self, counters: C, cpu_pct: f64, secs: f64, page: impl FnOnce(&C, f64) -> String) {
        self.total += counters;
        self.cpu_s += cpu_pct / 100.0 * secs;
        if let Some(server) = self.server {
            server.publish(page(&self.total, self.cpu_s));
        }
    }
}

/// An HTTP endpoint serving the latest published page at `GET /metrics`.
#[derive(Debug)]
pub struct MetricsServer {
    page: Arc<Mutex<String>>,
    server: PageServer,
}

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves from a thread until dropped.
    pub fn start(addr: SocketAddr) -> std::io::Result<Self> {
        let page = Arc::new(Mutex::new(String::new()));
        let p = page.clone();
        let handler: Handler = Arc::new(move |path: &str| match path.split('?').next() {
            Some("/metrics") => Response::ok("text/plain; version=0.0.4; charset=utf-8", p.lock().unwrap_or_else(|e| e.into_inner()).clone()),
            _ => Response::not_found("/metrics"),
        });
        Ok(Self { page, server: PageServer::start(addr, "metrics", handler)? })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Replaces the page scrapes see.
    pub fn publish(&self, page: String) {
        *self.page.lock().unwrap_or_else(|e| e.into_inner()) = page;
    }
}

/// Fetches `http://addr/metrics` (for tests and for a bench that watches its server).
pub fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    aggro_report::http::get(addr, "/metrics")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn a_published_page_is_scraped_and_parsed() {
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut e = Exposition::default();
        e.counter("aggro_test_events_total", "events", 42.0).gauge("aggro_test_rooms", "rooms", 2.5);
        server.publish(e.finish());
        let page = scrape(server.local_addr()).unwrap();
        assert!(page.contains("# TYPE aggro_test_events_total counter"));
        let m = parse(&page).unwrap();
        assert_eq!(m["aggro_test_events_total"], 42.0);
        assert_eq!(m["aggro_test_rooms"], 2.5);
        assert!(parse("x y").is_err());
        let mut c = TcpStream::connect(server.local_addr()).unwrap();
        write!(c, "GET /other HTTP/1.1\r\n\r\n").unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 404"), "{resp}");
    }
}
