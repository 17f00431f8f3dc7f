//! The world an MMO command works on: the one its flags name, or the one its store's record names (the
//! flags checked against it), the store opened from `--target` and checked to hold it, and the lease
//! owner ids of the game servers.

use crate::exit::BadInput;
use crate::mmo::args::WorldArgs;
use crate::world::ReadWorld;
use aggro_core::ErrorClass;
use aggro_core::mmo::{MmoConn, MmoTarget, WorldSpec};
use aggro_core::world::{WorldRecord, WorldShape, settle};

/// Accounts a population makes unless told.
pub const DEFAULT_ACCOUNTS: u32 = 5_000;
/// The world seed a population uses unless told.
pub const DEFAULT_WORLD_SEED: u64 = 1;

/// The world the arguments name (the paper's ratios), with the defaults for
/// flags left out: what a population makes.
pub fn world(a: &WorldArgs) -> anyhow::Result<WorldSpec> {
    let w = WorldSpec::paper(a.accounts.unwrap_or(DEFAULT_ACCOUNTS), a.world_seed.unwrap_or(DEFAULT_WORLD_SEED));
    w.validate().map_err(BadInput)?;
    Ok(w)
}

/// The world the store's record names, with every shape flag given checked
/// against it; the flags' (or their defaults) when the store holds no MMO
/// world record. Reads the record on `rt`, opening the store read-only for it
/// alone (a command refused here has changed nothing in the store).
pub fn settle_world(rt: &tokio::runtime::Runtime, a: &WorldArgs) -> anyhow::Result<(WorldSpec, Option<WorldRecord>)> {
    let flags = world(a)?;
    let record = rt.block_on(on_target(&a.target, ReadWorld("mmo")))?;
    let Some(WorldShape::Mmo { accounts, world_seed }) = record.as_ref().map(|r| &r.shape) else {
        return Ok((flags, record));
    };
    let bad = |e: String| anyhow::Error::from(BadInput(e));
    let w = WorldSpec::paper(settle("accounts", a.accounts, *accounts).map_err(bad)?, settle("world-seed", a.world_seed, *world_seed).map_err(bad)?);
    w.validate().map_err(|e| bad(format!("the store's world record: {e}")))?;
    crate::world::announce(record.as_ref());
    Ok((w, record))
}

/// Opens `target` and runs `visitor` on it; what it cannot open for this workload is bad input.
pub async fn on_target<V: aggro_targets::MmoVisitor<Output = anyhow::Result<R>>, R>(
    target: &crate::cli::target::Target,
    visitor: V,
) -> anyhow::Result<R> {
    aggro_targets::open_mmo(&target.url, visitor).await.map_err(|e| BadInput(e.to_string()))?
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
        Err(e) => Err(crate::exit::store_error(target.describe(), e)),
    }
}

/// A lease owner id unique among running game servers: the process, the
/// time and the zone, mixed; never 0.
pub fn owner_id(zone: u32) -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut rng = aggro_core::rng::Rng::stream(t ^ ((std::process::id() as u64) << 32), zone as u64);
    rng.next_u64() | 1
}
