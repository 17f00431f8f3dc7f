//! The MMO player-minute workload of the Versant benchmark.
//!
//! # Layout
//! - [`profile`]: the paper's actions and the TOML profile of counts per period.
//! - [`zone`]: a game server's zone — players in memory, dirty tracking, the actions.
//! - [`period`]: the play loader — one request is one period of one zone.
//! - [`book`]: `T_last` lines, the per-action table, the player-minute ratio, each zone's share.
//! - [`thread_time`]: a zone thread's time on a core, waiting for one, and blocked (on the store).
//! - [`login`]: the login test's loader.
//! - [`populate`]: generating and inserting the world.
//! - [`verify`]: the world's invariants, checked in the store.
//! - [`ledger`]: the items the zones committed, and what pushes in doubt may have added.

pub mod book;
pub mod ledger;
pub mod login;
pub mod period;
pub mod populate;
pub mod profile;
pub mod thread_time;
pub mod verify;
pub mod zone;

pub use book::{PeriodBook, PlaySummary};
pub use ledger::ItemLedger;
pub use login::LoginLoader;
pub use period::PeriodLoader;
pub use profile::{Action, OPERATIONS, Profile};
pub use zone::Zone;
