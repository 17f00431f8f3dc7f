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
//! - [`error`]: the error type, [`Error`].
//!
//! Built so far: the storage seam, the record format and the log. The head
//! table, linear hashing, the page cache and the `Database` API follow the
//! design document.
#![deny(missing_docs)]

pub mod db;
pub mod error;
pub mod hash;
pub mod heads;
pub mod log;
pub mod record;
pub mod storage;

pub use db::{Backends, Database, Iter, Options, Stats, WriteTxn};
pub use error::Error;
pub use log::{Batch, Durability, Log};
pub use storage::{FileBackend, MemBackend, StorageBackend};
