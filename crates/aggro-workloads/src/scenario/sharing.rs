//! Whether loaders may share a connection: only when no step leaves state on
//! the connection for a later step. On Redis, a step's commands go out
//! together, so `MULTI … EXEC` within one step is whole whoever else writes
//! to the connection; `WATCH`, `SELECT`, or a `MULTI` that a later step
//! ends would act on (or be ended by) another loader's commands. On SQL, each
//! statement commits on its own unless a `BEGIN` holds a transaction open
//! across steps, which another loader's statements would join; session
//! settings, cursors and locks are the same.

use super::{Arg, Scenario, Step};
use aggro_core::scenario::Command;

/// SQL statements (by their first word) whose effect outlives the statement.
const SQL_STATEFUL: &[&str] = &[
    "BEGIN",
    "START",
    "COMMIT",
    "END",
    "ROLLBACK",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
    "SET",
    "RESET",
    "LISTEN",
    "UNLISTEN",
    "PREPARE",
    "DEALLOCATE",
    "DECLARE",
    "FETCH",
    "MOVE",
    "CLOSE",
    "DISCARD",
    "LOCK",
];

/// Redis commands whose effect outlives the step that sends them.
const REDIS_STATEFUL: &[&str] =
    &["WATCH", "UNWATCH", "SELECT", "CLIENT", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR", "RESET", "AUTH", "HELLO"];

impl Scenario {
    /// The first step that keeps state on its connection for later steps (so its loader needs a
    /// connection of its own), and why.
    pub fn connection_state(&self) -> Option<String> {
        self.transactions.iter().flat_map(|t| &t.steps).find_map(|step| {
            let Step::Exec(e) = step else { return None };
            let variants = e.variant.as_ref().map_or(1, |(_, n)| *n);
            self.commands[e.command..e.command + variants].iter().find_map(|c| state(c, &e.args)).map(|why| format!("step {:?} {why}", e.name))
        })
    }
}

/// Why a step's command leaves state on the connection, if it does.
fn state(command: &Command, args: &[Arg]) -> Option<String> {
    match command {
        Command::Sql { text, .. } => {
            let head = text.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
            SQL_STATEFUL.contains(&head.as_str()).then(|| format!("runs {head}, whose effect outlives the statement"))
        }
        Command::Redis { lengths } => redis_state(lengths, args),
        // CQL's one stateful statement, USE, is refused by the target (its session is shared).
        Command::Kv { .. } | Command::Dynamo { .. } | Command::Cql { .. } => None,
    }
}

/// Why a Redis step's commands leave state on the connection, if they do.
fn redis_state(lengths: &[usize], args: &[Arg]) -> Option<String> {
    let mut open_multi = false;
    let mut at = 0;
    for &n in lengths {
        let name = match args.get(at) {
            Some(Arg::Template(t)) => t.literal().map(str::to_ascii_uppercase),
            _ => None,
        };
        at += n;
        let Some(name) = name else { return Some("sends a command whose name is computed".into()) };
        match name.as_str() {
            "MULTI" => open_multi = true,
            "EXEC" | "DISCARD" if open_multi => open_multi = false,
            "EXEC" | "DISCARD" => return Some(format!("sends {name} for a MULTI of an earlier step")),
            n if REDIS_STATEFUL.contains(&n) => return Some(format!("sends {n}, whose effect outlives the step")),
            _ => {}
        }
    }
    open_multi.then(|| "leaves a MULTI open for a later step".into())
}

#[cfg(test)]
mod tests {
    use crate::scenario::file::Source;
    use aggro_core::scenario::Family;

    fn state_on(text: &str, family: Family) -> Option<String> {
        Source::from_text(std::path::Path::new("t.toml"), text.to_string()).and_then(|s| s.compile(family, &[])).expect("compiles").connection_state()
    }

    fn state(text: &str) -> Option<String> {
        state_on(text, Family::Redis)
    }

    #[test]
    fn only_state_that_spans_steps_keeps_a_loader_on_its_own_connection() {
        let whole = r#"
[[transaction]]
name = "t"
step = [{ name = "pay", redis = [["MULTI"], ["INCR", "a"], ["EXEC"]] }, { name = "look", redis = ["GET", "a"] }]
"#;
        assert_eq!(state(whole), None);
        let watched = r#"
[[transaction]]
name = "t"
step = [{ name = "watch", redis = ["WATCH", "a"] }, { name = "pay", redis = [["MULTI"], ["INCR", "a"], ["EXEC"]] }]
"#;
        assert_eq!(state(watched).as_deref(), Some("step \"watch\" sends WATCH, whose effect outlives the step"));
        let split = r#"
[[transaction]]
name = "t"
step = [{ name = "open", redis = [["MULTI"], ["INCR", "a"]] }, { name = "close", redis = ["EXEC"] }]
"#;
        assert_eq!(state(split).as_deref(), Some("step \"open\" leaves a MULTI open for a later step"));
    }

    #[test]
    fn a_transaction_held_open_across_sql_steps_keeps_its_connection() {
        let autocommit = r#"
[[transaction]]
name = "t"
step = [{ name = "pay", sql = "UPDATE t SET n = n + 1 WHERE id = 1" }, { name = "look", sql = "SELECT n FROM t WHERE id = 1" }]
"#;
        assert_eq!(state_on(autocommit, Family::Sql), None);
        let held = r#"
[[transaction]]
name = "t"
step = [{ name = "open", sql = "begin" }, { name = "pay", sql = "UPDATE t SET n = n + 1 WHERE id = 1" }, { name = "close", sql = "COMMIT" }]
"#;
        assert_eq!(state_on(held, Family::Sql).as_deref(), Some("step \"open\" runs BEGIN, whose effect outlives the statement"));
    }

    /// The files whose steps stand alone can share; the trio's SQL writes hold a transaction across steps.
    #[test]
    fn which_shipped_scenarios_can_share_connections() {
        let load = |file: &str, family| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
            Source::load(&path).and_then(|s| s.compile(family, &[])).expect(file).connection_state()
        };
        for file in ["ycsb/a.toml", "ycsb/c.toml", "ycsb/f.toml", "mobile/write.toml", "mobile/consistent-read.toml", "mobile/read.toml"] {
            assert_eq!(load(file, Family::Redis), None, "{file}");
        }
        for file in ["ycsb/a.toml", "ycsb/c.toml", "ycsb/f.toml", "mobile/read.toml"] {
            assert_eq!(load(file, Family::Sql), None, "{file}");
        }
        assert!(load("mobile/write.toml", Family::Sql).is_some_and(|why| why.contains("BEGIN")));
    }
}
