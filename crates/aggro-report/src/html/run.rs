//! The sections every run has: the headline, thresholds, the whole-run
//! table, each operation's latency over time, throughput against the
//! planned rate, backlog, failures by class, the whole-run latency
//! distribution, the generator's own health, and the resolved spec.

use super::chart::{Chart, Mark, Scale, Series};
use super::page::Html;
use crate::record::RunRecord;
use crate::slo::Check;
use crate::timeline::{MAX_POINTS, Timeline, merged, points};
use aggro_core::units::format_nanos;
use aggro_stats::Histogram;
use std::collections::BTreeSet;

/// Most operations drawn in the distribution chart (one colour each).
const MAX_LINES: usize = 8;

/// The unit latency charts of a run are drawn in: whichever keeps its largest value readable.
pub fn latency_unit(max_ns: u64) -> (f64, &'static str) {
    match max_ns {
        0..100_000 => (1e3, "µs"),
        100_000..100_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

pub(super) fn headline(h: &mut Html, r: &RunRecord, checks: &[Check]) {
    h.raw(&format!("<h1>{}</h1>", super::chart::escape(&super::title(r))));
    let host = &r.host;
    h.raw(&format!(
        r#"<p class="meta" data-intervals="{}">{:.1} s; {} · {} due, {} started, {} completed, backlog at end {} · host {} ({} CPUs, {:.1} GiB, Linux {}) · aggro {}</p>"#,
        r.intervals.len(),
        r.elapsed_s,
        super::chart::escape(&r.stop_message),
        r.due,
        r.started,
        r.completed,
        r.backlog_at_end,
        super::chart::escape(&host.hostname),
        host.cpus,
        host.memory_bytes as f64 / (1u64 << 30) as f64,
        super::chart::escape(&host.kernel),
        super::chart::escape(&r.aggro_version),
    ));
    if r.generator_bound {
        let evidence: Vec<String> =
            r.generator_signals.iter().map(|s| format!("{}: {}", s.signal.name(), super::chart::escape(&s.message))).collect();
        let because = if evidence.is_empty() { String::new() } else { format!(" ({})", evidence.join("; ")) };
        h.raw(&format!(r#"<p class="warn">These figures may describe the generator, not the backend{because}.</p>"#));
    }
    if !checks.is_empty() {
        let failed = checks.iter().filter(|c| !c.passed).count();
        h.section(
            "slo",
            &if failed == 0 { "Thresholds: all passed".to_string() } else { format!("Thresholds: {failed} of {} failed", checks.len()) },
        );
        let rows: Vec<Vec<String>> =
            checks.iter().map(|c| vec![c.threshold.clone(), c.measured.clone(), if c.passed { "+pass".into() } else { "!FAIL".into() }]).collect();
        h.table("slo", &["threshold", "measured", ""], &rows);
    }
}

pub(super) fn totals(h: &mut Html, r: &RunRecord) {
    h.section("totals", "Whole run");
    let rows: Vec<Vec<String>> = r
        .totals
        .iter()
        .map(|o| {
            let l = &o.latency;
            let t = |ns: u64| if l.count == 0 { "-".to_string() } else { format_nanos(ns) };
            vec![
                o.name.clone(),
                o.ok.to_string(),
                o.errors.to_string(),
                o.conflicts.to_string(),
                format!("{:.1}", o.per_second(r.elapsed_s)),
                t(l.mean_ns as u64),
                t(l.p50_ns),
                t(l.p95_ns),
                t(l.p99_ns),
                t(l.p999_ns),
                t(l.max_ns),
            ]
        })
        .collect();
    h.table("totals", &["operation", "ok", "errors", "conflicts", "ok/s", "mean", "p50", "p95", "p99", "p99.9", "max"], &rows);
    for s in &r.error_samples {
        h.para(&format!("first {} error: {}", s.class, s.message));
    }
}

pub(super) fn over_time(h: &mut Html, r: &RunRecord) -> Result<(), String> {
    let t = Timeline::new(r, MAX_POINTS);
    let per = match t.group_size() {
        1 => String::new(),
        n => format!(" ({n} intervals per point, histograms merged)"),
    };
    h.section("over-time", &format!("Over time{per}"));
    let x = t.at_s();
    let counted: Vec<usize> = (0..r.operations.len()).filter(|&k| r.totals.get(k).is_some_and(|o| o.latency.count > 0)).collect();
    for (&k, l) in counted.iter().zip(t.latency_of_each(&counted)) {
        let l = l.map_err(|e| format!("operation {}: {e}", r.operations[k]))?;
        let (div, unit) = latency_unit(r.totals[k].latency.max_ns);
        let series = |name: &str, pick: fn(&aggro_stats::Summary) -> f64| {
            Series::new(name, points(&x, l.iter().map(|s| if s.count == 0 { f64::NAN } else { pick(s) / div })))
        };
        let mut c = Chart::new(format!("{} latency", r.operations[k]), "elapsed (s)", unit)
            .with(series("p50", |s| s.p50_ns as f64))
            .with(series("p95", |s| s.p95_ns as f64))
            .with(series("p99", |s| s.p99_ns as f64))
            .with(series("max", |s| s.max_ns as f64));
        c.y_scale = Scale::Log;
        h.chart(&c);
    }
    let mut rate = Chart::new("Throughput", "elapsed (s)", "per second").with(Series::new(
        format!("{} ok", r.operations.first().map_or("", String::as_str)),
        points(&x, t.rate(|i| i.ops.first().map_or(0, |o| o.ok))),
    ));
    if r.intervals.iter().any(|i| i.planned_rate.is_some()) {
        rate = rate.with(Series::new("planned", points(&x, t.mean(|i| i.planned_rate.unwrap_or(f64::NAN)))));
    }
    h.chart(&rate);
    if r.intervals.iter().any(|i| i.planned_rate.is_some() || i.backlog > 0) {
        h.chart(
            &Chart::new("Backlog (due, not started)", "elapsed (s)", "requests")
                .with(Series::new("backlog", points(&x, t.max(|i| i.backlog as f64)))),
        );
    }
    failures(h, r, &t, &x);
    Ok(())
}

fn failures(h: &mut Html, r: &RunRecord, t: &Timeline<'_>, x: &[f64]) {
    let classes: BTreeSet<&str> = r.totals.iter().flat_map(|o| o.failures.keys().map(String::as_str)).collect();
    if classes.is_empty() {
        h.para("No errors or conflicts.");
        return;
    }
    let mut c = Chart::new("Failures by class (all operations)", "elapsed (s)", "per second");
    c.stacked = true;
    for class in &classes {
        let count = |i: &crate::record::IntervalRecord| i.ops.iter().map(|o| o.failures.get(*class).copied().unwrap_or(0)).sum();
        c.series.push(Series::new(*class, points(x, t.rate(count))));
    }
    h.chart(&c);
    let rows: Vec<Vec<String>> =
        r.totals.iter().flat_map(|o| o.failures.iter().map(move |(class, n)| vec![o.name.clone(), class.clone(), n.to_string()])).collect();
    h.table("failures", &["operation", "class", "count"], &rows);
}

/// The percentile plot of HdrHistogram users: x is the percentile on a
/// log scale of 1/(1−q) (90%, 99%, 99.9% …), y the latency.
pub fn distribution_chart(title: &str, lines: &[(String, Histogram)]) -> Chart {
    let max_ns = lines.iter().map(|(_, h)| h.max()).max().unwrap_or(0);
    let (div, unit) = latency_unit(max_ns);
    let mut c = Chart::new(title, "percentile", unit);
    c.y_scale = Scale::Log;
    let mut nines: f64 = 1.0;
    for (name, hist) in lines.iter().take(MAX_LINES) {
        let top = (hist.len().max(2) as f64).log10();
        nines = nines.max(top.floor());
        let pts = hist
            .iter_quantiles(4)
            .map(|v| ((1.0 / (1.0 - v.quantile_iterated_to()).max(1e-12)).log10().min(top), v.value_iterated_to() as f64 / div))
            .collect();
        c.series.push(Series::new(name.clone(), pts));
    }
    c.x_ticks = Some(
        (0..=nines as usize)
            .map(|k| {
                let label = match k {
                    0 => "0%".to_string(),
                    k => format!("{}%", 100.0 - 100.0 / 10f64.powi(k as i32)),
                };
                (k as f64, label)
            })
            .collect(),
    );
    c
}

pub(super) fn distribution(h: &mut Html, r: &RunRecord) -> Result<(), String> {
    h.section("distribution", "Latency distribution, whole run (merged histograms)");
    let mut lines = Vec::new();
    for o in r.totals.iter().filter(|o| o.latency.count > 0) {
        lines.push((o.name.clone(), merged([o.latency_hdr.as_str()]).map_err(|e| format!("operation {}: {e}", o.name))?));
    }
    if lines.len() > MAX_LINES {
        h.para(&format!("The first {MAX_LINES} of {} operations with data are drawn; the table above has them all.", lines.len()));
    }
    h.chart(&distribution_chart("Latency by percentile", &lines));
    Ok(())
}

pub(super) fn generator(h: &mut Html, r: &RunRecord) {
    let t = Timeline::new(r, MAX_POINTS);
    let x = t.at_s();
    h.section("generator", "The generator's own health");
    let mut lag = Chart::new("Timer lateness p99 (highest interval in each point)", "elapsed (s)", "µs")
        .with(Series::new("p99", points(&x, t.max(|i| if i.lag.count == 0 { f64::NAN } else { i.lag.p99_ns as f64 / 1e3 }))));
    lag.marks.push(Mark::Y(1000.0, "1 ms: generator-bound".into()));
    h.chart(&lag);
    h.chart(
        &Chart::new("CPU", "elapsed (s)", "cores / machine share")
            .with(Series::new("aggro (cores)", points(&x, t.mean(|i| i.cpu.generator_cores))))
            .with(Series::new("machine busy (0–1)", points(&x, t.mean(|i| i.cpu.machine_busy)))),
    );
}

pub(super) fn spec(h: &mut Html, r: &RunRecord) {
    h.section("spec", "Run description");
    h.details(
        "resolved spec (run it again with the same seed to make the same requests)",
        &serde_json::to_string_pretty(&r.spec).unwrap_or_default(),
    );
    h.details("host", &serde_json::to_string_pretty(&r.host).unwrap_or_default());
    h.details("stop reason", &serde_json::to_string_pretty(&r.stop_reason).unwrap_or_default());
}
