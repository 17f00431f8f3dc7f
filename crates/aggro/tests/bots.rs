//! `aggro arena swarm --script` against the reference servers of examples/bots: scripted bots that log in
//! over HTTP, join over Socket.IO or a plain WebSocket, play and are counted exactly; a killed server and a
//! script that raises are reported, never a panic; a bad script is exit 2 with its line.

use crate::util::{ok, path, result, run, stages, tempdir, through_a_restart};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn examples() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/bots").canonicalize().expect("examples/bots");
    if dir.join("node_modules/socket.io").exists() {
        return Some(dir);
    }
    test_support::missing("the reference bot servers (examples/bots)", "scripts/npm-example.sh install bots installs them")
}

/// `server` (a file of examples/bots) on a free loopback port, once it listens: the child and the port.
fn listening(dir: &std::path::Path, server: &str) -> (Child, u16) {
    listening_with(dir, server, &[])
}

/// The same, with more of its environment (`TLS_CERT`, `TLS_KEY`).
fn listening_with(dir: &std::path::Path, server: &str, env: &[(&str, &str)]) -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    serving(dir, server, env, port)
}

/// `server` on `port` (started again where it was), once it listens.
fn listening_on(dir: &std::path::Path, server: &str, port: u16) -> (Child, u16) {
    serving(dir, server, &[], port)
}

fn serving(dir: &std::path::Path, server: &str, env: &[(&str, &str)], port: u16) -> (Child, u16) {
    let child = Command::new("node")
        .arg(server)
        .current_dir(dir)
        .env("PORT", port.to_string())
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "{server} did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

/// `script` (Lua text) played by `ccu` bots for `duration` against the reference server `server`: the
/// swarm's output and its result file; None (a skip) when the servers are not installed.
fn played(server: &str, script: &str, ccu: &str, duration: &str) -> Option<(String, serde_json::Value)> {
    played_with(server, script, ccu, duration, &[])
}

/// [`played`], with more of the swarm's flags.
fn played_with(server: &str, script: &str, ccu: &str, duration: &str, flags: &[&str]) -> Option<(String, serde_json::Value)> {
    let dir = examples()?;
    let (mut child, port) = listening(&dir, server);
    let tmp = tempdir();
    let (out, file) = (path(tmp.path(), "result.json"), tmp.path().join("bot.lua"));
    std::fs::write(&file, script).unwrap();
    let url = format!("ws://127.0.0.1:{port}");
    let file = file.display().to_string();
    let mut args = vec!["arena", "swarm", "--script", &file, "--server", &url, "--ccu", ccu, "--duration", duration, "--out", &out];
    args.extend_from_slice(flags);
    let text = ok(&args);
    child.kill().unwrap();
    Some((text, result(std::path::Path::new(&out))))
}

fn op<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["totals"].as_array().unwrap().iter().find(|o| o["name"] == name).unwrap_or_else(|| panic!("no {name} operation"))
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn fifty_scripted_bots_log_in_join_play_and_are_counted_exactly() {
    fifty_bots("1");
}

/// Two swarm threads of 25 bots each, a Lua state each; the server seats bots in rooms of 10 as they
/// join, so rooms hold bots of both threads: a move sent on one is heard, timed and checked on the other.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn fifty_scripted_bots_on_two_threads_whose_rooms_span_them_are_counted_exactly() {
    let Some(r) = fifty_bots("2") else { return };
    assert_eq!(r["spec"]["threads"], 2);
}

/// Fifty bots of examples/bots/socketio-bot.lua on `threads` swarm threads, checked exactly; the result
/// (None: a skip, the servers not installed).
fn fifty_bots(threads: &str) -> Option<serde_json::Value> {
    let dir = examples()?;
    let (mut server, port) = listening(&dir, "socketio-server.mjs");
    let tmp = tempdir();
    let out = path(tmp.path(), "socketio.json");
    let script = dir.join("socketio-bot.lua").display().to_string();
    let server_url = format!("ws://127.0.0.1:{port}");
    let args = ["--ccu", "50", "--threads", threads, "--duration", "5s", "--interval", "1s", "--out", &out];
    let text = ok(&[&["arena", "swarm", "--script", &script, "--server", &server_url][..], &args].concat());
    server.kill().unwrap();
    let r = result(std::path::Path::new(&out));
    let sessions = op(&r, "session");
    assert_eq!(sessions["ok"], 50, "every bot joined once: {text}");
    assert_eq!(op(&r, "login")["latency"]["count"], 50, "every login timed: {text}");
    let c = &r["extra"]["arena_swarm"]["totals"]["counters"];
    assert_eq!((c["disconnects"].as_u64(), c["failed_joins"].as_u64(), c["script_errors"].as_u64()), (Some(0), Some(0), Some(0)), "{text}");
    assert_eq!(c["reliable_missing"], 0, "every move delivered: {text}");
    assert!(c["events_received"].as_u64().unwrap() > 50 * 9 * 20, "rooms of 10 hear each other's moves: {text}");
    assert!(op(&r, "round_trip")["latency"]["count"].as_u64().unwrap() >= 50, "the acked buys are timed: {text}");
    let counts = &r["extra"]["script"]["counts"];
    assert!(counts.as_array().unwrap().iter().any(|c| c[0] == "joined" && c[1] == 50), "{counts}");
    assert_eq!(c["reliable_disorder"], 0, "no move heard twice or out of order: {text}");
    assert!(text.contains("verdict: None"), "{text}");
    // The way in, timed from each bot's start: logged in, then connected, then joined, every bot once.
    let funnel = &r["extra"]["script"]["funnel"];
    assert_eq!(funnel["started"], 50, "{funnel}");
    assert_eq!(stages(funnel), [("logged_in", 50, 0), ("connected", 50, 0), ("joined", 50, 0)], "{text}");
    assert_eq!(op(&r, "stage:joined")["latency"]["count"], 50, "a stage is an operation too: {text}");
    assert!(text.contains("funnel, timed from each bot's intended start (50 bots started)"), "{text}");
    Some(r)
}

/// Most games name a message's sender by the player's name: delivery is checked from a text `from` as
/// exactly as from a number. And a bot refused at the door is quoted in the server's own words.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn senders_named_by_text_are_checked_and_refusals_quoted() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "socketio-server.mjs");
    let tmp = tempdir();
    let source = std::fs::read_to_string(dir.join("socketio-bot.lua")).unwrap();
    assert!(source.contains("from = bot.id"));
    let named = tmp.path().join("named.lua");
    std::fs::write(&named, source.replace("from = bot.id", "from = bot.name")).unwrap();
    let out = path(tmp.path(), "named.json");
    let server_url = format!("ws://127.0.0.1:{port}");
    let named = named.display().to_string();
    let text = ok(&["arena", "swarm", "--script", &named, "--server", &server_url, "--ccu", "20", "--duration", "4s", "--out", &out]);
    let c = &result(std::path::Path::new(&out))["extra"]["arena_swarm"]["totals"]["counters"];
    assert!(c["events_received"].as_u64().unwrap() > 20 * 9 * 10, "moves from named senders are checked: {text}");
    assert_eq!((c["reliable_missing"].as_u64(), c["reliable_disorder"].as_u64()), (Some(0), Some(0)), "{text}");
    // No login, no token: the server's middleware refuses every join with its own words.
    let rude = tmp.path().join("rude.lua");
    std::fs::write(&rude, "local ws, why = socketio.connect('/socket.io/', { namespace = '/game' })\nsleep(100000)\n").unwrap();
    let rude = rude.display().to_string();
    let output = run(
        &["arena", "swarm", "--script", &rude, "--server", &server_url, "--ccu", "5", "--duration", "2s", "--out", &path(tmp.path(), "rude.json")],
        Duration::from_secs(30),
    );
    server.kill().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(said.contains("unauthorized: log in first"), "{said}");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn bots_speak_a_plain_websocket_json_protocol_with_replies() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "websocket-server.mjs");
    let tmp = tempdir();
    let out = path(tmp.path(), "ws.json");
    let script = dir.join("websocket-bot.lua").display().to_string();
    let server_url = format!("ws://127.0.0.1:{port}");
    let text = ok(&["arena", "swarm", "--script", &script, "--server", &server_url, "--ccu", "20", "--duration", "3s", "--out", &out]);
    server.kill().unwrap();
    let r = result(std::path::Path::new(&out));
    assert_eq!(op(&r, "session")["ok"], 20, "{text}");
    assert!(op(&r, "ping")["latency"]["count"].as_u64().unwrap() >= 20, "{text}");
    let counts = &r["extra"]["script"]["counts"];
    assert!(counts.as_array().unwrap().iter().any(|c| c[0] == "welcome" && c[1] == 20), "each hello answered by its reply: {counts}");
}

/// A swarm that reads its open sockets only every 300 ms still times a reply at its arrival (the kernel's
/// stamp), not when it read it: `measure` ends at the answer's stamp. Its joins are not held back (a
/// connection on its way in is read at once).
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_swarm_that_reads_seldom_times_replies_at_their_arrival() {
    let script = r#"
local ws = assert(websocket.connect("/game", { format = "json", type = "type", reply = "id" }))
ws:call({ type = "hello", name = bot.name })
every(500, function() measure("ping", ws.call, ws, { type = "ping" }) end)
"#;
    let Some((text, r)) = played_with("websocket-server.mjs", script, "10", "4s", &["--read-every", "300ms"]) else { return };
    assert_eq!(r["spec"]["swarm"]["read_every"], 0.3, "{text}");
    let ping = &op(&r, "ping")["latency"];
    assert!(ping["count"].as_u64().unwrap() >= 40, "{text}");
    // Timed at the read, half of them would take 150 ms or more.
    assert!(ping["p50_ns"].as_u64().unwrap() < 50_000_000, "ping timed at the read, not the arrival: {ping}");
    // Each join step went on as its socket was ready: read 300 ms late, a connect would take that long.
    let connected = &op(&r, "stage:connected")["latency"];
    assert_eq!(connected["count"], 10, "{text}");
    assert!(connected["p99_ns"].as_u64().unwrap() < 100_000_000, "a join waited for the seldom reads: {connected}");
}

/// `--net 40ms±10ms`: every bot's requests and arrivals are held 30–50 ms each way, in their order — a
/// ping's round trip takes two of them, a move from one bot to another two (its sender's way out, its
/// receiver's way in) — and the run says how much it added. (Its delays sit near the default threshold of
/// 100 ms at p99, so the test gives its own.)
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn bots_behind_an_added_network_feel_its_delay_both_ways() {
    let Some(dir) = examples() else { return };
    let script = std::fs::read_to_string(dir.join("websocket-bot.lua")).unwrap();
    let flags = ["--net", "40ms±10ms", "--slo", "p99<=1s"];
    let Some((text, r)) = played_with("websocket-server.mjs", &script, "10", "4s", &flags) else { return };
    let ping = &op(&r, "ping")["latency"];
    assert!(ping["count"].as_u64().unwrap() >= 20, "{text}");
    assert!((60_000_000..150_000_000).contains(&ping["p50_ns"].as_u64().unwrap()), "a ping crosses the network twice: {ping}");
    let t = &r["extra"]["arena_swarm"]["totals"];
    let (c, delay) = (&t["counters"], &t["delay"]);
    assert_eq!(c["reliable_missing"], 0, "{text}");
    assert_eq!(c["reliable_disorder"], 0, "held in order: {text}");
    assert!(delay["p50_ns"].as_u64().unwrap() >= 60_000_000, "a move crosses two bots' networks: {delay}");
    assert!(c["net_held"].as_u64().unwrap() > 100, "{text}");
    assert_eq!(c["net_retransmitted"], 0, "{text}");
    let mean = c["net_added_us"].as_f64().unwrap() / c["net_held"].as_f64().unwrap();
    assert!((30_000.0..=50_500.0).contains(&mean), "mean added {mean} µs for 40ms±10ms");
    assert!(text.contains("--net held"), "{text}");
}

/// `--net` is for bots on TCP: a UDP swarm given one is refused as bad input, and so is a malformed one.
#[test]
fn a_network_for_the_udp_swarm_or_a_malformed_one_is_bad_input() {
    let relay = crate::util::run(
        &["arena", "swarm", "--mode", "relay", "--server", "127.0.0.1:9", "--ccu", "2", "--duration", "1s", "--net", "40ms"],
        Duration::from_secs(30),
    );
    assert_eq!(relay.status.code(), Some(2), "{}", String::from_utf8_lossy(&relay.stderr));
    assert!(String::from_utf8_lossy(&relay.stderr).contains("--net is for bots on TCP"));
    let bad =
        crate::util::run(&["arena", "swarm", "--script", "x.lua", "--server", "ws://127.0.0.1:9", "--net", "80ms±90ms"], Duration::from_secs(30));
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("the jitter is not above the delay"), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// The matchmaking queue of the reference Socket.IO game (`MATCH_RATE`): every bot's way in — logged in,
/// connected, queued, matched, the match's first state — is in the funnel once, and the matches the bots
/// count are the server's own count.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_matchmaking_queues_funnel_agrees_with_the_servers_count_of_matches() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening_with(&dir, "socketio-server.mjs", &[("MATCH_RATE", "20"), ("ROOM_SIZE", "4")]);
    let tmp = tempdir();
    let (script, url, out) = (dir.join("socketio-queue.lua").display().to_string(), format!("ws://127.0.0.1:{port}"), path(tmp.path(), "queue.json"));
    let text = ok(&["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "40", "--duration", "4s", "--out", &out]);
    let stats = server_stats(port);
    server.kill().unwrap();
    let r = result(std::path::Path::new(&out));
    let ways: Vec<(&str, u64, u64)> = stages(&r["extra"]["script"]["funnel"]);
    assert_eq!(ways, [("logged_in", 40, 0), ("connected", 40, 0), ("queued", 40, 0), ("matched", 40, 0), ("first_state", 40, 0)], "{text}");
    assert_eq!((stats["queued"].as_u64(), stats["matches"].as_u64()), (Some(40), Some(10)), "rooms of 4: {stats}");
    let counts = &r["extra"]["script"]["counts"];
    assert!(counts.as_array().unwrap().iter().any(|c| c[0] == "matched" && c[1] == 40), "{counts}");
    // Every move the server broadcast was heard, but for those in flight as the run ended: at most one
    // per bot, to its 3 room-mates (CI once saw 4,378 of 4,380 heard).
    let received = r["extra"]["arena_swarm"]["totals"]["counters"]["events_received"].as_u64().unwrap();
    let broadcast = stats["broadcasts"].as_u64().unwrap();
    assert!(received <= broadcast && broadcast - received <= 40 * 3, "heard {received} of {broadcast} broadcast moves: {text}");
}

/// A storm through a login and a queue: the server restarted while every player is matched; each logs in,
/// queues and is matched again. Its logins refused while the server was away are the storm's attempts,
/// not failed requests: every player is back and the run is served (exit 0).
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn players_logging_in_again_through_a_storm_are_its_attempts_not_failed_requests() {
    let Some(dir) = examples() else { return };
    let env = [("MATCH_RATE", "20"), ("ROOM_SIZE", "2")];
    let (server, port) = listening_with(&dir, "socketio-server.mjs", &env);
    let tmp = tempdir();
    let (script, url, out) = (dir.join("socketio-queue.lua").display().to_string(), format!("ws://127.0.0.1:{port}"), path(tmp.path(), "storm.json"));
    let args = ["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "10", "--duration", "6s", "--reconnect", "100ms..1s"];
    let args = [&args[..], &["--slo", "disconnects<=100%", "--out", &out]].concat();
    let (code, text) = through_a_restart(&args, server, || serving(&dir, "socketio-server.mjs", &env, port).0);
    assert_eq!(code, Some(0), "{text}");
    let r = result(std::path::Path::new(&out));
    let storm = &r["extra"]["script"]["storm"];
    assert_eq!((storm["back"].as_u64(), storm["out_at_end"].as_u64()), (Some(10), Some(0)), "{text}");
    assert!(storm["attempts"].as_u64().unwrap() > 10, "some logins were refused while the server was away: {storm}");
    assert_eq!((op(&r, "http")["errors"].as_u64(), op(&r, "login")["errors"].as_u64()), (Some(0), Some(0)), "{text}");
}

/// The reference Socket.IO game's own counts (`GET /stats`).
fn server_stats(port: u16) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"GET /stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("/stats: {e}: {answer}"))
}

/// `--slo` on the stages: a threshold met passes, a stage no bot reached breaks its own — the run is a
/// service failure (exit 3), its result written, each threshold printed with what was measured, and the
/// bots that never got there counted as short of it.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_stage_no_bot_reached_breaks_its_threshold_and_its_bots_are_short_of_it() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "websocket-server.mjs");
    let tmp = tempdir();
    let source = std::fs::read_to_string(dir.join("websocket-bot.lua")).unwrap();
    // The server never sends "matched": every bot waits for it.
    let script = tmp.path().join("funnel.lua");
    std::fs::write(&script, format!("{source}\nws:on(\"matched\", function() stage(\"matched\") end)\nstage(\"welcomed\")\n")).unwrap();
    let out = path(tmp.path(), "funnel.json");
    let (script, url) = (script.display().to_string(), format!("ws://127.0.0.1:{port}"));
    let slo = "stage:welcomed p99<30s,stage:matched:rate>=1/s";
    let done = run(
        &["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "10", "--duration", "2s", "--slo", slo, "--out", &out],
        Duration::from_secs(60),
    );
    server.kill().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
    assert_eq!(done.status.code(), Some(3), "{text}");
    assert!(text.contains("pass stage:welcomed p99<30s"), "{text}");
    assert!(text.contains("FAIL stage:matched:rate>=1/s: no bot got there"), "{text}");
    let r = result(std::path::Path::new(&out));
    assert_eq!(r["extra"]["arena_swarm"]["verdict"]["limit"], "service", "{text}");
    assert_eq!(stages(&r["extra"]["script"]["funnel"]), [("connected", 10, 0), ("welcomed", 10, 0), ("matched", 0, 10)], "{text}");
    assert!(text.contains("matched: 0 (0.0 %)") && text.contains("10 short of it at the end"), "{text}");
}

/// `--server-pid` watches the server's memory, open files and threads each interval; a server that
/// leaks (the reference server with 10 MB a second held on purpose) is a `Leak` verdict, exit 3, its
/// growth per hour given with its fit; the same server without the leak is not.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_server_whose_memory_climbs_through_the_soak_is_a_leak() {
    let Some(dir) = examples() else { return };
    let leak = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/leak.cjs");
    let soak = |env: &[(&str, &str)]| {
        let (mut server, port) = listening_with(&dir, "websocket-server.mjs", env);
        let tmp = tempdir();
        let (script, url, out) =
            (dir.join("websocket-bot.lua").display().to_string(), format!("ws://127.0.0.1:{port}"), path(tmp.path(), "soak.json"));
        let pid = server.id().to_string();
        let args = ["--ccu", "10", "--connect-rate", "1000", "--duration", "6s", "--interval", "250ms", "--leak-window", "3s"];
        let base = ["arena", "swarm", "--script", &script, "--server", &url, "--server-pid", &pid, "--out", &out];
        let done = run(&[&base[..], &args].concat(), Duration::from_secs(60));
        server.kill().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
        (done.status.code(), text, result(std::path::Path::new(&out)))
    };
    let (code, text, r) = soak(&[("NODE_OPTIONS", &format!("--require {}", leak.display()))]);
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(r["extra"]["arena_swarm"]["verdict"]["limit"], "leak", "{text}");
    assert!(text.contains("the server leaks: server RSS:") && text.contains("climbing steadily: a leak"), "{text}");
    let rss = r["extra"]["soak"]["watched"].as_array().unwrap().iter().find(|w| w["resource"] == "server RSS").unwrap().clone();
    assert!(rss["trend"]["per_hour"].as_f64().unwrap() > 10e9, "≈ 36 GB an hour: {rss}");
    let sampled = r["intervals"].as_array().unwrap().iter().filter(|i| i["server"]["threads"].as_u64().is_some_and(|t| t > 0)).count();
    assert!(sampled >= 20, "the server read at each interval's close: {sampled}");
    let (code, text, r) = soak(&[]);
    assert_eq!(code, Some(0), "{text}");
    // aggro's own memory still settles in a run this short: only the server's trends are judged here.
    assert!(r["extra"]["soak"]["watched"].as_array().unwrap().iter().all(|w| w["leak"] == false || w["server"] == false), "{text}");
    assert!(text.contains("server RSS:") && text.contains("aggro's own RSS:"), "the trends are printed: {text}");
}

/// A reconnect storm: the server killed mid-run and started again on its port; with `--reconnect` each
/// player comes back (its script again, the same bot: its stages reached once) after a jittered backoff,
/// timed from losing its server, and none is left out of play. Without it, the players the server lost
/// stay lost — and the run says so.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn players_who_lose_their_server_come_back_and_the_storm_is_measured() {
    let Some(dir) = examples() else { return };
    // The restart disconnects every player on purpose: `slo` is judged beside disconnects<=100%.
    let storm = |reconnect: &[&str], slo: &str| {
        let (server, port) = listening(&dir, "websocket-server.mjs");
        let slo = format!("disconnects<=100%{slo}");
        let tmp = tempdir();
        let (script, url, out) =
            (dir.join("websocket-bot.lua").display().to_string(), format!("ws://127.0.0.1:{port}"), path(tmp.path(), "storm.json"));
        let args =
            ["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "10", "--connect-rate", "1000", "--duration", "6s", "--slo", &slo];
        // The server dies 2 s in, and is back on its port half a second later.
        let (code, text) =
            through_a_restart(&[&args[..], reconnect, &["--out", &out]].concat(), server, || listening_on(&dir, "websocket-server.mjs", port).0);
        (code, text, result(std::path::Path::new(&out)))
    };
    let (code, text, r) = storm(&["--reconnect", "100ms..1s"], ",reconnect:p99<30s");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("pass reconnect:p99<30s"), "a threshold on the way back: {text}");
    let s = &r["extra"]["script"]["storm"];
    assert_eq!((s["back"].as_u64(), s["out_at_end"].as_u64()), (Some(10), Some(0)), "every player came back: {text}");
    assert!(s["attempts"].as_u64().unwrap() >= 10 && s["p99_ms"].as_f64().unwrap() >= 400.0, "the server was away half a second: {s}");
    assert_eq!(r["extra"]["script"]["funnel"]["stages"][0]["reached"], 10, "the same players, not newcomers: {text}");
    assert!(text.contains("reconnects: 10 players came back after losing their server"), "{text}");
    let (code, text, r) = storm(&[], "");
    assert_eq!(code, Some(0), "{text}");
    assert!(r["extra"]["script"]["storm"].is_null(), "without --reconnect no one comes back: {text}");
}

/// `--live` on a scripted swarm: while it plays, the page's record has the funnel so far.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn the_live_view_shows_the_funnel_while_the_bots_play() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "websocket-server.mjs");
    let tmp = tempdir();
    let (script, url, out) = (dir.join("websocket-bot.lua").display().to_string(), format!("ws://127.0.0.1:{port}"), path(tmp.path(), "live.json"));
    let args = ["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "5", "--duration", "4s", "--interval", "500ms", "--out", &out];
    let (mut child, so_far) = crate::util::live_record_after(&args, Duration::from_millis(2000));
    assert!(child.wait().unwrap().success());
    server.kill().unwrap();
    let funnel = &so_far["extra"]["script"]["funnel"];
    assert_eq!((funnel["started"].as_u64(), funnel["stages"][0]["name"].as_str()), (Some(5), Some("connected")), "{funnel}");
    assert_eq!(funnel["stages"][0]["reached"], 5, "{funnel}");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn scripted_shards_started_together_merge_into_the_whole_run() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "websocket-server.mjs");
    let tmp = tempdir();
    let script = dir.join("websocket-bot.lua").display().to_string();
    let server_url = format!("ws://127.0.0.1:{port}");
    // Both shards start in the same second on the same host: only their worker numbers tell them apart.
    let shards: Vec<_> = ["1/2", "2/2"]
        .iter()
        .map(|w| {
            let out = path(tmp.path(), &format!("shard-{}.json", &w[..1]));
            let args: Vec<String> = [
                "arena",
                "swarm",
                "--script",
                &script,
                "--server",
                &server_url,
                "--ccu",
                "20",
                "--duration",
                "3s",
                "--seed",
                "5",
                "--worker",
                w,
                "--out",
                &out,
            ]
            .map(String::from)
            .to_vec();
            (out, std::thread::spawn(move || run(&args.iter().map(String::as_str).collect::<Vec<_>>(), Duration::from_secs(60))))
        })
        .collect();
    let outs: Vec<String> = shards
        .into_iter()
        .map(|(out, t)| {
            let done = t.join().unwrap();
            assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
            out
        })
        .collect();
    server.kill().unwrap();
    let merged = path(tmp.path(), "merged.json");
    let printed = ok(&["merge", &outs[0], &outs[1], "--out", &merged]);
    let r = result(std::path::Path::new(&merged));
    assert_eq!(op(&r, "session")["ok"], 20, "each shard's 10 bots joined");
    assert!(op(&r, "ping")["latency"]["count"].as_u64().unwrap() >= 40, "both shards' pings");
    // The script's figures are the whole run's: the funnel's bots and counts the shards' summed, its
    // times those of the merged histogram.
    let shards: Vec<serde_json::Value> = outs.iter().map(|o| result(std::path::Path::new(o))).collect();
    let funnel = &r["extra"]["script"]["funnel"];
    assert_eq!((funnel["started"].as_u64(), funnel["stages"][0]["name"].as_str()), (Some(20), Some("connected")), "{funnel}");
    assert_eq!(funnel["stages"][0]["reached"], 20, "{funnel}");
    let p99 = |x: &serde_json::Value| x["stages"][0]["p99_ms"].as_f64().unwrap();
    let (lo, hi) = shards.iter().map(|s| p99(&s["extra"]["script"]["funnel"])).fold((f64::MAX, 0.0f64), |(lo, hi), p| (lo.min(p), hi.max(p)));
    assert!(p99(funnel) >= lo && p99(funnel) <= hi, "the merged p99 lies between the shards': {funnel}");
    let welcomed =
        |x: &serde_json::Value| x["extra"]["script"]["counts"].as_array().unwrap().iter().find(|c| c[0] == "welcome").unwrap()[1].as_u64().unwrap();
    assert_eq!(welcomed(&r), shards.iter().map(welcomed).sum::<u64>(), "{}", r["extra"]["script"]);
    assert!(printed.contains("funnel, timed from each bot's intended start (20 bots started):"), "{printed}");
    assert_eq!(shards[0]["extra"]["arena_swarm"]["intervals"][0]["reconnect_attempts"], 0, "each interval's attempts to come back are written");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn bots_speak_the_same_protocol_in_messagepack() {
    let script = r#"local ws = assert(websocket.connect("/game?format=msgpack", { format = "msgpack" }))
local welcome = ws:call({ type = "hello", name = bot.name })
count(welcome.type)
if welcome.token == "\0\159\146" then count("raw bytes") end
local seq = 0
every(100, function()
  seq = seq + 1
  ws:send({ type = "move", from = bot.id, seq = seq, t = now() })
end)
every(500, function() measure("ping", ws.call, ws, { type = "ping" }) end)
"#;
    let Some((text, r)) = played("websocket-server.mjs", script, "20", "3s") else { return };
    assert_eq!(op(&r, "session")["ok"], 20, "{text}");
    assert!(op(&r, "ping")["latency"]["count"].as_u64().unwrap() >= 20, "each ping's reply found by its id: {text}");
    let counts = &r["extra"]["script"]["counts"];
    for (name, n) in [("welcome", 20), ("raw bytes", 20)] {
        assert!(counts.as_array().unwrap().iter().any(|c| c[0] == name && c[1] == n), "{name}: {counts}");
    }
    let c = &r["extra"]["arena_swarm"]["totals"]["counters"];
    assert_eq!((c["decode_errors"].as_u64(), c["reliable_missing"].as_u64(), c["script_errors"].as_u64()), (Some(0), Some(0), Some(0)), "{text}");
    assert!(c["events_received"].as_u64().unwrap() > 20 * 9 * 10, "packed moves delivery-checked: {text}");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn binary_attachments_go_up_and_come_back_over_socketio() {
    let script = r#"local r = http.post("/login", { user = bot.name })
local ws = assert(socketio.connect("/socket.io/", { namespace = "/game", auth = { token = r.json.token } }))
local bytes = "\0\1\2\255" .. string.rep("z", bot.index)
local reply = ws:call("upload", { name = "avatar.png", data = binary(bytes) })
if reply.bytes == #bytes and reply.echo == bytes and reply.name == "avatar.png" then count("uploaded") else print(json.encode(reply)) end
"#;
    let Some((text, r)) = played("socketio-server.mjs", script, "10", "2s") else { return };
    let counts = &r["extra"]["script"]["counts"];
    assert!(
        counts.as_array().unwrap().iter().any(|c| c[0] == "uploaded" && c[1].as_u64() >= Some(10)),
        "every bot's bytes went up as an attachment and came back in the ack: {counts} {text}"
    );
    assert!(op(&r, "round_trip")["latency"]["count"].as_u64().unwrap() >= 10, "{text}");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_script_that_raises_and_a_killed_server_are_reported_not_a_panic() {
    let Some(dir) = examples() else { return };
    let (mut server, port) = listening(&dir, "socketio-server.mjs");
    let tmp = tempdir();
    let script = tmp.path().join("raising.lua");
    std::fs::write(
        &script,
        "local r = http.post('/login', { user = bot.name })\nlocal ws = assert(socketio.connect('/', { namespace = '/game', auth = { token = r.json.token } }))\n\
         if bot.index % 2 == 0 then error('boom') end\nevery(100, function() ws:emit('move', { x = 1 }) end)\n",
    )
    .unwrap();
    let out = path(tmp.path(), "raising.json");
    let (script, url, pid) = (script.display().to_string(), format!("ws://127.0.0.1:{port}"), server.id().to_string());
    let swarm = std::thread::spawn({
        let out = out.clone();
        move || {
            run(
                &["arena", "swarm", "--script", &script, "--server", &url, "--server-pid", &pid, "--ccu", "10", "--duration", "5s", "--out", &out],
                Duration::from_secs(60),
            )
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    server.kill().unwrap();
    server.wait().unwrap();
    let output = swarm.join().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!text.contains("panicked"), "{text}");
    assert_eq!(output.status.code(), Some(1), "the server is gone: exit 1\n{text}");
    assert!(text.contains("stopped by a script error") && text.contains("raising.lua:3: boom"), "the error and its line: {text}");
    let r = result(std::path::Path::new(&out));
    assert!(r["extra"]["script"]["error_count"].as_u64().unwrap() >= 5, "half the bots raised: {text}");
    assert!(r["extra"]["arena_swarm"]["totals"]["counters"]["disconnects"].as_u64().unwrap() >= 5, "the killed server's players: {text}");
}

#[test]
fn a_bad_script_is_one_line_with_its_line_number_and_exit_2() {
    let tmp = tempdir();
    let script = tmp.path().join("bad.lua");
    std::fs::write(&script, "local x = 1\nlocal y = = 2\n").unwrap();
    let out = run(
        &["arena", "swarm", "--script", &script.display().to_string(), "--server", "ws://127.0.0.1:9", "--duration", "1s"],
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.lua:2: unexpected symbol near '='"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_scripted_sweep_of_your_server_feeds_the_planner() {
    let Some(dir) = examples() else { return };
    let tmp = tempdir();
    let out = path(tmp.path(), "sweep.json");
    let script = dir.join("socketio-bot.lua").display().to_string();
    let cmd = format!("node {}/socketio-server.mjs", dir.display());
    let port = crate::util::free_port();
    let args = ["--players", "10,20", "--warmup", "2s", "--duration", "2s", "--port", &port, "--out", &out];
    let text = ok(&[&["arena", "bench", "--script", &script, "--server-cmd", &cmd][..], &args[..]].concat());
    assert!(text.contains("| 10 | 10 |") && text.contains("| 20 | 20 |"), "every bot joined: {text}");
    let r = result(std::path::Path::new(&out));
    assert_eq!(r["spec"]["mode"], "script", "{text}");
    let plan = ok(&["plan", "--from", &out, "--cores", "8", "--price-per-hour", "0.40", "--price-per-gb", "0.05"]);
    assert!(plan.contains("fitted on 2 runs") && plan.contains("prediction:"), "{plan}");
    assert!(plan.contains("kbit/s of traffic") && plan.contains("the machine: $") && plan.contains("in all: $"), "a player's cost: {plan}");
}

/// `arena bench --restart-at`: the bench kills the server mid-run and starts it again on its port; the
/// scripted players come back, and the row says how long they took and that none was left out.
#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn a_bench_restarts_the_server_and_the_players_come_back() {
    let Some(dir) = examples() else { return };
    let tmp = tempdir();
    let out = path(tmp.path(), "storm.json");
    let (script, cmd) = (dir.join("websocket-bot.lua").display().to_string(), format!("node {}/websocket-server.mjs", dir.display()));
    let port = crate::util::free_port();
    let args = ["--players", "10", "--warmup", "1s", "--duration", "4s", "--restart-at", "2s", "--port", &port, "--out", &out];
    let text = ok(&[&["arena", "bench", "--script", &script, "--server-cmd", &cmd][..], &args[..]].concat());
    assert!(text.contains("10 CCU, the server restarted: reconnects: 10 players came back"), "{text}");
    let storm = &result(std::path::Path::new(&out))["extra"]["colyseus_bench"]["rows"][0]["storm"];
    assert_eq!((storm["back"].as_u64(), storm["out_at_end"].as_u64()), (Some(10), Some(0)), "{text}");
    let refused =
        run(&["arena", "bench", "--server-cmd", &cmd, "--script", &script, "--restart-at", "9s", "--duration", "4s"], Duration::from_secs(30));
    assert_eq!(refused.status.code(), Some(2), "a restart after the run's end is refused");
}

/// An HTTP request that gets no answer is a failure of `http`, by class, printed and in the result file
/// — not a success; so is a `measure`d call that failed (`nil, why`, `false`, an HTTP answer ≥ 400).
#[test]
fn refused_http_requests_are_failures_of_their_operation() {
    let tmp = tempdir();
    let script = tmp.path().join("login.lua");
    let lua = "local r = http.post('/login', { name = bot.name })\nif not r then count('no login') end\n\
               measure('login', http.post, '/login', { name = bot.name })\n\
               measure('check', function() return nil, 'wrong password' end)\n\
               measure('denied', function() return { status = 403 } end)\n\
               measure('think', function() sleep(1) end)\n\
               sleep(100000)\n";
    std::fs::write(&script, lua).unwrap();
    let out = path(tmp.path(), "login.json");
    let script = script.display().to_string();
    let output = run(
        &["arena", "swarm", "--script", &script, "--server", "ws://127.0.0.1:9", "--ccu", "5", "--duration", "2s", "--out", &out],
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("measured http: 0 times") && stdout.contains("failed 10 (connect 10)"), "{stdout}");
    let r = result(std::path::Path::new(&out));
    let http = op(&r, "http");
    assert_eq!((http["ok"].as_u64(), http["errors"].as_u64(), http["failures"]["connect"].as_u64()), (Some(0), Some(10), Some(10)));
    for (name, class) in [("login", "connect"), ("check", "other"), ("denied", "protocol")] {
        let m = op(&r, name);
        assert_eq!((m["ok"].as_u64(), m["errors"].as_u64(), m["failures"][class].as_u64()), (Some(0), Some(5), Some(5)), "{name}: {m}");
    }
    assert_eq!((op(&r, "think")["ok"].as_u64(), op(&r, "think")["errors"].as_u64()), (Some(5), Some(0)), "a call returning nothing succeeded");
    assert!(stdout.contains("check failed: wrong password"), "the reason is quoted: {stdout}");
}

/// A callback that never waits is stopped by the script budget, bot after bot, and the run still ends on
/// SIGTERM within a second with its result file.
#[test]
fn a_script_that_never_waits_is_stopped_by_its_budget_and_sigterm_still_ends_the_run() {
    let tmp = tempdir();
    let script = tmp.path().join("runaway.lua");
    std::fs::write(&script, "every(100, function()\n  while true do end\nend)\n").unwrap();
    let out = path(tmp.path(), "runaway.json");
    let script = script.display().to_string();
    let args = ["arena", "swarm", "--script", &script, "--server", "ws://127.0.0.1:9", "--ccu", "20", "--duration", "60s", "--out", &out];
    let mut child = crate::util::aggro().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signals the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let sent = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && sent.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = sent.elapsed();
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(took < Duration::from_secs(1), "ended {took:?} after SIGTERM");
    assert!(stderr.contains("runaway.lua:2: ran 50 ms of CPU without waiting (--script-budget)"), "{stderr}");
    assert_eq!(result(std::path::Path::new(&out))["stop_reason"]["kind"], "interrupted");
}

#[test]
fn a_script_that_stops_every_bot_before_it_joins_is_bad_input_not_a_server_gone() {
    let tmp = tempdir();
    let script = tmp.path().join("broken.lua");
    std::fs::write(&script, "local n = nil\nlocal x = n.field\n").unwrap();
    let out = path(tmp.path(), "broken.json");
    let output = run(
        &[
            "arena",
            "swarm",
            "--script",
            &script.display().to_string(),
            "--server",
            "ws://127.0.0.1:9",
            "--ccu",
            "5",
            "--duration",
            "2s",
            "--out",
            &out,
        ],
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the script stopped them") && stderr.contains("broken.lua:2:"), "{stderr}");
    assert!(std::path::Path::new(&out).exists(), "the result file is still written");
}

#[test]
#[ignore = "needs the reference bot servers: bash scripts/test.sh services runs it"]
fn bots_play_over_tls_with_a_certificate_of_the_servers_own() {
    let Some(dir) = examples() else { return };
    let tmp = tempdir();
    // A CA of the team's own, and the server's certificate for localhost signed by it.
    let at = |name: &str| path(tmp.path(), name);
    let (ca, cert, key) = (at("ca.pem"), at("cert.pem"), at("key.pem"));
    std::fs::write(at("leaf.ext"), "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n").unwrap();
    for args in [
        vec!["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=aggro test CA", "-keyout", &at("ca.key"), "-out", &ca],
        vec!["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", &key, "-out", &at("leaf.csr")],
        vec![
            "x509",
            "-req",
            "-in",
            &at("leaf.csr"),
            "-CA",
            &ca,
            "-CAkey",
            &at("ca.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &at("leaf.ext"),
            "-out",
            &cert,
        ],
    ] {
        let made = Command::new("openssl").args(&args).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("openssl runs");
        assert!(made.success(), "openssl {args:?}");
    }
    let (mut server, port) = listening_with(&dir, "socketio-server.mjs", &[("TLS_CERT", &cert), ("TLS_KEY", &key)]);
    let out = path(tmp.path(), "tls.json");
    let script = dir.join("socketio-bot.lua").display().to_string();
    let url = format!("wss://localhost:{port}");
    let text = ok(&["arena", "swarm", "--script", &script, "--server", &url, "--ca-file", &ca, "--ccu", "10", "--duration", "3s", "--out", &out]);
    let r = result(std::path::Path::new(&out));
    assert_eq!(op(&r, "session")["ok"], 10, "every bot logged in over https and joined over wss: {text}");
    assert_eq!(r["extra"]["arena_swarm"]["totals"]["counters"]["reliable_missing"], 0, "{text}");
    // Without the server's certificate trusted, no bot gets in, and the verdict says why.
    let refused = run(
        &["arena", "swarm", "--script", &script, "--server", &url, "--ccu", "2", "--duration", "2s", "--out", &path(tmp.path(), "x.json")],
        Duration::from_secs(30),
    );
    let said = format!("{}{}", String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert_ne!(refused.status.code(), Some(0), "{said}");
    assert!(said.to_lowercase().contains("certificate"), "the certificate is named: {said}");
    server.kill().unwrap();
}

/// `--script-budget` in its valid form: a bot whose call runs past it is stopped where its script stood,
/// and the swarm goes on (its other bots' callbacks, the run's end). No server: the bots only tick.
#[test]
fn a_script_past_its_budget_is_stopped_where_it_stood() {
    let tmp = tempdir();
    let script = tmp.path().join("spin.lua");
    std::fs::write(&script, "every(100, function() count('tick') end)\nif bot.index == 0 then\n  while true do end\nend\n").unwrap();
    let (script, out) = (script.display().to_string(), path(tmp.path(), "spin.json"));
    let args = ["arena", "swarm", "--script", &script, "--server", "ws://127.0.0.1:9", "--ccu", "4", "--script-budget", "20ms"];
    let o = run(&[&args[..], &["--duration", "2s", "--interval", "1s", "--out", &out]].concat(), Duration::from_secs(30));
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    // No bot joined (none tried; no server listens): the script's errors are the verdict's reason, exit 2.
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("spin.lua:3: ran 20 ms of CPU without waiting (--script-budget): stopped"), "{text}");
    let r = result(std::path::Path::new(&out));
    // The spinning slot's bot, and each newcomer in its place; the other three ticked on.
    assert!(r["extra"]["script"]["error_count"].as_u64().unwrap() >= 1, "{text}");
    assert!(text.contains("bot1: runtime error") && !text.contains("bot2: runtime error") && text.contains("counted: tick"), "{text}");
}
