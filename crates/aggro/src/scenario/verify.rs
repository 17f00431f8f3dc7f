//! `aggro scenario verify`: the invariants against the committed counts of
//! the runs since population — and, when they break, the store's run log,
//! to tell a run whose result file is missing from data the store lost.

use super::input::Input;
use super::target::{on_target, read_world};
use crate::exit::BadInput;
use crate::exit::LedgerIncomplete;
use crate::scenario::args::ScenarioVerifyArgs;
use crate::world::{log_run, missing_runs};
use aggro_core::scenario::{Family, ScenarioTarget};
use aggro_report::{OpCount, RunRecord};
use aggro_targets::ScenarioVisitor;
use aggro_workloads::scenario::{Committed, Scenario};

/// The store's run log every scenario that may write logs its runs in, and
/// every scenario population empties: one for all scenarios, since scenarios
/// may share their tables (the trio's files share one population).
pub const RUN_LOG: &str = "scenario";

/// Logs a run of `scenario` starting now when it may change the store
/// ([`Scenario::writes`]; a read-only run commits nothing a verify must
/// account for); its id, for the result file. Not on DynamoDB: there aggro
/// keeps its run log in the URL's table, which a scenario never creates (its
/// tables are its own), so a scenario verify on DynamoDB cannot name unfiled runs.
pub async fn log<T: ScenarioTarget>(target: &T, command: &str, scenario: &Scenario) -> anyhow::Result<Option<String>> {
    if !scenario.writes() || target.family() == Family::Dynamo {
        return Ok(None);
    }
    log_run(target, &target.describe(), RUN_LOG, command, &scenario.name, true).await.map(Some)
}

/// Each transaction's commits summed over `records`: the `ok` of the transaction's operation
/// (operation 0 when it is the only one), and its failures that may have committed.
pub fn committed(scenario: &Scenario, records: &[RunRecord]) -> Vec<Committed> {
    scenario
        .transactions
        .iter()
        .map(|t| {
            let name = &scenario.operations[t.op];
            let done = records.iter().filter_map(|r| r.done(name)).fold(OpCount::default(), OpCount::plus);
            Committed { ok: done.ok, in_doubt: done.in_doubt }
        })
        .collect()
}

/// Judges the store by `records`, the runs since population, which
/// committed `committed` ([`committed`]): every invariant holds — ok; one
/// breaks while the run log names runs that no record accounts for — the
/// ledger is incomplete (exit code 4); one breaks with every logged run
/// counted — the store lost or invented updates. When they hold: how many
/// logged runs had no record (they hold regardless).
pub async fn judge<T: ScenarioTarget>(target: &T, scenario: &Scenario, committed: &[Committed], records: &[RunRecord]) -> anyhow::Result<usize> {
    let broken = check(target, scenario, committed).await?;
    let missing = missing_runs(target, &target.describe(), RUN_LOG, records).await?;
    match (broken.is_empty(), missing.is_empty()) {
        (true, _) => Ok(missing.len()),
        (false, false) => {
            Err(LedgerIncomplete::new(&missing, &format!("the invariants {} do not hold against the files' counts", broken.join(", "))).into())
        }
        (false, true) => anyhow::bail!(
            "the store breaks the scenario's invariants: {} (lost or phantom updates: every run logged since population is counted)",
            broken.join(", ")
        ),
    }
}

/// Runs the invariants and prints each; the names of those that broke.
async fn check<T: ScenarioTarget>(target: &T, scenario: &Scenario, committed: &[Committed]) -> anyhow::Result<Vec<String>> {
    let checks = aggro_workloads::scenario::verify(target, scenario, committed).await.map_err(|e| crate::exit::store_error(target.describe(), e))?;
    let mut broken = Vec::new();
    for c in &checks {
        let mark = if c.held { "holds" } else { "BROKEN" };
        let also = c.want_all.as_ref().map_or(String::new(), |all| format!(" (to {} with the commits in doubt)", all.to_text()));
        println!("invariant {:<32} {mark}: store {}, expected {}{also}", c.name, c.got.to_text(), c.want.to_text());
        if !c.held {
            broken.push(c.name.clone());
        }
    }
    Ok(broken)
}

struct Verify {
    input: Input,
    /// The result files given, read.
    results: Vec<(std::path::PathBuf, RunRecord)>,
}

impl ScenarioVisitor for Verify {
    type Output = anyhow::Result<()>;

    async fn visit<T: ScenarioTarget>(mut self, target: T) -> anyhow::Result<()> {
        // Verify only reads: it changes nothing in the store, not even what opening it repairs.
        target.only_read();
        let world = read_world(&target).await?;
        self.input.settle(world.as_ref())?;
        crate::world::check_results(world.as_ref(), &self.results)?;
        let records: Vec<RunRecord> = self.results.into_iter().map(|(_, r)| r).collect();
        let scenario = self.input.compile(&target).await?;
        if scenario.invariants.is_empty() {
            return Err(BadInput(format!(
                "the scenario {} has no [[invariant]] that {} can check (none has its `{}` form)",
                scenario.name,
                target.describe(),
                target.family().key()
            ))
            .into());
        }
        for r in &records {
            let name = r.spec["scenario"]["name"].as_str().unwrap_or_default();
            if name != scenario.name {
                return Err(BadInput(format!("a result file of {name:?} ({}) is not a run of the scenario {}", r.started_at, scenario.name)).into());
            }
        }
        let committed = committed(&scenario, &records);
        println!(
            "verifying {} on {} against {} run(s): committed {}",
            scenario.name,
            target.describe(),
            records.len(),
            scenario.transactions.iter().zip(&committed).map(|(t, c)| counted(&t.name, c)).collect::<Vec<_>>().join(", ")
        );
        let unfiled = judge(&target, &scenario, &committed, &records).await?;
        if unfiled > 0 {
            println!("note: {unfiled} logged run(s) have no result file here; the invariants hold regardless");
        }
        Ok(())
    }
}

/// `take 9` or `take 9 (+1 in doubt)`.
fn counted(name: &str, c: &Committed) -> String {
    match c.in_doubt {
        0 => format!("{name} {}", c.ok),
        d => format!("{name} {} (+{d} in doubt)", c.ok),
    }
}

pub fn main(a: ScenarioVerifyArgs) -> anyhow::Result<()> {
    let input = Input::file(a.scenario.file, &a.scenario.sets)?;
    let records = a.results.iter().map(|p| crate::run::session::read(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let results: Vec<_> = a.results.iter().cloned().zip(records).collect();
    crate::world::no_run_twice(&results)?;
    crate::run::session::runtime(0)?.block_on(on_target(&a.scenario.target, Verify { input, results }))
}
