//! `aggro arena bench`: server and swarm as separate processes on loopback
//! (optionally pinned to different cores), a sweep of player counts, each
//! variant on the same seed, one table and one result file. Only intervals
//! after the warm-up count; their histograms are merged, never averaged.

use super::record::{Whole, op, run_record};
use super::{duration, ms};
use crate::BadInput;
use crate::cli::ArenaBenchArgs;
use crate::session;
use aggro_report::record::now_rfc3339;
use aggro_stats::{Histogram, Summary, encode, new_histogram};
use anyhow::Context;
use serde::Serialize;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A server variant.
#[derive(Clone, Debug, Serialize)]
struct Variant {
    name: String,
    send_flush: bool,
    interleave: bool,
}

fn variants(compare: &[String], base_send_flush: bool) -> anyhow::Result<Vec<Variant>> {
    let mut out = vec![Variant { name: "base".into(), send_flush: base_send_flush, interleave: false }];
    for c in compare {
        let mut v = Variant { name: c.clone(), send_flush: base_send_flush, interleave: false };
        for part in c.split('+') {
            match part.trim() {
                "interleave" => v.interleave = true,
                "send-flush" => v.send_flush = true,
                other => return Err(BadInput(format!("--compare: unknown variant {other:?} (interleave, send-flush, or both joined by +)")).into()),
            }
        }
        out.push(v);
    }
    Ok(out)
}

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub players: u32,
    pub variant: String,
    pub tick_hz: f64,
    pub frame: Summary,
    /// Mean ms per phase (means add up to the frame's).
    pub dispatch_ms: f64,
    pub send_flush_ms: f64,
    pub simulate_ms: f64,
    pub flush_ms: f64,
    pub gunfire_delay: Summary,
    pub kb_out_per_client_s: f64,
    pub position_error_cm: Summary,
    pub bytes_per_moving_update: f64,
    pub server_cpu_pct: f64,
    pub swarm_cpu_pct: f64,
    pub swarm_lateness: Summary,
    pub swarm_warning: Option<String>,
    #[serde(skip)]
    frame_hdr: Histogram,
    #[serde(skip)]
    delay_hdr: Histogram,
}

pub fn main(a: ArenaBenchArgs) -> anyhow::Result<()> {
    let measure = duration(&a.duration, "duration")?;
    let warmup = duration(&a.warmup, "warmup")?;
    if a.players.is_empty() || a.players.contains(&0) {
        return Err(BadInput("--players: give one or more counts above zero, such as 25,50,100".into()).into());
    }
    aggro_arena::server::parse_tiers(&a.tiers).map_err(|e| BadInput(format!("--tiers: {e}")))?;
    let variants = variants(&a.compare, a.game.send_flush)?;
    let exe = std::env::current_exe().context("cannot find the aggro executable")?;
    let dir = tempfile::Builder::new().prefix("aggro-arena-bench").tempdir().context("cannot make a scratch directory")?;
    let started_at = now_rfc3339();
    let mut rows = Vec::new();
    let total = a.players.len() * variants.len();
    for (k, (players, v)) in a.players.iter().flat_map(|p| variants.iter().map(move |v| (*p, v))).enumerate() {
        eprintln!("[{}/{}] {} players, {}: {:?} warm-up + {:?} measured", k + 1, total, players, v.name, warmup, measure);
        let port = a.port.checked_add(k as u16).ok_or_else(|| BadInput("--port: too high for this many runs".into()))?;
        let row = run_one(&exe, dir.path(), &a, players, v, port, warmup, measure)?;
        rows.push(row);
    }
    print_table(&rows);
    let spec = serde_json::json!({ "players": a.players, "variants": variants, "tick_hz": a.game.tick, "tiers": a.tiers, "interest": a.game.interest,
        "warmup_s": warmup.as_secs_f64(), "measured_s": measure.as_secs_f64(), "fire_rate": a.fire_rate, "pinned": a.pin, "seed": a.common.seed });
    let mut operations = Vec::new();
    let mut totals = Vec::new();
    for r in &rows {
        for (what, h) in [("frame", &r.frame_hdr), ("gunfire_delay", &r.delay_hdr)] {
            let name = format!("{what}/{}/{}", r.players, r.variant);
            totals.push(op(&name, h));
            operations.push(name);
        }
    }
    let w = Whole {
        command: "arena bench",
        spec,
        started_at,
        operations,
        totals,
        lag: Summary::default(),
        count: rows.len() as u64,
        elapsed_s: (warmup + measure).as_secs_f64() * rows.len() as f64,
        stop_kind: "completed",
        stop_message: "every run finished".into(),
        generator_bound: rows.iter().any(|r| r.swarm_warning.is_some()),
        extra: serde_json::json!({ "arena_bench": { "rows": rows } }),
    };
    let record = run_record(w, Vec::new());
    let out = a.common.out.clone().unwrap_or_else(|| session::default_out("arena-bench"));
    session::write(&record, &out, None)?;
    println!("result: {}", out.display());
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_one(exe: &Path, dir: &Path, a: &ArenaBenchArgs, players: u32, v: &Variant, port: u16, warmup: Duration, measure: Duration) -> anyhow::Result<Row> {
    let listen = format!("127.0.0.1:{port}");
    let (server_out, swarm_out) = (dir.join(format!("server-{port}.json")), dir.join(format!("swarm-{port}.json")));
    let secs = |d: Duration| format!("{}ms", d.as_millis());
    let mut server = Command::new(exe);
    server.args(["arena", "serve", "--listen", &listen, "--tick", &a.game.tick.to_string(), "--zone", &a.game.zone, "--interval", "1s", "--quiet"]);
    server.args(["--duration", &secs(warmup + measure + Duration::from_secs(5)), "--seed", &a.common.seed.to_string()]);
    server.arg("--out").arg(&server_out).env("AGGRO_ARENA_SECRET", &a.common.secret);
    if v.send_flush {
        server.arg("--send-flush");
    }
    if v.interleave {
        server.args(["--interleave", &a.tiers]);
    }
    if let Some(i) = &a.game.interest {
        server.args(["--interest", i]);
    }
    let mut swarm = Command::new(exe);
    swarm.args(["arena", "swarm", "--server", &listen, "--bots", &players.to_string(), "--interval", "1s", "--quiet"]);
    swarm.args(["--duration", &secs(warmup + measure), "--seed", &a.common.seed.to_string(), "--fire-rate", &a.fire_rate.to_string()]);
    swarm.arg("--out").arg(&swarm_out).env("AGGRO_ARENA_SECRET", &a.common.secret);
    for (cmd, cpu) in [(&mut server, 0), (&mut swarm, 1)] {
        cmd.stdout(Stdio::null());
        if a.pin {
            pin(cmd, cpu);
        }
    }
    let mut server = server.spawn().context("cannot start the arena server")?;
    std::thread::sleep(Duration::from_millis(300));
    let swarm_status = swarm.status().context("cannot run the swarm")?;
    // The swarm is done: stop the server now rather than at its own deadline; it writes its result on SIGTERM.
    // SAFETY: kill sends a signal to our own child by pid.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let server_status = server.wait().context("cannot wait for the arena server")?;
    if !swarm_status.success() || !server_status.success() {
        anyhow::bail!("a run failed (server {server_status}, swarm {swarm_status}); run `aggro arena serve` and `aggro arena swarm` by hand on port {port} to see why");
    }
    let server_rec = session::read(&server_out)?.extra;
    let swarm_rec = session::read(&swarm_out)?.extra;
    // The server started 0.3 s before the swarm; count only whole intervals after the warm-up.
    let from = warmup.as_secs_f64();
    let to = (warmup + measure).as_secs_f64();
    let sv: Vec<&Value> = intervals(&server_rec, "arena_server").into_iter().filter(|iv| f(iv, "start_s") >= from + 0.3 && f(iv, "end_s") <= to + 0.35).collect();
    let sw: Vec<&Value> = intervals(&swarm_rec, "arena_swarm").into_iter().filter(|iv| f(iv, "start_s") >= from && f(iv, "end_s") <= to + 0.05).collect();
    if sv.is_empty() || sw.is_empty() {
        anyhow::bail!("the run at {players} players left no measured interval; use a longer --duration");
    }
    let phase = |name: &str| merged(sv.iter().map(|iv| iv["phases"][name]["hdr"].as_str().unwrap_or("")));
    let frame = phase("frame");
    let secs_measured: f64 = sv.iter().map(|iv| f(iv, "end_s") - f(iv, "start_s")).sum();
    let sum = |k: &str| sv.iter().map(|iv| iv["counters"][k].as_u64().unwrap_or(0)).sum::<u64>() as f64;
    let mean_clients = sum("client_frames") / sum("frames").max(1.0);
    let delay = merged(sw.iter().map(|iv| iv["gunfire_delay_hdr"].as_str().unwrap_or("")));
    let lateness = merged(sw.iter().map(|iv| iv["timer_lateness_hdr"].as_str().unwrap_or("")));
    let cpu = |ivs: &[&Value]| ivs.iter().map(|iv| f(iv, "cpu_pct") * (f(iv, "end_s") - f(iv, "start_s"))).sum::<f64>() / ivs.iter().map(|iv| f(iv, "end_s") - f(iv, "start_s")).sum::<f64>();
    let error = merged(sv.iter().map(|iv| iv["position_error_cm"]["hdr"].as_str().unwrap_or("")));
    let mean_ms = |h: &Histogram| h.mean() / 1e6;
    Ok(Row {
        players,
        variant: v.name.clone(),
        tick_hz: sum("frames") / secs_measured,
        frame: Summary::of(&frame),
        dispatch_ms: mean_ms(&phase("dispatch")),
        send_flush_ms: mean_ms(&phase("send_flush")),
        simulate_ms: mean_ms(&phase("simulate")),
        flush_ms: mean_ms(&phase("flush")),
        gunfire_delay: Summary::of(&delay),
        kb_out_per_client_s: if mean_clients > 0.0 { sum("bytes_out") / mean_clients / secs_measured / 1000.0 } else { 0.0 },
        position_error_cm: Summary::of(&error),
        bytes_per_moving_update: sum("moving_delta_bits") / 8.0 / sum("moving_deltas").max(1.0),
        server_cpu_pct: cpu(&sv),
        swarm_cpu_pct: cpu(&sw),
        swarm_lateness: Summary::of(&lateness),
        swarm_warning: sw.iter().find_map(|iv| iv["warning"].as_str().map(String::from)),
        frame_hdr: frame,
        delay_hdr: delay,
    })
}

fn pin(cmd: &mut Command, cpu: usize) {
    // SAFETY: between fork and exec we only call sched_setaffinity on ourselves, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

/// The intervals a run's `extra` holds under `key`.
fn intervals<'a>(extra: &'a Value, key: &str) -> Vec<&'a Value> {
    extra[key]["intervals"].as_array().map(|a| a.iter().collect()).unwrap_or_default()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

fn merged<'a>(hdrs: impl Iterator<Item = &'a str>) -> Histogram {
    let mut h = new_histogram();
    for text in hdrs {
        if let Ok(one) = encode::from_base64(text) {
            h.add(&one).expect("auto-resizing histograms add");
        }
    }
    h
}

fn print_table(rows: &[Row]) {
    println!(
        "| players | variant | tick Hz | frame p50 / p99 / max ms | dispatch / send / sim / flush ms (mean) | delay p50 / p99 ms | kB/s out per client | position error p50 / p99 m | B per moving update | server CPU | swarm CPU | swarm lateness p99 ms |"
    );
    println!("|---:|---|---:|---|---|---|---:|---|---:|---:|---:|---:|");
    for r in rows {
        let e = r.position_error_cm;
        let err = if e.count == 0 { "—".to_string() } else { format!("{:.2} / {:.2}", e.p50_ns as f64 / 100.0, e.p99_ns as f64 / 100.0) };
        println!(
            "| {} | {} | {:.1} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} / {:.2} | {:.1} / {:.1} | {:.1} | {} | {:.2} | {:.0}% | {:.0}% | {:.2} |",
            r.players, r.variant, r.tick_hz, ms(r.frame.p50_ns), ms(r.frame.p99_ns), ms(r.frame.max_ns),
            r.dispatch_ms, r.send_flush_ms, r.simulate_ms, r.flush_ms, ms(r.gunfire_delay.p50_ns), ms(r.gunfire_delay.p99_ns),
            r.kb_out_per_client_s, err, r.bytes_per_moving_update, r.server_cpu_pct, r.swarm_cpu_pct, ms(r.swarm_lateness.p99_ns),
        );
        if let Some(w) = &r.swarm_warning {
            println!("  warning ({} players, {}): {w}", r.players, r.variant);
        }
    }
}
