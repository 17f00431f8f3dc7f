//! `aggro scenario …` and `aggro pgbench`: the user's own workload.
//!
//! Both read an [`Input`] — a scenario file or pgbench scripts — and compile
//! it once the target (and so its command family) is known; everything
//! after is the same population, run and verification.

pub mod args;
mod find_max;
mod populate;
mod run;
mod verify;

pub use populate::Populate;
pub use run::Run;

use crate::exit::BadInput;
use crate::scenario::args::ScenarioCommand;
use aggro_core::ErrorSamples;
use aggro_core::scenario::{Command, Family, Reply, ScenarioConn, ScenarioTarget, SqlProtocol, Value};
use aggro_core::world::{WorldRecord, WorldShape};
use aggro_workloads::scenario::file::{ScenarioError, Source, parse_override, read_capped};
use aggro_workloads::scenario::pgbench::{self, Script};
use aggro_workloads::scenario::ycsb;
use aggro_workloads::scenario::{Scenario, ScenarioLoader};
use std::path::PathBuf;
use std::sync::Arc;

/// Runs one `aggro scenario` command.
pub fn main(command: ScenarioCommand) -> anyhow::Result<()> {
    match command {
        ScenarioCommand::Populate(a) => populate::main(a),
        ScenarioCommand::Run(a) => run::main(*a),
        ScenarioCommand::FindMax(a) => find_max::main(*a),
        ScenarioCommand::Verify(a) => verify::main(a),
    }
}

/// What the workload is written in.
pub enum Input {
    /// A scenario file, read and checked, and its `--set` overrides; for a
    /// YCSB workload file, its `operationcount` as the runs' request limit.
    File { path: PathBuf, source: Box<Source>, sets: Vec<(String, Value)>, requests: Option<u64>, ycsb: bool },
    /// pgbench scripts; the scale from `-s` or, if absent, from the store.
    Pgbench { scripts: Vec<Script>, scale: Option<i64>, defines: Vec<(String, Value)>, per_command: bool, protocol: SqlProtocol },
}

impl Input {
    /// Reads a scenario file — or a YCSB workload file (a CoreWorkload
    /// property file, translated), whose counts go before the `--set`s;
    /// errors are bad input (exit 2), one line each.
    pub fn file(path: PathBuf, sets: &[String]) -> anyhow::Result<Self> {
        let bad = |e: ScenarioError| BadInput(e.to_string());
        let text = read_capped(&path).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
        let ycsb = ycsb::looks_like(&path, &text);
        let (source, mut overrides, requests) = if ycsb {
            let t = ycsb::translate(&path, &text).map_err(bad)?;
            (Source::from_text(&path, t.text), t.sets, t.operations)
        } else {
            (Source::from_text(&path, text), Vec::new(), None)
        };
        let source = Box::new(source.map_err(bad)?);
        for s in sets {
            let (name, value) = parse_override(s).map_err(|e| BadInput(format!("--set {e}")))?;
            if !source.var_names().any(|v| v == name) {
                let known = source.var_names().collect::<Vec<_>>().join(", ");
                return Err(BadInput(format!("--set {s:?}: {} has no variable {name:?} (its [vars]: {known})", path.display())).into());
            }
            overrides.push((name, value));
        }
        Ok(Input::File { path, source, sets: overrides, requests, ycsb })
    }

    /// How many requests a run makes when `--requests` is not given (a YCSB file's `operationcount`).
    pub fn requests(&self) -> Option<u64> {
        match self {
            Input::File { requests, .. } => *requests,
            Input::Pgbench { .. } => None,
        }
    }

    /// The workload's name (for result files).
    pub fn name(&self) -> String {
        match self {
            Input::File { source, .. } => source.name().to_string(),
            Input::Pgbench { .. } => "pgbench".into(),
        }
    }

    /// What a result file records of the input.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Input::File { path, sets, .. } => serde_json::json!({
                "file": path.display().to_string(),
                "sets": sets.iter().map(|(n, v)| format!("{n}={}", v.to_text())).collect::<Vec<_>>(),
            }),
            Input::Pgbench { scripts, scale, defines, per_command, protocol } => serde_json::json!({
                "per_command": per_command,
                "protocol": protocol.name(),
                "pgbench": scripts.iter().map(|s| format!("{}@{}", s.name, s.weight)).collect::<Vec<_>>(),
                "scale": scale,
                "defines": defines.iter().map(|(n, v)| format!("{n}={}", v.to_text())).collect::<Vec<_>>(),
            }),
        }
    }

    /// The world record a population from this input leaves: the scenario and its `[vars]` as resolved
    /// (`complete`: its last row is in). `None` for pgbench's `-i`, whose tables tell their scale.
    pub fn world_shape(&self, complete: bool) -> Option<WorldShape> {
        match self {
            Input::File { source, sets, .. } => {
                Some(WorldShape::Scenario { scenario: source.name().into(), vars: source.resolved_vars(sets), complete })
            }
            Input::Pgbench { .. } => None,
        }
    }

    /// Settles the `--set`s with the store's scenario world record, as the MMO and mobile worlds
    /// settle their shape flags: a population that did not finish is refused; a var the population
    /// resolved that `--set` gives otherwise is refused; one left out takes the population's value
    /// (said on stderr) — so a run, a verify and a find-max use the world that is there.
    pub fn settle(&mut self, world: Option<&WorldRecord>) -> Result<(), BadInput> {
        let (Input::File { source, sets, path, .. }, Some(world)) = (self, world) else { return Ok(()) };
        let WorldShape::Scenario { scenario, vars: populated, complete } = &world.shape else { return Ok(()) };
        if !complete {
            return Err(BadInput(format!(
                "the store's population of {scenario} did not finish ({}): run `aggro scenario populate` again",
                world.describe()
            )));
        }
        let defaults = source.resolved_vars(&[]);
        let mut settled = Vec::new();
        for (name, was) in populated.iter().filter(|(name, _)| defaults.contains_key(*name)) {
            match sets.iter().find(|(n, _)| n == name) {
                Some((_, given)) if given.to_text() != *was => {
                    return Err(BadInput(format!(
                        "{name}={} (--set, or the workload file's): the store was populated with {name}={was} ({}); populate again, or leave it out",
                        given.to_text(),
                        world.describe()
                    )));
                }
                Some(_) => {}
                None if defaults[name] != *was => {
                    let (_, value) = parse_override(&format!("{name}={was}")).map_err(BadInput)?;
                    sets.push((name.clone(), value));
                    settled.push(format!("{name}={was}"));
                }
                None => {}
            }
        }
        if !settled.is_empty() {
            eprintln!("{}: as the store was populated: {}", path.display(), settled.join(" "));
        }
        Ok(())
    }

    /// Compiles the workload for `target`'s family.
    pub async fn compile<T: ScenarioTarget>(&self, target: &T) -> anyhow::Result<Arc<Scenario>> {
        let scenario = match self {
            // A YCSB file's errors are in its translation, whose lines are not the file's: name the file alone.
            Input::File { source, sets, ycsb: true, path, .. } => source
                .compile(target.family(), sets)
                .map_err(|e| ScenarioError { at: format!("{} (translated onto scenarios/ycsb/core.toml)", path.display()), message: e.message }),
            Input::File { source, sets, .. } => source.compile(target.family(), sets),
            Input::Pgbench { scripts, scale, defines, per_command, protocol } => {
                // As pgbench: -s, else with a built-in script the branches counted, else (custom scripts only) 1.
                let scale = match scale {
                    Some(s) => *s,
                    None if scripts.iter().all(|s| !s.builtin) => 1,
                    None => read_scale(target).await?,
                };
                pgbench::compile(scripts, scale, defines, *per_command, *protocol)
            }
        };
        Ok(Arc::new(scenario.map_err(|e| BadInput(e.to_string()))?))
    }
}

/// The store's scenario world record (not on DynamoDB, where aggro keeps its records in the URL's
/// table, which a scenario never creates). A store that holds another workload's world and no scenario
/// world is refused: a scenario run would change that world under its own `verify`.
pub async fn read_world<T: ScenarioTarget>(target: &T) -> anyhow::Result<Option<WorldRecord>> {
    if target.family() == Family::Dynamo {
        return Ok(None);
    }
    let describe = target.describe();
    let world = crate::world::read(target, &describe, "scenario").await?;
    if world.is_none() {
        for other in ["mobile", "mmo"] {
            if let Ok(Some(_)) = target.read_world(other).await {
                return Err(BadInput(format!(
                    "{describe} holds a {other} world (made by `aggro {other} populate`): a scenario run would change it under `aggro {other} verify`; populate the scenario's own world (`aggro scenario populate FILE --target …`) or use another store"
                ))
                .into());
            }
        }
    }
    Ok(world)
}

/// pgbench's scale: the number of branches.
async fn read_scale<T: ScenarioTarget>(target: &T) -> anyhow::Result<i64> {
    let query = Arc::from([Command::Sql { text: pgbench::SCALE_QUERY.into(), protocol: SqlProtocol::Prepared }]);
    let hint = |m: String| anyhow::anyhow!("{}: {m} (run `aggro pgbench -i -s SCALE --target …` first)", target.describe());
    let mut conn = target.connect(query).await.map_err(|e| hint(e.message))?;
    let mut reply = Reply { want_values: true, ..Reply::default() };
    conn.exec(0, &[], &mut reply).await.map_err(|e| hint(e.message))?;
    match reply.values.first().and_then(Value::as_int) {
        Some(n) if n > 0 => Ok(n),
        _ => Err(hint("pgbench_branches is empty".into())),
    }
}

/// The scenario's operation names as the executor's console keeps them:
/// for the whole process (a run compiles one scenario).
pub fn operation_names(scenario: &Scenario) -> &'static [&'static str] {
    Box::leak(scenario.operations.iter().map(|n| &*Box::leak(n.clone().into_boxed_str())).collect())
}

/// Opens `count` loaders on `connections` connections (None: one each; fewer pipeline, loaders spread
/// evenly); a store without the scenario's schema is reported once, plainly, before any load.
pub async fn connect_loaders<T: ScenarioTarget>(
    target: &T,
    scenario: &Arc<Scenario>,
    count: u32,
    connections: Option<u32>,
    seed: u64,
    samples: &Arc<ErrorSamples>,
) -> anyhow::Result<Vec<ScenarioLoader<T::Conn>>> {
    let connections = connections.unwrap_or(count);
    if connections > count {
        return Err(
            BadInput(format!("--connections {connections} is more than --loaders {count}: a connection without a loader carries nothing")).into()
        );
    }
    if connections < count
        && let Some(why) = scenario.connection_state()
    {
        return Err(BadInput(format!("{}: loaders cannot share connections: {why}", scenario.name)).into());
    }
    let mut loaders = Vec::with_capacity(count as usize);
    for c in 0..connections {
        let share = count / connections + u32::from(c < count % connections);
        let conns = target.connect_shared(scenario.commands.clone(), share as usize).await.map_err(|e| {
            let i = loaders.len();
            match (e.class, share) {
                (aggro_core::ErrorClass::Data, 1) => {
                    anyhow::anyhow!("{}: loader {i} of {count}: {} (populate the scenario first)", target.describe(), e.message)
                }
                (aggro_core::ErrorClass::Data, _) => BadInput(format!("--connections: {}", e.message)).into(),
                _ => crate::exit::store_error(format_args!("{}: loader {i} of {count}", target.describe()), e),
            }
        })?;
        for conn in conns {
            let i = loaders.len() as u64;
            loaders.push(ScenarioLoader::new(conn, Arc::clone(scenario), i, seed, Arc::clone(samples)));
        }
    }
    Ok(loaders)
}

/// Refuses, as bad input, a run of a scenario that populates its data on a store that holds none: every
/// read would find nothing and count as served (YCSB C on an empty Redis: 1,000 reads, 0 errors).
pub async fn refuse_unpopulated<T: ScenarioTarget>(target: &T, scenario: &Scenario) -> anyhow::Result<()> {
    if scenario.populate.is_none() {
        return Ok(());
    }
    let holds = target.holds_data().await.map_err(|e| crate::exit::store_error(target.describe(), e))?;
    if holds {
        return Ok(());
    }
    Err(BadInput(format!("{} holds no data: populate {} first (`aggro scenario populate … --target …`)", target.describe(), scenario.name)).into())
}

/// Opens `target` and runs `visitor` on it; what it cannot open for this workload is bad input.
pub async fn on_target<V: aggro_targets::ScenarioVisitor<Output = anyhow::Result<R>>, R>(
    target: &crate::cli::target::Target,
    visitor: V,
) -> anyhow::Result<R> {
    aggro_targets::open_scenario(&target.url, visitor).await.map_err(|e| BadInput(e.to_string()))?
}
