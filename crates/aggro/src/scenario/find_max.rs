//! `aggro scenario find-max`: the highest rate of the mix with backlog 0 and
//! p99 under a bound (the same search as `mobile find-max`).

use super::input::Input;
use super::target::{connect_loaders, on_target, operation_names, read_world, refuse_unpopulated};
use crate::run::drive::ExecSpec;
use crate::run::find_max::FindMax;
use crate::run::session;
use crate::scenario::args::ScenarioFindMaxArgs;
use aggro_core::ErrorSamples;
use aggro_core::scenario::ScenarioTarget;
use aggro_core::units::format_nanos;
use aggro_targets::ScenarioVisitor;
use std::path::PathBuf;
use std::sync::Arc;

struct Search {
    input: Input,
    exec: ExecSpec,
    connections: Option<u32>,
    find: FindMax,
    out: PathBuf,
}

impl ScenarioVisitor for Search {
    type Output = anyhow::Result<()>;

    async fn visit<T: ScenarioTarget>(mut self, target: T) -> anyhow::Result<()> {
        let world = read_world(&target).await?;
        self.input.settle(world.as_ref())?;
        let scenario = self.input.compile(&target).await?;
        refuse_unpopulated(&target, &scenario).await?;
        let samples = Arc::new(ErrorSamples::default());
        let loaders = connect_loaders(&target, &scenario, self.exec.loaders, self.connections, self.exec.seed, &samples).await?;
        // The result file claims the id (as `mobile find-max`): its `all_trials` count what every trial committed.
        let run_id = super::verify::log(&target, "scenario find-max", &scenario).await?;
        println!(
            "aggro scenario find-max: {} on {}, {} loaders, {:.0}s per trial, p99 ≤ {}",
            scenario.name,
            target.describe(),
            self.exec.loaders,
            self.find.step_ns as f64 / 1e9,
            format_nanos(self.find.p99_bound_ns)
        );
        // A loader the search adds has a connection of its own.
        let connect_one = async || {
            let mut one = connect_loaders(&target, &scenario, 1, None, self.exec.seed, &samples).await?;
            one.pop().ok_or_else(|| anyhow::anyhow!("no loader"))
        };
        let names = operation_names(&scenario);
        let mut record = self.find.run(&self.exec, target.blocking(), names, loaders, connect_one, &samples).await?;
        record.command = "scenario find-max".into();
        record.world = world;
        record.run_ids = run_id.into_iter().collect();
        record.spec = serde_json::json!({
            "scenario": { "name": scenario.name, "input": self.input.describe() },
            "exec": self.exec,
            "connections": self.connections.unwrap_or(self.exec.loaders),
            "search": self.find.search,
            "p99_bound_ns": self.find.p99_bound_ns,
            "step_ns": self.find.step_ns,
            "target": target.describe(),
        });
        session::write(&record, &self.out, &session::Exports::default())?;
        println!("result: {}", self.out.display());
        crate::run::drive::unless_interrupted(&record)
    }
}

pub fn main(a: ScenarioFindMaxArgs) -> anyhow::Result<()> {
    let input = Input::file(a.scenario.file, &a.scenario.sets)?;
    let exec = ExecSpec::resolve(&a.exec);
    let find = FindMax::resolve(&a.search);
    let out = session::result_path(a.out, &format!("find-max-{}", input.name()))?;
    session::runtime(exec.threads)?.block_on(on_target(&a.scenario.target, Search { input, exec, connections: a.sharing.connections, find, out }))
}
