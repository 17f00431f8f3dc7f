//! `aggro store check|salvage`: a stackdb store's integrity, checked without changing a byte, and
//! its intact commits copied into a new store when it is damaged.

use crate::BadInput;
use crate::cli::{StoreCheckArgs, StoreCommand, StoreSalvageArgs};
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
        e @ stackdb::Error::Locked(_) => crate::Busy(format!("{}: {e}", dir.display())).into(),
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
        "{}: {} damaged buckets, {} of {} keys read back (nothing was changed; `aggro store salvage {} --to NEW` copies the intact commits)",
        a.dir.display(),
        found.damage.len(),
        found.keys,
        found.counted,
        a.dir.display()
    )
}

fn salvage_store(a: StoreSalvageArgs) -> anyhow::Result<()> {
    // What a check of the source finds, first: a log cut short can leave nothing for the salvage's own
    // reading to skip, and the store is still not whole.
    let source = match check(&a.dir) {
        Ok(found) if found.ok() => None,
        Ok(found) => Some(format!("{} damaged buckets, {} of {} keys read back", found.damage.len(), found.keys, found.counted)),
        Err(e @ (stackdb::Error::Format(_) | stackdb::Error::Locked(_))) => return Err(no_store(&a.dir, e)),
        Err(e) => Some(e.to_string()),
    };
    let done = salvage(&a.dir, &a.to).map_err(|e| no_store(&a.dir, e))?;
    println!("{} → {}: {} intact batches copied, {} live keys", a.dir.display(), a.to.display(), done.commits, done.keys);
    for (from, span) in &done.skipped {
        println!("skipped: {span} bytes of damaged log at offset {from}");
    }
    match (&source, done.skipped.is_empty()) {
        (None, true) => println!("nothing was damaged: the new store holds every commit"),
        (Some(found), true) => println!(
            "the source's check found damage ({found}); its log held no damaged batch to skip, so what the damage took (a cut tail, a lost checkpoint) is in neither store"
        ),
        (Some(found), false) => println!("the source's check found: {found}"),
        (None, false) => {}
    }
    println!("{} was only read", a.dir.display());
    Ok(())
}
