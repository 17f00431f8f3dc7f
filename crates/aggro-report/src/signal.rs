//! What the generator-bound check finds ([`crate::generator`]): a named signal with its figure and
//! limit, as the result record carries it.

use serde::{Deserialize, Serialize};

/// Which evidence fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// aggro's own CPU.
    Cpu,
    /// Loaders' timer lateness in clean intervals.
    Lateness,
    /// Backlog beside an idle loader.
    Backlog,
    /// The hypervisor's steal time.
    Steal,
}

impl Signal {
    /// Its name in result files and warnings.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Cpu => "cpu",
            Signal::Lateness => "lateness",
            Signal::Backlog => "backlog",
            Signal::Steal => "steal",
        }
    }
}

/// One piece of evidence that the generator set the pace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSignal {
    /// Which.
    pub signal: Signal,
    /// The measured figure (cores, nanoseconds, requests, or a share).
    pub figure: f64,
    /// The limit it crossed, in the same unit.
    pub limit: f64,
    /// The figure and the limit, for a person.
    pub message: String,
}
