//! A scenario's population: setup commands, rows generated and loaded in
//! bulk batch after batch, then the finishing commands.

use super::expr::Cx;
use super::loader::{Work, run_exec};
use super::{Arg, Batch, Scenario};
use aggro_core::rng::Rng;
use aggro_core::scenario::{ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use std::sync::Arc;

/// Rows generated before each bulk load call.
const BATCH_ROWS: usize = 5_000;

/// Runs a group of commands once, in order, each on a connection of its
/// own that prepares only it: a setup's `CREATE TABLE` cannot be prepared
/// before its `DROP TABLE` has run.
pub(crate) async fn run_batch<T: ScenarioTarget>(target: &T, sc: &Scenario, batch: &Batch, seed: u64) -> Result<(), StoreError> {
    let mut work = Work::new(sc, 0);
    let mut rng = Rng::seeded(seed);
    for exec in &batch.steps {
        let variants = exec.variant.as_ref().map_or(1, |(_, n)| *n);
        let own: Arc<[_]> = batch.commands[exec.command..exec.command + variants].into();
        let mut conn = target.connect(own).await?;
        let mut alone = exec.clone();
        alone.command = 0;
        run_exec(&mut conn, sc, &alone, &mut work, &mut rng).await?;
    }
    Ok(())
}

/// Populates the target as the scenario's `[populate]` says; row `n` draws
/// from its own seeded stream, so a population is the same every time.
/// `progress(done, total)` is called after each batch. Returns the rows loaded.
pub async fn populate<T: ScenarioTarget>(target: &T, sc: &Scenario, seed: u64, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<u64, StoreError> {
    let data = |m: String| StoreError::new(ErrorClass::Data, m);
    let p = sc.populate.as_ref().ok_or_else(|| data(format!("the scenario {} has no [populate]", sc.name)))?;
    let mut work = Work::new(sc, 0);
    let total = {
        let mut rng = Rng::seeded(seed);
        p.rows.eval_int(&mut Cx { slots: &work.slots, rng: &mut rng, gens: &sc.gens, committed: &[] }, "populate.rows").map_err(data)?
    };
    let total = u64::try_from(total).map_err(|_| data(format!("populate.rows is {total}")))?;
    target.reset(total).await?;
    run_batch(target, sc, &p.setup, seed).await?;
    let mut rows: Vec<Vec<Value>> = Vec::with_capacity(BATCH_ROWS);
    for n in 0..total {
        let mut rng = Rng::stream(seed, n);
        work.slots[sc.row_slot] = Value::Int(n as i64);
        for (slot, e) in &p.lets {
            let v = e
                .eval(&mut Cx { slots: &work.slots, rng: &mut rng, gens: &sc.gens, committed: &[] })
                .map_err(|m| data(format!("populate.let, row {n}: {m}")))?;
            work.slots[*slot] = v;
        }
        let mut cx = Cx { slots: &work.slots, rng: &mut rng, gens: &sc.gens, committed: &[] };
        let row = p
            .values
            .iter()
            .map(|a| match a {
                Arg::Expr(e) => e.eval(&mut cx),
                Arg::Template(t) => t.render(&mut cx),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| data(format!("populate, row {n}: {m}")))?;
        rows.push(row);
        if rows.len() == BATCH_ROWS {
            target.load(&p.load, &rows).await?;
            rows.clear();
            progress(n + 1, total);
        }
    }
    if !rows.is_empty() {
        target.load(&p.load, &rows).await?;
    }
    progress(total, total);
    run_batch(target, sc, &p.finish, seed).await?;
    Ok(total)
}
