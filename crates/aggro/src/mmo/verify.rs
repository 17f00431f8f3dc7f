//! `aggro mmo verify`.

use super::target::on_target;
use crate::exit::BadInput;
use crate::exit::LedgerIncomplete;
use crate::mmo::args::MmoVerifyArgs;
use crate::world::missing_runs;
use aggro_core::mmo::{MmoTarget, WorldSpec};
use aggro_core::world::RunEntry;
use aggro_report::RunRecord;
use aggro_targets::MmoVisitor;
use aggro_workloads::mmo::ItemLedger;
use aggro_workloads::mmo::verify::{MmoVerdict, verify};
use std::path::PathBuf;

struct Verify {
    world: WorldSpec,
    ledger: Option<ItemLedger>,
    /// The result files given, read.
    results: Vec<(PathBuf, RunRecord)>,
}

/// What verify found: the verdict, and the play runs since population that
/// no given file accounts for (only looked for when files are given).
struct Found {
    verdict: MmoVerdict,
    missing: Vec<RunEntry>,
}

impl MmoVisitor for Verify {
    type Output = anyhow::Result<Found>;

    async fn visit<T: MmoTarget>(self, target: T) -> anyhow::Result<Found> {
        // Verify only reads: it changes nothing in the store, not even what opening it repairs.
        target.only_read();
        let describe = MmoTarget::describe(&target);
        let missing = match &self.ledger {
            Some(_) => missing_runs(&target, &describe, "mmo", self.results.iter().map(|(_, r)| r)).await?,
            None => Vec::new(),
        };
        // With runs missing, what each player should hold is unknown.
        let ledger = self.ledger.as_ref().filter(|_| missing.is_empty());
        let scan = target.scan().await.map_err(|e| crate::exit::store_error(&describe, e))?;
        Ok(Found { verdict: verify(&scan, &self.world, ledger, aggro_core::mmo::now_ms()), missing })
    }
}

/// The items every player's clients committed, from play results, and the results of runs that ended
/// without a clean shutdown (a full disk, a zone that could not write): their ledger may be short, and
/// their zones may hold leases they could not release.
fn ledger(results: &[(PathBuf, RunRecord)]) -> anyhow::Result<Ledger> {
    if results.is_empty() {
        return Ok(Ledger { items: None, incomplete: Vec::new() });
    }
    let mut total = ItemLedger::default();
    let mut incomplete = Vec::new();
    for (path, record) in results {
        let play = record.extra.get("mmo_play").ok_or_else(|| BadInput(format!("{} is not an `aggro mmo play` result", path.display())))?;
        if play.get("ledger_complete") != Some(&serde_json::Value::Bool(true)) {
            incomplete.push(path.clone());
        }
        let bad = |name: &'static str| move |e: serde_json::Error| BadInput(format!("{}: bad {name}: {e}", path.display()));
        let run = ItemLedger {
            committed: serde_json::from_value(play["committed_items"].clone()).map_err(bad("committed_items"))?,
            // Files from before pushes in doubt were noted have none.
            in_doubt: serde_json::from_value(play.get("items_in_doubt").cloned().unwrap_or_else(|| serde_json::json!({})))
                .map_err(bad("items_in_doubt"))?,
        };
        total.add(&run);
    }
    // A run that could not shut down cleanly leaves totals that cannot be checked.
    Ok(Ledger { items: incomplete.is_empty().then_some(total), incomplete })
}

/// What the play results say was committed: per player, the items gained or lost and what pushes in doubt
/// may have added (none without files, or with a run whose ledger is incomplete), and the files of runs
/// that ended without a clean shutdown.
struct Ledger {
    items: Option<ItemLedger>,
    incomplete: Vec<PathBuf>,
}

pub fn main(a: MmoVerifyArgs) -> anyhow::Result<()> {
    let results = a.results.iter().map(|p| Ok((p.clone(), crate::run::session::read(p)?))).collect::<anyhow::Result<Vec<_>>>()?;
    crate::world::no_run_twice(&results)?;
    let Ledger { items, incomplete } = ledger(&results)?;
    let rt = crate::run::session::runtime(0)?;
    let (world, record) = super::target::settle_world(&rt, &a.world)?;
    crate::world::check_results(record.as_ref(), &results)?;
    let expected_items = world.players() as i64 * world.items_per_player as i64 + items.iter().flat_map(|l| l.committed.values()).sum::<i64>();
    // With a run that could not shut down cleanly only what holds whatever the ledger misses is checked,
    // and the leases its zones still hold are told, not failed.
    let Found { mut verdict, missing } = rt.block_on(on_target(&a.world.target, Verify { world, ledger: items, results }))?;
    verdict.leases_explained = !incomplete.is_empty();
    for line in verdict.lines() {
        println!("{line}");
    }
    if !incomplete.is_empty() && verdict.consistent() {
        let files: Vec<String> = incomplete.iter().map(|p| p.display().to_string()).collect();
        let leases = match verdict.last_lease_lapses_in_ms {
            Some(ms) => format!("{} lease(s) its zones could not release, the last lapsing in {:.1} s", verdict.leases_held.count, ms as f64 / 1e3),
            None => "no lease held".to_string(),
        };
        return Err(LedgerIncomplete(format!(
            "the ledger is incomplete, not the store: {} ended without a clean shutdown (its zones could not write or release their players), so the players' totals cannot be checked; the store holds {} items, {leases}, and no item is duplicated, orphaned or miscounted",
            files.join(", "),
            verdict.items
        ))
        .into());
    }
    if missing.is_empty() || !verdict.consistent() {
        return if verdict.ok() { Ok(()) } else { anyhow::bail!("the store breaks the world's invariants") };
    }
    let gap = format!(
        "the store holds {} items against the files' {expected_items}, {} lease(s) still held, and no item is duplicated, orphaned or miscounted",
        verdict.items, verdict.leases_held.count
    );
    Err(LedgerIncomplete::new(&missing, &gap).into())
}
