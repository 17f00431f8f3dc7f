//! What the arena's long-running processes — `arena serve` (game server and
//! relay) and `arena swarm` — share around their loops: each interval printed
//! (unless `--quiet`) and served at `--metrics`, the stop signal, and at the
//! end the result file, the whole run's line and where the file went.

use super::stop_on_signal;
use crate::arena::args::ArenaCommon;
use crate::run::session;
use aggro_arena::metrics::{LivePage, MetricsServer};
use aggro_report::record::RunRecord;
use std::sync::atomic::{AtomicBool, Ordering};

/// An interval record one of the processes reports.
pub trait Reported {
    /// The counters `/metrics` totals over the run.
    type Counters: Copy + Default + std::ops::AddAssign;
    /// The interval as one printed line.
    fn line(&self) -> String;
    /// Its counters, CPU (% of a core) and length (s), for the totals `/metrics` serves.
    fn live(&self) -> (Self::Counters, f64, f64);
    /// The Prometheus page: the run's `total` counters and CPU seconds so far, this interval's gauges.
    fn exposition(&self, total: &Self::Counters, cpu_s: f64) -> String;
}

/// A finished loop: its intervals, the whole run, and whether a signal stopped it.
pub struct Finished<I> {
    pub intervals: Vec<I>,
    pub totals: I,
    pub interrupted: bool,
}

/// The loop's result or its I/O error.
type Looped<I> = std::io::Result<(Vec<I>, I)>;

/// Runs a process's loop (`run` gets the stop flag and the per-interval callback) until it ends or a signal
/// stops it, printing and serving every interval.
pub fn run<I: Reported>(
    common: &ArenaCommon,
    metrics: Option<&MetricsServer>,
    run: impl FnOnce(&AtomicBool, &mut dyn FnMut(&I)) -> Looped<I>,
) -> anyhow::Result<Finished<I>> {
    session::check_out(common.out.as_deref())?;
    let stop = stop_on_signal();
    let mut live = LivePage::new(metrics);
    let (intervals, totals) = run(&stop, &mut |iv: &I| {
        let (counters, cpu_pct, secs) = iv.live();
        live.interval(counters, cpu_pct, secs, |total, cpu_s| iv.exposition(total, cpu_s));
        if !common.quiet {
            println!("{}", iv.line());
        }
    })?;
    Ok(Finished { intervals, totals, interrupted: stop.load(Ordering::Relaxed) })
}

/// Writes the record to `--out` (or a default name ending in `kind`), then prints the whole run, the `notes`
/// and the result's path.
pub fn finish<I: Reported>(common: &ArenaCommon, kind: &str, record: &RunRecord, totals: &I, notes: &[String]) -> anyhow::Result<()> {
    let out = common.out.clone().unwrap_or_else(|| session::default_out(kind));
    session::write(record, &out, &session::Exports::default())?;
    println!("whole run: {}", totals.line());
    for n in notes {
        println!("{n}");
    }
    println!("result: {}", out.display());
    Ok(())
}
