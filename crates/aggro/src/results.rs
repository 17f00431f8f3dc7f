//! `aggro report`, `aggro compare`, `aggro merge`: what is done with result files.

use crate::exit::{BadInput, ThresholdsFailed};
use crate::run::session::{self, Exports};
use aggro_report::html::{self, compare::Labelled};
use aggro_report::{merge, slo};
use anyhow::Context;
use clap::Args;
use std::path::Path;
use std::path::PathBuf;
use std::time::Instant;

fn label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().trim_end_matches(".json").to_string())
}

fn write_html(path: &Path, page: &str) -> anyhow::Result<()> {
    std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))
}

pub fn report(a: ReportArgs) -> anyhow::Result<()> {
    let began = Instant::now();
    let thresholds = a.slo.map(|t| t.0).unwrap_or_default();
    let record = session::read(&a.file)?;
    let checks = slo::check_all(&thresholds, &record).map_err(BadInput)?;
    let page = html::report(&record, &checks).map_err(|e| BadInput(format!("{}: {e}", a.file.display())))?;
    let out = a.out.unwrap_or_else(|| a.file.with_extension("html"));
    write_html(&out, &page)?;
    a.exports.write(&record)?;
    println!(
        "report: {} ({:.0} kB, {} intervals, {:.2}s)",
        out.display(),
        page.len() as f64 / 1e3,
        record.intervals.len(),
        began.elapsed().as_secs_f64()
    );
    for c in &checks {
        println!("{} {}: {}", if c.passed { "pass" } else { "FAIL" }, c.threshold, c.measured);
    }
    match checks.iter().filter(|c| !c.passed).count() {
        0 => Ok(()),
        n => Err(ThresholdsFailed(format!("{n} of {} thresholds failed (the report was written)", checks.len())).into()),
    }
}

pub fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let records = a.files.iter().map(|f| session::read(f)).collect::<anyhow::Result<Vec<_>>>()?;
    let runs: Vec<Labelled<'_>> = a.files.iter().zip(&records).map(|(f, r)| Labelled { label: label(f), record: r }).collect();
    let page = html::compare::compare(&runs).map_err(|e| BadInput(e.to_string()))?;
    write_html(&a.out, &page)?;
    println!("comparison: {} ({} runs)", a.out.display(), runs.len());
    Ok(())
}

pub fn merge(a: MergeArgs) -> anyhow::Result<()> {
    let shards = a.files.iter().map(|f| session::read(f)).collect::<anyhow::Result<Vec<_>>>()?;
    let named: Vec<_> = a.files.iter().map(|f| f.as_path()).zip(&shards).collect();
    aggro_report::identity::shards_of_one_run(&named).map_err(BadInput)?;
    let labels: Vec<String> = a.files.iter().map(|f| f.display().to_string()).collect();
    let mut merged = merge::merge(&shards, &labels).map_err(|e| BadInput(e.to_string()))?;
    // A swarm's funnel, storm and script counts, taken again over the whole run.
    let lines = crate::arena::merged::retake(&shards, &mut merged).map_err(|e| BadInput(format!("a shard's bots' figures are malformed: {e}")))?;
    session::write(&merged, &a.out, &Exports::default())?;
    session::print_summary(&merged);
    lines.iter().for_each(|l| println!("{l}"));
    println!("merged {} shards: {}", shards.len(), a.out.display());
    Ok(())
}

/// `aggro report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The result file.
    pub file: PathBuf,
    /// The HTML file (default: the result file's name with .html).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Pass/fail thresholds on the whole run, such as p99<50ms,errors<0.1% (exit code 3 when one fails).
    #[arg(long, value_parser = thresholds)]
    pub slo: Option<Thresholds>,
    #[command(flatten)]
    pub exports: crate::run::session::Exports,
}

/// `aggro compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more result files; the first is the baseline of the ratios.
    #[arg(num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// The HTML file.
    #[arg(long, short, default_value = "compare.html")]
    pub out: PathBuf,
}

/// `aggro merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result files.
    #[arg(num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// The merged result file.
    #[arg(long, short)]
    pub out: PathBuf,
}

/// `--slo`: the run's thresholds.
#[derive(Clone, Debug)]
pub struct Thresholds(pub Vec<aggro_report::slo::Threshold>);

fn thresholds(text: &str) -> Result<Thresholds, String> {
    aggro_report::slo::parse(text).map(Thresholds)
}
