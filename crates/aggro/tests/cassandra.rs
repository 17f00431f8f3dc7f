//! Apache Cassandra: the mobile trio on the three-node cluster the test script started (replication
//! factor 3, `LOCAL_QUORUM`), then one node killed in the middle of a run; YCSB's workloads and a
//! lightweight transaction as `cql` scenarios; the MMO world; and the URLs it refuses.

use super::util::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The pid of the node serving `addr` (`HOST:PORT`), from the test services' directory of nodes.
fn node_pid(url: &str, host: &str) -> u32 {
    let out = Command::new("pgrep").args(["-f", "CassandraDaemon"]).output().unwrap();
    let pids = String::from_utf8_lossy(&out.stdout);
    pids.lines()
        .filter_map(|p| p.trim().parse::<u32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains(&format!("/node{}/", host.rsplit('.').next().unwrap())))
        })
        .unwrap_or_else(|| panic!("no Cassandra node of {url} at {host}"))
}

/// Everything on the one cluster, in turn (the last step kills a node, which would fail any test
/// running beside it): YCSB, the leases, the MMO world, the docs' Cassandra lines, then the trio.
#[test]
#[ignore = "needs Cassandra: bash scripts/test.sh services runs it"]
fn the_cluster_runs_ycsb_leases_and_the_trio_then_outlives_a_node() {
    let Some(url) = service("AGGRO_TEST_CASSANDRA") else { return };
    crate::scenario::ycsb_on(&url, "100", &[]);
    a_lightweight_transaction_grants_each_lease_once(&url);
    crate::mmo::mmo_round_trip(&url, 40, 50, 6);
    let failures = crate::documented::cassandra_lines(&url);
    assert!(failures.is_empty(), "documented Cassandra lines that do not run as written:\n{}", failures.join("\n"));
    the_trio_runs_verifies_and_outlives_a_node(&url);
}

/// The trio round trip, then a node killed 2 s into a write run: with three replicas a quorum
/// survives one, but until Cassandra's failure detector convicts the dead node (~15 s here) a
/// coordinator may pick it to lead a counter write, which then times out (in doubt); the run goes
/// on, the last seconds fail nothing, and verify finds every write the run counted as committed (and
/// perhaps some of those in doubt).
fn the_trio_runs_verifies_and_outlives_a_node(url: &str) {
    let url = url.to_string();
    crate::mobile_round_trip(&url, crate::GENTLE);

    ok(&["mobile", "populate", "--target", &url, "--users", "2000"]);
    let victim = node_pid(&url, "127.0.0.3");
    let dir = tempdir();
    let out = path(dir.path(), "write.json");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap();
    });
    let args = ["mobile", "run", "--target", &url, "--workload", "write", "--rate", "200", "--duration", "25s", "--interval", "1s"];
    let o = run(&[&args[..], &["--loaders", "16", "--stop-on-backlog", "off", "--out", &out]].concat(), Duration::from_secs(90));
    killer.join().unwrap();
    let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    assert!(done > 3000, "{done} done, {errors} failed: {text}");
    let intervals = r["intervals"].as_array().unwrap();
    let late_errors: u64 = intervals[intervals.len() - 3..].iter().map(|iv| iv["ops"][0]["errors"].as_u64().unwrap()).sum();
    assert_eq!(late_errors, 0, "two replicas of three still make a quorum, yet the last 3 s failed: {text}");
    // Per node: the two that lived coordinated writes; the dead one is named, here and on stderr.
    let port = url.rsplit(':').next().unwrap();
    let nodes = r["extra"]["nodes"].as_array().expect("extra.nodes");
    let node = |addr: String| nodes.iter().find(|n| n["node"] == addr.as_str()).cloned();
    for live in ["127.0.0.1", "127.0.0.2"] {
        assert!(node(format!("{live}:{port}")).is_some_and(|n| n["commands"].as_u64().unwrap() > 0), "{live} coordinated nothing: {nodes:?}");
    }
    let dead = format!("127.0.0.3:{port}");
    assert!(node(dead.clone()).is_some_and(|n| n["down"] == true), "the dead node is not marked down: {nodes:?}");
    assert!(text.contains(&format!("cluster node {dead} was down")), "{text}");
    // A write that timed out may have been applied (counters are not idempotent): the store holds the
    // committed ones and perhaps some of those in doubt, never fewer.
    let text = ok(&["mobile", "verify", "--target", &url, "--result", &out]);
    assert!(text.contains(&format!("result files say: {done} writes committed")) && text.contains("verify: ok"), "{text}");
}

/// A lease taken by a lightweight transaction: 10 players, takers racing for them at random; each
/// lease is granted exactly once (`rows = 1` fails a take whose condition was refused), and
/// `scenario verify` counts the owned rows against the takes the run committed.
fn a_lightweight_transaction_grants_each_lease_once(url: &str) {
    let dir = tempdir();
    let scenario = path(dir.path(), "lease.toml");
    std::fs::write(
        &scenario,
        r#"
name = "lease"
[vars]
players = 10
[populate]
rows = "players"
setup = [
  { name = "drop", cql = "DROP TABLE IF EXISTS leases" },
  { name = "create", cql = "CREATE TABLE leases (id int PRIMARY KEY, owner bigint)" },
]
cql = { table = "leases", columns = ["id", "owner"], values = ["n", "0"] }
[[transaction]]
name = "take"
step = [
  { let = ["p = random(0, players - 1)", "me = random(1, 1000000000)"] },
  { name = "take", cql = "UPDATE leases SET owner = ? WHERE id = ? IF owner = 0", params = ["me", "p"], rows = 1, consistency = "quorum" },
]
[[invariant]]
name = "owned"
cql = "SELECT count(*) FROM leases WHERE owner > 0 ALLOW FILTERING"
equals = "committed(take)"
"#,
    )
    .unwrap();
    ok(&["scenario", "populate", &scenario, "--target", url]);
    let out = path(dir.path(), "lease.json");
    let o = run(
        &[
            "scenario",
            "run",
            &scenario,
            "--target",
            url,
            "--rate",
            "100",
            "--duration",
            "2s",
            "--loaders",
            "4",
            "--stop-on-backlog",
            "off",
            "-q",
            "--out",
            &out,
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    // A take whose quorum answered too late is in doubt: it may have granted its lease.
    let in_doubt = r["totals"][0]["failures"]["in-doubt"].as_u64().unwrap_or(0);
    assert!(done <= 10 && done + in_doubt >= 10, "each of the 10 leases granted once, {errors} takes refused: {text}");
    assert!(errors > 100, "the takes after the last lease went are refused: {errors}: {text}");
    assert!(text.contains("touched 0 rows, expected 1"), "{text}");
    let text = ok(&["scenario", "verify", &scenario, "--target", url, "--result", &out]);
    assert!(text.contains("invariant owned") && text.contains("holds: store 10"), "{text}");
}

#[test]
fn cassandra_urls_it_cannot_use_get_one_clear_line() {
    for (args, says, code) in [
        (
            &["mobile", "run", "--target", "cassandra://127.0.0.1:1/aggro", "--rate", "10", "--duration", "1s", "-q"][..],
            "cannot connect to cassandra",
            1,
        ),
        (&["mobile", "run", "--target", "cassandra://127.0.0.1:1/9lives", "--rate", "10", "--duration", "1s", "-q"][..], "keyspace", 2),
        (&["mmo", "verify", "--target", "cassandra://127.0.0.1:1/aggro"][..], "cannot connect to cassandra", 1),
    ] {
        let o = run(args, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("--features cassandra") {
            return; // a build without the target says so, as it must
        }
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
}
