//! The store's world record on the command line: written after a
//! population, read before a run or a verify so the shape flags can be left
//! out, and matched against the result files a verify is given; and the
//! store's run log, which tells a verify which runs' result files are
//! missing before it blames the store.

use crate::exit::{BadInput, LedgerIncomplete};
use aggro_core::mmo::MmoTarget;
use aggro_core::mobile::MobileTarget;
use aggro_core::world::{RunEntry, WorldRecord, WorldShape, WorldStore};
use aggro_report::RunRecord;
use aggro_targets::{MmoVisitor, MobileVisitor};
use std::path::PathBuf;

/// Reads `workload`'s record from `target` (`describe` names it in errors).
pub async fn read<T: WorldStore>(target: &T, describe: &str, workload: &str) -> anyhow::Result<Option<WorldRecord>> {
    let text = target
        .read_world(workload)
        .await
        .map_err(|e| crate::exit::store_error(format_args!("{describe}: cannot read the {workload} world record"), e))?;
    let Some(text) = text else { return Ok(None) };
    let record = WorldRecord::from_json(&text).map_err(|e| BadInput(format!("{describe}: {e}")))?;
    if record.shape.workload() != workload {
        return Err(BadInput(format!("{describe}: the {workload} world record describes a {} world", record.shape.workload())).into());
    }
    Ok(Some(record))
}

/// Writes the record of the world just populated into `target`.
pub async fn write<T: WorldStore>(target: &T, describe: &str, shape: WorldShape) -> anyhow::Result<WorldRecord> {
    let record = WorldRecord::new(shape, env!("CARGO_PKG_VERSION"));
    target
        .write_world(record.shape.workload(), &record.to_json())
        .await
        .map_err(|e| crate::exit::store_error(format_args!("{describe}: the world is populated but its record could not be written"), e))?;
    Ok(record)
}

/// Logs a run starting now in `workload`'s run log; returns its id, for
/// the result file's `run_ids`.
pub async fn log_run<T: WorldStore>(target: &T, describe: &str, workload: &str, command: &str, runs: &str, commits: bool) -> anyhow::Result<String> {
    let entry = RunEntry::new(command, runs, commits, &aggro_report::host::HostInfo::current().hostname);
    target
        .log_run(workload, &entry.id, &entry.to_json())
        .await
        .map_err(|e| crate::exit::store_error(format_args!("{describe}: cannot log the run in the store"), e))?;
    Ok(entry.id)
}

/// The runs logged in `workload`'s run log since population that commit
/// changes and that none of `results` covers: runs whose result files are
/// missing (killed, or left out), oldest first.
pub async fn missing_runs<'a, T: WorldStore>(
    target: &T,
    describe: &str,
    workload: &str,
    results: impl IntoIterator<Item = &'a RunRecord>,
) -> anyhow::Result<Vec<RunEntry>> {
    let log = target.run_log(workload).await.map_err(|e| crate::exit::store_error(format_args!("{describe}: cannot read the run log"), e))?;
    let covered: std::collections::HashSet<&str> = results.into_iter().flat_map(|r| r.run_ids.iter().map(String::as_str)).collect();
    let mut missing = Vec::new();
    for text in log {
        let entry: RunEntry = serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{describe}: a run log entry is malformed ({e}): {text}"))?;
        if entry.commits && !covered.contains(entry.id.as_str()) {
            missing.push(entry);
        }
    }
    missing.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    Ok(missing)
}

impl LedgerIncomplete {
    /// Names the `missing` runs and what the store holds beyond the files' ledger (`gap`).
    pub fn new(missing: &[RunEntry], gap: &str) -> Self {
        let runs: Vec<String> = missing.iter().map(RunEntry::describe).collect();
        Self(format!(
            "the ledger is incomplete, not the store: {} run(s) since population have no result file that accounts for their commits ({}); {gap}; give their result files to check the totals",
            missing.len(),
            runs.join("; ")
        ))
    }
}

/// Opens a target only to read one workload's world record, for a command that needs the world
/// populated: a store that keeps data but holds no record was never populated, or its population
/// did not finish (the record is written last), and is refused as bad input.
pub struct ReadWorld(pub &'static str);

impl MobileVisitor for ReadWorld {
    type Output = anyhow::Result<Option<WorldRecord>>;

    async fn visit<T: MobileTarget>(self, target: T) -> Self::Output {
        populated(&target, &target.describe(), self.0).await
    }
}

impl MmoVisitor for ReadWorld {
    type Output = anyhow::Result<Option<WorldRecord>>;

    async fn visit<T: MmoTarget>(self, target: T) -> Self::Output {
        populated(&target, &MmoTarget::describe(&target), self.0).await
    }
}

/// [`read`], refusing a store that keeps data but holds no `workload` world record.
async fn populated<T: WorldStore>(target: &T, describe: &str, workload: &str) -> anyhow::Result<Option<WorldRecord>> {
    target.only_read();
    match read(target, describe, workload).await? {
        None if target.holds_worlds() => Err(BadInput(format!(
            "{describe} holds no {workload} world record: it was never populated, or its population did not finish (the record is written last); run `aggro {workload} populate --target …` first"
        ))
        .into()),
        record => Ok(record),
    }
}

/// Prints which world a command found, so a run's shape is never a
/// surprise (on stderr: stdout may be a result being piped).
pub fn announce(world: Option<&WorldRecord>) {
    if let Some(w) = world {
        eprintln!("store: {}", w.describe());
    }
}

/// Refuses result files in which one run appears twice (its ledger would count twice and blame the store).
pub fn no_run_twice(results: &[(PathBuf, RunRecord)]) -> anyhow::Result<()> {
    let named: Vec<_> = results.iter().map(|(p, r)| (p.as_path(), r)).collect();
    aggro_report::identity::no_run_twice(&named).map_err(|e| BadInput(e).into())
}

/// Checks that every result file ran on the world the store holds now: a
/// ledger from another world (or from before the store was populated
/// again) would fail the invariants for no fault of the store. Files from
/// an aggro without world records, or stores without one, are taken as
/// they are.
pub fn check_results(store: Option<&WorldRecord>, results: &[(PathBuf, RunRecord)]) -> anyhow::Result<()> {
    for (path, result) in results {
        let Some(ran_on) = &result.world else { continue };
        match store {
            Some(now) if now.id == ran_on.id => {}
            Some(now) => {
                return Err(BadInput(format!(
                    "{} ran on another world: {}; the store holds {} (leave out result files of earlier worlds)",
                    path.display(),
                    ran_on.describe(),
                    now.describe()
                ))
                .into());
            }
            None => {
                return Err(BadInput(format!(
                    "{} ran on {}, but the store holds no world record now (populated again by an older aggro, or a population that did not finish)",
                    path.display(),
                    ran_on.describe()
                ))
                .into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(users: u32) -> WorldRecord {
        WorldRecord::new(WorldShape::Mobile { users, spread: "none".into() }, "test")
    }

    fn ran_on(world: Option<WorldRecord>) -> (PathBuf, RunRecord) {
        let mut r = RunRecord::begun("mobile run", serde_json::json!({}), String::new(), &["write"]);
        r.world = world;
        (PathBuf::from("run.json"), r)
    }

    #[test]
    fn results_of_the_stores_world_and_of_no_world_pass() {
        let now = world(2_000);
        assert!(check_results(Some(&now), &[ran_on(Some(now.clone())), ran_on(None)]).is_ok());
        assert!(check_results(None, &[ran_on(None)]).is_ok());
    }

    #[test]
    fn a_result_of_another_world_is_named() {
        let (now, before) = (world(2_000), world(2_000));
        let e = check_results(Some(&now), &[ran_on(Some(before.clone()))]).unwrap_err().to_string();
        assert!(e.contains("run.json ran on another world") && e.contains(&before.id) && e.contains(&now.id), "{e}");
        let e = check_results(None, &[ran_on(Some(before))]).unwrap_err().to_string();
        assert!(e.contains("holds no world record"), "{e}");
    }
}
