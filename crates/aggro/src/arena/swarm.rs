//! `aggro arena swarm`: bots against an arena server.

use super::record::{Whole, interval, op, run_record};
use super::{address, duration, ms, stop_on_signal};
use crate::cli::SwarmArgs;
use crate::session;
use aggro_arena::swarm::{Swarm, SwarmConfig, SwarmInterval};
use aggro_report::record::now_rfc3339;
use anyhow::Context;
use arena_proto::Secret;
use std::sync::atomic::Ordering;

pub fn main(a: SwarmArgs) -> anyhow::Result<()> {
    let server = address(&a.server, "server")?;
    let mut cfg = SwarmConfig::new(server, Secret::from_passphrase(&a.common.secret));
    cfg.bots = a.bots as usize;
    cfg.duration = duration(&a.duration, "duration")?;
    cfg.interval = duration(&a.common.interval, "interval")?;
    cfg.input_hz = a.input_hz;
    if !(a.fire_rate.is_finite() && a.fire_rate >= 0.0) {
        return Err(crate::BadInput(format!("--fire-rate: {} is not a rate of shots per second", a.fire_rate)).into());
    }
    cfg.fire_hz = a.fire_rate;
    cfg.cluster = a.cluster.max(1);
    cfg.sockets = a.sockets;
    cfg.connect_rate = a.connect_rate.max(1);
    cfg.seed = a.common.seed;
    cfg.first_client_id = a.first_client_id;
    let spec = serde_json::json!({ "swarm": &cfg, "behaviour": format!("{:?}", a.behaviour).to_lowercase() });
    let started_at = now_rfc3339();
    let mut swarm = Swarm::new(cfg.clone()).context("cannot open the swarm's sockets")?;
    let stop = stop_on_signal();
    if !a.common.quiet {
        println!("swarm of {} bots against {server} for {:?}", cfg.bots, cfg.duration);
    }
    let quiet = a.common.quiet;
    let (intervals, totals) = swarm.run(&stop, |iv| {
        if !quiet {
            println!("{}", line(iv));
        }
    })?;
    let record = swarm_record(&spec, started_at, &intervals, &totals, stop.load(Ordering::Relaxed));
    let out = a.common.out.unwrap_or_else(|| session::default_out("arena-swarm"));
    session::write(&record, &out, None)?;
    println!("whole run: {}", line(&totals));
    if totals.counters.connects == 0 {
        println!("no bot was accepted: is an arena server listening on {server}, with the same --secret?");
    }
    println!("result: {}", out.display());
    Ok(())
}

/// One interval as a line.
pub fn line(iv: &SwarmInterval) -> String {
    let d = iv.gunfire_delay;
    let mut s = format!(
        "{:7.1}s  bots {:5}  gunfire delay p50 {:.1} p99 {:.1} ms ({} events) | timer lateness p99 {:.2} ms | {:.1} snapshots/s {:.1} kB/s per bot | cpu {:.0}%",
        iv.end_s, iv.active_bots, ms(d.p50_ns), ms(d.p99_ns), d.count, ms(iv.timer_lateness.p99_ns), iv.snapshots_per_bot_s, iv.kb_in_per_bot_s, iv.cpu_pct,
    );
    if let Some(w) = &iv.warning {
        s.push_str("\n  warning: ");
        s.push_str(w);
    }
    s
}

/// The swarm's run in aggro's result format: the operation is the gunfire delay; lag is timer lateness.
pub fn swarm_record(spec: &serde_json::Value, started_at: String, intervals: &[SwarmInterval], totals: &SwarmInterval, interrupted: bool) -> aggro_report::record::RunRecord {
    let rate = spec["swarm"]["input_hz"].as_f64().zip(spec["swarm"]["bots"].as_f64()).map(|(h, b)| h * b);
    let ivs = intervals
        .iter()
        .map(|iv| interval(iv.start_s, iv.end_s, iv.counters.packets_out, rate, vec![op("gunfire_delay", &iv.histograms[0])], iv.timer_lateness, iv.cpu_pct))
        .collect();
    let w = Whole {
        command: "arena swarm",
        spec: spec.clone(),
        started_at,
        operations: vec!["gunfire_delay".into()],
        totals: vec![op("gunfire_delay", &totals.histograms[0])],
        lag: totals.timer_lateness,
        count: totals.counters.packets_out,
        elapsed_s: totals.end_s,
        stop_kind: if interrupted { "interrupted" } else { "completed" },
        stop_message: if interrupted { "stopped by a signal".into() } else { "the duration passed".into() },
        generator_bound: intervals.iter().any(|iv| iv.warning.is_some()),
        extra: serde_json::json!({ "arena_swarm": { "intervals": intervals, "totals": totals } }),
    };
    run_record(w, ivs)
}
