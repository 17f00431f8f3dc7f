//! `aggro mobile …`: the mobile-game transaction benchmark (after the DynamoDB/Spanner tool).

pub mod args;
mod find_max;
mod populate;
mod run;
mod spec;
mod target;
mod verify;

use crate::mobile::args::MobileCommand;

/// Runs one `aggro mobile` command.
pub fn main(command: MobileCommand) -> anyhow::Result<()> {
    match command {
        MobileCommand::Populate(a) => populate::main(a),
        MobileCommand::Run(a) => run::main(a),
        MobileCommand::FindMax(a) => find_max::main(a),
        MobileCommand::Verify(a) => verify::main(a),
    }
}
