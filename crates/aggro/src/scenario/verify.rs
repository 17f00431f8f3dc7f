//! `aggro scenario verify`: the invariants against the committed counts of
//! the runs since population.

use super::{Input, on_target};
use crate::BadInput;
use crate::cli::ScenarioVerifyArgs;
use aggro_core::scenario::ScenarioTarget;
use aggro_report::RunRecord;
use aggro_targets::ScenarioVisitor;
use aggro_workloads::scenario::Scenario;

/// Each transaction's committed count summed over `records`: the `ok` of
/// the transaction's operation (operation 0 when it is the only one).
pub fn committed(scenario: &Scenario, records: &[RunRecord]) -> Vec<u64> {
    scenario
        .transactions
        .iter()
        .map(|t| {
            let name = &scenario.operations[t.op];
            records.iter().map(|r| r.totals.iter().find(|o| &o.name == name).map_or(0, |o| o.ok)).sum()
        })
        .collect()
}

/// Runs the invariants and prints each; an error names those that broke.
pub async fn check<T: ScenarioTarget>(target: &T, scenario: &Scenario, committed: &[u64]) -> anyhow::Result<()> {
    let checks = aggro_workloads::scenario::verify(target, scenario, committed)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {}", target.describe(), e.message))?;
    let mut broken = Vec::new();
    for c in &checks {
        let mark = if c.held { "holds" } else { "BROKEN" };
        println!("invariant {:<32} {mark}: store {} , expected {}", c.name, c.got.to_text(), c.want.to_text());
        if !c.held {
            broken.push(c.name.clone());
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        // Unlike mobile and MMO worlds, a scenario's store keeps no run log, so a run since population whose
        // result file is missing cannot be told from lost data: the message says both.
        anyhow::bail!(
            "the store breaks the scenario's invariants: {} — lost or phantom updates, unless a run since population is missing from the result files counted (scenario runs keep no run log in the store to tell the two apart)",
            broken.join(", ")
        )
    }
}

struct Verify {
    input: Input,
    records: Vec<RunRecord>,
}

impl ScenarioVisitor for Verify {
    type Output = anyhow::Result<()>;

    async fn visit<T: ScenarioTarget>(self, target: T) -> anyhow::Result<()> {
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
        for r in &self.records {
            let name = r.spec["scenario"]["name"].as_str().unwrap_or_default();
            if name != scenario.name {
                return Err(BadInput(format!("a result file of {name:?} ({}) is not a run of the scenario {}", r.started_at, scenario.name)).into());
            }
        }
        let committed = committed(&scenario, &self.records);
        println!(
            "verifying {} on {} against {} run(s): committed {}",
            scenario.name,
            target.describe(),
            self.records.len(),
            scenario.transactions.iter().zip(&committed).map(|(t, n)| format!("{} {n}", t.name)).collect::<Vec<_>>().join(", ")
        );
        check(&target, &scenario, &committed).await
    }
}

pub fn main(a: ScenarioVerifyArgs) -> anyhow::Result<()> {
    let input = Input::file(a.scenario.file, &a.scenario.sets)?;
    let records = a.results.iter().map(|p| crate::session::read(p)).collect::<anyhow::Result<Vec<_>>>()?;
    crate::session::runtime(0)?.block_on(on_target(&a.scenario.target, Verify { input, records }))
}
