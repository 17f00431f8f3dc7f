//! `aggro store check|salvage`: a stackdb store's integrity, checked without changing a byte, and
//! what it can prove copied into a new store when it is damaged.

use crate::cli::{StoreCheckArgs, StoreCommand, StoreSalvageArgs};
use crate::exit::BadInput;
use stackdb::repair::{check, salvage};

/// Runs one `aggro store` command.
pub fn main(command: StoreCommand) -> anyhow::Result<()> {
    match command {
        StoreCommand::Check(a) => check_store(a),
        StoreCommand::Salvage(a) => salvage_store(a),
    }
}

fn no_store(dir: &std::path::Path, e: stackdb::Error) -> anyhow::Error {
    match e {
        stackdb::Error::Format(why) => BadInput(format!("{}: {why}", dir.display())).into(),
        e @ stackdb::Error::Locked(_) => crate::exit::Busy(format!("{}: {e}", dir.display())).into(),
        e => anyhow::anyhow!("{}: {e}", dir.display()),
    }
}

fn check_store(a: StoreCheckArgs) -> anyhow::Result<()> {
    let found = check(&a.dir).map_err(|e| no_store(&a.dir, e))?;
    println!(
        "{}: {} buckets walked, {} live keys read back of the {} its commits count, every record's checksum checked",
        a.dir.display(),
        found.buckets,
        found.keys,
        found.counted
    );
    for damage in found.damage.iter().take(10) {
        println!("damaged: {damage}");
    }
    if found.damage.len() > 10 {
        println!("… and {} more damaged buckets", found.damage.len() - 10);
    }
    if found.ok() {
        println!("check: ok (nothing was changed)");
        return Ok(());
    }
    anyhow::bail!(
        "{}: {} damaged buckets, {} of {} keys read back (nothing was changed; `aggro store salvage {} --to NEW` copies every key it can prove)",
        a.dir.display(),
        found.damage.len(),
        found.keys,
        found.counted,
        a.dir.display()
    )
}

fn salvage_store(a: StoreSalvageArgs) -> anyhow::Result<()> {
    let done = salvage(&a.dir, &a.to).map_err(|e| no_store(&a.dir, e))?;
    let (from, to) = (a.dir.display(), a.to.display());
    println!("{from} → {to}: {} live keys — {} as {from} reads them, {} records replayed from its log", done.keys, done.read, done.from_log);
    if let Some(why) = &done.unopened {
        println!("{from} could not be opened ({why}): every key came from its log, read from offset {}", done.floor);
    }
    if let Some(offset) = done.recovery_stopped {
        println!("{from}'s log is damaged or cut short at offset {offset}, before what it had synced: whatever lies past it came from the log");
    }
    for damage in done.damaged_buckets.iter().take(10) {
        println!("damaged: {damage} — its keys came from the log (their newest intact version)");
    }
    if done.damaged_buckets.len() > 10 {
        println!("… and {} more damaged buckets", done.damaged_buckets.len() - 10);
    }
    for (offset, span) in &done.skipped {
        println!("skipped: {span} bytes of damaged log at offset {offset} (what they held is lost unless a later record holds it)");
    }
    if done.loose > 0 {
        println!("kept: {} sweeps' copies whose batch lost its commit record (space given back around them, or damage)", done.loose);
    }
    if done.dropped > 0 {
        println!(
            "dropped: {} records of batches that lost others (to damage, or to space a sweep gave back, where they were dead): each batch whole, no transaction half applied",
            done.dropped
        );
    }
    if done.unfinished > 0 {
        println!("not copied: {} records past the last intact commit (never committed)", done.unfinished);
    }
    if done.whole() {
        println!("nothing was damaged: {to} holds every key {from} held, as it read them");
    }
    println!("{from} was only read");
    Ok(())
}
