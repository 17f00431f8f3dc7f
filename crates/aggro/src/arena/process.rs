//! What the arena's long-running processes — `arena serve` (game server and
//! relay) and `arena swarm` — share around their loops: each interval printed
//! (unless `--quiet`) and served at `--metrics`, each interval and its record
//! kept on disk as it closes (so a run of hours holds its memory flat:
//! [`Spill`]), the stop signal, and at the end the result file, the whole run's
//! line and where the file went.

use crate::arena::args::ArenaCommon;
use crate::run::session;
use crate::run::spill::Spill;
use aggro_arena::metrics::{LivePage, MetricsServer};
use aggro_report::record::{IntervalRecord, RunRecord};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// An interval record one of the processes reports: written to disk as it closes, read back at the end.
pub trait Reported: serde::Serialize + serde::de::DeserializeOwned {
    /// The counters `/metrics` totals over the run.
    type Counters: Copy + Default + std::ops::AddAssign;
    /// The interval as one printed line.
    fn line(&self) -> String;
    /// Its counters, CPU (% of a core) and length (s), for the totals `/metrics` serves.
    fn live(&self) -> (Self::Counters, f64, f64);
    /// The Prometheus page: the run's `total` counters and CPU seconds so far, this interval's gauges.
    fn exposition(&self, total: &Self::Counters, cpu_s: f64) -> String;
}

/// A finished loop: its intervals and their records, the whole run, whether a signal stopped it, and
/// where its result goes.
pub struct Finished<I> {
    pub intervals: Vec<I>,
    /// Each interval's record for the result file, as the process made it.
    pub records: Vec<IntervalRecord>,
    pub totals: I,
    pub interrupted: bool,
    pub out: PathBuf,
}

/// Runs a process's loop until it ends or a signal stops it, printing and serving every interval and
/// keeping it with its record; `run` gets the stop flag and the callback each interval and its record
/// go to, and returns the whole run. `kind` names the result file when `--out` does not.
pub fn run<I: Reported>(
    common: &ArenaCommon,
    kind: &str,
    metrics: Option<&MetricsServer>,
    run: impl FnOnce(&AtomicBool, &mut dyn FnMut(&I, IntervalRecord)) -> std::io::Result<I>,
) -> anyhow::Result<Finished<I>> {
    session::check_out(common.out.as_deref())?;
    let out = common.out.clone().unwrap_or_else(|| session::default_out(kind));
    let (mut intervals, mut records) = (Spill::beside(&out), Spill::beside(&out));
    let stop = stop_on_signal();
    let mut live = LivePage::new(metrics);
    let totals = run(&stop, &mut |iv: &I, record| {
        let (counters, cpu_pct, secs) = iv.live();
        live.interval(counters, cpu_pct, secs, |total, cpu_s| iv.exposition(total, cpu_s));
        if !common.quiet {
            println!("{}", iv.line());
        }
        intervals.push(iv);
        records.push(&record);
    })?;
    let (intervals, trouble) = intervals.into_vec();
    let (records, also) = records.into_vec();
    if let Some(why) = trouble.or(also) {
        eprintln!("warning: {why}");
    }
    Ok(Finished { intervals, records, totals, interrupted: stop.load(Ordering::Relaxed), out })
}

/// Writes the record to `out`, then prints the whole run, the `notes` and the result's path.
pub fn finish<I: Reported>(out: &Path, record: &RunRecord, totals: &I, notes: &[String]) -> anyhow::Result<()> {
    session::write(record, out, &session::Exports::default())?;
    println!("whole run: {}", totals.line());
    for n in notes {
        println!("{n}");
    }
    println!("result: {}", out.display());
    Ok(())
}

/// The `/metrics` endpoint `--metrics ADDR` asks for, started.
pub fn metrics_server(addr: Option<SocketAddr>) -> anyhow::Result<Option<MetricsServer>> {
    let Some(addr) = addr else { return Ok(None) };
    Ok(Some(MetricsServer::start(addr).map_err(|e| anyhow::anyhow!("--metrics: cannot listen on {addr}: {e}"))?))
}

/// A flag set by Ctrl-C (and SIGTERM), so a run stops cleanly and still writes its result.
pub fn stop_on_signal() -> Arc<AtomicBool> {
    static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    let flag = STOP.get_or_init(|| Arc::new(AtomicBool::new(false))).clone();
    extern "C" fn on_signal(_: libc::c_int) {
        if let Some(f) = STOP.get() {
            f.store(true, Ordering::Relaxed);
        }
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    flag
}
