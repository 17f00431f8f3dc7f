//! Where a document's lines run: a work directory of its own with the repository's `examples`,
//! `scenarios`, `profiles` and `scripts` linked in (the docs' relative paths), the files a reader is
//! assumed to have, the docs' fixed ports swapped for free ones, their server URLs for the test
//! servers, and the results the lines have written so far.

use crate::util::free_port;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The servers a walk's lines reach, by what the docs write for them.
pub struct Servers {
    /// `postgres://…`: a database of this walk's own on the test server.
    pub postgres: Option<String>,
    /// `redis://HOST:PORT`: a Redis of the walk's own.
    pub redis: Option<String>,
    /// `redis://A,B,C`: a Redis Cluster of the walk's own.
    pub cluster: Option<String>,
    /// `dynamodb://…`: the DynamoDB-API server (moto).
    pub dynamodb: Option<String>,
    /// `cassandra://…`: the test cluster, with a keyspace of the walk's own.
    pub cassandra: Option<String>,
}

impl Servers {
    /// The walk's URL for a documented one, `None` for a word that is no server URL.
    pub fn url(&self, word: &str) -> Option<String> {
        let server = match word.split_once("://").map(|(scheme, _)| scheme)? {
            "postgres" | "postgresql" => &self.postgres,
            "redis" if word.contains(',') => &self.cluster,
            "redis" => &self.redis,
            "dynamodb" => &self.dynamodb,
            "cassandra" => &self.cassandra,
            _ => return None,
        };
        Some(server.clone().unwrap_or_else(|| panic!("{word}: this walk has no such server")))
    }
}

/// One document's work directory.
pub struct Desk {
    dir: tempfile::TempDir,
    ports: HashMap<u16, u16>,
}

/// A pgbench script as a reader's `my.sql` (the README's `-D limit=5` fills in `:limit`).
const MY_SQL: &str = "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid LIMIT :limit;\n";

/// YCSB's own workloada, as a reader's checkout of YCSB holds it.
const WORKLOADA: &str = "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\n\
                         readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n";

impl Desk {
    /// A fresh work directory beside the repository at `root`.
    pub fn new(root: &Path) -> Self {
        let dir = crate::util::tempdir();
        for linked in ["examples", "scenarios", "profiles", "scripts"] {
            std::os::unix::fs::symlink(root.join(linked), dir.path().join(linked)).expect("link the repository in");
        }
        let desk = Self { dir, ports: HashMap::new() };
        desk.write("my.toml", &std::fs::read_to_string(root.join("profiles/mmo-250.toml")).expect("the MMO profile"));
        desk.write("my.sql", MY_SQL);
        desk.write("home/ycsb/workloads/workloada", WORKLOADA);
        for (name, example) in [("bot.lua", "socketio-bot.lua"), ("server.mjs", "socketio-server.mjs")] {
            std::os::unix::fs::symlink(root.join("examples/bots").join(example), desk.path().join(name)).expect("link a bot example");
        }
        desk
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `line` with each documented loopback port (`127.0.0.1:N`, `PORT=N`) swapped for a free one,
    /// the same one wherever the document names it, and `~/` for the desk's own home.
    pub fn local(&mut self, line: &str) -> String {
        let mut out = line.replace("~/", &format!("{}/home/", self.path().display()));
        for prefix in ["127.0.0.1:", "PORT="] {
            let mut from = 0;
            while let Some(at) = out[from..].find(prefix).map(|i| from + i + prefix.len()) {
                let digits = out[at..].bytes().take_while(u8::is_ascii_digit).count();
                from = at + digits;
                let Ok(port) = out[at..from].parse::<u16>() else { continue };
                let free = *self.ports.entry(port).or_insert_with(|| free_port().parse().unwrap());
                out.replace_range(at..from, &free.to_string());
                from = at + free.to_string().len();
            }
        }
        out
    }

    /// The files `pattern` names (`…` or `*` standing for any part of one file's name), oldest first.
    pub fn matches(&self, pattern: &str) -> Vec<PathBuf> {
        let pattern = pattern.replace('…', "*");
        let (dir, name) = pattern.rsplit_once('/').map_or((".", pattern.as_str()), |(d, n)| (d, n));
        let (head, tail) = name.split_once('*').unwrap_or((name, ""));
        let mut found: Vec<_> = std::fs::read_dir(self.path().join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.len() >= head.len() + tail.len() && n.starts_with(head) && n.ends_with(tail)))
            .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap(), e.path()))
            .collect();
        found.sort();
        found.into_iter().map(|(_, p)| p).collect()
    }

    /// A result file the lines before wrote, the newest, for a line that reads one a reader has
    /// (`results/a.json`) but no line of the walk writes; put at `name`.
    pub fn earlier_result(&self, name: &str) -> bool {
        let Some(newest) = self.matches("aggro-results/*.json").pop() else { return false };
        let to = self.path().join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(newest, to).is_ok()
    }
}
