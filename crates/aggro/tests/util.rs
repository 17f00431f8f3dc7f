//! Helpers for the integration tests: running the binary, finding the
//! servers `scripts/services.sh` started, checking result files.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The aggro binary under test.
pub fn aggro() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aggro"));
    c.env_remove("AGGRO_TARGET");
    c
}

/// Runs aggro with `args`, killing it if it outlives `limit`.
pub fn run(args: &[&str], limit: Duration) -> Output {
    let mut command = aggro();
    command.args(args);
    run_command(command, limit)
}

/// Runs `command` (its output captured), killing it if it outlives `limit`.
pub fn run_command(mut command: Command, limit: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("it starts");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{command:?} ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Waits (at most 10 s) until a UDP socket is bound to `addr` (`127.0.0.1:PORT`) on this machine, as
/// `/proc/net/udp` lists it: a UDP server's "listening", which no connect can probe.
pub fn until_udp_bound(addr: &str) {
    let port = addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()).expect("an address with a port");
    let local = format!("0100007F:{port:04X}");
    let start = Instant::now();
    while !std::fs::read_to_string("/proc/net/udp").unwrap_or_default().lines().any(|l| l.split_whitespace().nth(1) == Some(&local)) {
        assert!(start.elapsed() < Duration::from_secs(10), "nothing bound {addr} in 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (at most 10 s) until something accepts TCP connections on `addr`.
pub fn until_listening(addr: &str) {
    let start = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(start.elapsed() < Duration::from_secs(10), "nothing listens on {addr} after 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs aggro and insists it succeeds.
pub fn ok(args: &[&str]) -> String {
    let out = run(args, Duration::from_secs(120));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "aggro {args:?} failed ({:?}):\n{text}", out.status);
    text
}

pub use test_support::service;

/// `aggro ARGS` run through a server restart: its server `server` killed 2 s in and, half a second later,
/// started again by `restart` (on its port), which returns the new one; the run's exit code and output.
pub fn through_a_restart(args: &[&str], mut server: std::process::Child, restart: impl FnOnce() -> std::process::Child) -> (Option<i32>, String) {
    let swarm = aggro().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    server.kill().unwrap();
    server.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut again = restart();
    let done = swarm.wait_with_output().unwrap();
    again.kill().unwrap();
    again.wait().unwrap();
    (done.status.code(), format!("{}{}", String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr)))
}

/// A funnel's stages (`extra.script.funnel` or `extra.funnel`): each one's name, the bots that reached it
/// and the bots short of it at the end.
pub fn stages(funnel: &serde_json::Value) -> Vec<(&str, u64, u64)> {
    let stages = funnel["stages"].as_array().unwrap_or_else(|| panic!("no funnel: {funnel}"));
    stages.iter().map(|s| (s["name"].as_str().unwrap(), s["reached"].as_u64().unwrap(), s["short_at_end"].as_u64().unwrap())).collect()
}

/// A loopback TCP port nobody listens on now (the kernel's pick), for a server a test starts.
pub fn free_port() -> String {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port().to_string()
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Reads a result file and checks it against docs/result.schema.json.
pub fn result(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no result file {}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).expect("result is JSON");
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{} does not match the schema: {errors:#?}", path.display());
    value
}

/// The whole-request totals of a result: (ok, errors, conflicts).
pub fn totals(r: &serde_json::Value) -> (u64, u64, u64) {
    let t = &r["totals"][0];
    (t["ok"].as_u64().unwrap(), t["errors"].as_u64().unwrap(), t["conflicts"].as_u64().unwrap())
}

/// Checks the books of a completed run: everything due started, everything
/// started completed, and the per-interval counts add up to the totals.
pub fn assert_books_balance(r: &serde_json::Value) {
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(n("due"), n("started") + n("backlog_at_end"), "done = scheduled - backlog");
    assert_eq!(n("started"), n("completed"));
    let (ok, errors, _) = totals(r);
    // Conflicts are retried inside a request, so they are not requests.
    let final_conflicts: u64 = 0;
    assert_eq!(ok + errors + final_conflicts, n("completed"));
    let by_interval: u64 = r["intervals"].as_array().unwrap().iter().map(|i| i["ops"][0]["ok"].as_u64().unwrap()).sum();
    assert_eq!(by_interval, ok);
}

/// A path inside `dir` as a string.
pub fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Starts a private redis-server on a free port, for tests that kill it.
pub fn private_redis(dir: &Path) -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (scripts/install-deps.sh)");
    let addr = format!("127.0.0.1:{port}");
    until_listening(&addr);
    (child, format!("redis://{addr}"))
}

/// aggro started with `args` and `--live 127.0.0.1:0` (its stdout dropped), and its live view's record
/// after `wait`: the child, to wait for, and the record so far.
pub fn live_record_after(args: &[&str], wait: Duration) -> (std::process::Child, serde_json::Value) {
    use std::io::{BufRead, Read, Write};
    let mut child = aggro().args(args).args(["--live", "127.0.0.1:0"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("aggro starts");
    let stderr = child.stderr.take().expect("stderr");
    let url = std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("live view: ").map(str::to_string))
        .expect("aggro prints its live view's address");
    std::thread::sleep(wait);
    let host = url.trim_start_matches("http://").split('/').next().expect("a host").to_string();
    let mut conn = std::net::TcpStream::connect(&host).expect("the live view answers");
    conn.write_all(format!("GET /record.json HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes()).expect("asked");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("answered");
    (child, serde_json::from_str(answer.split("\r\n\r\n").nth(1).expect("a body")).expect("the record so far"))
}
