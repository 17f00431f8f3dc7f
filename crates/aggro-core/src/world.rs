//! The world record: what `populate` leaves in the store about the world it
//! made.
//!
//! Runs, plays and verifies read it, so the shape a user gave once at
//! population (users and spread, accounts and world seed) need not be
//! repeated, and every result file names the world it ran on, so a ledger
//! built from another world's files is refused instead of failing an
//! invariant. The record is JSON text kept by the target under the
//! workload's name ([`WorldShape::workload`]); its layout is in
//! `docs/WORLD-RECORD.md`.

use crate::outcome::StoreError;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// The record format this aggro writes and the newest it reads.
pub const WORLD_FORMAT: u32 = 1;

/// The size and shape of a populated world: what its commands would
/// otherwise need as flags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "snake_case")]
pub enum WorldShape {
    /// The mobile transaction workload (after the DynamoDB/Spanner tool).
    Mobile {
        /// Users `1..=users`.
        users: u32,
        /// How ids are stored: `none` or `bit-reverse`.
        spread: String,
    },
    /// The MMO world (the Versant paper).
    Mmo {
        /// Accounts (5 players each).
        accounts: u32,
        /// Seed of the world's generated content.
        world_seed: u64,
    },
    /// A scenario file's `[populate]`: one record for every scenario, since scenarios may share their
    /// tables (the mobile trio's three files share one population).
    Scenario {
        /// The scenario that populated the store.
        scenario: String,
        /// Its `[vars]` as the population resolved them (`--set` applied), as text.
        vars: std::collections::BTreeMap<String, String>,
        /// False from the moment a population begins until its last row is in: a population cut
        /// short leaves a record saying so.
        complete: bool,
    },
}

impl WorldShape {
    /// The name the record is stored under; one record per workload, so
    /// the mobile users and an MMO world can share a database.
    pub fn workload(&self) -> &'static str {
        match self {
            WorldShape::Mobile { .. } => "mobile",
            WorldShape::Mmo { .. } => "mmo",
            WorldShape::Scenario { .. } => "scenario",
        }
    }
}

/// One world as its population recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldRecord {
    /// [`WORLD_FORMAT`] when written.
    pub format: u32,
    /// The workload and its shape (flattened: `workload`, then its fields).
    #[serde(flatten)]
    pub shape: WorldShape,
    /// Unique per population: two worlds of one shape are still two worlds.
    pub id: String,
    /// When the population finished, RFC 3339.
    pub created_at: String,
    /// The aggro that populated it.
    pub aggro_version: String,
}

impl WorldRecord {
    /// The record of a world populated just now.
    pub fn new(shape: WorldShape, aggro_version: &str) -> Self {
        let (id, created_at) = stamp();
        Self { format: WORLD_FORMAT, shape, id, created_at, aggro_version: aggro_version.to_string() }
    }

    /// The stored text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a world record always serializes")
    }

    /// Reads stored text; a record of a newer format, or one that is not a
    /// record at all, is an error naming what is wrong.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let format = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| format!("the world record is not JSON ({e})"))?
            .get("format")
            .and_then(serde_json::Value::as_u64);
        match format {
            None => return Err("the world record has no format number".into()),
            Some(f) if f > u64::from(WORLD_FORMAT) => {
                return Err(format!("the world record has format {f}, newer than this aggro reads ({WORLD_FORMAT}): upgrade aggro"));
            }
            Some(_) => {}
        }
        serde_json::from_str(text).map_err(|e| format!("the world record is malformed: {e}"))
    }

    /// One line for people: `mobile world 5f3a… (users 20000, spread none), populated 2026-… by aggro 0.1.0`.
    pub fn describe(&self) -> String {
        let shape = match &self.shape {
            WorldShape::Mobile { users, spread } => format!("users {users}, spread {spread}"),
            WorldShape::Mmo { accounts, world_seed } => format!("accounts {accounts}, world seed {world_seed}"),
            WorldShape::Scenario { scenario, vars, complete } => {
                let vars: Vec<String> = vars.iter().map(|(n, v)| format!("{n}={v}")).collect();
                format!(
                    "scenario {scenario}{}{}",
                    if vars.is_empty() { String::new() } else { format!(", {}", vars.join(" ")) },
                    if *complete { "" } else { ", NOT FINISHED" }
                )
            }
        };
        format!("{} world {} ({shape}), populated {} by aggro {}", self.shape.workload(), self.id, self.created_at, self.aggro_version)
    }
}

/// One run as it logs itself in the store when it starts, so a verify can
/// tell a run whose result file is missing from data the store lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEntry {
    /// Unique per run (per shard of a split run); the result file names it.
    pub id: String,
    /// The command, such as `mobile run`.
    pub command: String,
    /// What it runs, such as `write`.
    pub workload: String,
    /// Whether it commits changes a verify accounts for (a `read` run does not).
    pub commits: bool,
    /// When it started, RFC 3339 UTC.
    pub started_at: String,
    /// The machine it ran on.
    pub host: String,
}

impl RunEntry {
    /// The entry of a run starting now.
    pub fn new(command: &str, workload: &str, commits: bool, host: &str) -> Self {
        let (id, started_at) = stamp();
        Self { id, command: command.into(), workload: workload.into(), commits, started_at, host: host.into() }
    }

    /// The stored text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a run entry always serializes")
    }

    /// One line for people: `mobile run (write) 1a2b… started 2026-… on host`.
    pub fn describe(&self) -> String {
        format!("{} ({}) {} started {} on {}", self.command, self.workload, self.id, self.started_at, self.host)
    }
}

/// A fresh id (16 hex digits mixed from the clock's nanoseconds and the
/// process id) and now as RFC 3339 UTC.
fn stamp() -> (String, String) {
    let now = std::time::SystemTime::now();
    let nanos = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let id = crate::rng::Rng::stream(nanos, u64::from(std::process::id())).next_u64();
    (format!("{id:016x}"), humantime::format_rfc3339_seconds(now).to_string())
}

/// The key of `workload`'s world record in a key-value store (stackdb, Redis).
pub fn record_key(workload: &str) -> String {
    format!("aggro:world:{workload}")
}

/// The key of `workload`'s run log in a key-value store (stackdb, Redis).
pub fn runs_key(workload: &str) -> String {
    format!("aggro:runs:{workload}")
}

/// A store that keeps world records, and the log of runs since, beside the data.
///
/// Population removes the workload's record and run log together with the
/// rest of its data *before* it writes anything (a population cut short
/// leaves no record claiming a whole world), and the caller writes the new
/// record once every row is in.
pub trait WorldStore: Send + Sync {
    /// The target's own figures for the result file's `extra.nodes` (a cluster's, per node); null
    /// where it has none.
    fn nodes(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The text stored for `workload`; `None` when there is none (never
    /// populated, populated by an aggro older than world records, or the
    /// population did not finish).
    fn read_world(&self, workload: &str) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Stores `record` for `workload`, replacing any earlier one.
    fn write_world(&self, workload: &str, record: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Adds `entry` (a [`RunEntry`]'s text, under its `id`) to `workload`'s
    /// run log; runs logging at once each keep theirs.
    fn log_run(&self, workload: &str, id: &str, entry: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every entry of `workload`'s run log since its population, in any order.
    fn run_log(&self, workload: &str) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Empties `workload`'s run log (a population that leaves aggro's own
    /// records alone — a scenario's — starts it again this way); no log is fine.
    fn forget_runs(&self, workload: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Tells the store that this handle will only read from now on (before its first use): a store
    /// that can open read-only (stackdb) then changes nothing in its files, not even the repairs an
    /// open makes. Others ignore it.
    fn only_read(&self) {}

    /// Whether the store holds any data at all — a first probe before a run on a store that must have
    /// been populated (stackdb: a database with live keys; Redis: a non-empty database). Stores whose
    /// schema tells (SQL tables, a DynamoDB table) answer true and let their schema check speak.
    fn holds_data(&self) -> impl Future<Output = Result<bool, StoreError>> + Send {
        async { Ok(true) }
    }

    /// Whether the store keeps data at all (`null:` keeps none, so it has no world to miss).
    fn holds_worlds(&self) -> bool {
        true
    }
}

/// Settles one shape flag against the store's value: a flag left out takes
/// the store's; a flag given must equal it.
pub fn settle<V: PartialEq + std::fmt::Display>(flag: &str, given: Option<V>, stored: V) -> Result<V, String> {
    match given {
        Some(v) if v != stored => {
            Err(format!("--{flag} {v} does not match the store's world ({flag} {stored}): leave --{flag} out, or populate again"))
        }
        _ => Ok(stored),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mobile() -> WorldRecord {
        WorldRecord::new(WorldShape::Mobile { users: 20_000, spread: "bit-reverse".into() }, "0.1.0")
    }

    #[test]
    fn a_record_reads_back_as_written_and_names_its_workload() {
        let r = mobile();
        let text = r.to_json();
        assert!(text.contains("\"workload\":\"mobile\"") && text.contains("\"users\":20000"), "{text}");
        assert_eq!(WorldRecord::from_json(&text).unwrap(), r);
        let mmo = WorldRecord::new(WorldShape::Mmo { accounts: 1_000, world_seed: 3 }, "0.1.0");
        assert_eq!(WorldRecord::from_json(&mmo.to_json()).unwrap().shape.workload(), "mmo");
    }

    #[test]
    fn two_populations_of_one_shape_are_two_worlds() {
        assert_ne!(mobile().id, mobile().id);
    }

    #[test]
    fn bad_records_are_named() {
        assert!(WorldRecord::from_json("not json").unwrap_err().contains("not JSON"));
        assert!(WorldRecord::from_json("{}").unwrap_err().contains("no format"));
        let newer = mobile().to_json().replace("\"format\":1", "\"format\":9");
        assert!(WorldRecord::from_json(&newer).unwrap_err().contains("upgrade aggro"));
        let wrong = r#"{"format":1,"workload":"chess","id":"x","created_at":"","aggro_version":""}"#;
        assert!(WorldRecord::from_json(wrong).unwrap_err().contains("malformed"));
    }

    #[test]
    fn a_flag_left_out_takes_the_stores_value_and_a_different_one_is_refused() {
        assert_eq!(settle("users", None, 20_000), Ok(20_000));
        assert_eq!(settle("users", Some(20_000), 20_000), Ok(20_000));
        let e = settle("users", Some(100_000), 20_000).unwrap_err();
        assert!(e.contains("--users 100000") && e.contains("users 20000"), "{e}");
    }
}
