//! What every run command shares: the runtime, Ctrl-C, the result record
//! and where it is written.

use crate::console::Console;
use aggro_core::ErrorSamples;
use aggro_report::host::HostInfo;
use aggro_report::record::{ErrorSample, FORMAT, RunRecord, now_rfc3339, op_records};
use aggro_runner::RunOutcome;
use aggro_stats::Summary;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A tokio runtime with `threads` workers (0 = one per CPU). One thread
/// means a current-thread runtime: every loader, connection task and the
/// monitor share the caller's thread, and waking a task costs no cross-thread
/// signalling.
pub fn runtime(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    raise_fd_limit();
    let mut b = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            if n > 0 {
                b.worker_threads(n);
            }
            b
        }
    };
    b.enable_all().build().context("cannot start the async runtime")
}

/// `threads`, or for 0 one per CPU this process may run on (its affinity mask: `taskset` counts).
pub fn cores(threads: usize) -> usize {
    if threads > 0 { threads } else { std::thread::available_parallelism().map_or(1, |n| n.get()) }
}

/// Many loaders each hold a socket and a timer: lift the soft limit on open
/// files to the hard one so 1,000 loaders do not hit 1,024 descriptors.
fn raise_fd_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The seed of a run: given, or from the clock (always recorded).
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64))
}

/// Builds the record of a finished run (and shows it in the run's live view).
#[allow(clippy::too_many_arguments)]
pub fn record<L>(
    command: &str,
    spec: serde_json::Value,
    started_at: String,
    names: &[&str],
    outcome: &RunOutcome<L>,
    console: Console,
    samples: &ErrorSamples,
    threads: usize,
) -> RunRecord {
    let cores = if threads > 0 { threads } else { HostInfo::current().cpus } as f64;
    let lag = Summary::of(&outcome.totals.lag);
    let generator_signals = aggro_report::generator::signals(&console.intervals, cores);
    let record = RunRecord {
        intervals: console.intervals,
        totals: op_records(names, &outcome.totals),
        lag,
        lag_hdr: aggro_stats::encode::to_base64(&outcome.totals.lag),
        stop_reason: serde_json::to_value(&outcome.stop_reason).unwrap_or_default(),
        stop_message: outcome.stop_reason.to_string(),
        due: outcome.due,
        started: outcome.started,
        completed: outcome.completed,
        backlog_at_end: outcome.backlog_at_end,
        elapsed_s: outcome.elapsed_ns as f64 / 1e9,
        error_samples: samples.snapshot().into_iter().map(|(c, m)| ErrorSample { class: c.name().into(), message: m }).collect(),
        generator_bound: !generator_signals.is_empty(),
        generator_signals,
        ..RunRecord::begun(command, spec, started_at, names)
    };
    // The live view, if any, shows the finished record (its page stops polling).
    if let Some(live) = &console.live {
        live.finish(&record);
    }
    record
}

/// Where a run's result goes: `given` (`--out`), checked before the run — a directory, or a place no
/// file can be made, is refused then rather than after the run — or [`default_out`]`(name)`.
pub fn result_path(given: Option<PathBuf>, name: &str) -> Result<PathBuf, crate::exit::BadInput> {
    check_out(given.as_deref())?;
    Ok(given.unwrap_or_else(|| default_out(name)))
}

/// Refuses an `--out` that is a directory or lies where no file can be made (its directory cannot be
/// made, or is not writable).
pub fn check_out(given: Option<&std::path::Path>) -> Result<(), crate::exit::BadInput> {
    let Some(path) = given else { return Ok(()) };
    let bad = |why: String| crate::exit::BadInput(format!("--out {}: {why}", path.display()));
    if path.is_dir() {
        return Err(bad("is a directory; give the result file's path".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot make its directory: {e}")))?;
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| bad("has a NUL byte".into()))?;
    // SAFETY: access() reads a NUL-terminated path we own.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
        return Err(bad(format!("cannot write in {}: {}", dir.display(), std::io::Error::last_os_error())));
    }
    Ok(())
}

/// The default result path: `./aggro-results/<UTC time>-<name>.json`, or `…-<name>-2.json` (3, …) when a
/// run of the same second has that name.
pub fn default_out(name: &str) -> PathBuf {
    let stamp = now_rfc3339().replace([':', '-'], "");
    let name = file_name_part(name);
    // Runs started within one second (a search, then a verify's run) must not share a file: the
    // second would replace the first's result.
    (1..)
        .map(|n| PathBuf::from("aggro-results").join(if n == 1 { format!("{stamp}-{name}.json") } else { format!("{stamp}-{name}-{n}.json") }))
        .find(|p| !p.exists())
        .expect("a free name")
}

/// `name` (a scenario's, which its file chooses) as part of a file name: letters (any script), digits,
/// `-`, `_` and `.` kept, anything else — a `/`, a space — as `_`, and no leading dot, so a name such as
/// `x/../../ESCAPED` stays inside `aggro-results`.
pub fn file_name_part(name: &str) -> String {
    let part: String = name.chars().map(|c| if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    match part.trim_start_matches('.') {
        "" => "unnamed".into(),
        rest => rest.chars().take(100).collect(),
    }
}

/// Other forms of a result a run (or `aggro report`) may also write; a group of command-line options.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Exports {
    /// Also write the interval table as CSV.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Also write the HdrHistogram interval log (one tagged histogram per interval and operation).
    #[arg(long, value_name = "PATH")]
    pub hdr_log: Option<PathBuf>,
}

impl Exports {
    /// Writes every asked-for export of `record`.
    pub fn write(&self, record: &RunRecord) -> anyhow::Result<()> {
        let outputs = [
            (self.csv.as_deref(), aggro_report::csv::intervals_csv as fn(&RunRecord) -> String),
            (self.hdr_log.as_deref(), aggro_report::hdrlog::interval_log),
        ];
        for (path, render) in outputs {
            if let Some(path) = path {
                std::fs::write(path, render(record)).with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        Ok(())
    }
}

/// Sleeps until `at`, so the shards of a run on several machines start their schedules together.
pub async fn wait_until(at: Option<SystemTime>) {
    let Some(at) = at else { return };
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            eprintln!("waiting {:.1}s for --start-at {}", wait.as_secs_f64(), humantime::format_rfc3339_millis(at));
            tokio::time::sleep(wait).await;
        }
        Err(late) => eprintln!("warning: --start-at was {:.1}s ago; starting now", late.duration().as_secs_f64()),
    }
}

/// Writes `record` as JSON to `path` (creating its directory), and any
/// `exports`. Writes to a temporary file and renames, so a crash never
/// leaves half a result — but for a path that is not a regular file
/// (`/dev/null`, a FIFO), which is written in place, never replaced.
pub fn write(record: &RunRecord, path: &Path, exports: &Exports) -> anyhow::Result<()> {
    if special(path) {
        encode(record, path).with_context(|| format!("cannot write {}", path.display()))?;
        return exports.write(record);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.partial");
    if let Err(e) = encode(record, &tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.context(format!("cannot write {}", tmp.display())));
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    exports.write(record)
}

/// Whether `path` exists and is not a regular file (a device, a FIFO).
pub fn special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `record` to `path` as it is encoded: an hours-long run's result is never held twice in memory.
fn encode(record: &RunRecord, path: &Path) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer_pretty(&mut file, record)?;
    file.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// Reads a result file.
pub fn read(path: &Path) -> anyhow::Result<RunRecord> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let record: RunRecord =
        serde_json::from_slice(&bytes).map_err(|e| crate::exit::BadInput(format!("{} is not an aggro result file: {e}", path.display())))?;
    if record.format != FORMAT {
        return Err(crate::exit::BadInput(format!("{} has format {:?}; this aggro reads {FORMAT:?}", path.display(), record.format)).into());
    }
    Ok(record)
}

/// The whole-run table, the stop reason and any warnings.
pub fn print_summary(record: &RunRecord) {
    for line in aggro_report::text::totals_lines(&record.totals, record.elapsed_s) {
        println!("{line}");
    }
    println!(
        "{}: {} due, {} started, {} completed, backlog at end {}, {:.1}s; timer lateness p99 {}",
        record.stop_message,
        record.due,
        record.started,
        record.completed,
        record.backlog_at_end,
        record.elapsed_s,
        aggro_core::units::format_nanos(record.lag.p99_ns)
    );
    for s in &record.error_samples {
        println!("first {} error: {}", s.class, s.message);
    }
    if record.generator_bound {
        println!("warning: these figures may describe aggro, not the backend (use fewer loaders, more --threads, or another machine):");
        for s in &record.generator_signals {
            println!("  {}: {}", s.signal.name(), s.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_to_a_fifo_is_written_through_it_not_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("result.fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read(fifo).unwrap()
        });
        let record = RunRecord::begun("mobile run", serde_json::json!({}), now_rfc3339(), &["request"]);
        write(&record, &fifo, &Exports::default()).unwrap();
        let read: RunRecord = serde_json::from_slice(&reader.join().unwrap()).unwrap();
        assert_eq!(read.command, "mobile run");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO, not replaced by a file");
        assert!(!dir.path().join("result.json.partial").exists());
    }
}
