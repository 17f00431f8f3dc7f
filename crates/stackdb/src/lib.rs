//! stackdb: a disk-based hash table whose buckets are stacks.
//!
//! The newest record of each bucket is on top of its stack, so a recently
//! written key is found in one step however much old data lies beneath, and
//! the engine's RAM stays within a fixed budget however large the data grows
//! (the idea of One Hour One Life's StackDB, made crash-safe). The format and
//! the design are in `docs/stackdb-format.md`; this crate knows nothing of
//! aggro.
//!
//! # Layout
//! Modules import one way, bottom to top (`scripts/module-circles.py` checks it in CI):
//! - [`error`], `sync` (locks), [`hash`], `map`, [`storage`]: the bottom — the error type, lock
//!   taking, key hashing, memory maps, and the nine-method [`StorageBackend`] seam with a file
//!   backend and an in-memory one that can simulate crashes and torn writes.
//! - [`record`], `page` (a bucket's [`Entry`](page::Entry) and the head-table page format),
//!   [`log`]: the formats and the append-only log (atomic batches, recovery to the last complete
//!   commit).
//! - [`heads`]: the head table — entries in checksummed pages, those not yet written held in RAM
//!   within the budget, the header [`State`](heads::State), a checkpoint round under way and the
//!   sweeps' estimates, and `recent` (the buckets set lately, which a write transaction asks to
//!   confirm what it looked up before the writer); `stack` (walking and rebuilding a bucket's stack).
//! - `apply` (what a split's or a sweep's batch does to the table: one applier for a commit and
//!   for recovery's replay), `checkpoint` (rounds writing the table a slice at a time through the
//!   doublewrite file), `plan` (the sweep's reads), `compaction` (when and which sweep), `worker`
//!   (the background threads' wake-ups, errors and stop), `checkpointer` (the thread writing the
//!   slices while commits go on).
//! - [`db`]: [`Database`]: open, get, stats, checkpoints, recovery replay; with `txn` (the write
//!   transaction) and `iter` (the full scan), which call back into it; `split` (linear hashing) and
//!   `sweep` (compaction, on a thread of its own) add the database's growth and sweeping;
//!   [`repair`] (checking a directory, and `salvage`: copying what a damaged one can prove into a new
//!   one) and [`overlay`] sit beside it.
#![deny(missing_docs)]

mod apply;
mod checkpoint;
mod checkpointer;
mod compaction;
pub mod db;
pub mod error;
pub mod hash;
pub mod heads;
mod iter;
pub mod log;
mod map;
pub mod overlay;
mod page;
mod plan;
mod recent;
pub mod record;
pub mod repair;
mod salvage;
mod split;
mod stack;
pub mod storage;
mod sweep;
mod sync;
mod txn;
mod worker;

pub use compaction::Compaction;
pub use db::{Backends, Database, Options, Stats};
pub use error::Error;
pub use iter::Iter;
pub use log::{Batch, Durability, Log};
pub use storage::{FileBackend, MemBackend, StorageBackend};
pub use txn::WriteTxn;
