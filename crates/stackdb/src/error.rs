//! Errors of stackdb.

/// Everything that can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Data on disk failed a check: never used, always reported.
    #[error("corrupt {what} at offset {offset}")]
    Corrupt {
        /// Which structure.
        what: &'static str,
        /// Where in its file.
        offset: u64,
    },
    /// A damaged record where the log was synced: a later commit proves the log was durable past it, so
    /// cutting the log there would lose acknowledged commits. Nothing was changed.
    #[error(
        "{file} is damaged at offset {offset}, before offset {synced} which it had synced: {later_commits} intact commits follow the damage; nothing was changed (`aggro store salvage` copies what it can prove)"
    )]
    Damaged {
        /// Which file.
        file: &'static str,
        /// Where the damage begins.
        offset: u64,
        /// How far the file was proven synced.
        synced: u64,
        /// Intact commit records after the damage.
        later_commits: u64,
    },
    /// The file ends cleanly before what its header records it had synced: cut short (a `truncate`, a
    /// copy that stopped early, a failing disk), its acknowledged tail lost. Nothing was changed.
    #[error(
        "{file} ends at offset {end}, before offset {synced} which it had synced (its header records it): its tail was cut off, with commits that were acknowledged; nothing was changed (restore the file whole if you can; `aggro store salvage` copies what is left)"
    )]
    Cut {
        /// Which file.
        file: &'static str,
        /// Where it ends.
        end: u64,
        /// How far it had been synced.
        synced: u64,
    },
    /// The head table is older than its log: checkpointed when the log's floor was lower than the
    /// floor the log has since given its space back below (a head table restored from a backup, or
    /// another store's). Nothing was changed.
    #[error(
        "the head table is older than its log: its checkpoint {checkpoint} had the log's floor at offset {heads_floor}, and the log has been swept and given back below offset {log_floor} since (a head table from a backup, or another store's?); nothing was changed (put back the heads and heads.dw files that go with this log; failing that, `aggro store salvage` rebuilds the store from the log alone)"
    )]
    Stale {
        /// The head table's checkpoint sequence.
        checkpoint: u64,
        /// The floor it records.
        heads_floor: u64,
        /// The floor the log's header records.
        log_floor: u64,
    },
    /// A commit was written and is visible to this handle, but what would make it durable failed: whether
    /// it survives a crash is unknown. The database refuses writes until it is reopened.
    #[error(
        "commit in doubt: it was written and is visible, but {0}; whether it survives a crash is unknown (writes are refused until the database is reopened)"
    )]
    InDoubt(String),
    /// A write or sync failed earlier: the database refuses writes until it is reopened (nothing of this
    /// request was written).
    #[error("the database refuses writes: {0} (reopen it to write)")]
    Poisoned(String),
    /// Not a stackdb file, or a version this build does not read.
    #[error("not a stackdb file (or an unsupported version): {0}")]
    Format(String),
    /// An option out of its range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// Another process has the database open.
    #[error("{0} is open in another process (it holds the directory's lock)")]
    Locked(String),
    /// A key or value beyond the format's limits.
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Key or value.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Results of stackdb.
pub type Result<T> = std::result::Result<T, Error>;
