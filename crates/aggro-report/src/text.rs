//! The console view: one line per interval (per operation when a request
//! has timed steps), and the DynamoDB/Spanner tool's per-loader view.

use crate::record::{IntervalRecord, OpRecord};
use aggro_core::units::format_nanos;
use aggro_stats::{OpStats, Summary};

/// The column header for `interval_line`.
pub fn header() -> String {
    format!(
        "{:>8} {:<16} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6}",
        "elapsed", "op", "done", "errors", "conflicts", "mean", "median", "p95", "p99", "max", "backlog", "cpu"
    )
}

fn figures(name: &str, done: u64, errors: u64, conflicts: u64, s: &Summary) -> String {
    let t = |ns: u64| if done == 0 { "-".to_string() } else { format_nanos(ns) };
    format!(
        "{:<16} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        name,
        done,
        errors,
        conflicts,
        t(s.mean_ns as u64),
        t(s.p50_ns),
        t(s.p95_ns),
        t(s.p99_ns),
        t(s.max_ns)
    )
}

/// One line per operation of an interval: elapsed, done, errors, conflicts,
/// mean, median, p95, p99, max, backlog, and aggro's own CPU.
pub fn interval_lines(i: &IntervalRecord) -> Vec<String> {
    i.ops
        .iter()
        .enumerate()
        .map(|(k, op)| {
            let elapsed = format!("{:.1}s", i.end_s);
            let tail = if k == 0 { format!("{:>8} {:>5.0}%", i.backlog, i.cpu.generator_cores * 100.0) } else { String::new() };
            format!("{:>8} {} {}", if k == 0 { elapsed } else { String::new() }, op_figures(op), tail)
        })
        .collect()
}

fn op_figures(op: &OpRecord) -> String {
    figures(&op.name, op.ok, op.errors, op.conflicts, &op.latency)
}

/// The per-loader view of the DynamoDB/Spanner tool: one line per loader for an interval.
pub fn loader_line(elapsed_s: f64, loader: usize, stats: &OpStats) -> String {
    format!("{:>7.1}s {}", elapsed_s, figures(&format!("loader {loader}"), stats.ok, stats.errors(), stats.conflicts(), &Summary::of(&stats.latency)))
}

/// The whole-run table: one line per operation, with p99.9 too.
pub fn totals_lines(ops: &[OpRecord], elapsed_s: f64) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<16} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "op", "done", "per sec", "errors", "conflicts", "mean", "median", "p95", "p99", "p99.9", "max"
    )];
    for op in ops {
        let s = &op.latency;
        let t = |ns: u64| if op.ok == 0 { "-".to_string() } else { format_nanos(ns) };
        lines.push(format!(
            "{:<16} {:>10} {:>10.1} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            op.name,
            op.ok,
            op.ok as f64 / elapsed_s.max(1e-9),
            op.errors,
            op.conflicts,
            t(s.mean_ns as u64),
            t(s.p50_ns),
            t(s.p95_ns),
            t(s.p99_ns),
            t(s.p999_ns),
            t(s.max_ns)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use aggro_stats::Recorder;

    #[test]
    fn lines_show_the_figures() {
        let mut r = Recorder::new(1);
        r.record_ok(0, 2_000_000, 1_000_000);
        let ops = crate::record::op_records(&["write"], &r);
        let i = IntervalRecord {
            start_s: 0.0,
            end_s: 10.0,
            backlog: 7,
            due: 1,
            started: 1,
            planned_rate: Some(1.0),
            ops,
            lag: Summary::default(),
            lag_hdr: String::new(),
            cpu: Default::default(),
            behind: 0,
            server: None,
        };
        let lines = interval_lines(&i);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("write") && lines[0].contains("2.00ms") && lines[0].contains(" 7 "), "{}", lines[0]);
        assert!(header().contains("backlog"));
        assert!(totals_lines(&i.ops, 10.0)[1].contains("0.1"));
    }
}
