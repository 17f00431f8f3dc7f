//! `aggro arena bench`: server and swarm as separate processes on loopback
//! (optionally pinned to different cores), a sweep of player counts, each
//! variant on the same seed (in `--rounds` turns), one table and one result
//! file. Only intervals after the warm-up count; their histograms are merged,
//! never averaged.

use super::pair::{Measured, Pair, cpu, merged, scratch, secs, sum};
use super::record::ms;
use super::record::{Whole, op, run_record};
use crate::arena::args::ArenaBenchArgs;
use crate::cli::values::spell;
use crate::exit::BadInput;
use crate::run::session;
use aggro_arena::server::ServerInterval;
use aggro_arena::server::profile::Counters;
use aggro_report::record::now_rfc3339;
use aggro_stats::{Histogram, Summary};
use serde::Serialize;

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
    /// The part of the flush spent in sendmmsg.
    pub flush_sendmmsg_ms: f64,
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
    let (measure, warmup) = (a.duration, a.warmup);
    if a.players.is_empty() || a.players.contains(&0) {
        return Err(BadInput("--players: give one or more counts above zero, such as 25,50,100".into()).into());
    }
    let variants = variants(&a.compare, a.game.send_flush)?;
    let dir = scratch()?;
    let started_at = now_rfc3339();
    let mut rows = Vec::new();
    let mut ports = super::ports::Ports::from(a.port);
    let total = a.players.len() * variants.len() * a.rounds as usize;
    let mut k = 0;
    for &players in &a.players {
        let mut by_variant: Vec<Vec<Measured<ServerInterval>>> = variants.iter().map(|_| Vec::new()).collect();
        for round in 1..=a.rounds {
            for (v, runs) in variants.iter().zip(&mut by_variant) {
                eprintln!(
                    "[{}/{}] {players} players, {}, round {round}/{}: {warmup:?} warm-up + {measure:?} measured",
                    k + 1,
                    total,
                    v.name,
                    a.rounds
                );
                let pair = Pair::new(dir.path(), &a.common, a.pin.as_ref(), ports.take()?, warmup, measure)?;
                runs.push(run_pair(&pair, &a, players, v)?);
                k += 1;
            }
        }
        for (v, runs) in variants.iter().zip(&by_variant) {
            rows.push(row_of(players, v, runs)?);
        }
    }
    print_table(&rows);
    let spec = serde_json::json!({ "players": a.players, "variants": variants, "tick_hz": a.game.tick, "tiers": a.tiers, "interest": a.game.interest,
        "warmup_s": warmup.as_secs_f64(), "measured_s": measure.as_secs_f64(), "rounds": a.rounds, "fire_rate": a.fire_rate, "pinned": a.pin, "seed": a.common.seed });
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
        elapsed_s: (warmup + measure).as_secs_f64() * k as f64,
        stop_kind: "completed",
        stop_message: "every run finished".into(),
        generator_bound: rows.iter().any(|r| r.swarm_warning.is_some()),
        extra: serde_json::json!({ "arena_bench": { "rows": rows } }),
    };
    let record = run_record(w, Vec::new());
    let out = session::result_path(a.common.out.clone(), "arena-bench")?;
    session::write(&record, &out, &session::Exports::default())?;
    println!("result: {}", out.display());
    Ok(())
}

/// Runs server variant `v` and a swarm of `players` bots once.
fn run_pair(pair: &Pair, a: &ArenaBenchArgs, players: u32, v: &Variant) -> anyhow::Result<Measured<ServerInterval>> {
    let mut server: Vec<String> = ["--tick", &a.game.tick.to_string(), "--zone", &spell(a.game.zone)].map(String::from).to_vec();
    if v.send_flush {
        server.push("--send-flush".into());
    }
    if v.interleave {
        server.extend(["--interleave".into(), a.tiers.clone()]);
    }
    if let Some(i) = a.game.interest {
        server.extend(["--interest".into(), format!("{i}m")]);
    }
    let mut swarm = ["--ccu", &players.to_string(), "--fire-rate", &a.fire_rate.to_string()].map(String::from).to_vec();
    swarm.extend(a.swarm_polling());
    pair.run(&server, &swarm)
}

/// One table row from a variant's runs: their measured intervals taken together.
fn row_of(players: u32, v: &Variant, runs: &[Measured<ServerInterval>]) -> anyhow::Result<Row> {
    let sv: Vec<_> = runs.iter().flat_map(|m| m.server_intervals()).collect();
    let sw: Vec<_> = runs.iter().flat_map(|m| m.swarm_intervals()).collect();
    if sv.is_empty() || sw.is_empty() {
        anyhow::bail!("the run at {players} players left no measured interval; use a longer --duration");
    }
    let phase = |name: &str| merged(sv.iter().filter_map(|iv| iv.phases.get(name)).map(|d| d.hdr.as_str()));
    let frame = phase("frame");
    let secs_measured = secs(&sv);
    let sum = |k: fn(&Counters) -> u64| sum(&sv, |iv| k(&iv.counters));
    let mean_clients = sum(|c| c.client_frames) / sum(|c| c.frames).max(1.0);
    let delay = merged(sw.iter().map(|iv| iv.delay_hdr.as_str()));
    let lateness = merged(sw.iter().map(|iv| iv.timer_lateness_hdr.as_str()));
    let error = merged(sv.iter().map(|iv| iv.position_error_cm.hdr.as_str()));
    let mean_ms = |h: &Histogram| h.mean() / 1e6;
    Ok(Row {
        players,
        variant: v.name.clone(),
        tick_hz: sum(|c| c.frames) / secs_measured,
        frame: Summary::of(&frame),
        dispatch_ms: mean_ms(&phase("dispatch")),
        send_flush_ms: mean_ms(&phase("send_flush")),
        simulate_ms: mean_ms(&phase("simulate")),
        flush_ms: mean_ms(&phase("flush")),
        flush_sendmmsg_ms: mean_ms(&phase("flush_sendmmsg")),
        gunfire_delay: Summary::of(&delay),
        kb_out_per_client_s: if mean_clients > 0.0 { sum(|c| c.bytes_out) / mean_clients / secs_measured / 1000.0 } else { 0.0 },
        position_error_cm: Summary::of(&error),
        bytes_per_moving_update: sum(|c| c.moving_delta_bits) / 8.0 / sum(|c| c.moving_deltas).max(1.0),
        server_cpu_pct: cpu(&sv),
        swarm_cpu_pct: cpu(&sw),
        swarm_lateness: Summary::of(&lateness),
        swarm_warning: sw.iter().find_map(|iv| iv.warning.clone()),
        frame_hdr: frame,
        delay_hdr: delay,
    })
}

fn print_table(rows: &[Row]) {
    println!(
        "| players | variant | tick Hz | frame p50 / p99 / max ms | dispatch / send / sim / flush (of it sendmmsg) ms (mean) | delay p50 / p99 ms | kB/s out per client | position error p50 / p99 m | B per moving update | server CPU | swarm CPU | swarm lateness p99 ms |"
    );
    println!("|---:|---|---:|---|---|---|---:|---|---:|---:|---:|---:|");
    for r in rows {
        let e = r.position_error_cm;
        let err = if e.count == 0 { "—".to_string() } else { format!("{:.2} / {:.2}", e.p50_ns as f64 / 100.0, e.p99_ns as f64 / 100.0) };
        println!(
            "| {} | {} | {:.1} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} / {:.2} ({:.2}) | {:.1} / {:.1} | {:.1} | {} | {:.2} | {:.0}% | {:.0}% | {:.2} |",
            r.players,
            r.variant,
            r.tick_hz,
            ms(r.frame.p50_ns),
            ms(r.frame.p99_ns),
            ms(r.frame.max_ns),
            r.dispatch_ms,
            r.send_flush_ms,
            r.simulate_ms,
            r.flush_ms,
            r.flush_sendmmsg_ms,
            ms(r.gunfire_delay.p50_ns),
            ms(r.gunfire_delay.p99_ns),
            r.kb_out_per_client_s,
            err,
            r.bytes_per_moving_update,
            r.server_cpu_pct,
            r.swarm_cpu_pct,
            ms(r.swarm_lateness.p99_ns),
        );
        if let Some(w) = &r.swarm_warning {
            println!("  warning ({} players, {}): {w}", r.players, r.variant);
        }
    }
}
