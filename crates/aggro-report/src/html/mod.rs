//! The HTML report: one self-contained page per run (inline SVG charts, an
//! inline style sheet and a few lines of script; nothing fetched at view
//! time), the comparison of several runs, and the body the live view swaps in.
//!
//! # Layout
//! - [`chart`]: SVG line, stacked and percentile charts.
//! - `page`: the HTML builder, style sheet and the page's script.
//! - `run`: the sections every run has; `extra`: those of one command; `script`: a scripted swarm's counts,
//!   funnel and errors; `soak`: a watched server's resources and their trends.
//! - [`compare`]: several runs on shared axes with the ratios of their figures.

pub mod chart;
pub mod compare;
mod extra;
mod page;
mod run;
mod script;
mod soak;

use crate::record::RunRecord;
use crate::slo::Check;

pub use page::page;

/// A result file the report cannot draw (a histogram that does not decode).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ReportError(pub String);

/// The page title of a run.
pub fn title(record: &RunRecord) -> String {
    format!("aggro {} — {}", record.command, record.started_at)
}

/// The report's body (what the live view swaps in), with `checks` shown.
pub fn body(record: &RunRecord, checks: &[Check]) -> Result<String, ReportError> {
    let mut h = page::Html::default();
    run::headline(&mut h, record, checks);
    run::totals(&mut h, record);
    // A bench's record holds only its sweep (rows in `extra`), no intervals.
    let timed = !record.intervals.is_empty();
    if timed {
        run::over_time(&mut h, record).map_err(ReportError)?;
    }
    extra::sections(&mut h, record);
    soak::section(&mut h, record);
    run::distribution(&mut h, record).map_err(ReportError)?;
    if timed {
        run::generator(&mut h, record);
    }
    run::spec(&mut h, record);
    Ok(h.finish())
}

/// The whole report page of a run.
pub fn report(record: &RunRecord, checks: &[Check]) -> Result<String, ReportError> {
    Ok(page(&title(record), &body(record, checks)?, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::merged;
    use aggro_core::units::format_nanos;

    fn golden() -> RunRecord {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mobile-run.json")).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    /// The cells of the table row that starts with `first`.
    fn row(page: &str, first: &str) -> Vec<String> {
        let start = page.find(&format!("<tr><td>{first}</td>")).unwrap_or_else(|| panic!("no row {first}"));
        let end = start + page[start..].find("</tr>").unwrap();
        page[start..end].split("<td").skip(1).map(|c| c.split_once('>').unwrap().1.trim_end_matches("</td>").to_string()).collect()
    }

    #[test]
    fn the_report_names_the_evidence_that_the_generator_set_the_pace() {
        let mut r = golden();
        assert!(!report(&r, &[]).unwrap().contains("may describe the generator"));
        r.generator_bound = true;
        r.generator_signals = vec![crate::signal::GeneratorSignal {
            signal: crate::signal::Signal::Cpu,
            figure: 1.95,
            limit: 1.8,
            message: "aggro's own CPU reached 1.95 of its 2 core(s) <limit 1.80>".into(),
        }];
        let page = report(&r, &[]).unwrap();
        assert!(page.contains("may describe the generator, not the backend (cpu: aggro&#39;s own CPU reached 1.95"), "{page}");
        assert!(page.contains("&lt;limit 1.80&gt;") && !page.contains("<limit"), "the message is escaped");
    }

    #[test]
    fn the_report_shows_the_result_files_numbers() {
        let r = golden();
        let checks = crate::slo::check_all(&crate::slo::parse("p99<1s,read:p99.9<1s").unwrap(), &r).unwrap();
        let page = report(&r, &checks).unwrap();
        for op in &r.totals {
            let l = &op.latency;
            let expected: Vec<String> = vec![
                op.name.clone(),
                op.ok.to_string(),
                op.errors.to_string(),
                op.conflicts.to_string(),
                format!("{:.1}", op.ok as f64 / r.elapsed_s),
                format_nanos(l.mean_ns as u64),
                format_nanos(l.p50_ns),
                format_nanos(l.p95_ns),
                format_nanos(l.p99_ns),
                format_nanos(l.p999_ns),
                format_nanos(l.max_ns),
            ];
            assert_eq!(row(&page, &op.name), expected);
        }
        // A threshold's figure is read from the merged whole-run histogram.
        let read = merged([r.total("read").unwrap().latency_hdr.as_str()]).unwrap();
        assert_eq!(row(&page, "read:p99.9&lt;1s")[1], format_nanos(read.value_at_quantile(0.999)));
        assert_eq!(row(&page, "p99&lt;1s")[1], format_nanos(r.totals[0].latency.p99_ns));
        // One latency chart per operation, one point per interval and series (p50, p95, p99, max).
        for op in &r.operations {
            let title = format!("<title>{op} latency</title>");
            let svg_start = page[..page.find(&title).expect("a chart per operation")].rfind("<svg").unwrap();
            let points: usize = page[svg_start..].split("data-points=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            assert_eq!(points, 4 * r.intervals.len(), "{op}");
        }
        assert!(page.contains(&format!("data-intervals=\"{}\"", r.intervals.len())));
        assert!(page.contains("Thresholds: all passed"));
    }

    #[test]
    fn a_corrupted_histogram_is_a_clear_error() {
        let mut r = golden();
        r.totals[0].latency_hdr = "HISTFAAAAbroken".into();
        let err = body(&r, &[]).unwrap_err();
        assert!(err.0.contains(&r.operations[0]) && err.0.contains("bad histogram"), "{err}");
    }
}
