//! Scenario files and pgbench scripts, end to end, on every target.

use crate::util::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// A database of its own on the test server (the mobile tests use the
/// same table names in the default one), made with psql if missing.
pub(crate) fn pg_database(url: &str, name: &str) -> String {
    let bin = std::env::var("AGGRO_PG_BIN").unwrap_or_else(|_| "/usr/bin".into());
    let out =
        std::process::Command::new(Path::new(&bin).join("psql")).args([url, "-qc", &format!("CREATE DATABASE {name}")]).output().expect("psql runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || err.contains("already exists"), "{err}");
    let (base, _) = url.rsplit_once('/').expect("a database in the URL");
    format!("{base}/{name}")
}

fn file(rel: &str) -> String {
    scenarios().join(rel).display().to_string()
}

/// The DynamoDB/Spanner tool's trio as scenario files: populate, run each at a fixed rate
/// (every request completes, none fails), then check the invariants the
/// target's family can express against the runs' committed counts.
fn trio_round_trip(target: &str, rate: &str, checks: bool) {
    let dir = tempdir();
    for (name, has_invariants) in [("write", true), ("consistent-read", true), ("read", false)] {
        let scenario = file(&format!("mobile/{name}.toml"));
        ok(&["scenario", "populate", &scenario, "--target", target, "--set", "users=2000"]);
        let out = path(dir.path(), &format!("{name}.json"));
        ok(&[
            "scenario",
            "run",
            &scenario,
            "--target",
            target,
            "--set",
            "users=2000",
            "--rate",
            rate,
            "--duration",
            "2s",
            "--loaders",
            "8",
            "--interval",
            "1s",
            "--stop-on-backlog",
            "off",
            "--seed",
            "7",
            "-q",
            "--out",
            &out,
        ]);
        let r = result(Path::new(&out));
        let (done, errors, _) = totals(&r);
        assert_eq!(errors, 0, "{name} on {target}: {r:#}");
        assert_eq!(done, 2 * rate.parse::<u64>().unwrap(), "{name} on {target}: every scheduled request completes");
        assert_eq!(r["spec"]["scenario"]["name"], format!("mobile-{name}"));
        let before = store_files(target);
        let verify = run(&["scenario", "verify", &scenario, "--target", target, "--set", "users=2000", "--result", &out], Duration::from_secs(60));
        let text = format!("{}{}", String::from_utf8_lossy(&verify.stdout), String::from_utf8_lossy(&verify.stderr));
        assert!(store_files(target) == before, "{name} on {target}: verify changed the store's files");
        if has_invariants && checks {
            assert!(verify.status.success(), "{name} on {target}: {text}");
            assert!(text.contains("invariant gold") && text.contains("holds") && !text.contains("BROKEN"), "{text}");
        } else {
            assert_eq!(verify.status.code(), Some(2), "{name} on {target}: {text}");
            assert!(text.contains("no [[invariant]]"), "{text}");
        }
    }
}

/// The bytes of each file of a stackdb store's directory, by name; empty for another target.
fn store_files(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let Some(dir) = target.strip_prefix("stackdb:") else { return Vec::new() };
    let files = std::fs::read_dir(dir).expect("the store's directory").map(|e| e.expect("a directory entry").path());
    let mut bytes: Vec<_> = files.map(|f| (f.clone(), std::fs::read(&f).expect("a store file reads"))).collect();
    bytes.sort();
    bytes
}

/// A scenario's runs log themselves in the store: a run left out of the
/// ledger is named as such (exit code 4), not blamed on the store; with every
/// file given the invariants hold; a store changed behind aggro's back breaks
/// them (exit code 1).
#[test]
fn a_run_left_out_of_the_ledger_is_told_from_lost_data() {
    let dir = tempdir();
    let db = path(dir.path(), "t.db");
    let target = format!("sqlite:{db}");
    let scenario = file("mobile/write.toml");
    ok(&["scenario", "populate", &scenario, "--target", &target, "--set", "users=2000"]);
    let outs: Vec<String> = ["first", "second"].iter().map(|n| path(dir.path(), &format!("{n}.json"))).collect();
    let run_once = |out: &str| {
        let args = ["scenario", "run", &scenario, "--target", &target, "--set", "users=2000", "--rate", "200", "--duration", "1s"];
        ok(&[&args[..], &["--loaders", "4", "--interval", "1s", "--stop-on-backlog", "off", "-q", "--out", out]].concat());
    };
    for out in &outs {
        run_once(out);
        assert_eq!(result(Path::new(out))["run_ids"].as_array().map(Vec::len), Some(1), "{out} claims its run");
    }
    let verify = |results: &[&String]| {
        let mut args = vec!["scenario", "verify", &scenario, "--target", &target, "--set", "users=2000"];
        for r in results {
            args.extend(["--result", r.as_str()]);
        }
        let out = run(&args, Duration::from_secs(60));
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    let (code, text) = verify(&[&outs[1]]);
    assert_eq!(code, Some(4), "{text}");
    assert!(
        text.contains("the ledger is incomplete, not the store") && text.contains("1 run(s)") && text.contains("scenario run (mobile-write)"),
        "{text}"
    );
    let (code, text) = verify(&[&outs[0], &outs[1]]);
    assert_eq!(code, Some(0), "{text}");
    // Gold taken behind aggro's back: every run is counted, so the store is at fault.
    let conn = rusqlite::Connection::open(&db).expect("the database opens");
    conn.execute("UPDATE users SET gold = gold - 1 WHERE id = 1", []).expect("an update");
    drop(conn);
    let (code, text) = verify(&[&outs[0], &outs[1]]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("BROKEN") && text.contains("lost or phantom updates"), "{text}");
    // A population starts the log again: a fresh run alone is the whole ledger.
    ok(&["scenario", "populate", &scenario, "--target", &target, "--set", "users=2000"]);
    run_once(&outs[0]);
    let (code, text) = verify(&[&outs[0]]);
    assert_eq!(code, Some(0), "{text}");
}

/// A YCSB workload file as YCSB ships it runs unchanged (translated onto
/// `scenarios/ycsb/core.toml`; its `operationcount` ends the run); a property
/// the translation cannot honour is bad input naming its line.
/// A store `mobile populate` made holds the mobile world: a scenario run there would change it under
/// `mobile verify`, and is refused before it writes.
#[test]
fn a_scenario_run_on_another_workloads_world_is_refused() {
    let dir = tempdir();
    let target = format!("stackdb:{}", path(dir.path(), "db"));
    ok(&["mobile", "populate", "--target", &target, "--users", "200"]);
    let out = run(&["scenario", "run", &file("mobile/write.toml"), "--target", &target, "--duration", "1s"], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds a mobile world"), "{stderr}");
    ok(&["mobile", "verify", "--target", &target]);
}

#[test]
fn a_ycsb_workload_file_runs_unchanged() {
    let dir = tempdir();
    let workload = path(dir.path(), "workloada");
    std::fs::write(
        &workload,
        "# Workload A\nrecordcount=2000\noperationcount=300\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\n\
         readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
    )
    .expect("write the workload");
    let target = format!("stackdb:{}", path(dir.path(), "db"));
    ok(&["scenario", "populate", &workload, "--target", &target]);
    let out = path(dir.path(), "a.json");
    ok(&["scenario", "run", &workload, "--target", &target, "--rate", "500", "--duration", "10s", "--interval", "1s", "-q", "--out", &out]);
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    assert_eq!((done, errors), (300, 0), "operationcount=300 ends the run: {r:#}");
    assert!(r["elapsed_s"].as_f64().unwrap() < 5.0, "{r:#}");
    let names: Vec<&str> = r["totals"].as_array().unwrap().iter().filter_map(|o| o["name"].as_str()).collect();
    assert!(names.contains(&"read") && names.contains(&"update") && names[0] == "ycsb-workloada", "{names:?}");
    std::fs::write(&workload, "workload=site.ycsb.workloads.CoreWorkload\nreadproportion=1\nscanlengthdistribution=zipfian\n").expect("rewrite");
    let bad = run(&["scenario", "run", &workload, "--target", &target, "--duration", "1s"], Duration::from_secs(30));
    let text = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{text}");
    assert!(text.contains("workloada:3: scanlengthdistribution=zipfian"), "{text}");
    // An error in the translation names the file, not a line of the translation as if it were the file's.
    std::fs::write(&workload, "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=0\nreadproportion=1\n").expect("rewrite");
    let bad = run(&["scenario", "run", &workload, "--target", "null:", "--duration", "1s"], Duration::from_secs(30));
    let text = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{text}");
    assert!(text.contains("workloada (translated onto scenarios/ycsb/core.toml): keys.record.count: must be at least 1"), "{text}");
}

#[test]
fn the_trio_as_scenarios_on_sqlite() {
    let dir = tempdir();
    trio_round_trip(&format!("sqlite:{}", path(dir.path(), "t.db")), "200", true);
}

#[test]
fn the_trio_as_scenarios_on_stackdb() {
    let dir = tempdir();
    trio_round_trip(&format!("stackdb:{}", path(dir.path(), "db")), "400", false);
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn the_trio_as_scenarios_on_postgres() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    trio_round_trip(&pg_database(&url, "aggro_scenario_trio"), "400", true);
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn the_trio_as_scenarios_on_redis() {
    let Some(url) = service("AGGRO_TEST_REDIS") else { return };
    trio_round_trip(&format!("{url}/5"), "400", true);
}

#[test]
#[ignore = "needs a DynamoDB-API server (moto): bash scripts/test.sh services runs it"]
fn the_trio_as_scenarios_on_dynamodb() {
    let Some(url) = service("AGGRO_TEST_DYNAMODB") else { return };
    trio_round_trip(&url, "50", false);
}

/// Each loader's counter, its answers marked with the loader's number: an
/// answer handed to the wrong loader fails the check step (Redis: a script
/// error; SQL: a division by zero).
const OWN_ANSWERS: &str = r#"
[populate]
rows = 64
setup = [
  { name = "drop", sql = "DROP TABLE IF EXISTS own", redis = ["FLUSHDB"] },
  { name = "create", sql = "CREATE TABLE own (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)" },
]
sql = { table = "own", columns = ["id", "n"], values = ["n", "0"] }
redis = ["SET", "own:${n}", "0"]

[[transaction]]
name = "own"
step = [
  { name = "bump", redis = ["EVAL", "return redis.call('INCR', KEYS[1]) * 1000 + tonumber(ARGV[1])", "1", "own:${client_id}", "${client_id}"], sql = "UPDATE own SET n = n + 1 WHERE id = $1 RETURNING n * 1000 + id", params = ["client_id"], capture = ["mark"] },
  { name = "check", redis = ["EVAL", "if tonumber(ARGV[1]) % 1000 ~= tonumber(ARGV[2]) or math.floor(tonumber(ARGV[1]) / 1000) ~= tonumber(redis.call('GET', KEYS[1])) then return redis.error_reply('answer of another loader: ' .. ARGV[1]) end return 1", "1", "own:${client_id}", "${mark}", "${client_id}"], sql = "SELECT 1 / (CASE WHEN $1::bigint % 1000 = $2 AND $1::bigint / 1000 = n THEN 1 ELSE 0 END) FROM own WHERE id = $2", params = ["mark", "client_id"] },
  { name = "pay", redis = [["MULTI"], ["INCR", "paid"], ["INCR", "own:${client_id}:paid"], ["EXEC"]] },
]
"#;

/// Loaders sharing connections (`--connections`, pipelined) get their own
/// answers, at full speed and at a fixed rate, on Redis (scripts and a
/// step's MULTI … EXEC included) and PostgreSQL.
fn loaders_sharing_connections_get_their_own_answers(target: &str) {
    let dir = tempdir();
    let own = path(dir.path(), "own.toml");
    std::fs::write(&own, OWN_ANSWERS).unwrap();
    ok(&["scenario", "populate", &own, "--target", target]);
    for rate in ["max", "3000"] {
        let out = path(dir.path(), "own.json");
        ok(&[
            "scenario",
            "run",
            &own,
            "--target",
            target,
            "--rate",
            rate,
            "--duration",
            "2s",
            "--loaders",
            "32",
            "--connections",
            "4",
            "--stop-on-backlog",
            "off",
            "-q",
            "--out",
            &out,
        ]);
        let r = result(Path::new(&out));
        let (done, errors, _) = totals(&r);
        assert!(done > 1000 && errors == 0, "{target} at {rate}: {done} done, {errors} errors: {r:#}");
        assert_eq!(r["spec"]["connections"], 4);
    }
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn loaders_sharing_postgres_connections_get_their_own_answers() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    let target = pg_database(&url, "aggro_scenario_sharing");
    loaders_sharing_connections_get_their_own_answers(&target);
    // A transaction held open across steps cannot share its connection.
    let o = run(
        &["scenario", "run", &file("mobile/write.toml"), "--target", &target, "--loaders", "8", "--connections", "2", "-q"],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("loaders cannot share connections: step \"begin\" runs BEGIN"), "{err}");
}

/// On Redis besides: the trio's write keeps its invariant on shared
/// connections; a server killed mid-run fails every waiting request and the
/// run still writes its result. Sharing where it cannot work is bad input: a
/// step leaving WATCH for a later one, a target that answers one request at
/// a time, more connections than loaders.
#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn loaders_sharing_redis_connections_get_their_own_answers() {
    let Some(url) = service("AGGRO_TEST_REDIS") else { return };
    let target = format!("{url}/8");
    loaders_sharing_connections_get_their_own_answers(&target);
    let dir = tempdir();
    let write = file("mobile/write.toml");
    ok(&["scenario", "populate", &write, "--target", &target, "--set", "users=2000"]);
    let out = path(dir.path(), "write.json");
    ok(&[
        "scenario",
        "run",
        &write,
        "--target",
        &target,
        "--set",
        "users=2000",
        "--rate",
        "2000",
        "--duration",
        "2s",
        "--loaders",
        "16",
        "--connections",
        "2",
        "--stop-on-backlog",
        "off",
        "-q",
        "--out",
        &out,
    ]);
    ok(&["scenario", "verify", &write, "--target", &target, "--set", "users=2000", "--result", &out]);

    let own = path(dir.path(), "own.toml");
    std::fs::write(&own, OWN_ANSWERS).unwrap();
    let (mut redis, private) = private_redis(dir.path());
    ok(&["scenario", "populate", &own, "--target", &private]);
    let out = path(dir.path(), "killed.json");
    let child = aggro()
        .args(["scenario", "run", &own, "--target", &private, "--rate", "2000", "--duration", "3s", "--loaders", "16", "--connections", "2"])
        .args(["--interval", "1s", "--stop-on-backlog", "off", "-q", "--out", &out])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    redis.kill().unwrap();
    redis.wait().unwrap();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    assert!(done > 500 && errors > 500, "{done} done, {errors} errors");
    let failures = &r["totals"][0]["failures"];
    assert_eq!(failures["disconnected"].as_u64().unwrap_or(0) + failures["connect"].as_u64().unwrap_or(0), errors, "{failures}");

    let watched = path(dir.path(), "watch.toml");
    std::fs::write(&watched, "[[transaction]]\nname = \"t\"\nstep = [{ name = \"watch\", redis = [\"WATCH\", \"a\"] }, { name = \"pay\", redis = [[\"MULTI\"], [\"INCR\", \"a\"], [\"EXEC\"]] }]\n").unwrap();
    let db = format!("sqlite:{}", path(dir.path(), "t.db"));
    for (file, target, loaders, connections, says) in [
        (&watched, &target, "8", "2", "loaders cannot share connections: step \"watch\" sends WATCH"),
        (&file("ycsb/c.toml"), &db, "8", "2", "answers one request at a time per connection"),
        (&own, &target, "8", "9", "--connections 9 is more than --loaders 8"),
    ] {
        let o = run(
            &["scenario", "run", file, "--target", target, "--loaders", loaders, "--connections", connections, "--duration", "1s", "-q"],
            Duration::from_secs(30),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// YCSB's core workloads, briefly: populated, run, every request served.
pub(crate) fn ycsb_on(target: &str, rate: &str, refused: &[(&str, &str)]) {
    let dir = tempdir();
    for w in ["a", "b", "c", "d", "e", "f"] {
        let scenario = file(&format!("ycsb/{w}.toml"));
        ok(&["scenario", "populate", &scenario, "--target", target]);
        let out = path(dir.path(), &format!("{w}.json"));
        let args = [
            "scenario",
            "run",
            &scenario,
            "--target",
            target,
            "--rate",
            rate,
            "--duration",
            "1s",
            "--loaders",
            "4",
            "--stop-on-backlog",
            "off",
            "-q",
            "--out",
            &out,
        ];
        if let Some((_, why)) = refused.iter().find(|(r, _)| *r == w) {
            let o = run(&args, Duration::from_secs(60));
            let err = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && err.contains(why), "{w} on {target}: {err}");
            continue;
        }
        ok(&args);
        let r = result(Path::new(&out));
        let (done, errors, _) = totals(&r);
        assert!(done > 0 && errors == 0, "ycsb-{w} on {target}: {done} done, {errors} errors");
        let ops: Vec<&str> = r["operations"].as_array().unwrap().iter().filter_map(|o| o.as_str()).collect();
        let expected: &[&str] = match w {
            "a" | "b" => &["ycsb-", "read", "update"],
            "c" => &["ycsb-c"],
            "d" => &["ycsb-d", "read", "insert"],
            "e" => &["ycsb-e", "scan", "insert"],
            _ => &["ycsb-f", "read", "read-modify-write"],
        };
        assert!(expected.iter().all(|e| ops.iter().any(|o| o.starts_with(e))), "ycsb-{w}: {ops:?}");
    }
}

#[test]
fn ycsb_core_workloads_on_sqlite() {
    let dir = tempdir();
    ycsb_on(&format!("sqlite:{}", path(dir.path(), "y.db")), "200", &[]);
}

#[test]
fn ycsb_core_workloads_on_stackdb_and_null() {
    let dir = tempdir();
    ycsb_on(&format!("stackdb:{}", path(dir.path(), "db")), "200", &[("e", "keeps no order")]);
    ycsb_on("null:", "1000", &[]);
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn ycsb_core_workloads_on_postgres() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    ycsb_on(&pg_database(&url, "aggro_scenario_ycsb"), "200", &[]);
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn ycsb_core_workloads_on_redis() {
    let Some(url) = service("AGGRO_TEST_REDIS") else { return };
    ycsb_on(&format!("{url}/6"), "200", &[]);
}

#[test]
#[ignore = "needs a DynamoDB-API server (moto): bash scripts/test.sh services runs it"]
fn ycsb_core_workloads_on_dynamodb() {
    let Some(url) = service("AGGRO_TEST_DYNAMODB") else { return };
    ycsb_on(&url, "40", &[]);
}

/// pgbench's own tpcb-like after `-i`, and a script with every supported
/// meta-command, on real PostgreSQL; TPC-B's balance sums agree afterwards.
#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn pgbench_scripts_run_unchanged_on_postgres() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    let url = pg_database(&url, "aggro_scenario_pgbench");
    let dir = tempdir();
    let text = ok(&["pgbench", "-i", "-s", "2", "--target", &url]);
    assert!(text.contains("pgbench"), "{text}");
    let out = path(dir.path(), "tpcb.json");
    let text = ok(&["pgbench", "-r", "--target", &url, "--rate", "max", "--duration", "2s", "--loaders", "4", "-q", "--out", &out]);
    for check in ["branches = accounts", "tellers = accounts", "history = accounts"] {
        assert!(text.contains(&format!("invariant {check}")) && !text.contains("BROKEN"), "{text}");
    }
    let r = result(Path::new(&out));
    let (done, errors, _) = totals(&r);
    assert!(done > 100 && errors == 0, "{done} done, {errors} errors");
    assert_eq!(r["operations"][1], "tpcb-like.1 BEGIN");
    assert_eq!(r["spec"]["scenario"]["input"]["scale"], serde_json::Value::Null, "the scale was read from the store");

    // pgbench's own run flags: -c clients, -t transactions each, as fast as possible (no -R), -n and -M prepared.
    let out = path(dir.path(), "t.json");
    ok(&["pgbench", "-n", "-M", "prepared", "-c", "3", "-j", "1", "-t", "40", "--target", &url, "-q", "--out", &out]);
    let r = result(Path::new(&out));
    assert_eq!((totals(&r).0, totals(&r).1), (120, 0), "3 clients × 40: {r:#}");
    assert_eq!(r["spec"]["exec"]["loaders"], 3, "{r:#}");
    for (args, said) in [(&["-M", "fast"][..], "invalid value 'fast' for '-M <MODE>'"), (&["-T", "1", "--rate", "100"][..], "cannot be used with")] {
        let mut all = vec!["pgbench", "--target", &url];
        all.extend(args);
        let o = run(&all, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }

    let script = path(dir.path(), "mine.sql");
    std::fs::write(
        &script,
        "-- every meta-command aggro runs\n\
         \\set aid random_zipfian(1, 100000 * :scale, 1.2)\n\
         \\set tid random_exponential(1, 10 * :scale, 2.0)\n\
         \\set bid random_gaussian(1, :scale, 2.5)\n\
         \\set delta (random(-100, 100) * 2 + :client_id % 3) / 2\n\
         \\sleep 100 us\n\
         \\sleep :limit ms\n\
         BEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta\n  WHERE aid = :aid;\n\
         SELECT abalance, ':aid' AS literal, :tid::int FROM pgbench_accounts WHERE aid = :aid;\n\
         END;\n",
    )
    .unwrap();
    let out = path(dir.path(), "mine.json");
    let text = ok(&[
        "pgbench",
        &format!("{script}@3"),
        "-b",
        "select-only@1",
        "-D",
        "limit=1",
        "-r",
        "--target",
        &url,
        "--rate",
        "200",
        "--duration",
        "2s",
        "--loaders",
        "4",
        "-q",
        "--out",
        &out,
    ]);
    assert!(!text.contains("invariant"), "custom scripts get no TPC-B checks: {text}");
    let r = result(Path::new(&out));
    assert_eq!(totals(&r).1, 0, "{r:#}");
    let ops: Vec<&str> = r["operations"].as_array().unwrap().iter().filter_map(|o| o.as_str()).collect();
    assert!(ops.contains(&"mine") && ops.contains(&"select-only"), "{ops:?}");
    let mine = r["totals"].as_array().unwrap().iter().find(|t| t["name"] == "mine").unwrap()["ok"].as_u64().unwrap();
    assert!(mine > 200, "three in four transactions run the script: {mine} of 400");

    std::fs::write(&script, "SELECT 1;\n\\setshell x echo 1\n").unwrap();
    let o = run(&["pgbench", &script, "--target", &url, "--duration", "1s"], Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("mine.sql:2") && err.contains("unsupported meta-command \\setshell") && err.trim().lines().count() == 1, "{err}");
}

/// A bad scenario file is one line naming the file, the line and the key (exit 2).
#[test]
fn bad_scenario_files_name_the_line_and_the_key() {
    let dir = tempdir();
    let cases = [
        ("[vars]\nusers = 10\n[[transaction]]\nname = \"t\"\nwieght = 2\n", ":5", "wieght"),
        (
            "[keys.k]\ncount = 10\ndistribution = \"zipf\"\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"x\"]] }]\n",
            ":3",
            "keys.k.distribution",
        ),
        ("[[transaction]]\nname = \"t\"\nstep = [\n  { kv = [[\"get\", \"${nosuch + 1}\"]] },\n]\n", ":4", "unknown variable \"nosuch\""),
        ("[[transaction]]\nname = \"t\"\nstep = [{ let = [\"x = random(1,\"] }]\n", ":3", "let[0]"),
        ("[[transaction]]\nname = \"t\"\nstep = [{ sql = \"SELECT 1\" }]\n", ":1", "no step has a `kv` form"),
    ];
    for (i, (text, line, key)) in cases.iter().enumerate() {
        let f = path(dir.path(), &format!("bad{i}.toml"));
        std::fs::write(&f, text).unwrap();
        let o =
            run(&["scenario", "run", &f, "--target", &format!("stackdb:{}", path(dir.path(), "db")), "--duration", "1s"], Duration::from_secs(30));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(&format!("bad{i}.toml{line}")) && err.contains(key) && err.trim().lines().count() == 1, "case {i}: {err}");
    }
}

/// The harness cost of a scenario: a two-step scenario on `null:` holds a
/// high rate with no backlog (the figure is in docs/BENCHMARKS.md; here a
/// modest rate so a loaded CI machine holds it too).
#[test]
fn a_two_step_scenario_on_null_keeps_its_schedule() {
    let dir = tempdir();
    let f = path(dir.path(), "two.toml");
    std::fs::write(
        &f,
        "[keys.user]\ncount = 1000\ndistribution = \"scrambled-zipfian\"\n[[transaction]]\nname = \"two\"\nstep = [\n  { let = [\"k = key(user)\"] },\n  { name = \"get\", kv = [[\"get\", \"${k}\"]] },\n  { name = \"put\", kv = [[\"put\", \"${k}\", \"${random(1, 100)}\"]] },\n]\n",
    )
    .unwrap();
    let out = path(dir.path(), "two.json");
    ok(&["scenario", "run", &f, "--target", "null:", "--rate", "20000", "--duration", "2s", "--loaders", "4", "-q", "--out", &out]);
    let r = result(Path::new(&out));
    assert_eq!(r["backlog_at_end"], 0);
    assert_eq!(r["operations"], serde_json::json!(["two", "two.get", "two.put"]));
    assert_eq!(totals(&r).0, 40_000);
}

/// `scenario find-max` is the same search as `mobile find-max`.
#[test]
fn find_max_searches_a_scenarios_capacity() {
    let dir = tempdir();
    let out = path(dir.path(), "fm.json");
    let text = ok(&[
        "scenario",
        "find-max",
        &file("ycsb/c.toml"),
        "--target",
        "null:",
        "--step",
        "1s",
        "--start-rate",
        "500",
        "--max-rate",
        "2000",
        "--max-trials",
        "3",
        "--loaders",
        "4",
        "--out",
        &out,
    ]);
    assert!(text.contains("held every rate up to the ceiling") || text.contains("maximum rate held"), "{text}");
    let r = result(Path::new(&out));
    assert_eq!(r["command"], "scenario find-max");
    assert_eq!(r["spec"]["scenario"]["name"], "ycsb-c");
    assert!(!r["extra"]["trials"].as_array().unwrap().is_empty(), "{r:#}");
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn a_scenario_on_a_store_holding_nothing_is_refused() {
    let dir = tempdir();
    let ycsb_c = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ycsb/c.toml");
    let ycsb_c = ycsb_c.to_str().unwrap();
    let mut targets = vec![format!("stackdb:{}", path(dir.path(), "never"))];
    if let Some(redis) = service("AGGRO_TEST_REDIS") {
        // A database of its own, emptied: what a never-populated Redis holds.
        let empty = format!("{redis}/9");
        let (host, port) = redis.trim_start_matches("redis://").split_once(':').unwrap();
        std::process::Command::new("redis-cli").args(["-h", host, "-p", port, "-n", "9", "FLUSHDB"]).output().unwrap();
        targets.push(empty);
    }
    for target in &targets {
        let out = run(&["scenario", "run", ycsb_c, "--target", target, "--requests", "100", "-q"], std::time::Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {err}");
        assert!(err.contains("holds no data: populate"), "{target}: {err}");
    }
    assert!(!dir.path().join("never").join("log").exists(), "the refusal created no database");
}

/// A scenario population records its resolved variables in the store's world record: later runs and
/// verifies take them (the trio's three files share them), a `--set` that contradicts the store is
/// refused, a result file of an earlier world is told apart from a store at fault, and a population
/// cut short is refused.
#[test]
fn a_scenario_world_keeps_its_variables() {
    let dir = tempdir();
    let target = format!("sqlite:{}", path(dir.path(), "w.db"));
    let (write, read) = (file("mobile/write.toml"), file("mobile/read.toml"));
    ok(&["scenario", "populate", &write, "--target", &target, "--set", "users=700"]);
    let out = path(dir.path(), "w.json");
    let args = ["--target", &target, "--rate", "200", "--duration", "1s", "-q", "--out", &out];
    let o = run(&[&["scenario", "run", &write][..], &args[..]].concat(), Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("as the store was populated: users=700"), "{err}");
    let r = result(Path::new(&out));
    assert_eq!(r["world"]["workload"], "scenario");
    assert_eq!(r["world"]["vars"]["users"], "700");
    // The trio's read shares the population, and its variables.
    let other = path(dir.path(), "other.json");
    ok(&[&["scenario", "run", &read][..], &args[..7], &["--out", &other]].concat());
    let o = run(&[&["scenario", "run", &write, "--set", "users=5000"][..], &args[..7], &["--out", &other]].concat(), Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("users=5000 (--set, or the workload file's): the store was populated with users=700"), "{err}");
    // Verify needs no --set either; after populating again the old file is of another world.
    let text = ok(&["scenario", "verify", &write, "--target", &target, "--result", &out]);
    assert!(text.contains("invariant gold") && !text.contains("BROKEN"), "{text}");
    ok(&["scenario", "populate", &write, "--target", &target, "--set", "users=700"]);
    let o = run(&["scenario", "verify", &write, "--target", &target, "--result", &out], Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("ran on another world"), "{err}");
    // A population killed midway leaves a record saying so: runs are refused.
    let cut = format!("sqlite:{}", path(dir.path(), "cut.db"));
    let mut child = aggro().args(["scenario", "populate", &write, "--target", &cut, "--set", "users=5000000"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let o = run(&["scenario", "run", &write, "--target", &cut, "--duration", "1s", "-q", "--out", &other], Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the store's population of mobile-write did not finish"), "{err}");
}

/// A transaction that failed without an answer may have committed: a verify allows for it (the store may
/// hold it or not), while a refusal counted as such is not a commit. The run's file is edited as a node
/// that timed out would have left it: two of its commits counted as timeouts, then as refusals.
#[test]
fn a_verify_allows_for_commits_in_doubt_and_no_more() {
    let dir = tempdir();
    let target = format!("sqlite:{}", path(dir.path(), "w.db"));
    let write = file("mobile/write.toml");
    ok(&["scenario", "populate", &write, "--target", &target, "--set", "users=500"]);
    let out = path(dir.path(), "w.json");
    ok(&["scenario", "run", &write, "--target", &target, "--rate", "100", "--duration", "1s", "-q", "--out", &out]);
    let verify_as = |class: &str| {
        let mut r = result(Path::new(&out));
        let t = &mut r["totals"][0];
        let ok = t["ok"].as_u64().unwrap();
        assert!(ok > 2, "{r:#}");
        t["ok"] = (ok - 2).into();
        t["errors"] = 2.into();
        t["failures"] = serde_json::json!({ class: 2 });
        let edited = path(dir.path(), &format!("{class}.json"));
        std::fs::write(&edited, serde_json::to_vec(&r).unwrap()).unwrap();
        let o = run(&["scenario", "verify", &write, "--target", &target, "--result", &edited], Duration::from_secs(30));
        (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    };
    let (code, text) = verify_as("timeout");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("(+2 in doubt)") && text.contains("with the commits in doubt") && !text.contains("BROKEN"), "{text}");
    let (code, text) = verify_as("server");
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("BROKEN") && text.contains("lost or phantom updates"), "{text}");
}

/// pgbench's compatibility suite (bench/pgbench-compat/*.sql), smallest form: each script run by
/// pgbench itself and by `aggro pgbench` (4 clients × 5 transactions) on two databases initialised
/// alike, in pgbench's default mode (-M simple) and, for the scripts the mode decides, in the others
/// (where pgbench aborts, aggro runs nothing either); the transactions processed and the tables'
/// sums must agree.
#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn pgbench_scripts_leave_the_tables_as_pgbench_leaves_them() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    let bin = std::path::PathBuf::from(std::env::var("AGGRO_PG_BIN").unwrap_or_else(|_| "/usr/bin".into()));
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/pgbench-compat");
    let mut scripts: Vec<PathBuf> =
        std::fs::read_dir(&suite).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sql")).collect();
    scripts.sort();
    assert!(scripts.len() >= 6, "the suite's scripts: {scripts:?}");
    let dir = tempdir();
    let sums = "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || \
                (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' || (SELECT count(*) FROM pgbench_history)";
    let psql = |db: &str, sql: &str| {
        let o = std::process::Command::new(bin.join("psql")).args([db, "-Atqc", sql]).output().expect("psql runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    // (script, mode, transactions both must process)
    let mut cases: Vec<(PathBuf, &str, u64)> = scripts.iter().map(|s| (s.clone(), "simple", 20)).collect();
    cases.extend(
        [("gset", "extended", 20), ("gset", "prepared", 20), ("simple", "prepared", 0), ("compound", "extended", 0)]
            .map(|(s, m, n)| (suite.join(format!("{s}.sql")), m, n)),
    );
    for (script, mode, processed) in &cases {
        let name = format!("{}_{mode}", script.file_stem().unwrap().to_string_lossy().replace('-', "_"));
        let (theirs, ours) = (pg_database(&url, &format!("compat_{name}_pgbench")), pg_database(&url, &format!("compat_{name}_aggro")));
        for db in [&theirs, &ours] {
            let init = std::process::Command::new(bin.join("pgbench")).args(["-i", "-s", "1", "-q", db]).output().expect("pgbench runs");
            assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
        }
        let f = script.to_str().unwrap();
        let pgbench =
            std::process::Command::new(bin.join("pgbench")).args(["-n", "-c", "4", "-t", "5", "-M", mode, "-f", f, &theirs]).output().unwrap();
        let said = String::from_utf8_lossy(&pgbench.stdout).to_string() + &String::from_utf8_lossy(&pgbench.stderr);
        assert!(said.contains(&format!("actually processed: {processed}/20")), "pgbench -M {mode} {f}: {said}");
        let out = path(dir.path(), &format!("{name}.json"));
        let o = run(&["pgbench", "--target", &ours, "-c", "4", "-t", "5", "-M", mode, "-f", f, "-q", "--out", &out], Duration::from_secs(60));
        match o.status.code() {
            Some(0) => assert_eq!(totals(&result(Path::new(&out))).0, 20, "{f} -M {mode}: aggro's transactions"),
            // Refused before the run (a compound command outside -M simple) or every client aborted.
            Some(2 | 1) if *processed == 0 => assert!(!Path::new(&out).exists() || totals(&result(Path::new(&out))).0 == 0),
            _ => panic!("aggro pgbench -M {mode} {f}: {}", String::from_utf8_lossy(&o.stderr)),
        }
        assert_eq!(psql(&ours, sums), psql(&theirs, sums), "{f} -M {mode}: the tables' sums (accounts, branches, tellers, history rows)");
    }
}

/// A runtime error in a pgbench script aborts the client, as pgbench's (its run does not go on failing
/// every request for the whole -T): four clients, four failures, the run over at once, exit 1.
#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn a_pgbench_runtime_error_aborts_the_client() {
    let Some(url) = service("AGGRO_TEST_POSTGRES") else { return };
    let target = pg_database(&url, "aggro_pgbench_abort");
    let dir = tempdir();
    let script = path(dir.path(), "zero.sql");
    std::fs::write(&script, "\\set x 10 / (:client_id - :client_id)\nSELECT :x;\n").unwrap();
    let out = path(dir.path(), "abort.json");
    let started = std::time::Instant::now();
    let o = run(&["pgbench", "--target", &target, "-c", "4", "-T", "20", "-f", &script, "-q", "--out", &out], Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "the run went on for {:?}", started.elapsed());
    let r = result(Path::new(&out));
    assert_eq!(r["stop_reason"]["kind"], "aborted", "{}", r["stop_reason"]);
    assert_eq!(r["stop_reason"]["loaders"], 4);
    assert_eq!(totals(&r), (0, 4, 0), "one failure per client");
    assert!(r["error_samples"].to_string().contains("division by zero"), "{}", r["error_samples"]);
}
