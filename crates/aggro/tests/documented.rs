//! Every shell block of the README and docs/*.md, run as a reader runs it (the fast stage only
//! parses their `aggro` lines): each document on a desk of its own (`desk.rs`: its relative paths,
//! free ports for its fixed ones, the test servers for its URLs), each `aggro` line made short
//! (`short.rs`), a world made first where a line needs one (`worlds.rs`). An `aggro` line must end 0
//! or 3 (served, or a threshold broken on a busy test machine), any other line 0; a line ending in `&`
//! (or an `arena serve` with no length, which a reader leaves running in a terminal of its own) is a
//! server the block's later lines reach: it must still be running when the block ends. What a reader
//! is assumed to bring, the walk makes first and says so: a world for a run on a store nothing
//! populated yet, a result file for `report` to read.

mod desk;
mod short;
mod worlds;

use crate::util::*;
use desk::{Desk, Servers};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::docs;
use worlds::Worlds;

/// How long one line may run (a bench's few points included).
const LINE_LIMIT: Duration = Duration::from_secs(180);

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the lines of `documents`' blocks that `wanted` picks; returns what failed, each said in full.
pub(crate) fn walk(documents: &[std::path::PathBuf], servers: &Servers, wanted: impl Fn(&str) -> bool) -> Vec<String> {
    let mut failures = Vec::new();
    for doc in documents {
        let mut walk =
            Walk { desk: Desk::new(&root()), servers, worlds: Worlds::default(), failures: Vec::new(), doc: doc.clone(), servers_started: 0 };
        for block in docs::blocks(doc) {
            walk.block(block.lines.iter().map(|l| docs::without_comment(l)).filter(|l| wanted(l)));
        }
        failures.append(&mut walk.failures);
    }
    failures
}

/// A server a block started, and how it must stop.
struct Background {
    line: String,
    child: Child,
    aggro: bool,
    /// Its standard error, for a failure's message.
    log: std::path::PathBuf,
}

impl Background {
    /// Signals its whole group (a shell line's server is bash's child). `-s SIG --` spelled out:
    /// procps 4.0's `kill -SIG -PGID` signals far more than that group.
    fn signal(&self, signal: &str) {
        Command::new("kill").args(["-s", signal, "--", &format!("-{}", self.child.id())]).status().expect("kill runs");
    }
}

impl Drop for Background {
    /// A test that fails half-way leaves no server behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal("KILL");
            let _ = self.child.wait();
        }
    }
}

struct Walk<'a> {
    desk: Desk,
    servers: &'a Servers,
    worlds: Worlds,
    failures: Vec<String>,
    doc: std::path::PathBuf,
    /// Servers started so far (each one's log is named by its number).
    servers_started: usize,
}

impl Walk<'_> {
    fn block<'l>(&mut self, lines: impl Iterator<Item = &'l str>) {
        let mut background: Vec<Background> = Vec::new();
        for line in lines {
            // The README's set-up lines: building aggro, and this suite itself.
            if line.starts_with("./scripts/") {
                continue;
            }
            let (text, in_background) = match line.strip_suffix('&') {
                Some(l) => (l.trim_end(), true),
                None => (line, false),
            };
            let mut text = self.desk.local(text);
            if let Some(last) = background.last() {
                text = text.replace("$!", &last.child.id().to_string());
            }
            let started = match docs::is_aggro(&text) {
                true => self.aggro(line, &text, in_background),
                false => self.shell(line, &text, in_background),
            };
            background.extend(started);
        }
        for b in background {
            self.stop(b);
        }
    }

    fn fail(&mut self, line: &str, what: String) {
        eprintln!("documented: FAILED {}: {line}\n  {what}", self.doc.display());
        self.failures.push(format!("{}: {line}\n  {what}", self.doc.display()));
    }

    /// A shell line, through bash in the desk, `aggro` on its PATH.
    fn shell(&mut self, line: &str, text: &str, in_background: bool) -> Option<Background> {
        let mut command = Command::new("bash");
        command.args(["-c", text]).current_dir(self.desk.path()).env("PATH", path_with_aggro()).env_remove("AGGRO_TARGET");
        if in_background {
            return self.start(line, command, false);
        }
        let out = run_command(command, LINE_LIMIT);
        if !out.status.success() {
            self.fail(line, format!("{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        None
    }

    fn aggro(&mut self, line: &str, text: &str, in_background: bool) -> Option<Background> {
        let mut args = match self.arguments(text) {
            Ok(args) => args,
            Err(e) => {
                self.fail(line, e);
                return None;
            }
        };
        short::shorten(&mut args, free_port().parse().unwrap());
        if let Err(e) = self.inputs(&mut args) {
            self.fail(line, e);
            return None;
        }
        self.world_for(line, &args);
        let serving = args[..2] == ["arena", "serve"] && !args.iter().any(|a| a == "--duration");
        if in_background || serving {
            let mut command = aggro();
            command.args(&args).current_dir(self.desk.path());
            let started = self.start(line, command, true)?;
            until_udp_bound(value(&args, "--listen").unwrap_or("127.0.0.1:7777"));
            if let Some(metrics) = value(&args, "--metrics") {
                until_listening(metrics);
            }
            return Some(started);
        }
        let begun = Instant::now();
        let out = run_in(self.desk.path(), &args);
        let code = out.status.code();
        eprintln!(
            "documented: {}: aggro {} → {code:?} in {:.1?}",
            self.doc.display(),
            shlex::try_join(args.iter().map(String::as_str)).unwrap(),
            begun.elapsed()
        );
        if !matches!(code, Some(0 | 3)) {
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let tail: Vec<_> = text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
            self.fail(line, format!("aggro {args:?} exited {code:?}:\n    {}", tail.join("\n    ")));
        }
        None
    }

    /// The line's words: optional `[…]` parts kept unless they hold a placeholder, the lone `…` (the
    /// reader's usual flags) a `null:` target, the servers' URLs the walk's.
    fn arguments(&self, text: &str) -> Result<Vec<String>, String> {
        let mut kept = String::new();
        let mut rest = text;
        while let Some((before, after)) = rest.split_once('[') {
            let (optional, next) = after.split_once(']').ok_or("an unclosed [")?;
            kept += before;
            if !optional.contains('…') {
                kept += optional;
            }
            rest = next;
        }
        kept += rest;
        let kept = kept.replace("--target URL", "--target stackdb:./mmo-world");
        let words = shlex::split(&kept).ok_or("unbalanced quotes")?;
        let has_target = words.iter().any(|w| w == "--target");
        Ok(words
            .into_iter()
            .skip(1)
            .flat_map(|w| match (w.as_str(), self.servers.url(&w)) {
                ("…", _) if !has_target => vec!["--target".to_string(), "null:".to_string()],
                (_, Some(url)) => vec![url],
                _ => vec![w],
            })
            .collect())
    }

    /// Files named by pattern (`aggro-results/…-write.json`, `shard-*.json`) resolved to what the lines
    /// before wrote: a `--result …` to every matching result of the line's own store (a verify is given
    /// every run on it), another `…` to the newest match, a `*` to all; results a reader brings
    /// (`results/a.json`) made from the newest.
    fn inputs(&mut self, args: &mut Vec<String>) -> Result<(), String> {
        let target = value(args, "--target").map(str::to_string);
        let mut resolved = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let word = &args[i];
            let output = i > 0 && matches!(args[i - 1].as_str(), "-o" | "--out" | "--csv" | "--hdr-log");
            if !output && (word.contains('…') || word.contains('*')) {
                let found = self.desk.matches(word);
                let since = self.worlds.populated(target.as_deref());
                let own = |p: &&std::path::PathBuf| {
                    std::fs::metadata(p).and_then(|m| m.modified()).is_ok_and(|m| m >= since)
                        && target.as_ref().is_none_or(|t| std::fs::read_to_string(p).is_ok_and(|r| r.contains(t.as_str())))
                };
                let verified = i > 0 && args[i - 1] == "--result";
                let picked: Vec<_> = match (word.contains('…'), verified) {
                    // The runs on the line's store since it was populated: what a verify is given.
                    (true, true) => found.iter().filter(own).cloned().collect(),
                    (true, false) => found.last().into_iter().cloned().collect(),
                    (false, _) => found,
                };
                if picked.is_empty() {
                    return Err(format!("no file matches {word}"));
                }
                for (k, p) in picked.iter().enumerate() {
                    if verified && k > 0 {
                        resolved.push("--result".into());
                    }
                    resolved.push(p.display().to_string());
                }
            } else {
                let reads = matches!(args[0].as_str(), "report" | "compare" | "merge") && word.ends_with(".json") && !output;
                if reads && !self.desk.path().join(word).exists() {
                    eprintln!("documented: {word}, a result the reader has: the newest result so far");
                    if !self.desk.earlier_result(word) {
                        return Err(format!("{word}: no result written before it"));
                    }
                }
                resolved.push(word.clone());
            }
            i += 1;
        }
        *args = resolved;
        Ok(())
    }

    /// A world on the line's store first, when the line runs on one nothing has populated ([`Worlds`]).
    fn world_for(&mut self, line: &str, args: &[String]) {
        let Some(populate) = self.worlds.needed(args) else { return };
        eprintln!("documented: first a world: aggro {}", populate.join(" "));
        let out = run_in(self.desk.path(), &populate);
        if !out.status.success() {
            self.fail(line, format!("the world it needs: aggro {populate:?}: {}", String::from_utf8_lossy(&out.stderr)));
        }
    }

    fn start(&mut self, line: &str, mut command: Command, aggro: bool) -> Option<Background> {
        use std::os::unix::process::CommandExt;
        self.servers_started += 1;
        let log = self.desk.path().join(format!("server-{}.log", self.servers_started));
        command.process_group(0).stdout(Stdio::null()).stderr(std::fs::File::create(&log).expect("a log file"));
        let child = command.spawn().expect("a background line starts");
        if let Some(port) = line.split_once("PORT=").and_then(|(_, p)| p.split_whitespace().next()) {
            // The reader's `PORT=N` was made free by the desk: the server listens on the mapped port.
            let mapped = self.desk.local(&format!("PORT={port}"));
            until_listening(&format!("127.0.0.1:{}", &mapped["PORT=".len()..]));
        }
        Some(Background { line: line.to_string(), child, aggro, log })
    }

    /// A block's server, stopped as its reader would (Ctrl-C for aggro): it must have run to here.
    fn stop(&mut self, mut b: Background) {
        if let Ok(Some(status)) = b.child.try_wait() {
            let err = std::fs::read_to_string(&b.log).unwrap_or_default();
            self.fail(&b.line, format!("a server the block's later lines reach stopped early, {status:?}: {err}"));
            return;
        }
        b.signal(if b.aggro { "INT" } else { "TERM" });
        let begun = Instant::now();
        while b.child.try_wait().expect("wait").is_none() {
            if begun.elapsed() > Duration::from_secs(15) {
                self.fail(&b.line, "did not stop within 15 s of its signal".into());
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let code = b.child.wait().expect("wait").code();
        if b.aggro && !matches!(code, Some(0 | 130)) {
            self.fail(&b.line, format!("stopped by Ctrl-C, it exited {code:?} (not 0 or 130)"));
        }
    }
}

/// The value the line gives `flag`.
fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// `aggro ARGS` in `dir`, killed past [`LINE_LIMIT`].
fn run_in(dir: &Path, args: &[String]) -> std::process::Output {
    let mut command = aggro();
    command.args(args).current_dir(dir);
    run_command(command, LINE_LIMIT)
}

/// PATH with the aggro under test first, for the shell lines.
fn path_with_aggro() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_aggro")).parent().unwrap().display().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

/// The walk's own servers: a PostgreSQL database, a Redis and a Redis Cluster of its own (the other
/// tests populate the shared ones), moto; `None` (a skip) when the services stage did not start them.
struct Owned {
    servers: Servers,
    _redis: std::process::Child,
    _cluster: crate::cluster::OwnCluster,
    _dir: tempfile::TempDir,
}

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self._redis.kill();
    }
}

fn owned_servers() -> Option<Owned> {
    let postgres = service("AGGRO_TEST_POSTGRES")?;
    let dynamodb = service("AGGRO_TEST_DYNAMODB")?;
    service("AGGRO_TEST_REDIS_CLUSTER")?;
    let dir = tempdir();
    let (redis, redis_url) = private_redis(dir.path());
    let cluster = crate::cluster::OwnCluster::start();
    let servers = Servers {
        postgres: Some(crate::scenario::pg_database(&postgres, "documented")),
        redis: Some(redis_url),
        cluster: Some(cluster.url.clone()),
        dynamodb: Some(dynamodb),
        cassandra: None,
    };
    Some(Owned { servers, _redis: redis, _cluster: cluster, _dir: dir })
}

/// The README's blocks, then docs/*.md's, all but their Cassandra lines (the Cassandra suite runs
/// those: [`cassandra_lines`]).
#[test]
#[ignore = "needs the services stage's servers and the reference game servers: bash scripts/test.sh services runs it"]
fn every_documented_shell_line_runs() {
    let Some(owned) = owned_servers() else { return };
    let documents = docs::documents(&root());
    let failures = walk(&documents, &owned.servers, |line| !line.contains("cassandra://"));
    assert!(failures.is_empty(), "documented lines that do not run as written:\n{}", failures.join("\n"));
}

/// The docs' Cassandra lines, on the test cluster in a keyspace of their own.
pub(crate) fn cassandra_lines(url: &str) -> Vec<String> {
    // The test cluster's nodes, with a keyspace of the walk's own in place of the URL's (if any).
    let nodes = url.strip_prefix("cassandra://").and_then(|r| r.split(['/', '?']).next()).expect("a cassandra:// URL");
    let servers = Servers { postgres: None, redis: None, cluster: None, dynamodb: None, cassandra: Some(format!("cassandra://{nodes}/documented")) };
    walk(&docs::documents(&root()), &servers, |line| line.contains("cassandra://"))
}
