//! Which run a result file is, and which shard of it: verify and merge refuse a file given twice and
//! shards of different runs, naming the files, instead of counting a run twice or mixing two.

use crate::record::RunRecord;
use std::path::Path;

/// What tells one result file's run and shard from another's.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    /// The ids it logged in the store, or, without them, its start time and host.
    run: String,
    /// The seed of its random choices, if it records one.
    seed: Option<u64>,
    /// Its shard: worker index and count (0 of 1 for a whole run).
    shard: (u64, u64),
}

impl Identity {
    fn of(r: &RunRecord) -> Identity {
        let run = if r.run_ids.is_empty() { format!("{} on {}", r.started_at, r.host.hostname) } else { r.run_ids.join(",") };
        Identity { run, seed: find(&r.spec, "seed").and_then(serde_json::Value::as_u64), shard: shard_of(&r.spec) }
    }
}

/// A run's shard as its spec records it: a plan's `share` (`{index, of}`, 0-based) or an arena swarm's
/// `worker` (`[i, n]`, 1-based); 0 of 1 for a whole run.
fn shard_of(spec: &serde_json::Value) -> (u64, u64) {
    let number = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64);
    if let Some(share) = find(spec, "share") {
        return (number(share.get("index")).unwrap_or(0), number(share.get("of")).unwrap_or(1));
    }
    match spec.get("worker").and_then(serde_json::Value::as_array).map(Vec::as_slice) {
        Some([i, n]) => (number(Some(i)).unwrap_or(1).saturating_sub(1), number(Some(n)).unwrap_or(1)),
        _ => (0, 1),
    }
}

/// The first value under `key` in `v`, depth first.
fn find<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match v {
        serde_json::Value::Object(map) => map.get(key).or_else(|| map.values().find_map(|x| find(x, key))),
        serde_json::Value::Array(items) => items.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// Refuses a list of result files in which one run appears twice (the same file, or a copy of it).
pub fn no_run_twice(files: &[(&Path, &RunRecord)]) -> Result<(), String> {
    for (i, (a, ra)) in files.iter().enumerate() {
        for (b, rb) in &files[..i] {
            if Identity::of(ra) == Identity::of(rb) {
                return Err(format!(
                    "{} and {} are the same run ({}): each run's file is given once",
                    b.display(),
                    a.display(),
                    Identity::of(ra).run
                ));
            }
        }
    }
    Ok(())
}

/// Refuses shards that are not the shards of one run: a shard twice, different seeds, or different
/// worker counts.
pub fn shards_of_one_run(files: &[(&Path, &RunRecord)]) -> Result<(), String> {
    no_run_twice(files)?;
    let Some((first, r0)) = files.first() else { return Ok(()) };
    let id0 = Identity::of(r0);
    for (path, r) in &files[1..] {
        let id = Identity::of(r);
        if id.seed != id0.seed || id.shard.1 != id0.shard.1 {
            return Err(format!(
                "{} (seed {:?}, worker {} of {}) is not a shard of the run {} is (seed {:?}, worker {} of {})",
                path.display(),
                id.seed,
                id.shard.0 + 1,
                id.shard.1,
                first.display(),
                id0.seed,
                id0.shard.0 + 1,
                id0.shard.1
            ));
        }
        if let Some((other, _)) = files.iter().find(|(p, o)| p != path && Identity::of(o).shard == id.shard) {
            return Err(format!(
                "{} and {} are both worker {} of {}: each shard is given once",
                other.display(),
                path.display(),
                id.shard.0 + 1,
                id.shard.1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shards_are_read_from_a_plan_share_or_an_arena_worker() {
        assert_eq!(shard_of(&json!({ "plan": { "share": { "index": 2, "of": 4 } } })), (2, 4));
        assert_eq!(shard_of(&json!({ "swarm": { "seed": 5 }, "worker": [2, 2] })), (1, 2));
        assert_eq!(shard_of(&json!({ "swarm": { "seed": 5 } })), (0, 1));
    }
}
