//! The store interface of the MMO player-minute workload (the
//! Versant benchmark).
//!
//! - [`model`]: the game's objects (Account, Player and its parts, Item,
//!   Quest, Guild, GuildRank) and the world's sizes and ratios.
//! - [`codec`]: a compact binary encoding of those objects, for key-value
//!   targets (stackdb, Redis, DynamoDB binary attributes).
//! - [`store`]: the traits a target implements — population, login, loading a
//!   player under a lease, guild rosters, change sets written atomically and
//!   fenced by the writer's leases, and the scan `verify` checks.

pub mod codec;
pub mod model;
pub mod store;

pub use model::*;
pub use store::*;
