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
//! - [`storage`]: the five-method [`StorageBackend`] seam, with a file
//!   backend and an in-memory one that can simulate crashes and torn writes.
//! - [`record`]: the log record format (checksummed, 8-byte aligned).
//! - [`log`]: the append-only log: atomic batches and recovery to the last
//!   complete commit.
//! - [`heads`]: the head table: bucket entries in checksummed pages, the
//!   entries not yet written held in RAM within the budget; `page` (the
//!   page format), `checkpoint` (rounds writing the table a slice at a time
//!   through the doublewrite file), `checkpointer` (the thread writing the
//!   slices while commits go on).
//! - [`db`]: [`Database`]: open, get, stats, checkpoints, recovery replay;
//!   `txn` (the write transaction), `stack` (walking and rebuilding a
//!   bucket's stack), `split` (linear hashing), `compaction` (when and which sweep), `sweep` (compaction, on a
//!   thread of its own), `plan` (the sweep's reads), `iter` (the full scan),
//!   `worker` (the background threads' wake-ups, errors and stop).
//! - [`error`]: the error type, [`Error`].
#![deny(missing_docs)]

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
pub mod record;
pub mod repair;
mod split;
mod stack;
pub mod storage;
mod sweep;
mod txn;
mod worker;

pub use compaction::Compaction;
pub use db::{Backends, Database, Options, Stats};
pub use error::Error;
pub use iter::Iter;
pub use log::{Batch, Durability, Log};
pub use storage::{FileBackend, MemBackend, StorageBackend};
pub use txn::WriteTxn;
