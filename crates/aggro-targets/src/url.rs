//! Target URLs.

/// A parsed target URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetUrl {
    /// `null:[?trace=FILE]` — does nothing (with `trace`, writes each scenario command it was given
    /// to FILE, as YCSB's `basicdb.verbose`).
    Null {
        /// Where each command goes, one line each.
        trace: Option<std::path::PathBuf>,
    },
    /// `sqlite:PATH[?sync=off|normal|full]`.
    Sqlite {
        /// Database file.
        path: std::path::PathBuf,
        /// `PRAGMA synchronous` value.
        sync: String,
    },
    /// `postgres://` or `postgresql://`, passed to the driver as written.
    Postgres {
        /// The whole URL.
        url: String,
    },
    /// `redis://HOST:PORT[/DB]`.
    Redis {
        /// `HOST:PORT`.
        addr: String,
        /// Database number.
        db: u32,
    },
    /// `redis://HOST:PORT,HOST:PORT…` (more than one node) or `redis://HOST:PORT?cluster`: a Redis Cluster.
    RedisCluster {
        /// The nodes asked for the slot map, `HOST:PORT` each.
        seeds: Vec<String>,
    },
    /// `stackdb:DIR[?sync=immediate|eventual]` — aggro's embedded engine.
    StackDb {
        /// Database directory.
        path: std::path::PathBuf,
        /// Whether every commit is synced.
        immediate: bool,
    },
    /// `cassandra://HOST:PORT[,HOST:PORT…][/KEYSPACE][?consistency=LEVEL]`.
    Cassandra {
        /// The nodes the driver first connects to, `HOST:PORT` each.
        nodes: Vec<String>,
        /// Keyspace (default `aggro`).
        keyspace: String,
        /// Consistency level of every request (default `local_quorum`).
        consistency: String,
    },
    /// `dynamodb://HOST:PORT[/TABLE][?region=R]`.
    DynamoDb {
        /// `HOST:PORT`.
        addr: String,
        /// Table name (default `aggro_mobile`).
        table: String,
        /// Signing region, if given.
        region: Option<String>,
    },
}

/// Why a target URL was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UrlError {
    /// Not a form aggro knows.
    #[error("bad target URL {url:?}: {why}")]
    Bad {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A backend this build was compiled without.
    #[error("this build of aggro has no {0} target (rebuild with `--features {0}`)")]
    NotBuilt(&'static str),
}

const FORMS: &str = "expected null:, stackdb:DIR, sqlite:PATH, postgres://USER@HOST:PORT/DB, redis://HOST:PORT[/DB] redis://HOST:PORT,HOST:PORT (a cluster), cassandra://HOST:PORT[,HOST:PORT]/KEYSPACE or dynamodb://HOST:PORT[/TABLE]";

impl TargetUrl {
    /// Parses a target URL.
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        let bad = |why: &str| UrlError::Bad { url: text.to_string(), why: why.to_string() };
        let (scheme, rest) = text.split_once(':').ok_or_else(|| bad(FORMS))?;
        match scheme {
            "null" => match rest.strip_prefix("?trace=") {
                None if rest.is_empty() => Ok(TargetUrl::Null { trace: None }),
                Some(path) if !path.is_empty() => Ok(TargetUrl::Null { trace: Some(path.into()) }),
                _ => Err(bad("null takes only ?trace=FILE")),
            },
            "sqlite" => {
                let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
                let path = path.strip_prefix("//").unwrap_or(path);
                if path.is_empty() {
                    return Err(bad("sqlite needs a file path, as in sqlite:./game.db"));
                }
                let mut sync = "full".to_string();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    match pair.split_once('=') {
                        Some(("sync", v)) if ["off", "normal", "full"].contains(&v) => sync = v.to_string(),
                        _ => return Err(bad("sqlite takes only ?sync=off|normal|full")),
                    }
                }
                Ok(TargetUrl::Sqlite { path: path.into(), sync })
            }
            "stackdb" => {
                let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
                if path.is_empty() {
                    return Err(bad("stackdb needs a directory, as in stackdb:./world"));
                }
                let immediate = match query {
                    "" | "sync=immediate" => true,
                    "sync=eventual" => false,
                    _ => return Err(bad("stackdb takes only ?sync=immediate|eventual")),
                };
                Ok(TargetUrl::StackDb { path: path.into(), immediate })
            }
            "postgres" | "postgresql" => {
                if !rest.starts_with("//") || rest.len() <= 2 {
                    return Err(bad("expected postgres://USER@HOST:PORT/DB"));
                }
                Ok(TargetUrl::Postgres { url: text.to_string() })
            }
            "redis" => {
                let rest = rest.strip_prefix("//").ok_or_else(|| bad("expected redis://HOST:PORT[/DB]"))?;
                let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
                let cluster = match query {
                    "" => false,
                    "cluster" | "cluster=1" | "cluster=true" => true,
                    _ => return Err(bad("redis takes only ?cluster")),
                };
                let (addrs, db) = rest.split_once('/').unwrap_or((rest, "0"));
                let db: u32 = if db.is_empty() { 0 } else { db.parse().map_err(|_| bad("the database must be a number"))? };
                let addrs = addrs.split(',').map(|a| host_port(a, 6379)).collect::<Result<Vec<_>, _>>().map_err(|w| bad(&w))?;
                if !cluster && addrs.len() == 1 {
                    return Ok(TargetUrl::Redis { addr: addrs.into_iter().next().expect("one address"), db });
                }
                if db != 0 {
                    return Err(bad("a Redis Cluster has database 0 only"));
                }
                Ok(TargetUrl::RedisCluster { seeds: addrs })
            }
            "cassandra" => {
                let rest = rest.strip_prefix("//").ok_or_else(|| bad("expected cassandra://HOST:PORT[,HOST:PORT…][/KEYSPACE]"))?;
                let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
                let (nodes, keyspace) = rest.split_once('/').unwrap_or((rest, ""));
                let keyspace = if keyspace.is_empty() { "aggro" } else { keyspace };
                let valid = keyspace.len() <= 48
                    && keyspace.starts_with(|c: char| c.is_ascii_alphabetic())
                    && keyspace.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !valid {
                    return Err(bad("a keyspace is a letter then up to 47 of A-Z a-z 0-9 _"));
                }
                let nodes = nodes.split(',').map(|a| host_port(a, 9042)).collect::<Result<Vec<_>, _>>().map_err(|w| bad(&w))?;
                let consistency = match query.split_once('=') {
                    None if query.is_empty() => "local_quorum".to_string(),
                    Some(("consistency", level)) if CONSISTENCY.contains(&level.to_ascii_lowercase().as_str()) => level.to_ascii_lowercase(),
                    _ => return Err(bad(&format!("cassandra takes only ?consistency= one of {}", CONSISTENCY.join(", ")))),
                };
                Ok(TargetUrl::Cassandra { nodes, keyspace: keyspace.to_string(), consistency })
            }
            "dynamodb" => {
                let rest = rest.strip_prefix("//").ok_or_else(|| bad("expected dynamodb://HOST:PORT[/TABLE]"))?;
                let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
                let (addr, table) = rest.split_once('/').unwrap_or((rest, ""));
                let table = if table.is_empty() { "aggro_mobile" } else { table };
                let valid = (3..=255).contains(&table.len()) && table.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
                if !valid {
                    return Err(bad("a DynamoDB table name is 3-255 of A-Z a-z 0-9 _ . -"));
                }
                let mut region = None;
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    match pair.split_once('=') {
                        Some(("region", r)) if !r.is_empty() => region = Some(r.to_string()),
                        _ => return Err(bad("dynamodb takes only ?region=NAME (credentials come from AWS_* variables)")),
                    }
                }
                Ok(TargetUrl::DynamoDb { addr: host_port(addr, 8000).map_err(|w| bad(&w))?, table: table.to_string(), region })
            }
            _ => Err(bad(FORMS)),
        }
    }

    /// The scheme, which is also the Cargo feature's name.
    pub fn scheme(&self) -> &'static str {
        match self {
            TargetUrl::Null { .. } => "null",
            TargetUrl::StackDb { .. } => "stackdb",
            TargetUrl::Sqlite { .. } => "sqlite",
            TargetUrl::Postgres { .. } => "postgres",
            TargetUrl::Redis { .. } | TargetUrl::RedisCluster { .. } => "redis",
            TargetUrl::DynamoDb { .. } => "dynamodb",
            TargetUrl::Cassandra { .. } => "cassandra",
        }
    }
}

/// The consistency levels a `cassandra://` URL may name.
const CONSISTENCY: [&str; 7] = ["one", "two", "quorum", "local_quorum", "each_quorum", "all", "local_one"];

fn host_port(text: &str, default_port: u16) -> Result<String, String> {
    let parse_port =
        |p: &str| -> Result<u16, String> { if p.is_empty() { Ok(default_port) } else { p.parse().map_err(|_| format!("bad port {p:?}")) } };
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("unclosed [ in an IPv6 address")?;
        let port = parse_port(after.strip_prefix(':').unwrap_or(""))?;
        return Ok(format!("[{host}]:{port}"));
    }
    let (host, port) = text.split_once(':').unwrap_or((text, ""));
    if host.is_empty() {
        return Err("missing host".into());
    }
    Ok(format!("{host}:{}", parse_port(port)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        assert_eq!(TargetUrl::parse("null:").unwrap(), TargetUrl::Null { trace: None });
        assert_eq!(TargetUrl::parse("null:?trace=/tmp/t").unwrap(), TargetUrl::Null { trace: Some("/tmp/t".into()) });
        assert!(TargetUrl::parse("null:x").unwrap_err().to_string().contains("null takes only ?trace=FILE"));
        assert_eq!(TargetUrl::parse("stackdb:./w").unwrap(), TargetUrl::StackDb { path: "./w".into(), immediate: true });
        assert_eq!(TargetUrl::parse("stackdb:/w?sync=eventual").unwrap(), TargetUrl::StackDb { path: "/w".into(), immediate: false });
        assert_eq!(TargetUrl::parse("sqlite:./game.db").unwrap(), TargetUrl::Sqlite { path: "./game.db".into(), sync: "full".into() });
        assert_eq!(TargetUrl::parse("sqlite:/tmp/g.db?sync=off").unwrap(), TargetUrl::Sqlite { path: "/tmp/g.db".into(), sync: "off".into() });
        assert_eq!(TargetUrl::parse("redis://127.0.0.1:6380/2").unwrap(), TargetUrl::Redis { addr: "127.0.0.1:6380".into(), db: 2 });
        assert_eq!(TargetUrl::parse("redis://localhost").unwrap(), TargetUrl::Redis { addr: "localhost:6379".into(), db: 0 });
        assert!(matches!(TargetUrl::parse("postgres://u@127.0.0.1:5432/game").unwrap(), TargetUrl::Postgres { .. }));
        assert_eq!(TargetUrl::parse("redis://[::1]:7000").unwrap(), TargetUrl::Redis { addr: "[::1]:7000".into(), db: 0 });
        assert_eq!(
            TargetUrl::parse("redis://127.0.0.1:7000,127.0.0.1:7001").unwrap(),
            TargetUrl::RedisCluster { seeds: vec!["127.0.0.1:7000".into(), "127.0.0.1:7001".into()] }
        );
        assert_eq!(TargetUrl::parse("redis://h:7000?cluster").unwrap(), TargetUrl::RedisCluster { seeds: vec!["h:7000".into()] });
        assert_eq!(
            TargetUrl::parse("cassandra://127.0.0.1:9042,127.0.0.2/game?consistency=QUORUM").unwrap(),
            TargetUrl::Cassandra {
                nodes: vec!["127.0.0.1:9042".into(), "127.0.0.2:9042".into()],
                keyspace: "game".into(),
                consistency: "quorum".into()
            }
        );
        assert_eq!(
            TargetUrl::parse("cassandra://h").unwrap(),
            TargetUrl::Cassandra { nodes: vec!["h:9042".into()], keyspace: "aggro".into(), consistency: "local_quorum".into() }
        );
        assert_eq!(
            TargetUrl::parse("dynamodb://127.0.0.1:8000").unwrap(),
            TargetUrl::DynamoDb { addr: "127.0.0.1:8000".into(), table: "aggro_mobile".into(), region: None }
        );
        assert_eq!(
            TargetUrl::parse("dynamodb://h:1/Game?region=ap-northeast-1").unwrap(),
            TargetUrl::DynamoDb { addr: "h:1".into(), table: "Game".into(), region: Some("ap-northeast-1".into()) }
        );
    }

    #[test]
    fn malformed_urls_say_what_is_wrong() {
        for bad in [
            "stackdb:",
            "stackdb:w?fast",
            "dynamodb://h:1/x",
            "dynamodb://h:1/t?key=s",
            "",
            "game.db",
            "mysql://x",
            "sqlite:",
            "sqlite:x?fast=1",
            "redis://:99999",
            "redis://h:1/x",
            "redis://h:1,h:2/3",
            "redis://h:1?fast",
            "redis://h:1,,h:2",
            "cassandra://h/1bad",
            "cassandra://h/ks?consistency=most",
            "cassandra://h/ks?fast",
            "postgres:x",
        ] {
            let err = TargetUrl::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("bad target URL"), "{bad}: {err}");
        }
    }
}
