//! `aggro scenario run` (and `aggro pgbench`): the mix through the executor.

use super::input::Input;
use super::target::{connect_loaders, on_target, operation_names, read_world, refuse_unpopulated};
use crate::run::drive::{self, ExecSpec, Outputs};
use crate::scenario::args::ScenarioRunArgs;
use aggro_core::ErrorSamples;
use aggro_core::scenario::ScenarioTarget;
use aggro_report::RunRecord;
use aggro_targets::ScenarioVisitor;
use std::sync::Arc;

/// One run of a scenario; with `check` its invariants are read afterwards
/// against this run's own committed counts (pgbench's tpcb-like sums).
pub struct Run {
    pub command: &'static str,
    pub input: Input,
    pub exec: ExecSpec,
    /// Connections the loaders share (None: one each).
    pub connections: Option<u32>,
    pub outputs: Outputs,
    pub check: bool,
}

impl ScenarioVisitor for Run {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: ScenarioTarget>(mut self, target: T) -> anyhow::Result<RunRecord> {
        let world = read_world(&target).await?;
        self.input.settle(world.as_ref())?;
        let scenario = self.input.compile(&target).await?;
        refuse_unpopulated(&target, &scenario).await?;
        drive::place(&mut self.outputs.plan, target.blocking());
        let samples = Arc::new(ErrorSamples::default());
        let loaders = connect_loaders(&target, &scenario, self.exec.loaders, self.connections, self.exec.seed, &samples).await?;
        let run_id = super::verify::log(&target, self.command, &scenario).await?;
        eprintln!(
            "aggro {}: {} on {}, {} transaction(s), {} loaders, {}, seed {}",
            self.command,
            scenario.name,
            target.describe(),
            scenario.transactions.len(),
            self.exec.loaders,
            self.outputs.describe_rate(),
            self.exec.seed
        );
        let names = operation_names(&scenario);
        let spec = serde_json::json!({
            "scenario": { "name": scenario.name, "input": self.input.describe(), "transactions": scenario.transactions.iter().map(|t| &t.name).collect::<Vec<_>>() },
            "exec": self.exec,
            "connections": self.connections.unwrap_or(self.exec.loaders),
            "plan": self.outputs.plan,
            "target": target.describe(),
        });
        let mut record = self.outputs.run(self.command, spec, names, loaders, &samples, self.exec.threads).await?;
        record.run_ids = run_id.into_iter().collect();
        record.world = world;
        drive::note_nodes(&mut record, target.nodes());
        self.outputs.deliver(&record)?;
        if self.check && !scenario.invariants.is_empty() {
            let this_run = std::slice::from_ref(&record);
            super::verify::judge(&target, &scenario, &super::verify::committed(&scenario, this_run), this_run).await?;
        }
        Ok(record)
    }
}

pub fn main(mut a: ScenarioRunArgs) -> anyhow::Result<()> {
    let input = Input::file(a.scenario.file, &a.scenario.sets)?;
    if let (None, Some(n)) = (a.run.requests, input.requests()) {
        eprintln!("operationcount={n}: the run stops after {n} requests (or at --duration; --requests overrides)");
        a.run.requests = Some(n);
    }
    let exec = ExecSpec::resolve(&a.exec);
    let outputs = Outputs::resolve(a.run, &exec, &a.exec, &format!("scenario-{}", input.name()))?;
    let rt = crate::run::session::runtime(exec.threads)?;
    let run = Run { command: "scenario run", input, exec, connections: a.sharing.connections, outputs, check: false };
    let record = rt.block_on(on_target(&a.scenario.target, run))?;
    drive::exit_status(&record)
}
