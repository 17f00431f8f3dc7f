//! The mobile-game transaction benchmark (after the DynamoDB/Spanner tool): `write`,
//! `consistent-read` and `read` against 100,000 users (configurable).

mod keys;
mod loader;
mod verify;

pub use keys::{KeySpace, Spread};
pub use loader::MobileLoader;
pub use verify::{Ledger, Problem, Verdict, verify};

use serde::{Deserialize, Serialize};

/// Which of the three transactions a run drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Workload {
    /// One user: Gold −5 and NumTickets +1, atomically.
    Write,
    /// A transaction adding 5 Gold, then a strongly consistent read of that user.
    ConsistentRead,
    /// Read one user's record.
    Read,
}

impl Workload {
    /// Whether it commits changes a verify accounts for.
    pub fn commits(self) -> bool {
        self != Workload::Read
    }

    /// The workload's name as typed.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Write => "write",
            Workload::ConsistentRead => "consistent-read",
            Workload::Read => "read",
        }
    }

    /// Operation names; operation 0 is always the whole request.
    pub fn operations(self) -> &'static [&'static str] {
        match self {
            Workload::Write => &["write"],
            // Both steps timed, separately (1, 2) and together (0).
            Workload::ConsistentRead => &["consistent-read", "add-gold", "read"],
            Workload::Read => &["read"],
        }
    }
}
