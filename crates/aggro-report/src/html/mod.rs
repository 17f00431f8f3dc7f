//! The HTML report: one self-contained page per run (inline SVG charts, an
//! inline style sheet and a few lines of script; nothing fetched at view
//! time), the comparison of several runs, and the body the live view swaps in.
//!
//! # Layout
//! - [`chart`]: SVG line, stacked and percentile charts.
//! - `page`: the HTML builder, style sheet and the page's script.
//! - `run`: the sections every run has; `extra`: those of one command.
//! - [`compare`]: several runs on shared axes with the ratios of their figures.

pub mod chart;
pub mod compare;
mod extra;
mod page;
mod run;

use crate::record::RunRecord;
use crate::slo::Check;

pub use page::page;

/// A result file the report cannot draw (a histogram that does not decode).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportError(pub String);

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReportError {}

/// The page title of a run.
pub fn title(record: &RunRecord) -> String {
    format!("aggro {} — {}", record.command, record.started_at)
}

/// The report's body (what the live view swaps in), with `checks` shown.
pub fn body(record: &RunRecord, checks: &[Check]) -> Result<String, ReportError> {
    let mut h = page::Html::default();
    run::headline(&mut h, record, checks);
    run::totals(&mut h, record);
    run::over_time(&mut h, record).map_err(ReportError)?;
    extra::sections(&mut h, record);
    run::distribution(&mut h, record).map_err(ReportError)?;
    run::generator(&mut h, record);
    run::spec(&mut h, record);
    Ok(h.finish())
}

/// The whole report page of a run.
pub fn report(record: &RunRecord, checks: &[Check]) -> Result<String, ReportError> {
    Ok(page(&title(record), &body(record, checks)?, None))
}
