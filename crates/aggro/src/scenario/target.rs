//! The store a scenario command works on: opened from its `--target`, its world record read (another
//! workload's world refused), checked to hold data, and the loaders' connections.

use crate::exit::BadInput;
use aggro_core::ErrorSamples;
use aggro_core::scenario::{Command, Family, Reply, ScenarioConn, ScenarioTarget, SqlProtocol, Value};
use aggro_core::world::WorldRecord;
use aggro_workloads::scenario::pgbench;
use aggro_workloads::scenario::{Scenario, ScenarioLoader};
use std::sync::Arc;

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
pub async fn read_scale<T: ScenarioTarget>(target: &T) -> anyhow::Result<i64> {
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
