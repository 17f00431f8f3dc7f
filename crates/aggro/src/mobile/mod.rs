//! `aggro mobile …`: the mobile-game transaction benchmark (after the DynamoDB/Spanner tool).

pub mod args;
mod find_max;
mod populate;
mod run;
mod spec;
mod verify;

use crate::cli::target::Target;
use crate::exit::BadInput;
use crate::mobile::args::MobileCommand;
use crate::world::ReadWorld;
use aggro_core::mobile::{MobileConn, MobileTarget};
use aggro_core::world::WorldRecord;
use aggro_core::{ErrorClass, ErrorSamples};
use aggro_workloads::mobile::{KeySpace, MobileLoader, Workload};
use std::sync::Arc;

/// Runs one `aggro mobile` command.
pub fn main(command: MobileCommand) -> anyhow::Result<()> {
    match command {
        MobileCommand::Populate(a) => populate::main(a),
        MobileCommand::Run(a) => run::main(a),
        MobileCommand::FindMax(a) => find_max::main(a),
        MobileCommand::Verify(a) => verify::main(a),
    }
}

/// Opens `target` and runs `visitor` on it; what it cannot open for this workload is bad input.
async fn on_target<V: aggro_targets::MobileVisitor<Output = anyhow::Result<R>>, R>(target: &Target, visitor: V) -> anyhow::Result<R> {
    aggro_targets::open_mobile(&target.url, visitor).await.map_err(|e| BadInput(e.to_string()))?
}

/// Reads the store's mobile world record and settles the key space with
/// the shape flags (`spec::settle_keys`).
fn settle(rt: &tokio::runtime::Runtime, flags: &spec::DataFlags) -> anyhow::Result<(KeySpace, Option<WorldRecord>)> {
    let world = rt.block_on(on_target(&flags.target, ReadWorld("mobile")))?;
    let keys = spec::settle_keys(flags, world.as_ref())?;
    crate::world::announce(world.as_ref());
    Ok((keys, world))
}

/// Opens `count` connections and checks, with one read, that the data is
/// there: a missing schema is reported once, plainly, before any load.
async fn connect_loaders<T: MobileTarget>(
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
