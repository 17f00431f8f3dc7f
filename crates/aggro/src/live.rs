//! `--live ADDR`: the run's report served on loopback while the run goes.
//!
//! Each interval the console hands over its record (a copy and a merge of
//! the interval's histograms into running totals: microseconds); the page is
//! rendered on the server's own thread only when a browser asks, so an open
//! page costs the run nothing between requests and a closed one nothing at all.
//! `/` is the page, `/main?after=N` the report's body once the run has more
//! than N intervals (a long poll: the page swaps it in as soon as an interval
//! ends), `/record.json` the record so far. The view keeps the last [`WINDOW`]
//! intervals (the result file has them all), so a run of hours with the view
//! open holds its memory flat.

use aggro_report::html;
use aggro_report::http::{Handler, PageServer, Response};
use aggro_report::record::{IntervalRecord, RunRecord, op_records};
use aggro_stats::Recorder;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

struct State {
    record: RunRecord,
    totals: Recorder,
    names: Vec<&'static str>,
    /// Intervals added so far (the record keeps the last [`WINDOW`] of them).
    seen: usize,
    ended: bool,
}

/// The most intervals the view keeps: an hour of 1-second intervals.
pub const WINDOW: usize = 3600;

/// The live view of one run.
pub struct Live {
    state: Arc<Mutex<State>>,
    /// Serves until the view is dropped.
    _server: PageServer,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Live {
    /// Serves the view of the `command` run described by `spec`, started at `started_at`, on `addr`.
    pub fn start(addr: SocketAddr, command: &str, spec: &serde_json::Value, started_at: &str, names: &[&'static str]) -> anyhow::Result<Self> {
        let record = RunRecord::begun(command, spec.clone(), started_at.to_string(), names);
        let state = Arc::new(Mutex::new(State { record, totals: Recorder::new(names.len()), names: names.to_vec(), seen: 0, ended: false }));
        let s = state.clone();
        let handler: Handler = Arc::new(move |path: &str| {
            let (route, query) = path.split_once('?').unwrap_or((path, ""));
            if let Some(after) = query.strip_prefix("after=").and_then(|n| n.parse().ok()) {
                wait_for_interval(&s, after);
            }
            let mut state = lock(&s);
            if !state.ended {
                // The totals are encoded when a page asks, not every interval.
                let State { record, totals, names, .. } = &mut *state;
                record.totals = op_records(names, totals);
            }
            // How many intervals the run has, beside the last ones the view keeps, for the page's next ask.
            let body = || match html::body(&state.record, &[]) {
                Ok(body) => format!("<span hidden data-seen=\"{}\"></span>{body}", state.seen),
                Err(e) => format!("<p class=\"warn\">{e}</p>"),
            };
            match route {
                "/" => Response::ok("text/html; charset=utf-8", html::page(&html::title(&state.record), &body(), Some(GAP_MS))),
                "/main" if state.ended => Response { status: "410 Gone", content_type: "text/html; charset=utf-8", body: body() },
                "/main" => Response::ok("text/html; charset=utf-8", body()),
                "/record.json" => Response::ok("application/json", serde_json::to_string(&state.record).unwrap_or_default()),
                _ => Response::not_found("/, /main, /record.json"),
            }
        });
        let server = PageServer::start(addr, "live", handler).map_err(|e| anyhow::anyhow!("--live: cannot listen on {addr}: {e}"))?;
        eprintln!("live view: http://{}/", server.local_addr());
        Ok(Self { state, _server: server })
    }

    /// Adds an interval: its record, and its histograms to the running totals.
    pub fn interval(&self, record: &IntervalRecord, merged: &Recorder) {
        let mut state = lock(&self.state);
        state.totals.merge(merged);
        state.seen += 1;
        let shown = match state.seen > WINDOW {
            true => format!(" (the charts: its last {WINDOW} intervals)"),
            false => String::new(),
        };
        let run = &mut state.record;
        run.elapsed_s = record.end_s;
        run.stop_message = format!("running: {:.0} s so far{shown}", record.end_s);
        // The headline's counts so far (the interval's are the run's, by its end).
        (run.due, run.started, run.backlog_at_end) = (record.due, record.started, record.backlog);
        run.completed += record.ops.first().map_or(0, |o| o.ok + o.errors + o.conflicts);
        if run.intervals.len() == WINDOW {
            run.intervals.remove(0);
        }
        run.intervals.push(record.clone());
    }

    /// Sets the record's `extra[key]` (a section of the command's own, such as a script's funnel so far).
    pub fn extra(&self, key: &str, value: serde_json::Value) {
        lock(&self.state).record.extra[key] = value;
    }

    /// Shows the finished run's record (the page stops polling).
    pub fn finish(&self, record: &RunRecord) {
        let mut state = lock(&self.state);
        state.record = record.clone();
        state.ended = true;
    }
}

/// The page's pause between requests (the server holds each until there is news).
const GAP_MS: u64 = 250;

/// Waits (at most 10 s) until the run has more than `after` intervals or has ended.
fn wait_for_interval(state: &Mutex<State>, after: usize) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < until {
        let s = lock(state);
        if s.ended || s.seen > after {
            return;
        }
        drop(s);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_keeps_the_last_intervals_and_counts_them_all() {
        let live = Live::start("127.0.0.1:0".parse().unwrap(), "arena swarm", &serde_json::json!({}), "now", &["delay"]).unwrap();
        let none = Recorder::new(1);
        for k in 0..WINDOW + 2 {
            let record = crate::arena::record::interval(k as f64, k as f64 + 1.0, 0, None, Vec::new(), Default::default(), 0.0);
            live.interval(&record, &none);
        }
        let state = lock(&live.state);
        assert_eq!((state.seen, state.record.intervals.len()), (WINDOW + 2, WINDOW));
        assert_eq!(state.record.intervals[0].start_s, 2.0, "the oldest go first");
        assert!(state.record.stop_message.ends_with(&format!("(the charts: its last {WINDOW} intervals)")), "{}", state.record.stop_message);
    }
}
