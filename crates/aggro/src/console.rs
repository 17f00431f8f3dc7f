//! The console observer: interval lines, a progress bar, and the interval
//! records that go into the result file.

use aggro_core::Nanos;
use aggro_report::host::CpuSampler;
use aggro_report::record::{IntervalRecord, op_records};
use aggro_report::text;
use aggro_runner::{IntervalReport, Observer};
use aggro_stats::Summary;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How much the console shows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verbosity {
    /// No interval lines or progress bar.
    pub quiet: bool,
}

/// Prints each interval and keeps its record.
pub struct Console {
    names: &'static [&'static str],
    verbosity: Verbosity,
    sampler: CpuSampler,
    bar: Option<ProgressBar>,
    /// Interval records so far.
    pub intervals: Vec<IntervalRecord>,
    /// The live view, if the run serves one.
    pub live: Option<crate::live::Live>,
}

impl Console {
    /// A console for a run of `names` operations lasting `duration_ns` (if known).
    pub fn new(names: &'static [&'static str], duration_ns: Option<Nanos>, verbosity: Verbosity) -> Self {
        // A bar only on a terminal: elsewhere (a log file, CI) it would be
        // noise, and indicatif drops println lines when it cannot draw.
        let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = (!verbosity.quiet && on_terminal).then(|| {
            let bar = match duration_ns {
                Some(d) => ProgressBar::new(d / 1_000_000_000),
                None => ProgressBar::new_spinner(),
            };
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len}s  backlog {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()));
            bar.println(text::header());
            bar
        });
        if bar.is_none() && !verbosity.quiet {
            say(&text::header());
        }
        Self { names, verbosity, sampler: CpuSampler::new(), bar, intervals: Vec::new(), live: None }
    }

    fn print(&self, line: String) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if !self.verbosity.quiet => say(&line),
            None => {}
        }
    }

    /// Removes the progress bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Console {
    fn on_interval(&mut self, r: &IntervalReport<'_>) {
        let cpu = self.sampler.sample();
        let record = IntervalRecord {
            start_s: r.start_ns as f64 / 1e9,
            end_s: r.end_ns as f64 / 1e9,
            backlog: r.backlog,
            due: r.due,
            started: r.started,
            planned_rate: r.planned_rate,
            ops: op_records(self.names, r.merged),
            lag: Summary::of(&r.merged.lag),
            lag_hdr: aggro_stats::encode::to_base64(&r.merged.lag),
            cpu,
            behind: r.behind,
            server: None,
        };
        if let Some(live) = &self.live {
            live.interval(&record, r.merged);
        }
        for line in text::interval_lines(&record) {
            self.print(line);
        }
        // Loaders' own figures come only when the plan keeps them apart (`--per-loader`, the DynamoDB/Spanner tool's view).
        for (i, l) in r.loaders.iter().enumerate() {
            self.print(text::loader_line(record.end_s, i, &l.ops[0]));
        }
        self.intervals.push(record);
    }

    fn on_tick(&mut self, elapsed_ns: Nanos, backlog: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(elapsed_ns / 1_000_000_000);
            bar.set_message(backlog.to_string());
        }
    }
}

/// Prints a line of a run's progress. When standard output was closed (piped into `head`), the run
/// goes on quietly: its output goes to /dev/null from then on, so that it still writes its result
/// file and exits with its own code.
pub fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        let _ = out.flush();
        // SAFETY: open and dup2 on file descriptors this process owns; stdout's lock is held.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if null >= 0 {
                libc::dup2(null, libc::STDOUT_FILENO);
                libc::close(null);
            }
        }
    }
}
