//! `aggro mmo …`: the MMO player-minute benchmark (the Versant paper).

pub mod args;
#[cfg(all(test, feature = "stackdb"))]
mod doubt;
pub mod login;
pub mod play;
pub mod populate;
mod target;
pub mod verify;

use crate::mmo::args::MmoCommand;

/// Runs one `aggro mmo` command.
pub fn main(command: MmoCommand) -> anyhow::Result<()> {
    match command {
        MmoCommand::Populate(a) => populate::main(a),
        MmoCommand::Login(a) => login::main(a).map(drop),
        MmoCommand::Play(a) => play::main(a).map(drop),
        MmoCommand::Verify(a) => verify::main(a),
    }
}
