//! `aggro arena`: the bench end to end (server and swarm as processes on loopback), and bad input.

use crate::util::{ok, path, result, run, stages, tempdir};
use std::time::Duration;

#[test]
fn the_arena_bench_runs_server_and_swarm_processes_and_writes_one_table_and_result() {
    let dir = tempdir();
    let out = path(dir.path(), "bench.json");
    let port = crate::util::free_port();
    // Two rounds: base, send-flush, base, send-flush; each row merges its variant's two runs.
    let text = ok(&[
        "arena",
        "bench",
        "--players",
        "20",
        "--tick",
        "30",
        "--duration",
        "3s",
        "--warmup",
        "2s",
        "--compare",
        "send-flush",
        "--rounds",
        "2",
        "--port",
        &port,
        "--out",
        &out,
    ]);
    assert!(text.contains("| 20 | base |") && text.contains("| 20 | send-flush |"), "{text}");
    let r = result(std::path::Path::new(&out));
    let rows = r["extra"]["arena_bench"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert!(row["tick_hz"].as_f64().unwrap() > 25.0, "{row}");
        assert!(row["frame"]["p99_ns"].as_u64().unwrap() > 0, "{row}");
        assert!(row["gunfire_delay"]["count"].as_u64().unwrap() > 0, "the bots fought: {row}");
        // One run's 3 s window holds at most 3 whole 1 s intervals (90 frames at 30 Hz), two at least 4
        // (over 100 frames at the 25 Hz a loaded machine still holds).
        assert!(row["frame"]["count"].as_u64().unwrap() > 90, "both rounds' frames: {row}");
    }
    assert_eq!(r["spec"]["rounds"], 2);
    assert_eq!(r["operations"][0], "frame/20/base");
}

#[test]
fn the_server_takes_every_documented_game_option() {
    // `--interleave` once panicked in the argument parser (exit 101) while only its bad form was tested.
    let dir = tempdir();
    let result = dir.path().join("serve.json");
    let args = ["--interleave", "70m:1,400m:2", "--send-flush", "--interest", "1000m", "--duration", "1s", "--out", result.to_str().unwrap()];
    let out = run(&[&["arena", "serve", "--listen", "127.0.0.1:0"][..], &args].concat(), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(result.exists());
}

/// The bench's interleave variant runs the server with the `--tiers` asked for.
#[test]
fn the_interleave_variant_takes_its_tiers() {
    let dir = tempdir();
    let out = path(dir.path(), "tiers.json");
    let port = crate::util::free_port();
    let args = ["arena", "bench", "--players", "10", "--compare", "interleave", "--tiers", "50m:1,300m:3", "--duration", "1s", "--warmup", "1s"];
    let text = ok(&[&args[..], &["--port", &port, "--out", &out]].concat());
    assert!(text.contains("| 10 | interleave |"), "{text}");
    assert_eq!(result(std::path::Path::new(&out))["spec"]["tiers"], "50m:1,300m:3");
}

#[test]
fn arena_bad_input_is_one_line_and_exit_code_2() {
    // The help names the flags as the docs do.
    let help = ok(&["arena", "swarm", "--help"]);
    assert!(help.contains("--ccu") && help.contains("--mode") && !help.contains("--bots <") && !help.contains("--behaviour <"), "{help}");
    for args in [
        &["arena", "serve", "--interleave", "70m", "--duration", "1s"][..],
        &["arena", "serve", "--interest", "far", "--duration", "1s"],
        &["arena", "serve", "--listen", "nowhere", "--duration", "1s"],
        &["arena", "swarm", "--server", "127.0.0.1:9", "--duration", "soon"],
        &["arena", "bench", "--compare", "faster"],
        &["arena", "bench", "--players", "0"],
        &["arena", "bench", "--mode", "relay", "--players", "2", "--room-size", "4"],
        &["arena", "bench", "--mode", "relay", "--players", "8", "--restart-at", "2s"],
        &["arena", "swarm", "--behaviour", "relay", "--worker", "3/2", "--duration", "1s"],
        &["arena", "swarm", "--behaviour", "relay", "--uplink", "fast", "--duration", "1s"],
        // Battle-royale bots that lose their server are replaced, not brought back.
        &["arena", "swarm", "--server", "127.0.0.1:9", "--reconnect", "100ms..1s", "--duration", "1s"],
        // The battle-royale bots mark no stages: a threshold on one could never be judged.
        &["arena", "swarm", "--server", "127.0.0.1:9", "--slo", "stage:matched p99<1s", "--duration", "1s"],
        &["arena", "serve", "--metrics", "nowhere", "--duration", "1s"],
        &["plan", "--uplink", "100"],
        &["plan", "--from", "/nonexistent/sweep.json"],
    ] {
        let out = run(args, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_relay_sweep_feeds_the_planner_and_the_arithmetic_matches_the_guide() {
    let dir = tempdir();
    let out = path(dir.path(), "relay.json");
    let port = crate::util::free_port();
    let text = ok(&[
        "arena",
        "bench",
        "--mode",
        "relay",
        "--players",
        "40,80",
        "--duration",
        "2s",
        "--warmup",
        "1s",
        "--reliable",
        "--port",
        &port,
        "--out",
        &out,
    ]);
    assert!(text.contains("| 40 |") && text.contains("| 80 |") && text.contains("no limit reached"), "{text}");
    let r = result(std::path::Path::new(&out));
    let rows = r["extra"]["relay_bench"]["rows"].as_array().expect("rows");
    for row in rows {
        let per_room = (row["events_in_per_room_s"].as_f64().unwrap(), row["events_out_per_room_s"].as_f64().unwrap());
        assert!((per_room.0 - 40.0).abs() < 2.0 && (per_room.1 - 160.0).abs() < 8.0, "the guide's 40 in, 160 out per room: {row}");
        assert_eq!((row["reliable_missing"].as_f64(), row["reliable_disorder"].as_f64()), (Some(0.0), Some(0.0)), "{row}");
        assert_eq!(row["verdict"]["limit"], "none", "{row}");
    }
    let plan = ok(&["plan", "--from", &out, "--cores", "4", "--nic", "1gbit", "--ccu", "3000"]);
    assert!(plan.contains("fitted on 2 runs") && plan.contains("prediction:") && plan.contains("CCU per server, bound by"), "{plan}");
    // Less headroom, fewer CCU the cores allow.
    let allowed = |text: &str| -> f64 {
        let line = text.lines().find(|l| l.contains("core(s) at ≤")).unwrap_or_else(|| panic!("{text}"));
        line.split(" allows ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    let lean = ok(&["plan", "--from", &out, "--cores", "4", "--headroom", "0.4"]);
    assert!(lean.contains("at ≤ 40% each"), "{lean}");
    assert!(allowed(&lean) < allowed(&plan), "--headroom 0.4 allows fewer CCU than the default 0.8: {lean}\n{plan}");
    // A sweep whose server CPU falls as players are added gives no line: bad input, as a missing file is.
    let mut falling = r.clone();
    for (row, cpu) in falling["extra"]["relay_bench"]["rows"].as_array_mut().unwrap().iter_mut().zip([30.0, 20.0]) {
        row["server_cpu_pct"] = cpu.into();
    }
    let falling_out = out.replace(".json", "-falling.json");
    std::fs::write(&falling_out, serde_json::to_vec(&falling).unwrap()).unwrap();
    let o = run(&["plan", "--from", &falling_out, "--cores", "4"], Duration::from_secs(30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--from: server CPU does not grow with players"), "{err}");
    let guide = ok(&["plan", "--room-size", "4", "--send-every", "100ms", "--msg-bytes", "200", "--ccu", "1000", "--uplink", "100mbit"]);
    assert!(guide.contains("40 messages in + 160 out = 200 messages/s, 40.0 KB/s"), "{guide}");
    assert!(guide.contains("1000 CCU in 250 rooms: 50000 messages/s, 10.00 MB/s"), "{guide}");
}

#[test]
fn swarm_workers_split_the_rooms_and_the_relay_serves_metrics() {
    // A relay server with /metrics, and two swarm shards of one 16-player run (2 rooms each).
    let dir = tempdir();
    let server_out = path(dir.path(), "server.json");
    // The relay's UDP port and its /metrics TCP port, each one the kernel picked.
    let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let metrics = format!("127.0.0.1:{}", crate::util::free_port());
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_aggro"))
        .args([
            "arena",
            "serve",
            "--mode",
            "relay",
            "--listen",
            &listen,
            "--metrics",
            &metrics,
            "--interval",
            "1s",
            "--duration",
            "6s",
            "--quiet",
            "--out",
            &server_out,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // It binds its UDP port, then serves /metrics.
    crate::util::until_listening(&metrics);
    let shard = |i: &str, out: &str| {
        let args =
            ["arena", "swarm", "--behaviour", "relay", "--server", &listen, "--ccu", "16", "--worker", i, "--duration", "2s", "--interval", "1s"];
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_aggro"));
        cmd.args(args).args(["--server-metrics", &metrics, "--out", out]).stdout(std::process::Stdio::piped()).spawn().unwrap()
    };
    let outs = [path(dir.path(), "s1.json"), path(dir.path(), "s2.json")];
    let children = [shard("1/2", &outs[0]), shard("2/2", &outs[1])];
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("verdict: None"), "{}", String::from_utf8_lossy(&o.stdout));
    }
    assert!(server.wait().unwrap().success());
    let mut first_rooms = Vec::new();
    for out in &outs {
        let r = result(std::path::Path::new(out));
        assert_eq!(r["spec"]["swarm"]["bots"], 8, "each shard takes half the players");
        first_rooms.push(r["spec"]["relay"]["first_room"].as_u64().unwrap());
        let t = &r["extra"]["arena_swarm"]["totals"]["counters"];
        assert_eq!(t["joins"], 8, "{t}");
        assert!(t["events_received"].as_u64().unwrap() > 0);
        assert_eq!(stages(&r["extra"]["funnel"]), [("connected", 8, 0), ("joined", 8, 0), ("matched", 8, 0)], "each bot's way in, its room filled");
    }
    assert_eq!(first_rooms, [0, 2], "shards take whole rooms, one after the other");
    // Merged, the funnel is the whole run's.
    let merged = path(dir.path(), "merged.json");
    ok(&["merge", &outs[0], &outs[1], "--out", &merged]);
    let m = result(std::path::Path::new(&merged));
    assert_eq!(m["extra"]["funnel"]["started"], 16);
    assert_eq!(stages(&m["extra"]["funnel"]), [("connected", 16, 0), ("joined", 16, 0), ("matched", 16, 0)]);
    let s = result(std::path::Path::new(&server_out));
    assert_eq!(s["extra"]["relay_server"]["totals"]["counters"]["joins"], 16);
}

/// A relay server (`mode` relay, else the game server) on `listen` for `secs`, quiet, its result to `out`.
fn arena_server(mode: &str, listen: &str, secs: u32, out: &str) -> std::process::Child {
    let args = ["arena", "serve", "--mode", mode, "--listen", listen, "--duration", &format!("{secs}s"), "--quiet", "--out", out];
    let child = crate::util::aggro().args(args).stdout(std::process::Stdio::null()).spawn().unwrap();
    crate::util::until_udp_bound(listen);
    child
}

/// `args` (a swarm of the server on `listen`, its result under `dir`) run through a restart of an arena
/// server of `mode` there ([`crate::util::through_a_restart`]): the exit code and output.
fn through_an_arena_restart(mode: &str, listen: &str, dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let server = |name: &str| arena_server(mode, listen, 30, &path(dir, name));
    crate::util::through_a_restart(args, server("first.json"), || server("again.json"))
}

/// A reconnect storm for relay bots: the relay killed 2 s in and started again on its port; each bot hears
/// its server fall silent (the protocol's 5 s) and, with `--reconnect`, opens a new session and joins its
/// room again — the same player, timed from the last word it heard — and plays on.
#[test]
fn relay_players_who_lose_their_server_come_back_as_themselves() {
    let dir = tempdir();
    let out = path(dir.path(), "storm.json");
    let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = ["arena", "swarm", "--mode", "relay", "--server", &listen, "--ccu", "8", "--room-size", "4", "--duration", "10s", "--interval", "1s"];
    let slo = ["--reconnect", "100ms..1s", "--slo", "disconnects<=100%,reconnect:p99<30s", "--out", &out];
    let (code, text) = through_an_arena_restart("relay", &listen, dir.path(), &[&args[..], &slo[..]].concat());
    assert_eq!(code, Some(0), "{text}");
    let r = result(std::path::Path::new(&out));
    let s = &r["extra"]["storm"];
    assert_eq!((s["back"].as_u64(), s["out_at_end"].as_u64()), (Some(8), Some(0)), "every player came back: {text}");
    assert!(s["p50_ms"].as_f64().unwrap() >= 5000.0, "timed from the last word heard, 5 s of silence before a bot knows: {s}");
    let by_interval: u64 =
        r["extra"]["arena_swarm"]["intervals"].as_array().unwrap().iter().map(|iv| iv["reconnect_attempts"].as_u64().unwrap()).sum();
    assert_eq!(Some(by_interval), s["attempts"].as_u64(), "{s}");
    assert_eq!(stages(&r["extra"]["funnel"]), [("connected", 8, 0), ("joined", 8, 0), ("matched", 8, 0)], "the same players, not newcomers: {text}");
    let c = &r["extra"]["arena_swarm"]["totals"]["counters"];
    assert_eq!((c["joins"].as_u64(), c["disconnects"].as_u64()), (Some(16), Some(8)), "each joined twice, lost its server once: {c}");
    assert_eq!(c["reliable_missing"], 0, "owed only what was sent after it came back: {c}");
    assert!(text.contains("reconnects: 8 players came back"), "{text}");
}

/// Battle-royale bots whose server falls silent leave play after the protocol's 5 s, and newcomers take
/// their places on the server started again (they do not come back as themselves: `--reconnect` is refused).
#[test]
fn battle_royale_bots_that_lose_their_server_are_replaced() {
    let dir = tempdir();
    let out = path(dir.path(), "br.json");
    let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = ["arena", "swarm", "--server", &listen, "--ccu", "10", "--duration", "10s", "--interval", "1s"];
    let slo = ["--slo", "disconnects<=100%", "--out", &out];
    let (code, text) = through_an_arena_restart("game", &listen, dir.path(), &[&args[..], &slo[..]].concat());
    assert_eq!(code, Some(0), "{text}");
    let c = &result(std::path::Path::new(&out))["extra"]["arena_swarm"]["totals"]["counters"];
    assert_eq!((c["connects"].as_u64(), c["disconnects"].as_u64()), (Some(20), Some(10)), "each lost its server once, a newcomer in its place: {c}");
}

/// A full server's refusals are failed joins, for the game server and the relay alike: 8 bots against
/// room for 6 is no "every player served". The session flags in their valid forms on the way: the
/// secret both sides sign with, the server's `--max-clients`, and the swarm's own client ids, input rate
/// and shared sockets.
#[test]
fn a_full_servers_refusals_are_failed_joins() {
    for mode in ["game", "relay"] {
        let dir = tempdir();
        let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let (server_out, out) = (path(dir.path(), "server.json"), path(dir.path(), "swarm.json"));
        let serve = ["arena", "serve", "--mode", mode, "--listen", &listen, "--max-clients", "6", "--secret", "s3cret", "--duration", "6s"];
        let mut server =
            crate::util::aggro().args(serve).args(["--quiet", "--out", &server_out]).stdout(std::process::Stdio::null()).spawn().unwrap();
        crate::util::until_udp_bound(&listen);
        let swarm = ["arena", "swarm", "--server", &listen, "--secret", "s3cret", "--ccu", "8", "--first-client-id", "100", "--sockets", "2"];
        let own: &[&str] = match mode {
            "game" => &["--mode", "br", "--input-hz", "10"],
            _ => &["--mode", "relay", "--room-size", "2"],
        };
        let o = run(&[&swarm[..], own, &["--duration", "3s", "--interval", "1s", "--out", &out]].concat(), Duration::from_secs(30));
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(server.wait().unwrap().success());
        assert_eq!(o.status.code(), Some(3), "{mode}: 2 of 8 turned away breaks the joins threshold: {text}");
        let c = &result(std::path::Path::new(&out))["extra"]["arena_swarm"]["totals"]["counters"];
        assert_eq!((c["connects"].as_u64(), c["failed_joins"].as_u64()), (Some(6), Some(2)), "{mode}: {c}");
        assert!(text.contains("25.0% of joins failed (2 of 8)"), "{mode}: {text}");
        if mode == "game" {
            // 6 bots sending 10 inputs a second for 3 s (and their shots and acks): not the default 30.
            let s = result(std::path::Path::new(&server_out));
            let packets = s["extra"]["arena_server"]["totals"]["counters"]["packets_in"].as_u64().unwrap();
            assert!((6 * 10 * 2..=6 * 10 * 5).contains(&packets), "{packets} packets in at --input-hz 10: {s:#}");
        }
    }
}

/// A relay swarm's own flags in their valid forms: events to the others of a room only (3 of 4
/// members), seats by matchmaking, sockets looked at once a millisecond; then players leaving and
/// newcomers taking their places, with received datagrams thrown away on purpose.
#[test]
fn the_relay_swarm_takes_its_receivers_matchmaking_churn_and_losses() {
    let dir = tempdir();
    let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let server = arena_server("relay", &listen, 12, &path(dir.path(), "relay.json"));
    // The exit code (3 where the losses thrown away break the delivery threshold, as they should) and counts.
    let swarm = |name: &str, own: &[&str]| {
        let out = path(dir.path(), name);
        let args =
            ["arena", "swarm", "--mode", "relay", "--server", &listen, "--ccu", "8", "--room-size", "4", "--duration", "3s", "--interval", "1s"];
        let code = run(&[&args[..], own, &["--out", &out]].concat(), Duration::from_secs(30)).status.code();
        (code, result(std::path::Path::new(&out))["extra"]["arena_swarm"]["totals"]["counters"].clone())
    };
    let (code, c) = swarm("others.json", &["--receivers", "others", "--matchmaking", "--poll-every", "1ms"]);
    assert_eq!(code, Some(0), "{c}");
    let (sent, received) = (c["events_sent"].as_f64().unwrap(), c["events_received"].as_f64().unwrap());
    assert!(sent > 0.0 && (2.5..=3.0).contains(&(received / sent)), "each event to the 3 others of its room (all would be 4): {c}");
    assert_eq!(c["joins"], 8, "{c}");
    let (code, c) = swarm("churn.json", &["--churn", "2", "--receive-loss", "0.2"]);
    assert!(matches!(code, Some(0 | 3)), "{c}");
    assert!(c["joins"].as_u64().unwrap() > 8, "players left and newcomers joined: {c}");
    assert!(c["injected_losses"].as_u64().unwrap() > 0, "{c}");
    drop(server);
}

/// The battle royale's flags in their valid forms: the zone's closing time, the bots' hot-drop clusters
/// and their rate of fire (eight times the shots at 4 a second as at 0.5, bots that see each other).
#[test]
fn the_battle_royale_takes_its_zone_clusters_and_rate_of_fire() {
    let dir = tempdir();
    let shots = |rate: &str| {
        let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let out = path(dir.path(), &format!("serve-{rate}.json"));
        let serve = ["arena", "serve", "--listen", &listen, "--zone", "1m", "--duration", "5s", "--quiet", "--out", &out];
        let mut server = crate::util::aggro().args(serve).stdout(std::process::Stdio::null()).spawn().unwrap();
        crate::util::until_udp_bound(&listen);
        let swarm_out = path(dir.path(), &format!("swarm-{rate}.json"));
        ok(&[
            "arena",
            "swarm",
            "--server",
            &listen,
            "--ccu",
            "10",
            "--cluster",
            "10",
            "--fire-rate",
            rate,
            "--duration",
            "3s",
            "--quiet",
            "--out",
            &swarm_out,
        ]);
        assert!(server.wait().unwrap().success());
        result(std::path::Path::new(&out))["extra"]["arena_server"]["totals"]["counters"]["shots"].as_u64().unwrap()
    };
    let (slow, fast) = (shots("0.5"), shots("4"));
    assert!(fast > 2 * slow.max(1), "{fast} shots at 4 a second against {slow} at 0.5");
}
