//! Combining the result files of a run's shards (`--worker I/N`) into the
//! record of the whole run: counts are added and histograms merged, interval
//! by interval and over the whole run, so every percentile of the merged
//! file is exactly what one histogram of all the shards' requests would say.

use crate::record::{ErrorSample, IntervalRecord, OpCount, OpRecord, RunRecord};
use crate::timeline::merged;
use aggro_stats::{Summary, encode};
use serde_json::json;
use std::collections::BTreeMap;

/// Why shards cannot be merged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// Operation records of the same operation, added together.
fn merge_ops(parts: &[&OpRecord]) -> Result<OpRecord, MergeError> {
    let name = &parts[0].name;
    let union = |hdr: fn(&OpRecord) -> &str| merged(parts.iter().map(|p| hdr(p))).map_err(|e| MergeError(format!("{name}: {e}")));
    let (latency, service) = (union(|p| &p.latency_hdr)?, union(|p| &p.service_hdr)?);
    let mut failures = BTreeMap::new();
    for (class, n) in parts.iter().flat_map(|p| &p.failures) {
        *failures.entry(class.clone()).or_insert(0) += n;
    }
    Ok(OpRecord {
        name: name.clone(),
        ok: parts.iter().map(|p| p.ok).sum(),
        errors: parts.iter().map(|p| p.errors).sum(),
        conflicts: parts.iter().map(|p| p.conflicts).sum(),
        failures,
        latency: Summary::of(&latency),
        service: Summary::of(&service),
        latency_hdr: encode::to_base64(&latency),
        service_hdr: encode::to_base64(&service),
    })
}

/// Lateness: the union of the histograms when every part kept one, else the worst part's summary.
fn merge_lag(parts: &[(&Summary, &str)]) -> Result<(Summary, String), MergeError> {
    if parts.iter().all(|(_, hdr)| !hdr.is_empty()) {
        let h = merged(parts.iter().map(|(_, hdr)| *hdr)).map_err(|e| MergeError(format!("timer lateness: {e}")))?;
        return Ok((Summary::of(&h), encode::to_base64(&h)));
    }
    let worst = parts.iter().map(|(s, _)| **s).max_by_key(|s| s.p99_ns).unwrap_or_default();
    Ok((worst, String::new()))
}

fn merge_intervals(parts: &[&IntervalRecord]) -> Result<IntervalRecord, MergeError> {
    let ops = (0..parts[0].ops.len()).map(|k| merge_ops(&parts.iter().filter_map(|p| p.ops.get(k)).collect::<Vec<_>>())).collect::<Result<_, _>>()?;
    let (lag, lag_hdr) = merge_lag(&parts.iter().map(|p| (&p.lag, p.lag_hdr.as_str())).collect::<Vec<_>>())?;
    let n = parts.len() as f64;
    let rates: Vec<f64> = parts.iter().filter_map(|p| p.planned_rate).collect();
    Ok(IntervalRecord {
        start_s: parts.iter().map(|p| p.start_s).fold(f64::INFINITY, f64::min),
        end_s: parts.iter().map(|p| p.end_s).fold(0.0, f64::max),
        backlog: parts.iter().map(|p| p.backlog).sum(),
        due: parts.iter().map(|p| p.due).sum(),
        started: parts.iter().map(|p| p.started).sum(),
        planned_rate: (!rates.is_empty()).then(|| rates.iter().sum()),
        ops,
        lag,
        lag_hdr,
        cpu: crate::host::CpuUse {
            // The shards' generators together; the machines' shares averaged.
            generator_cores: parts.iter().map(|p| p.cpu.generator_cores).sum(),
            machine_busy: parts.iter().map(|p| p.cpu.machine_busy).sum::<f64>() / n,
            machine_steal: parts.iter().map(|p| p.cpu.machine_steal).sum::<f64>() / n,
            generator_rss_bytes: parts.iter().map(|p| p.cpu.generator_rss_bytes).sum(),
        },
        behind: parts.iter().map(|p| p.behind).sum(),
        // One server watched by each shard's process: the first shard's reading.
        server: parts.iter().find_map(|p| p.server),
    })
}

/// The whole run from its shards' records (`labels` name them in `extra.merge`).
pub fn merge(shards: &[RunRecord], labels: &[String]) -> Result<RunRecord, MergeError> {
    let first = shards.first().ok_or_else(|| MergeError("nothing to merge".into()))?;
    for (s, label) in shards.iter().zip(labels).skip(1) {
        if s.command != first.command || s.operations != first.operations {
            return Err(MergeError(format!(
                "{label} is a {} run of operations [{}], the first shard a {} run of [{}]: only shards of one run merge",
                s.command,
                s.operations.join(", "),
                first.command,
                first.operations.join(", ")
            )));
        }
        if s.world.as_ref().map(|w| &w.id) != first.world.as_ref().map(|w| &w.id) {
            let name = |r: &RunRecord| r.world.as_ref().map_or("no world record".to_string(), |w| format!("world {}", w.id));
            return Err(MergeError(format!("{label} ran on {}, the first shard on {}: only shards of one run merge", name(s), name(first))));
        }
    }
    let longest = shards.iter().map(|s| s.intervals.len()).max().unwrap_or(0);
    let intervals =
        (0..longest).map(|k| merge_intervals(&shards.iter().filter_map(|s| s.intervals.get(k)).collect::<Vec<_>>())).collect::<Result<_, _>>()?;
    let totals =
        (0..first.totals.len()).map(|k| merge_ops(&shards.iter().filter_map(|s| s.totals.get(k)).collect::<Vec<_>>())).collect::<Result<_, _>>()?;
    let (lag, lag_hdr) = merge_lag(&shards.iter().map(|s| (&s.lag, s.lag_hdr.as_str())).collect::<Vec<_>>())?;
    // The run ended as the first shard that did not complete ended.
    let ended = shards.iter().find(|s| s.stop_reason.get("kind").and_then(|k| k.as_str()) != Some("completed")).unwrap_or(first);
    let mut error_samples: Vec<ErrorSample> = Vec::new();
    for e in shards.iter().flat_map(|s| &s.error_samples) {
        if !error_samples.iter().any(|x| x.class == e.class) {
            error_samples.push(e.clone());
        }
    }
    let listing: Vec<_> = shards
        .iter()
        .zip(labels)
        .map(|(s, label)| json!({ "file": label, "host": s.host.hostname, "started_at": s.started_at, "elapsed_s": s.elapsed_s, "stop": s.stop_message, "worker": worker_of(&s.spec) }))
        .collect();
    Ok(RunRecord {
        format: first.format.clone(),
        aggro_version: first.aggro_version.clone(),
        command: first.command.clone(),
        spec: first.spec.clone(),
        host: first.host.clone(),
        started_at: shards.iter().map(|s| s.started_at.clone()).min().unwrap_or_default(),
        operations: first.operations.clone(),
        intervals,
        totals,
        lag,
        lag_hdr,
        stop_reason: ended.stop_reason.clone(),
        stop_message: ended.stop_message.clone(),
        due: shards.iter().map(|s| s.due).sum(),
        started: shards.iter().map(|s| s.started).sum(),
        completed: shards.iter().map(|s| s.completed).sum(),
        backlog_at_end: shards.iter().map(|s| s.backlog_at_end).sum(),
        elapsed_s: shards.iter().map(|s| s.elapsed_s).fold(0.0, f64::max),
        error_samples,
        generator_bound: shards.iter().any(|s| s.generator_bound),
        generator_signals: shards.iter().flat_map(|s| s.generator_signals.iter().cloned()).collect(),
        extra: json!({ "merge": { "shards": listing }, "shard_extras": shards.iter().map(|s| s.extra.clone()).collect::<Vec<_>>() }),
        world: first.world.clone(),
        run_ids: shards.iter().flat_map(|s| s.run_ids.iter().cloned()).collect(),
        // Searches' shards: every trial of each, summed (a shard without them counts its totals).
        all_trials: match shards.iter().any(|s| !s.all_trials.is_empty()) {
            true => first
                .operations
                .iter()
                .map(|name| shards.iter().filter_map(|s| s.done(name)).fold(OpCount { name: name.clone(), ..OpCount::default() }, OpCount::plus))
                .collect(),
            false => Vec::new(),
        },
    })
}

/// The `worker` a shard's spec records (mobile runs: `plan.share`; arena swarms: `worker`).
fn worker_of(spec: &serde_json::Value) -> serde_json::Value {
    spec.pointer("/plan/share").or_else(|| spec.get("worker")).cloned().unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CpuUse, HostInfo};
    use aggro_stats::{OpStats, new_histogram};
    use proptest::prelude::*;

    fn op(values: &[u64], errors: u64) -> OpRecord {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        let mut s = OpStats { latency: h.clone(), service: h, ok: values.len() as u64, ..OpStats::default() };
        s.failures[aggro_core::ErrorClass::Timeout.index()] = errors;
        OpRecord::from_stats("write", &s)
    }

    fn shard(values: &[Vec<u64>]) -> RunRecord {
        let intervals: Vec<IntervalRecord> = values
            .iter()
            .enumerate()
            .map(|(k, v)| IntervalRecord {
                start_s: k as f64,
                end_s: k as f64 + 1.0,
                backlog: 0,
                due: v.len() as u64,
                started: v.len() as u64,
                planned_rate: Some(v.len() as f64),
                ops: vec![op(v, 1)],
                lag: Summary::default(),
                lag_hdr: String::new(),
                cpu: CpuUse { generator_cores: 0.5, ..CpuUse::default() },
                behind: 0,
                server: None,
            })
            .collect();
        let all: Vec<u64> = values.concat();
        RunRecord {
            format: crate::record::FORMAT.into(),
            aggro_version: "test".into(),
            command: "mobile run".into(),
            spec: json!({}),
            host: HostInfo { hostname: "h".into(), cpus: 2, kernel: "k".into(), memory_bytes: 1 },
            started_at: "2026-11-22T10:00:00Z".into(),
            operations: vec!["write".into()],
            intervals,
            totals: vec![op(&all, values.len() as u64)],
            lag: Summary::default(),
            lag_hdr: String::new(),
            stop_reason: json!({"kind": "completed"}),
            stop_message: "completed".into(),
            due: all.len() as u64,
            started: all.len() as u64,
            completed: all.len() as u64,
            backlog_at_end: 0,
            elapsed_s: values.len() as f64,
            error_samples: vec![],
            generator_bound: false,
            generator_signals: vec![],
            extra: json!(null),
            world: None,
            run_ids: vec![],
            all_trials: vec![],
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn merging_shards_equals_recording_everything_in_one_histogram(
            shards in prop::collection::vec(prop::collection::vec(prop::collection::vec(1u64..10_000_000_000, 0..40), 1..4), 1..5)
        ) {
            let records: Vec<RunRecord> = shards.iter().map(|s| shard(s)).collect();
            let labels: Vec<String> = (0..records.len()).map(|k| format!("shard-{k}")).collect();
            let m = merge(&records, &labels).unwrap();
            let mut one = new_histogram();
            for v in shards.iter().flatten().flatten() {
                one.record(*v).unwrap();
            }
            let total = &m.totals[0];
            prop_assert_eq!(total.ok, one.len());
            prop_assert_eq!(total.latency, Summary::of(&one));
            prop_assert_eq!(total.errors, shards.iter().map(|s| s.len() as u64).sum::<u64>());
            let back = encode::from_base64(&total.latency_hdr).unwrap();
            for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(back.value_at_quantile(q), one.value_at_quantile(q));
            }
            // Interval k of the merge holds interval k of every shard that has one.
            let longest = shards.iter().map(Vec::len).max().unwrap();
            prop_assert_eq!(m.intervals.len(), longest);
            for (k, i) in m.intervals.iter().enumerate() {
                let mut h = new_histogram();
                for v in shards.iter().filter_map(|s| s.get(k)).flatten() {
                    h.record(*v).unwrap();
                }
                prop_assert_eq!(i.ops[0].latency, Summary::of(&h));
                prop_assert_eq!(i.due, h.len());
            }
        }
    }

    #[test]
    fn shards_of_different_runs_do_not_merge() {
        let a = shard(&[vec![1, 2]]);
        let mut b = shard(&[vec![3]]);
        b.operations = vec!["read".into()];
        let err = merge(&[a, b], &["a.json".into(), "b.json".into()]).unwrap_err();
        assert!(err.0.contains("b.json") && err.0.contains("only shards of one run merge"), "{err}");
        assert!(merge(&[], &[]).is_err());
    }
}
