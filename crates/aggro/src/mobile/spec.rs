//! Resolving the command line into a complete, recorded run description.

use crate::BadInput;
use crate::cli::{DataArgs, DriveArgs};
use aggro_core::units::parse_duration;
use aggro_core::{Nanos, Pacing};
use aggro_runner::BacklogRule;
use aggro_targets::TargetUrl;
use aggro_workloads::mobile::{KeySpace, Spread, Workload};
use serde::Serialize;

/// Everything about the data and the drive, resolved; written into every result.
#[derive(Clone, Debug, Serialize)]
pub struct DriveSpec {
    /// The target URL as given (PostgreSQL passwords masked).
    pub target: String,
    pub workload: Workload,
    pub keys: KeySpace,
    pub loaders: u32,
    pub pacing: Pacing,
    pub interval_ns: Nanos,
    pub backlog_rule: BacklogRule,
    pub drain_ns: Nanos,
    pub seed: u64,
    pub threads: usize,
}

fn bad(e: String) -> anyhow::Error {
    BadInput(e).into()
}

/// Checks the target URL and resolves the key space.
pub fn resolve_data(a: &DataArgs) -> anyhow::Result<KeySpace> {
    TargetUrl::parse(&a.target).map_err(|e| bad(e.to_string()))?;
    Ok(KeySpace { users: a.users, spread: Spread::parse(&a.spread).map_err(bad)? })
}

/// Resolves the drive arguments.
pub fn resolve_drive(a: &DriveArgs) -> anyhow::Result<DriveSpec> {
    let keys = resolve_data(&a.data)?;
    let pacing = match a.pacing.as_str() {
        "even" => Pacing::Even,
        "second" => Pacing::Second,
        "poisson" => Pacing::Poisson,
        other => return Err(bad(format!("unknown pacing {other:?}: expected even, second or poisson"))),
    };
    let interval = parse_duration(&a.interval).map_err(bad)?;
    if interval.as_millis() < 10 {
        return Err(bad("--interval must be at least 10ms".into()));
    }
    let seed = crate::session::seed_or_clock(a.seed);
    Ok(DriveSpec {
        target: mask_password(&a.data.target),
        workload: Workload::parse(&a.workload).map_err(bad)?,
        keys,
        loaders: a.loaders,
        pacing,
        interval_ns: interval.as_nanos() as Nanos,
        backlog_rule: BacklogRule::parse(&a.stop_on_backlog).map_err(bad)?,
        drain_ns: parse_duration(&a.drain).map_err(bad)?.as_nanos() as Nanos,
        seed,
        threads: a.threads,
    })
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
