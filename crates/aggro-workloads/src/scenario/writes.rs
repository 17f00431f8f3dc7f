//! Whether a scenario's transactions may change the store: what decides if
//! its runs go into the store's run log (a read-only run commits nothing a
//! verify must account for). Unsure is "writes": an SQL statement other than
//! a plain `SELECT`, a Redis command not known to only read (or whose name
//! is computed), a key-value put, delete or add, a DynamoDB action other than
//! a get, query or scan (a CQL statement is read as an SQL one).

use super::{Arg, Scenario, Step};
use aggro_core::scenario::{Command, KvOp};

/// Redis commands that only read (and the pipeline's framing).
const REDIS_READS: &[&str] = &[
    "GET",
    "MGET",
    "STRLEN",
    "EXISTS",
    "TYPE",
    "TTL",
    "PTTL",
    "HGET",
    "HMGET",
    "HGETALL",
    "HEXISTS",
    "HLEN",
    "HKEYS",
    "HVALS",
    "HSCAN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "SSCAN",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGE",
    "ZREVRANGEBYSCORE",
    "ZSCORE",
    "ZCARD",
    "ZCOUNT",
    "ZRANK",
    "ZSCAN",
    "SCAN",
    "PING",
    "MULTI",
    "EXEC",
    "DISCARD",
    "WATCH",
    "UNWATCH",
];

/// DynamoDB actions that only read.
const DYNAMO_READS: &[&str] = &["GetItem", "BatchGetItem", "TransactGetItems", "Query", "Scan", "DescribeTable"];

impl Scenario {
    /// Whether any transaction may change the store.
    pub fn writes(&self) -> bool {
        self.transactions.iter().flat_map(|t| &t.steps).any(|step| match step {
            Step::Exec(e) => {
                let variants = e.variant.as_ref().map_or(1, |(_, n)| *n);
                self.commands[e.command..e.command + variants].iter().any(|c| command_writes(c, &e.args))
            }
            Step::Let(_) | Step::Sleep(_) | Step::When(..) => false,
        })
    }
}

fn command_writes(command: &Command, args: &[Arg]) -> bool {
    match command {
        Command::Sql { text, .. } | Command::Cql { text, .. } => {
            let head = text.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
            // A SELECT may still call a function that writes, or lock (FOR UPDATE): taken as reads, as pgbench's select-only.
            !matches!(head.as_str(), "SELECT" | "SHOW" | "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "START")
        }
        Command::Redis { lengths } => {
            let mut at = 0;
            lengths.iter().any(|&n| {
                let name = match args.get(at) {
                    Some(Arg::Template(t)) => t.literal().map(str::to_ascii_uppercase),
                    _ => None,
                };
                at += n;
                name.is_none_or(|n| !REDIS_READS.contains(&n.as_str()))
            })
        }
        Command::Kv { ops } => ops.iter().any(|op| !matches!(op, KvOp::Get | KvOp::Scan)),
        Command::Dynamo { action, .. } => !DYNAMO_READS.contains(&action.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::file::Source;
    use aggro_core::scenario::Family;
    use std::path::Path;

    fn writes(file: &str, family: Family) -> bool {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
        Source::load(&path).and_then(|s| s.compile(family, &[])).expect(file).writes()
    }

    #[test]
    fn the_shipped_reads_read_and_the_writes_write_on_every_family() {
        for family in [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo, Family::Cql] {
            assert!(!writes("ycsb/c.toml", family), "YCSB C on {family:?}");
            assert!(writes("ycsb/a.toml", family), "YCSB A on {family:?}");
            // The trio's files have no CQL form: on Cassandra it is `aggro mobile`'s (counters).
            if family != Family::Cql {
                assert!(!writes("mobile/read.toml", family), "read on {family:?}");
                assert!(writes("mobile/write.toml", family), "write on {family:?}");
            }
        }
    }
}
