//! A scripted swarm's own measurements in its result file: each name a script
//! timed (`measure("login", …)`, and `http` for every HTTP request) is an
//! operation of every interval and of the run (histograms merged, never
//! averaged), its stages (`stage:NAME`) too, printed as the funnel; its counters
//! (`count("bought")`), first errors and funnel go beside.

use super::funnel::Funnel;
use super::record::ms;
use super::record::op;
use super::storm::Storm;
use super::tally::Tally;
use aggro_report::record::{OpRecord, RunRecord};
use aggro_stats::{Histogram, Summary};
use aggro_swarm::NamedMeasures;
use aggro_swarm::{RECONNECT, STAGE};

/// An interval's operations of a script's own: each name it timed, failures by class beside.
pub fn interval_ops(interval: &NamedMeasures) -> Vec<OpRecord> {
    with_failed_names(interval).iter().map(|(name, h)| with_failures(op(name, h), &interval.failed)).collect()
}

/// Adds `tally`'s whole-run measures to `record`'s operations (its intervals have theirs, [`interval_ops`]);
/// returns the lines to print about them (a script's counts and errors, the funnel, the storm).
pub fn add(record: &mut RunRecord, tally: &Tally) -> Vec<String> {
    let (whole, errors, error_count) = (&tally.whole, &tally.whole.errors, tally.script_errors);
    let (totals, failed, counts) = (with_failed_names(whole), &whole.failed, &whole.counted);
    let mut lines = Vec::new();
    for (name, h) in &totals {
        record.operations.push(name.clone());
        let total = with_failures(op(name, h), failed);
        if name.starts_with(STAGE) || name == RECONNECT {
            // Stages are printed as the funnel, the way back as the storm, below.
            record.totals.push(total);
            continue;
        }
        let s = Summary::of(h);
        let mut line = format!("measured {name}: {} times, p50 {:.1} p99 {:.1} max {:.1} ms", s.count, ms(s.p50_ns), ms(s.p99_ns), ms(s.max_ns));
        if total.errors > 0 {
            let classes: Vec<String> = total.failures.iter().map(|(c, n)| format!("{c} {n}")).collect();
            line.push_str(&format!("; failed {} ({})", total.errors, classes.join(", ")));
        }
        lines.push(line);
        record.totals.push(total);
    }
    if !counts.is_empty() {
        lines.push(format!("counted: {}", counts.iter().map(|(n, c)| format!("{n} {c}")).collect::<Vec<_>>().join(", ")));
    }
    if error_count > 0 {
        lines.push(format!("script errors: {error_count} bots stopped; the first: {}", errors.first().map_or("", String::as_str)));
    }
    lines.extend(Funnel::of(tally).iter().flat_map(Funnel::lines));
    lines.extend(Storm::of(tally).iter().flat_map(Storm::lines));
    lines
}

/// The result file's `extra.script` (and the live view's): counts, first errors, the bots they stopped,
/// the funnel, the storm.
pub fn script_extra(tally: &Tally) -> serde_json::Value {
    let w = &tally.whole;
    serde_json::json!({ "counts": w.counted, "errors": w.errors, "error_count": tally.script_errors, "funnel": Funnel::of(tally), "storm": Storm::of(tally) })
}

/// An interval's timed names, and an empty histogram for each name that only failed in it.
fn with_failed_names(interval: &NamedMeasures) -> Vec<(String, Histogram)> {
    let mut all = interval.timed.clone();
    for (name, _, _) in &interval.failed {
        if !all.iter().any(|(n, _)| n == name) {
            all.push((name.clone(), aggro_stats::new_histogram()));
        }
    }
    all
}

/// `op` with its failures of `failed` (name, class, count) as errors by class.
fn with_failures(mut op: OpRecord, failed: &[(String, String, u64)]) -> OpRecord {
    for (_, class, n) in failed.iter().filter(|(name, _, _)| *name == op.name) {
        op.errors += n;
        *op.failures.entry(class.clone()).or_default() += n;
    }
    op
}

/// No bot joined, none was refused or failed by the server (no failed connection, refusal or HTTP
/// failure), and scripts raised: the script, not the server, stopped the run — bad input, not a server gone.
pub fn only_the_script_failed(c: &aggro_swarm::SwarmCounters) -> bool {
    c.script_errors > 0 && c.connects == 0 && c.failed_joins == 0 && c.refused == 0 && c.server_errors == 0
}
