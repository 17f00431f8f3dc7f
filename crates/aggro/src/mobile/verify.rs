//! `aggro mobile verify`: the store's invariants against the runs' ledgers.

use super::spec;
use super::target::on_target;
use crate::exit::LedgerIncomplete;
use crate::mobile::args::VerifyArgs;
use crate::run::session;
use crate::world::missing_runs;
use aggro_core::mobile::MobileTarget;
use aggro_report::RunRecord;
use aggro_targets::MobileVisitor;
use aggro_workloads::mobile::{KeySpace, Ledger, verify};
use std::path::PathBuf;

/// What a run's result file says it committed.
pub fn ledger_of(record: &RunRecord) -> Ledger {
    // A failure that is not a conflict may have committed before it failed
    // (a timeout after COMMIT was sent): it is "in doubt", not "lost".
    let counts = |name: &str| record.done(name).map_or((0, 0), |o| (o.ok, o.errors));
    let (transfers, transfers_in_doubt) = counts("write");
    let (gold_adds, gold_adds_in_doubt) = counts("add-gold");
    Ledger { transfers, transfers_in_doubt, gold_adds, gold_adds_in_doubt }
}

struct Verify {
    keys: KeySpace,
    /// The result files given, read.
    results: Vec<(PathBuf, RunRecord)>,
}

impl MobileVisitor for Verify {
    type Output = anyhow::Result<bool>;

    async fn visit<T: MobileTarget>(self, target: T) -> anyhow::Result<bool> {
        // Verify only reads: it changes nothing in the store, not even what opening it repairs.
        target.only_read();
        let describe = target.describe();
        let ledger = (!self.results.is_empty()).then(|| {
            let mut total = Ledger::default();
            for (_, record) in &self.results {
                total.add(&ledger_of(record));
            }
            total
        });
        let missing = match ledger {
            Some(_) => missing_runs(&target, &describe, "mobile", self.results.iter().map(|(_, r)| r)).await?,
            None => Vec::new(),
        };
        let checked = ledger.map(|l| if missing.is_empty() { l } else { l.open_ended() });
        let rows = target.scan().await.map_err(|e| crate::exit::store_error(&describe, e))?;
        let v = verify(&rows, &self.keys, checked.as_ref());
        println!(
            "{describe}: {} users, {} committed write transactions, {} committed add-gold transactions in the store",
            v.users, v.tickets, v.gold_adds
        );
        match &ledger {
            Some(l) => println!(
                "result files say: {} writes committed (+{} in doubt), {} gold adds committed (+{} in doubt)",
                l.transfers, l.transfers_in_doubt, l.gold_adds, l.gold_adds_in_doubt
            ),
            None => println!("no --result files given: totals not checked against what runs committed"),
        }
        for p in &v.problems {
            println!("problem: {}", serde_json::to_string(p)?);
        }
        if !v.is_ok() {
            println!("verify: {} problems", v.problem_count);
            return Ok(false);
        }
        if let (Some(l), false) = (ledger, missing.is_empty()) {
            let gap = format!(
                "the store holds {} committed write transactions and {} add-gold transactions beyond the files' {} and {} (in doubt in the files: {} and {}), and every user is consistent",
                v.tickets - l.transfers as i64,
                v.gold_adds - l.gold_adds as i64,
                l.transfers,
                l.gold_adds,
                l.transfers_in_doubt,
                l.gold_adds_in_doubt
            );
            return Err(LedgerIncomplete::new(&missing, &gap).into());
        }
        println!("verify: ok");
        Ok(true)
    }
}

pub fn main(a: VerifyArgs) -> anyhow::Result<()> {
    let flags = spec::resolve_data(&a.data)?;
    let results = a.results.iter().map(|p| Ok((p.clone(), session::read(p)?))).collect::<anyhow::Result<Vec<_>>>()?;
    crate::world::no_run_twice(&results)?;
    let rt = session::runtime(1)?;
    let (keys, world) = super::target::settle(&rt, &flags)?;
    crate::world::check_results(world.as_ref(), &results)?;
    let ok = rt.block_on(on_target(&a.data.target, Verify { keys, results }))?;
    if !ok {
        anyhow::bail!("the store breaks the workload's invariants (lost or phantom updates; ids above)");
    }
    Ok(())
}
