//! Redis Cluster: every workload on the cluster the test script started, a master killed mid-run and a
//! slot being migrated on clusters of the tests' own, and cluster URLs that cannot work.

use super::util::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `redis-cli -p PORT ARGS…`'s answer.
fn redis_cli(addr: &str, args: &[&str]) -> String {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let out = Command::new("redis-cli").args(["-h", host, "-p", port]).args(args).output().expect("redis-cli is installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The masters a cluster URL names.
fn masters(url: &str) -> Vec<String> {
    url.trim_start_matches("redis://").split(',').map(str::to_string).collect()
}

/// The workloads share the one cluster (database 0 only), so they run one after the other.
#[test]
#[ignore = "needs a Redis Cluster: bash scripts/test.sh services runs it"]
fn every_workload_runs_and_verifies_on_a_redis_cluster() {
    let Some(url) = service("AGGRO_TEST_REDIS_CLUSTER") else { return };
    crate::mobile_round_trip(&url, crate::BRISK);
    for m in masters(&url) {
        let keys: u64 = redis_cli(&m, &["dbsize"]).trim().parse().unwrap();
        assert!(keys > 500, "master {m} holds {keys} keys: the users are not spread over the slots");
    }
    // Workload E's scan is one script reading records in every slot: the cluster refuses it, in its words.
    crate::scenario::ycsb_on(&url, "200", &[("e", "non local key")]);
    crate::mmo::mmo_round_trip(&url, 200, 100, 12);
}

/// A cluster of this test's own (killing a master of the shared one would change it under other tests).
pub(crate) struct OwnCluster {
    dir: tempfile::TempDir,
    pub(crate) url: String,
}

impl OwnCluster {
    pub(crate) fn start() -> Self {
        let dir = tempdir();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/redis-cluster.sh");
        let out = Command::new("bash").arg(script).arg("start").arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Self { dir, url }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/redis-cluster.sh");
        let _ = Command::new("bash").arg(script).arg("stop").arg(self.dir.path()).status();
    }
}

/// A master killed two seconds into a write run: its slots fail (counted, the node named) until its
/// replica takes over, the run goes on against the survivors, and verify finds every write the run
/// counted as committed — the failed ones in doubt, none lost.
#[test]
#[ignore = "needs redis-server: bash scripts/test.sh services runs it"]
fn a_master_killed_mid_run_fails_over_and_loses_no_commit() {
    if service("AGGRO_TEST_REDIS_CLUSTER").is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let url = cluster.url.as_str();
    ok(&["mobile", "populate", "--target", url, "--users", "3000"]);
    let victim = masters(url)[1].clone();
    let pid: u32 = redis_cli(&victim, &["info", "server"])
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|p| p.trim().parse().ok())
        .expect("the master's pid");
    let dir = tempdir();
    let out = path(dir.path(), "write.json");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    });
    let args = ["mobile", "run", "--target", url, "--workload", "write", "--rate", "500", "--duration", "12s", "--interval", "1s"];
    let o = run(&[&args[..], &["--loaders", "4", "--stop-on-backlog", "off", "--out", &out]].concat(), Duration::from_secs(60));
    killer.join().unwrap();
    let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    assert!(text.contains(&format!("cluster node {victim}")), "the dead node is not named: {text}");
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    assert!(errors > 0 && done > 3000, "{done} done, {errors} failed: {text}");
    let intervals = r["intervals"].as_array().unwrap();
    let late_errors: u64 = intervals[intervals.len() - 3..].iter().map(|iv| iv["ops"][0]["errors"].as_u64().unwrap()).sum();
    assert_eq!(late_errors, 0, "the replica took over, yet the last 3 s still failed: {text}");
    let text = ok(&["mobile", "verify", "--target", url, "--result", &out]);
    // Every write the run counted committed is there; a write in flight when the master died may have
    // landed though its reply was lost (in doubt, counted by the run as failed): the store holds between
    // the committed ones and those plus the in-doubt ones.
    let in_store: u64 = text
        .split(" committed write transactions")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the store's count");
    let in_doubt: u64 = text.split(" in doubt)").next().and_then(|t| t.rsplit('+').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!((done..=done + in_doubt).contains(&in_store) && text.contains("verify: ok"), "{done} done, {in_doubt} in doubt: {text}");

    // Per node: every master took commands, the dead one has the errors, and the report shows them.
    let nodes = r["extra"]["nodes"].as_array().expect("extra.nodes");
    let node = |addr: &str| nodes.iter().find(|n| n["node"] == addr);
    for m in masters(url) {
        assert!(node(&m).is_some_and(|n| n["commands"].as_u64().unwrap() > 0), "{m} took no command: {nodes:?}");
    }
    assert!(node(&victim).is_some_and(|n| n["errors"].as_u64().unwrap() > 0), "{nodes:?}");
    assert!(nodes.len() >= 4, "the replica that took over is a node of its own: {nodes:?}");
    let html = path(dir.path(), "write.html");
    ok(&["report", &out, "--out", &html]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Cluster nodes") && page.contains(&victim), "no node table in the report");
}

/// A master as `CLUSTER NODES` lists it.
#[derive(Clone)]
struct Master {
    id: String,
    addr: String,
    slots: Vec<(u16, u16)>,
}

/// Every master of the cluster `any` is a node of.
fn slot_owners(any: &str) -> Vec<Master> {
    redis_cli(any, &["cluster", "nodes"])
        .lines()
        .filter(|l| l.contains("master"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let addr = f[1].split('@').next().unwrap().to_string();
            let ranges = f[8..]
                .iter()
                .filter_map(|r| r.split_once('-').map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap())).or_else(|| r.parse().ok().map(|a| (a, a))))
                .collect();
            Master { id: f[0].to_string(), addr, slots: ranges }
        })
        .collect()
}

/// A slot in the middle of a migration: its master answers `ASK` for every key it does not hold, and
/// aggro follows to the importing master (`ASKING`, then the command again there). Every request is
/// served, and the keys are where the cluster put them: on the importing master.
#[test]
#[ignore = "needs redis-server: bash scripts/test.sh services runs it"]
fn a_slot_being_migrated_is_followed_by_ask() {
    if service("AGGRO_TEST_REDIS_CLUSTER").is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let url = cluster.url.as_str();
    let any = &masters(url)[0];
    let slot: u16 = redis_cli(any, &["cluster", "keyslot", "{ask}"]).trim().parse().unwrap();
    let owners = slot_owners(any);
    let from = owners.iter().find(|m| m.slots.iter().any(|&(a, b)| a <= slot && slot <= b)).expect("the slot's master").clone();
    let to = owners.iter().find(|m| m.id != from.id).expect("another master").clone();
    assert_eq!(redis_cli(&to.addr, &["cluster", "setslot", &slot.to_string(), "importing", &from.id]).trim(), "OK");
    assert_eq!(redis_cli(&from.addr, &["cluster", "setslot", &slot.to_string(), "migrating", &to.id]).trim(), "OK");

    let dir = tempdir();
    let scenario = path(dir.path(), "ask.toml");
    std::fs::write(
        &scenario,
        r#"
name = "ask"
[keys.key]
count = 1000
prefix = "k{ask}:"
[[transaction]]
name = "set-get"
step = [{ let = ["k = key(key)"] }, { name = "set", redis = ["SET", "${k}", "v"] }, { name = "get", redis = ["GET", "${k}"] }]
"#,
    )
    .unwrap();
    let out = path(dir.path(), "ask.json");
    let text = ok(&["scenario", "run", &scenario, "--target", url, "--rate", "200", "--duration", "2s", "--loaders", "4", "-q", "--out", &out]);
    let (done, errors, _) = totals(&result(Path::new(&out)));
    assert!(done > 300 && errors == 0, "{done} done, {errors} failed: {text}");
    let moved: u64 = redis_cli(&to.addr, &["cluster", "countkeysinslot", &slot.to_string()]).trim().parse().unwrap();
    let stayed: u64 = redis_cli(&from.addr, &["cluster", "countkeysinslot", &slot.to_string()]).trim().parse().unwrap();
    assert!(moved > 0 && stayed == 0, "the keys went to the importing master: {moved} there, {stayed} on the migrating one");
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn cluster_urls_that_cannot_work_get_one_clear_line() {
    let Some(single) = service("AGGRO_TEST_REDIS") else { return };
    for (url, says, code) in [
        (format!("{single}?cluster"), "is not a cluster node", 1),
        ("redis://127.0.0.1:1,127.0.0.1:2".to_string(), "no cluster node answered", 1),
        ("redis://127.0.0.1:7000,127.0.0.1:7001/3".to_string(), "database 0 only", 2),
    ] {
        let o = run(&["mobile", "run", "--target", &url, "--rate", "10", "--duration", "1s", "-q"], Duration::from_secs(30));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{url}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{url}: {err}");
    }
}
