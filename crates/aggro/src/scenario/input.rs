//! What a scenario command's workload is written in — a scenario file (or a YCSB workload file) or
//! pgbench scripts — read and checked, and compiled once the target's command family is known.

use super::target::read_scale;
use crate::exit::BadInput;
use aggro_core::scenario::{ScenarioTarget, SqlProtocol, Value};
use aggro_core::world::{WorldRecord, WorldShape};
use aggro_workloads::scenario::Scenario;
use aggro_workloads::scenario::file::{ScenarioError, Source, parse_override, read_capped};
use aggro_workloads::scenario::pgbench::{self, Script};
use aggro_workloads::scenario::ycsb;
use std::path::PathBuf;
use std::sync::Arc;

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
