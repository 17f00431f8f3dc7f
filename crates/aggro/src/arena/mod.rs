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

use crate::arena::args::{ArenaCommand, Mode, ServerGameArgs};
use crate::exit::BadInput;
use aggro_arena::metrics::MetricsServer;
use aggro_arena::server::ServeConfig;
use arena_proto::Secret;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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

/// A socket address argument (host:port), or bad input.
pub fn address(text: &str, what: &str) -> anyhow::Result<SocketAddr> {
    crate::cli::values::address(text).map_err(|e| BadInput(format!("--{what}: {e}")).into())
}

/// The `/metrics` endpoint `--metrics ADDR` asks for, started.
pub fn metrics_server(addr: Option<SocketAddr>) -> anyhow::Result<Option<MetricsServer>> {
    let Some(addr) = addr else { return Ok(None) };
    Ok(Some(MetricsServer::start(addr).map_err(|e| anyhow::anyhow!("--metrics: cannot listen on {addr}: {e}"))?))
}

/// The server's game settings from the arguments.
pub fn server_config(g: &ServerGameArgs, secret: &str, seed: u64, interval: Duration) -> ServeConfig {
    let mut cfg = ServeConfig::new(Secret::from_passphrase(secret));
    cfg.tick_hz = g.tick;
    cfg.send_flush = g.send_flush;
    cfg.tiers = g.interleave.clone().map(|t| t.0).unwrap_or_default();
    cfg.interest_m = g.interest;
    cfg.zone_shrink_s = g.zone.as_secs_f64();
    cfg.seed = seed;
    cfg.interval = interval;
    cfg
}

/// A flag set by Ctrl-C (and SIGTERM), so a run stops cleanly and still writes its result.
pub fn stop_on_signal() -> Arc<AtomicBool> {
    static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    let flag = STOP.get_or_init(|| Arc::new(AtomicBool::new(false))).clone();
    extern "C" fn on_signal(_: libc::c_int) {
        if let Some(f) = STOP.get() {
            f.store(true, Ordering::Relaxed);
        }
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    flag
}

/// Milliseconds from ns, for tables.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Whether a swarm child of a bench measured its point: it succeeded, or it ran and found the service
/// broke its thresholds (exit 3) — a measurement the sweep keeps, with the point's verdict.
pub fn swarm_measured(status: std::process::ExitStatus) -> bool {
    status.success() || status.code() == Some(3)
}
