//! The store a mobile command works on: opened from its `--target`, its world record read and the key
//! space settled with the shape flags, and the loaders' connections checked with one read.

use super::spec;
use crate::cli::target::Target;
use crate::exit::BadInput;
use crate::world::ReadWorld;
use aggro_core::mobile::{MobileConn, MobileTarget};
use aggro_core::world::WorldRecord;
use aggro_core::{ErrorClass, ErrorSamples};
use aggro_workloads::mobile::{KeySpace, MobileLoader, Workload};
use std::sync::Arc;

/// Opens `target` and runs `visitor` on it; what it cannot open for this workload is bad input.
pub async fn on_target<V: aggro_targets::MobileVisitor<Output = anyhow::Result<R>>, R>(target: &Target, visitor: V) -> anyhow::Result<R> {
    aggro_targets::open_mobile(&target.url, visitor).await.map_err(|e| BadInput(e.to_string()))?
}

/// Reads the store's mobile world record and settles the key space with
/// the shape flags (`spec::settle_keys`). The store is opened for this alone,
/// read-only (`ReadWorld`), before the command opens it to work: a command
/// refused for its flags or an unpopulated store has changed nothing in it.
pub fn settle(rt: &tokio::runtime::Runtime, flags: &spec::DataFlags) -> anyhow::Result<(KeySpace, Option<WorldRecord>)> {
    let world = rt.block_on(on_target(&flags.target, ReadWorld("mobile")))?;
    let keys = spec::settle_keys(flags, world.as_ref())?;
    crate::world::announce(world.as_ref());
    Ok((keys, world))
}

/// Opens `count` connections and checks, with one read, that the data is
/// there: a missing schema is reported once, plainly, before any load.
pub async fn connect_loaders<T: MobileTarget>(
    target: &T,
    count: u32,
    workload: Workload,
    keys: KeySpace,
    seed: u64,
    samples: &Arc<ErrorSamples>,
) -> anyhow::Result<Vec<MobileLoader<T::Conn>>> {
    let mut loaders = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut conn = target.connect().await.map_err(|e| crate::exit::store_error(format_args!("loader {i} of {count}"), e))?;
        if i == 0 {
            preflight(&mut conn, target, &keys).await?;
        }
        loaders.push(MobileLoader::new(conn, workload, keys, seed, Arc::clone(samples)));
    }
    Ok(loaders)
}

async fn preflight<T: MobileTarget>(conn: &mut T::Conn, target: &T, keys: &KeySpace) -> anyhow::Result<()> {
    match conn.read_gold(keys.spread.apply(keys.users)).await {
        Ok(_) => Ok(()),
        Err(e) if e.class == ErrorClass::Data => Err(BadInput(format!(
            "{} does not hold the mobile workload's {} users: {} (run `aggro mobile populate --target … --users {}`)",
            target.describe(),
            keys.users,
            e.message,
            keys.users
        ))
        .into()),
        Err(e) => Err(crate::exit::store_error(target.describe(), e)),
    }
}
