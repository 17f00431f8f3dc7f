//! A run as a standard HdrHistogram interval log (the `.hlog` format of
//! HdrHistogram's `HistogramLogWriter`), so HdrHistogram's own tools
//! (HistogramLogProcessor, HdrHistogramVisualizer, the Rust crate's
//! `IntervalLogIterator`) read aggro's data.
//!
//! One line per interval and operation, tagged with the operation's name
//! (`Tag=write`), plus `Tag=<op>/service` for service time; timestamps are
//! seconds since the run's start (`BaseTime` is the wall-clock start), the
//! interval maximum is in milliseconds (values are nanoseconds), and the
//! histogram is the interval's own V2-DEFLATE encoding, copied as it is.

use crate::record::RunRecord;
use std::fmt::Write;

/// The interval log of `record`.
pub fn interval_log(record: &RunRecord) -> String {
    let epoch =
        humantime::parse_rfc3339(&record.started_at).ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0.0, |d| d.as_secs_f64());
    let mut out = String::with_capacity(record.intervals.len() * record.operations.len() * 256);
    let _ = writeln!(out, "#[Logged with aggro {} ({})]", record.aggro_version, record.command);
    let _ = writeln!(out, "#[Histogram log format version 1.3]");
    let _ = writeln!(out, "#[StartTime: {epoch:.3} (seconds since epoch), {}]", record.started_at);
    let _ = writeln!(out, "#[BaseTime: {epoch:.3} (seconds since epoch)]");
    out.push_str("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    for i in &record.intervals {
        let length = (i.end_s - i.start_s).max(0.0);
        for op in &i.ops {
            let tag = op.name.replace([',', ' ', '\t'], "_");
            for (suffix, summary, hdr) in [("", &op.latency, &op.latency_hdr), ("/service", &op.service, &op.service_hdr)] {
                let _ = writeln!(out, "Tag={tag}{suffix},{:.3},{length:.3},{:.3},{hdr}", i.start_s, summary.max_ns as f64 / 1e6);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn hdrhistogram_reads_the_log_back() {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mobile-run.json")).unwrap();
        let record: RunRecord = serde_json::from_str(&json).unwrap();
        let log = interval_log(&record);
        let mut histograms = 0;
        let mut counted = 0;
        for entry in IntervalLogIterator::new(log.as_bytes()) {
            match entry.expect("a valid log entry") {
                LogEntry::Interval(h) => {
                    histograms += 1;
                    if h.tag().map(|t| t.as_str()) == Some(record.operations[0].as_str()) {
                        let decoded = crate::timeline::merged([h.encoded_histogram()]).unwrap();
                        counted += decoded.len();
                    }
                }
                LogEntry::BaseTime(_) | LogEntry::StartTime(_) => {}
            }
        }
        assert_eq!(histograms, 2 * record.intervals.iter().map(|i| i.ops.len()).sum::<usize>());
        let ok: u64 = record.intervals.iter().map(|i| i.ops[0].ok).sum();
        assert_eq!(counted, ok);
        assert!(ok > 0);
    }
}
