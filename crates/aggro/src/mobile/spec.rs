//! Resolving the command line into a complete, recorded run description.

use crate::exit::BadInput;
use crate::mobile::args::{DataArgs, DriveArgs};
use crate::run::drive::ExecSpec;
use aggro_core::world::{WorldRecord, WorldShape, settle};
use aggro_workloads::mobile::{KeySpace, Spread, Workload};
use serde::Serialize;

/// Everything about the data and the drive, resolved; written into every result.
#[derive(Clone, Debug, Serialize)]
pub struct DriveSpec {
    /// The target URL as given (PostgreSQL passwords masked).
    pub target: String,
    pub workload: Workload,
    /// From the flags (or their defaults), then settled with the store's
    /// world record before anything runs ([`settle_keys`]).
    pub keys: KeySpace,
    #[serde(flatten)]
    pub exec: ExecSpec,
}

fn bad(e: String) -> anyhow::Error {
    BadInput(e).into()
}

/// Users a population makes unless told.
pub const DEFAULT_USERS: u32 = 100_000;

/// The data flags, checked: the target URL and whichever shape flags were given.
#[derive(Clone, Debug)]
pub struct DataFlags {
    pub target: crate::cli::target::Target,
    pub users: Option<u32>,
    pub spread: Option<Spread>,
}

impl DataFlags {
    /// The key space the flags name, with the defaults for those left out
    /// (what a population makes, and what a store without a world record holds).
    pub fn keys(&self) -> KeySpace {
        KeySpace { users: self.users.unwrap_or(DEFAULT_USERS), spread: self.spread.unwrap_or_default() }
    }
}

/// The target and the shape flags.
pub fn resolve_data(a: &DataArgs) -> anyhow::Result<DataFlags> {
    Ok(DataFlags { target: a.target.clone(), users: a.users, spread: a.spread })
}

/// The key space of the store's world, with every shape flag given checked
/// against it; the flags' when the store holds no mobile world record.
pub fn settle_keys(flags: &DataFlags, world: Option<&WorldRecord>) -> anyhow::Result<KeySpace> {
    let Some(WorldShape::Mobile { users, spread }) = world.map(|w| &w.shape) else {
        return Ok(flags.keys());
    };
    let stored = Spread::parse(spread).map_err(|e| bad(format!("the store's world record: {e}")))?;
    Ok(KeySpace { users: settle("users", flags.users, *users).map_err(bad)?, spread: settle("spread", flags.spread, stored).map_err(bad)? })
}

/// Resolves the drive arguments, the key space from the data flags alone
/// (see [`settle_keys`]).
pub fn resolve_drive(a: &DriveArgs, data: &DataFlags) -> anyhow::Result<DriveSpec> {
    Ok(DriveSpec { target: a.data.target.masked(), workload: a.workload, keys: data.keys(), exec: ExecSpec::resolve(&a.exec) })
}
