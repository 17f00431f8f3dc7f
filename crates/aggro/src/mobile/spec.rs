//! Resolving the command line into a complete, recorded run description.

use crate::drive::ExecSpec;
use crate::exit::BadInput;
use crate::mobile::args::{DataArgs, DriveArgs};
use aggro_core::world::{WorldRecord, WorldShape, settle};
use aggro_targets::TargetUrl;
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
    pub target: String,
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

/// Checks the target URL and the shape flags.
pub fn resolve_data(a: &DataArgs) -> anyhow::Result<DataFlags> {
    TargetUrl::parse(&a.target).map_err(|e| bad(e.to_string()))?;
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
    Ok(DriveSpec { target: mask_password(&a.data.target), workload: a.workload, keys: data.keys(), exec: ExecSpec::resolve(&a.exec) })
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn mask_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
        && let Some((user, _)) = userinfo.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_result_file() {
        assert_eq!(mask_password("postgres://u:pw@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(mask_password("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(mask_password("sqlite:./x.db"), "sqlite:./x.db");
    }
}
