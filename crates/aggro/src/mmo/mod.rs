//! `aggro mmo …`: the MMO player-minute benchmark (seed 000).

pub mod login;
pub mod play;
pub mod populate;
pub mod verify;

use crate::BadInput;
use crate::cli::{MmoCommand, WorldArgs};
use aggro_core::ErrorClass;
use aggro_core::mmo::{MmoConn, MmoTarget, WorldSpec};
use aggro_core::units::parse_duration;

/// Runs one `aggro mmo` command.
pub fn main(command: MmoCommand) -> anyhow::Result<()> {
    match command {
        MmoCommand::Populate(a) => populate::main(a),
        MmoCommand::Login(a) => login::main(a).map(drop),
        MmoCommand::Play(a) => play::main(a).map(drop),
        MmoCommand::Verify(a) => verify::main(a),
    }
}

/// The world the arguments name (the paper's ratios).
pub fn world(a: &WorldArgs) -> anyhow::Result<WorldSpec> {
    let w = WorldSpec::paper(a.accounts, a.world_seed);
    w.validate().map_err(BadInput)?;
    Ok(w)
}

/// Opens the target `url` and runs `visitor` on it; URL errors are bad input.
pub async fn on_target<V: aggro_targets::MmoVisitor<Output = anyhow::Result<R>>, R>(url: &str, visitor: V) -> anyhow::Result<R> {
    aggro_targets::open_mmo(url, visitor).await.map_err(|e| BadInput(e.to_string()))?
}

/// Checks, with one login of the world's last account, that the world is
/// populated to that size: a missing world is reported once, plainly.
pub async fn preflight<T: MmoTarget>(conn: &mut T::Conn, target: &T, world: &WorldSpec) -> anyhow::Result<()> {
    let last = world.accounts - 1;
    match conn.login(&WorldSpec::username(last), aggro_core::mmo::now_ms()).await {
        Ok(_) => Ok(()),
        Err(e) if e.class == ErrorClass::Data => Err(BadInput(format!(
            "{} does not hold a world of {} accounts: {} (run `aggro mmo populate --target … --accounts {}`)",
            target.describe(),
            world.accounts,
            e.message,
            world.accounts
        ))
        .into()),
        Err(e) => Err(anyhow::anyhow!("{}: {}", target.describe(), e.message)),
    }
}

/// Parses a duration argument as nanoseconds.
pub fn nanos(what: &str, text: &str) -> anyhow::Result<u64> {
    let d = parse_duration(text).map_err(|e| BadInput(format!("bad {what}: {e}")))?;
    Ok(d.as_nanos() as u64)
}

/// A lease owner id unique among running game servers: the process, the
/// time and the zone, mixed; never 0.
pub fn owner_id(zone: u32) -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut rng = aggro_core::rng::Rng::stream(t ^ ((std::process::id() as u64) << 32), zone as u64);
    rng.next_u64() | 1
}
