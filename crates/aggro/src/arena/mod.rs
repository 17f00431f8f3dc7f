//! `aggro arena …`: the reference game server and the room relay, the bot swarm, the bench (after the PUBG article and the Photon guide).

pub mod args;
pub mod bench;
pub mod colyseus_bench;
pub mod funnel;
pub mod kept;
pub mod listener;
pub mod merged;
pub mod named;
pub mod pair;
pub mod ports;
pub mod process;
pub mod record;
pub mod relay;
pub mod relay_bench;
pub mod serve;
pub mod server_watch;
pub mod soak;
pub mod storm;
pub mod swarm;
pub mod tally;

use crate::arena::args::{ArenaCommand, Mode};
use crate::exit::BadInput;

/// Runs one `aggro arena` command.
pub fn main(command: ArenaCommand) -> anyhow::Result<()> {
    match command {
        ArenaCommand::Serve(a) if a.mode == Mode::Relay => relay::serve(a),
        ArenaCommand::Serve(a) if a.mode == Mode::Colyseus => {
            Err(BadInput("aggro does not serve Colyseus: start your server (or examples/colyseus) and point `arena swarm --mode colyseus` or `arena bench --mode colyseus --server-cmd` at it".into()).into())
        }
        ArenaCommand::Serve(a) => serve::main(a),
        ArenaCommand::Swarm(a) => swarm::main(a),
        ArenaCommand::Bench(a) => {
            match a.mode {
                _ if a.script.is_some() => colyseus_bench::main(a),
                Mode::Relay | Mode::Game if a.restart_at.is_some() => Err(BadInput(
                    "--restart-at restarts the server of --server-cmd (--mode colyseus, --script); for aggro's own relay, run `arena swarm --mode relay --reconnect` and restart the relay by hand".into(),
                )
                .into()),
                Mode::Relay => relay_bench::main(a),
                Mode::Colyseus => colyseus_bench::main(a),
                Mode::Game => bench::main(a),
            }
        }
    }
}
