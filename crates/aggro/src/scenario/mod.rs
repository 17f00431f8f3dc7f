//! `aggro scenario …` and `aggro pgbench`: the user's own workload.
//!
//! Both read an [`Input`] — a scenario file or pgbench scripts — and compile
//! it once the target (and so its command family) is known; everything
//! after is the same population, run and verification.

pub mod args;
mod find_max;
mod input;
mod populate;
mod run;
mod target;
mod verify;

pub use input::Input;
pub use populate::Populate;
pub use run::Run;
pub use target::on_target;

use crate::scenario::args::ScenarioCommand;

/// Runs one `aggro scenario` command.
pub fn main(command: ScenarioCommand) -> anyhow::Result<()> {
    match command {
        ScenarioCommand::Populate(a) => populate::main(a),
        ScenarioCommand::Run(a) => run::main(*a),
        ScenarioCommand::FindMax(a) => find_max::main(*a),
        ScenarioCommand::Verify(a) => verify::main(a),
    }
}
