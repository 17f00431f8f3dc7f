//! What a command's failure means: the error types that choose aggro's exit code, and the code (the
//! contract in the README: 0 served within thresholds, 1 unreachable or failed, 2 bad input, 3 a
//! threshold broken, 4 a verify whose ledger is incomplete, 5 a busy store, 130 interrupted).

/// An error caused by what the user typed or gave (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A store another process holds — a stackdb directory's lock, a world's players leased to a running
/// game server, a database that answers "locked": nothing was done, and nothing is wrong with the store
/// (exit code 5; try again once the other process ends).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Busy(pub String);

/// A store's error, after what was being done (`context`): a busy store is [`Busy`], the rest plain
/// errors.
pub fn store_error(context: impl std::fmt::Display, e: aggro_core::StoreError) -> anyhow::Error {
    let text = format!("{context}: {}", e.message);
    match e.class {
        aggro_core::ErrorClass::Locked => Busy(text).into(),
        _ => anyhow::anyhow!(text),
    }
}

/// A populate's store error: what it cannot take for a store of its own (files another program wrote where
/// the store goes, a database file of another kind) is where the user pointed it, exit 2, not a failure of
/// the store.
pub fn populate_error(context: impl std::fmt::Display, e: aggro_core::StoreError) -> anyhow::Error {
    match e.class {
        aggro_core::ErrorClass::Data => BadInput(format!("{context}: {}", e.message)).into(),
        _ => store_error(context, e),
    }
}

/// A run stopped by SIGINT or SIGTERM, its result file written (exit code 130, as a shell reports a
/// command Ctrl-C ended).
#[derive(Debug, thiserror::Error)]
#[error("stopped by a signal (the result file was written)")]
pub struct Interrupted;

/// A report whose thresholds did not all pass (exit code 3; the report was written).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ThresholdsFailed(pub String);

/// Verify's finding when the store is consistent but runs since population left no result file: the
/// totals cannot be checked, and the store is not to blame (exit code 4; `world.rs` words it).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LedgerIncomplete(pub String);

/// The exit code `e` means.
pub fn code(e: &anyhow::Error) -> i32 {
    match () {
        _ if e.downcast_ref::<BadInput>().is_some() => 2,
        _ if e.downcast_ref::<Interrupted>().is_some() => 130,
        _ if e.downcast_ref::<ThresholdsFailed>().is_some() => 3,
        _ if e.downcast_ref::<LedgerIncomplete>().is_some() => 4,
        _ if e.downcast_ref::<Busy>().is_some() => 5,
        _ => 1,
    }
}
