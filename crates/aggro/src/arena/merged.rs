//! A swarm's shards merged (`aggro merge` of `--worker i/n` runs): the bots' own figures taken again over
//! the whole run — a script's funnel and storm, or built-in bots' funnel and storm, from the merged record (each
//! stage's and the way back's histograms merged across the shards, peaks from the merged intervals),
//! counts and script errors added up — so the merged file says what the one run said of itself.

use super::funnel::Funnel;
use super::storm::Storm;
use aggro_report::record::RunRecord;
use aggro_swarm::profile::ERRORS_KEPT;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Sets `record`'s (the merge of `shards`) `extra.script` when the shards ran a script, its
/// `extra.funnel` and `extra.storm` when they were built-in bots with a way in; returns the lines that
/// print them.
pub fn retake(shards: &[RunRecord], record: &mut RunRecord) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    if let Some((script, printed)) = script_extra(shards, record)? {
        record.extra["script"] = script;
        lines = printed;
    }
    let extras: Vec<&Value> = shards.iter().map(|s| &s.extra).filter(|e| e.get("funnel").is_some()).collect();
    if !extras.is_empty() {
        let funnel = Funnel::merged(record, &each(&extras, "funnel")?)?;
        let storm = Storm::merged(record, &each(&extras, "storm")?, &attempts_by_interval(shards, record.intervals.len()))?;
        lines.extend(funnel.iter().flat_map(Funnel::lines));
        lines.extend(storm.iter().flat_map(Storm::lines));
        (record.extra["funnel"], record.extra["storm"]) = (json!(funnel), json!(storm));
    }
    Ok(lines)
}

/// `extra.script` of `record`, the merge of `shards`, with the lines that print it; None when no shard
/// ran a script.
fn script_extra(shards: &[RunRecord], record: &RunRecord) -> anyhow::Result<Option<(Value, Vec<String>)>> {
    let scripts: Vec<&Value> = shards.iter().filter_map(|s| s.extra.get("script")).collect();
    if scripts.is_empty() {
        return Ok(None);
    }
    let funnel = Funnel::merged(record, &each(&scripts, "funnel")?)?;
    let storm = Storm::merged(record, &each(&scripts, "storm")?, &attempts_by_interval(shards, record.intervals.len()))?;
    let mut counts: Vec<(String, u64)> = Vec::new();
    for (name, n) in items::<(String, u64)>(&scripts, "counts")? {
        match counts.iter_mut().find(|(c, _)| *c == name) {
            Some((_, total)) => *total += n,
            None => counts.push((name, n)),
        }
    }
    let errors: Vec<String> = items(&scripts, "errors")?.into_iter().take(ERRORS_KEPT).collect();
    let error_count: u64 = scripts.iter().filter_map(|s| s["error_count"].as_u64()).sum();
    let mut lines = Vec::new();
    if !counts.is_empty() {
        lines.push(format!("counted: {}", counts.iter().map(|(n, c)| format!("{n} {c}")).collect::<Vec<_>>().join(", ")));
    }
    if error_count > 0 {
        lines.push(format!("script errors: {error_count} bots stopped; the first: {}", errors.first().map_or("", String::as_str)));
    }
    lines.extend(funnel.iter().flat_map(Funnel::lines));
    lines.extend(storm.iter().flat_map(Storm::lines));
    Ok(Some((json!({ "counts": counts, "errors": errors, "error_count": error_count, "funnel": funnel, "storm": storm }), lines)))
}

/// Each value's `field` read as `T`, those without one left out.
fn each<T: DeserializeOwned>(values: &[&Value], field: &str) -> serde_json::Result<Vec<T>> {
    values.iter().map(|v| &v[field]).filter(|v| !v.is_null()).map(T::deserialize).collect()
}

/// The items of each script's list `field`, one after another, read as `T`.
fn items<T: DeserializeOwned>(scripts: &[&Value], field: &str) -> serde_json::Result<Vec<T>> {
    Ok(each::<Vec<T>>(scripts, field)?.into_iter().flatten().collect())
}

/// Each merged interval's attempts to come back, the shards' k-th intervals' summed (their swarm's
/// `extra.arena_swarm.intervals[k].reconnect_attempts`).
fn attempts_by_interval(shards: &[RunRecord], intervals: usize) -> Vec<u64> {
    let mut attempts = vec![0; intervals];
    for s in shards {
        let Some(ivs) = s.extra.pointer(&format!("/{}/intervals", super::record::SWARM)).and_then(Value::as_array) else { continue };
        for (k, iv) in ivs.iter().enumerate().take(intervals) {
            attempts[k] += iv["reconnect_attempts"].as_u64().unwrap_or(0);
        }
    }
    attempts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::record::{Whole, interval, op, run_record};
    use aggro_stats::{Summary, new_histogram};
    use aggro_swarm::{RECONNECT, STAGE};

    /// A scripted shard: its players' ways back (ms) and stage times (ms) in its one interval and its
    /// second, its attempts to come back in each, and what its own run said of them.
    fn shard(back_ms: &[u64], matched_ms: [&[u64]; 2], attempts: [u64; 2], storm: Value, funnel: Value) -> RunRecord {
        let hist = |ms: &[u64]| {
            let mut h = new_histogram();
            ms.iter().for_each(|v| h.record(v * 1_000_000).unwrap());
            h
        };
        let matched = format!("{STAGE}matched");
        let ivs =
            (0..2).map(|k| interval(k as f64, k as f64 + 1.0, 0, None, vec![op(&matched, &hist(matched_ms[k]))], Summary::default(), 0.0)).collect();
        let whole = Whole {
            command: "arena swarm",
            spec: json!({}),
            started_at: "2026-11-29T05:00:00Z".into(),
            operations: vec![RECONNECT.into(), matched.clone()],
            totals: vec![op(RECONNECT, &hist(back_ms)), op(&matched, &hist(&[matched_ms[0], matched_ms[1]].concat()))],
            lag: Summary::default(),
            count: 0,
            elapsed_s: 2.0,
            stop_kind: "completed",
            stop_message: "the duration passed".into(),
            generator_bound: false,
            extra: json!({
                "script": { "counts": [["bought", 2]], "errors": ["boom"], "error_count": 1, "funnel": funnel, "storm": storm },
                "arena_swarm": { "intervals": [{ "reconnect_attempts": attempts[0] }, { "reconnect_attempts": attempts[1] }] },
            }),
        };
        run_record(whole, ivs)
    }

    #[test]
    fn shards_funnels_and_storms_are_the_whole_runs() {
        let storm = |back: u64, attempts: u64, out: u64| json!({ "back": back, "p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "attempts": attempts, "peak_attempts_per_s": 0.0, "out_at_end": out });
        let funnel = |started: u64, short: u64| json!({ "started": started, "stages": [{ "name": "matched", "reached": 0, "p50_ms": 0.0, "p99_ms": 0.0, "peak_per_s": 0.0, "short_at_end": short }] });
        let shards = [
            shard(&[100, 100, 100], [&[10, 10], &[20]], [4, 1], storm(3, 5, 1), funnel(4, 1)),
            shard(&[900], [&[30], &[]], [1, 1], storm(1, 2, 0), funnel(2, 1)),
        ];
        let mut record = aggro_report::merge::merge(&shards, &["a".into(), "b".into()]).unwrap();
        let lines = retake(&shards, &mut record).unwrap();
        let extra = &record.extra["script"];
        let storm: Storm = serde_json::from_value(extra["storm"].clone()).unwrap();
        assert_eq!((storm.back, storm.attempts, storm.out_at_end), (4, 7, 1));
        assert!((storm.p50_ms - 100.0).abs() < 1.0 && (storm.p99_ms - 900.0).abs() < 1.0, "from the merged histogram: {storm:?}");
        assert_eq!(storm.peak_attempts_per_s, 5.0, "the first second's attempts, both shards': {storm:?}");
        let funnel: Funnel = serde_json::from_value(extra["funnel"].clone()).unwrap();
        let matched = &funnel.stages[0];
        assert_eq!((funnel.started, matched.reached, matched.short_at_end), (6, 4, 2));
        assert_eq!(matched.peak_per_s, 3.0, "the first second's stages, both shards': {matched:?}");
        assert!((matched.p99_ms - 30.0).abs() < 0.1, "{matched:?}");
        assert_eq!((extra["counts"].clone(), extra["error_count"].clone()), (json!([["bought", 4]]), json!(2)));
        assert!(lines.iter().any(|l| l.starts_with("reconnects: 4 players came back")), "{lines:?}");
    }
}
