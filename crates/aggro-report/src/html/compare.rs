//! Several runs side by side: their headline figures with the ratio of each
//! to the first run's, the spec settings that differ, and their latency over
//! time, throughput and distributions on shared axes.

use super::ReportError;
use super::chart::{Chart, Scale, Series};
use super::page::Html;
use super::run::{distribution_chart, latency_unit};
use crate::record::{OpRecord, RunRecord};
use crate::timeline::{MAX_POINTS, Timeline, merged, points};
use aggro_core::units::format_nanos;
use serde_json::Value;
use std::collections::BTreeMap;

/// A run to compare and the label it is shown under (its file name, say).
pub struct Labelled<'a> {
    /// Shown in legends and column heads.
    pub label: String,
    /// The run.
    pub record: &'a RunRecord,
}

/// One headline figure of each run (`None`: the run does not have it).
struct Figure {
    name: &'static str,
    values: Vec<Option<f64>>,
    nanos: bool,
}

fn figures(runs: &[Labelled<'_>]) -> Vec<Figure> {
    fn first(r: &RunRecord) -> Option<&OpRecord> {
        r.totals.first()
    }
    let pick = |name: &'static str, nanos: bool, f: &dyn Fn(&RunRecord) -> Option<f64>| Figure {
        name,
        values: runs.iter().map(|l| f(l.record)).collect(),
        nanos,
    };
    let lat = |r: &RunRecord, f: fn(&aggro_stats::Summary) -> f64| first(r).filter(|o| o.latency.count > 0).map(|o| f(&o.latency));
    let mean_over = |r: &RunRecord, f: fn(&crate::record::IntervalRecord) -> f64| {
        (!r.intervals.is_empty()).then(|| r.intervals.iter().map(f).sum::<f64>() / r.intervals.len() as f64)
    };
    vec![
        pick("ok per second", false, &|r| first(r).map(|o| o.per_second(r.elapsed_s))),
        pick("p50", true, &|r| lat(r, |s| s.p50_ns as f64)),
        pick("p95", true, &|r| lat(r, |s| s.p95_ns as f64)),
        pick("p99", true, &|r| lat(r, |s| s.p99_ns as f64)),
        pick("p99.9", true, &|r| lat(r, |s| s.p999_ns as f64)),
        pick("max", true, &|r| lat(r, |s| s.max_ns as f64)),
        pick("errors %", false, &|r| first(r).map(|o| o.percent_of_requests(o.errors))),
        pick("conflicts %", false, &|r| first(r).map(|o| o.percent_of_requests(o.conflicts))),
        pick("backlog at end", false, &|r| Some(r.backlog_at_end as f64)),
        pick("aggro CPU (cores, mean)", false, &|r| mean_over(r, |i| i.cpu.generator_cores)),
        pick("timer lateness p99", true, &|r| (r.lag.count > 0).then_some(r.lag.p99_ns as f64)),
    ]
}

/// Every leaf of a JSON value by its `/`-joined path.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| flatten(&format!("{prefix}/{k}"), x, out)),
        other => {
            out.insert(prefix.trim_start_matches('/').to_string(), other.to_string());
        }
    }
}

/// The settings (spec paths) whose values are not the same in every run.
pub fn spec_differences(runs: &[&RunRecord]) -> Vec<(String, Vec<String>)> {
    let flat: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| {
            let mut m = BTreeMap::new();
            flatten("", &r.spec, &mut m);
            m.insert("command".into(), r.command.clone());
            m
        })
        .collect();
    let keys: std::collections::BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let vals: Vec<String> = flat.iter().map(|m| m.get(k).cloned().unwrap_or_else(|| "—".into())).collect();
            vals.windows(2).any(|w| w[0] != w[1]).then(|| (k.clone(), vals))
        })
        .collect()
}

/// The comparison page of `runs` (two or more; the first is the baseline of the ratios).
pub fn compare(runs: &[Labelled<'_>]) -> Result<String, ReportError> {
    let mut h = Html::default();
    h.raw(&format!("<h1>aggro: {} runs compared</h1>", runs.len()));
    let listing: Vec<Vec<String>> = runs
        .iter()
        .map(|l| {
            let r = l.record;
            let op = r.operations.first().cloned().unwrap_or_default();
            vec![l.label.clone(), r.command.clone(), op, r.started_at.clone(), format!("{:.1}s", r.elapsed_s), r.stop_message.clone()]
        })
        .collect();
    h.table("runs", &["run", "command", "first operation", "started", "length", "ended"], &listing);

    h.section("ratios", &format!("Headline figures (ratios to {})", runs[0].label));
    let mut head: Vec<String> = vec!["figure".into()];
    head.extend(runs.iter().map(|l| l.label.clone()));
    head.extend(runs.iter().skip(1).map(|l| format!("{} ÷ {}", l.label, runs[0].label)));
    let rows: Vec<Vec<String>> = figures(runs)
        .into_iter()
        .map(|f| {
            let show = |v: Option<f64>| match v {
                None => "—".to_string(),
                Some(v) if f.nanos => format_nanos(v as u64),
                Some(v) => format!("{v:.2}"),
            };
            let mut row = vec![f.name.to_string()];
            row.extend(f.values.iter().map(|v| show(*v)));
            row.extend(f.values.iter().skip(1).map(|v| match (f.values[0], v) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.3}×", b / a),
                _ => "—".into(),
            }));
            row
        })
        .collect();
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    h.table("ratios", &head_refs, &rows);

    let records: Vec<&RunRecord> = runs.iter().map(|l| l.record).collect();
    let diffs = spec_differences(&records);
    h.section("differences", "Settings that differ");
    if diffs.is_empty() {
        h.para("The runs' resolved specs are the same.");
    } else {
        let mut head = vec!["setting"];
        head.extend(runs.iter().map(|l| l.label.as_str()));
        let rows: Vec<Vec<String>> = diffs.into_iter().map(|(k, v)| std::iter::once(k).chain(v).collect()).collect();
        h.table("differences", &head, &rows);
    }

    h.section("over-time", "Over time (first operation of each run)");
    let max_ns = records.iter().filter_map(|r| r.totals.first()).map(|o| o.latency.max_ns).max().unwrap_or(0);
    let (div, unit) = latency_unit(max_ns);
    let mut p99 = Chart::new("p99 latency", "elapsed (s)", unit);
    p99.y_scale = Scale::Log;
    let mut rate = Chart::new("Throughput", "elapsed (s)", "ok per second");
    let mut dist = Vec::new();
    for l in runs {
        let t = Timeline::new(l.record, MAX_POINTS);
        let x = t.at_s();
        let lat = t.latency(0, false).map_err(|e| ReportError(format!("{}: {e}", l.label)))?;
        p99.series.push(Series::new(l.label.clone(), points(&x, lat.iter().map(|s| if s.count == 0 { f64::NAN } else { s.p99_ns as f64 / div }))));
        rate.series.push(Series::new(l.label.clone(), points(&x, t.rate(|i| i.ops.first().map_or(0, |o| o.ok)))));
        if let Some(o) = l.record.totals.first().filter(|o| o.latency.count > 0) {
            dist.push((l.label.clone(), merged([o.latency_hdr.as_str()]).map_err(|e| ReportError(format!("{}: {e}", l.label)))?));
        }
    }
    h.chart(&p99);
    h.chart(&rate);
    h.section("distribution", "Latency distribution, whole run");
    h.chart(&distribution_chart("Latency by percentile", &dist));
    let title = format!("aggro compare: {}", runs.iter().map(|l| l.label.as_str()).collect::<Vec<_>>().join(" vs "));
    Ok(super::page(&title, &h.finish(), None))
}
