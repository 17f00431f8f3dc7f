//! Which stores a walk has given a world, and when: the docs show each command against any store, so
//! a run on a store nothing has populated yet gets a world first (the walk says so), and a verify's
//! `--result …` is every run on its store since the store was last populated.

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

#[derive(Default)]
pub struct Worlds {
    /// The stores given a world so far, as `family@target`.
    made: HashSet<String>,
    /// When each store was last populated.
    populated: HashMap<String, SystemTime>,
}

impl Worlds {
    /// The populate command (without `--target`) the line `args` needs first on its store, if any; a
    /// populate line's store is noted as it runs.
    pub fn needed(&mut self, args: &[String]) -> Option<Vec<String>> {
        let target = super::value(args, "--target").filter(|t| *t != "null:")?.to_string();
        let file = args.get(2).filter(|f| !f.starts_with('-')).cloned().unwrap_or_default();
        let family = match (args[0].as_str(), file.contains("ycsb")) {
            (_, true) => "ycsb",
            ("scenario", false) => "scenario-mobile",
            _ => "mobile",
        };
        let (family, populate): (&str, Vec<&str>) = match (args[0].as_str(), args[1].as_str()) {
            ("mobile" | "scenario" | "mmo", "populate") => (if args[0] == "mmo" { "mmo" } else { family }, vec![]),
            ("pgbench", _) if args.iter().any(|a| a == "-i") => ("pgbench", vec![]),
            ("mobile", "run" | "find-max") => ("mobile", vec!["mobile", "populate", "--users", "1000"]),
            ("scenario", "run" | "find-max") if family == "ycsb" => ("ycsb", vec!["scenario", "populate", &file, "--set", "records=1000"]),
            ("scenario", "run" | "find-max") => (family, vec!["scenario", "populate", &file, "--set", "users=1000"]),
            ("pgbench", _) => ("pgbench", vec!["pgbench", "-i", "-s", "1"]),
            ("mmo", "login" | "play") => ("mmo", vec!["mmo", "populate", "--accounts", "500"]),
            _ => return None,
        };
        let fresh = self.made.insert(format!("{family}@{target}"));
        if !populate.is_empty() && !fresh {
            return None;
        }
        self.populated.insert(target.clone(), SystemTime::now());
        (!populate.is_empty()).then(|| populate.iter().map(|s| s.to_string()).chain(["--target".into(), target]).collect())
    }

    /// When `target` was last populated (the epoch if never in this walk).
    pub fn populated(&self, target: Option<&str>) -> SystemTime {
        target.and_then(|t| self.populated.get(t)).copied().unwrap_or(SystemTime::UNIX_EPOCH)
    }
}
