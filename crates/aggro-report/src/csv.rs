//! The interval table as CSV: one row per interval and operation.

use crate::record::RunRecord;
use std::fmt::Write;

/// The CSV text for `record`'s intervals (milliseconds for latencies).
pub fn intervals_csv(record: &RunRecord) -> String {
    let mut out =
        String::from("start_s,end_s,op,done,errors,conflicts,mean_ms,p50_ms,p95_ms,p99_ms,p999_ms,max_ms,backlog,planned_rate,generator_cores\n");
    let ms = |ns: f64| ns / 1e6;
    for i in &record.intervals {
        for op in &i.ops {
            let s = &op.latency;
            let _ = writeln!(
                out,
                "{:.3},{:.3},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{},{:.3}",
                i.start_s,
                i.end_s,
                op.name,
                op.ok,
                op.errors,
                op.conflicts,
                ms(s.mean_ns),
                ms(s.p50_ns as f64),
                ms(s.p95_ns as f64),
                ms(s.p99_ns as f64),
                ms(s.p999_ns as f64),
                ms(s.max_ns as f64),
                i.backlog,
                i.planned_rate.map_or(String::new(), |r| format!("{r:.1}")),
                i.cpu.generator_cores
            );
        }
    }
    out
}
