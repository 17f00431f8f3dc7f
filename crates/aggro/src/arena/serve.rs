//! `aggro arena serve`: the reference game server.

use super::record::{Whole, interval, op, run_record};
use super::{address, metrics_server, ms, server_config, stop_on_signal};
use crate::args::duration;
use crate::cli::ServeArgs;
use crate::session;
use aggro_arena::metrics::LivePage;
use aggro_arena::server::profile::exposition;
use aggro_arena::server::{GameServer, PHASES, ServerInterval};
use aggro_arena::udp::BatchSocket;
use aggro_report::record::now_rfc3339;
use aggro_stats::Summary;
use anyhow::Context;
use std::sync::atomic::Ordering;

pub fn main(a: ServeArgs) -> anyhow::Result<()> {
    let listen = address(&a.listen, "listen")?;
    let mut cfg = server_config(&a.game, &a.common.secret, a.common.seed, &a.common.interval)?;
    cfg.duration = a.duration.as_deref().map(|d| duration(d, "duration")).transpose()?;
    cfg.max_clients = a.max_clients;
    let sock = BatchSocket::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    let spec = serde_json::json!({ "listen": listen.to_string(), "server": &cfg });
    let started_at = now_rfc3339();
    let mut server = GameServer::new(cfg.clone(), sock);
    let stop = stop_on_signal();
    if !a.common.quiet {
        println!("arena server on {listen}: {} Hz, send flush {}, interleave {:?}, interest {:?}", cfg.tick_hz, if cfg.send_flush { "on" } else { "off" }, cfg.tiers, cfg.interest_m);
    }
    let quiet = a.common.quiet;
    let metrics = metrics_server(a.common.metrics.as_deref())?;
    let mut live = LivePage::new(metrics.as_ref());
    let (intervals, totals) = server.run(&stop, |iv| {
        live.interval(iv.counters, iv.cpu_pct, iv.end_s - iv.start_s, |total, cpu_s| exposition(total, cpu_s, iv));
        if !quiet {
            println!("{}", line(iv));
        }
    })?;
    let interrupted = stop.load(Ordering::Relaxed);
    let record = server_record(&spec, started_at, &intervals, &totals, interrupted);
    let out = a.common.out.unwrap_or_else(|| session::default_out("arena-serve"));
    session::write(&record, &out, &session::Exports::default())?;
    println!("whole run: {}", line(&totals));
    println!("result: {}", out.display());
    Ok(())
}

/// One interval as a line.
pub fn line(iv: &ServerInterval) -> String {
    let p = |n: &str| iv.phases.get(n).map(|d| d.summary).unwrap_or_default();
    let f = p("frame");
    format!(
        "{:7.1}s  clients {:5}  tick {:6.1} Hz  frame p50 {:.2} p99 {:.2} max {:.2} ms | p50 dispatch {:.2} send {:.2} sim {:.2} flush {:.2} (sendmmsg {:.2}) ms | per client {:.1} kB/s out {:.1} in | resends {} queued {} | cpu {:.0}%",
        iv.end_s, iv.clients, iv.tick_hz, ms(f.p50_ns), ms(f.p99_ns), ms(f.max_ns),
        ms(p("dispatch").p50_ns), ms(p("send_flush").p50_ns), ms(p("simulate").p50_ns), ms(p("flush").p50_ns), ms(p("flush_sendmmsg").p50_ns),
        iv.kb_out_per_client_s, iv.kb_in_per_client_s, iv.counters.resends, iv.queued_reliable, iv.cpu_pct,
    )
}

fn ops(iv: &ServerInterval) -> Vec<aggro_report::record::OpRecord> {
    PHASES.iter().zip(&iv.histograms).map(|(n, h)| op(n, h)).collect()
}

/// The server's run in aggro's result format; `extra.arena_server` holds every interval's profile.
pub fn server_record(spec: &serde_json::Value, started_at: String, intervals: &[ServerInterval], totals: &ServerInterval, interrupted: bool) -> aggro_report::record::RunRecord {
    let rate = spec["server"]["tick_hz"].as_f64();
    let ivs = intervals.iter().map(|iv| interval(iv.start_s, iv.end_s, iv.counters.frames, rate, ops(iv), Summary::default(), iv.cpu_pct)).collect();
    let w = Whole {
        command: "arena serve",
        spec: spec.clone(),
        started_at,
        operations: PHASES.iter().map(|s| s.to_string()).collect(),
        totals: ops(totals),
        lag: Summary::default(),
        count: totals.counters.frames,
        elapsed_s: totals.end_s,
        stop_kind: if interrupted { "interrupted" } else { "completed" },
        stop_message: if interrupted { "stopped by a signal".into() } else { "the duration passed".into() },
        generator_bound: false,
        extra: serde_json::json!({ "arena_server": { "intervals": intervals, "totals": totals } }),
    };
    run_record(w, ivs)
}
