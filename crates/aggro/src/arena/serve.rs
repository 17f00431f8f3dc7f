//! `aggro arena serve`: the reference game server.

use super::process::metrics_server;
use super::process::{self, Reported};
use super::record::ms;
use super::record::{Whole, interval, op, run_record};
use crate::arena::args::{ServeArgs, ServerGameArgs};
use aggro_arena::server::profile::{Counters, exposition};
use aggro_arena::server::{GameServer, PHASES, ServeConfig, ServerInterval};
use aggro_arena::udp::BatchSocket;
use aggro_report::record::now_rfc3339;
use aggro_stats::Summary;
use anyhow::Context;
use arena_proto::Secret;
use std::time::Duration;

pub fn main(a: ServeArgs) -> anyhow::Result<()> {
    let listen = a.listen;
    let mut cfg = server_config(&a.game, &a.common.secret, a.common.seed, a.common.interval);
    cfg.duration = a.duration;
    cfg.max_clients = a.max_clients;
    let sock = BatchSocket::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    let spec = serde_json::json!({ "listen": listen.to_string(), "server": &cfg });
    let started_at = now_rfc3339();
    let mut server = GameServer::new(cfg.clone(), sock);
    if !a.common.quiet {
        println!(
            "arena server on {listen}: {} Hz, send flush {}, interleave {:?}, interest {:?}",
            cfg.tick_hz,
            if cfg.send_flush { "on" } else { "off" },
            cfg.tiers,
            cfg.interest_m
        );
    }
    let metrics = metrics_server(a.common.metrics)?;
    // Each interval's record is made as it closes, its histograms read then.
    let done = process::run(&a.common, "arena-serve", metrics.as_ref(), |stop, on_interval| {
        server.run(stop, |iv| on_interval(iv, interval_record(iv, cfg.tick_hz as f64)))
    })?;
    let record = server_record(&spec, started_at, done.records, (&done.intervals, &done.totals), done.interrupted);
    process::finish(&done.out, &record, &done.totals, &[])
}

impl Reported for ServerInterval {
    type Counters = Counters;

    fn line(&self) -> String {
        let p = |n: &str| self.phases.get(n).map(|d| d.summary).unwrap_or_default();
        let f = p("frame");
        format!(
            "{:7.1}s  clients {:5}  tick {:6.1} Hz  frame p50 {:.2} p99 {:.2} max {:.2} ms | p50 dispatch {:.2} send {:.2} sim {:.2} flush {:.2} (sendmmsg {:.2}) ms | per client {:.1} kB/s out {:.1} in | resends {} queued {} | cpu {:.0}%",
            self.end_s,
            self.clients,
            self.tick_hz,
            ms(f.p50_ns),
            ms(f.p99_ns),
            ms(f.max_ns),
            ms(p("dispatch").p50_ns),
            ms(p("send_flush").p50_ns),
            ms(p("simulate").p50_ns),
            ms(p("flush").p50_ns),
            ms(p("flush_sendmmsg").p50_ns),
            self.kb_out_per_client_s,
            self.kb_in_per_client_s,
            self.counters.resends,
            self.queued_reliable,
            self.cpu_pct,
        )
    }

    fn live(&self) -> (Counters, f64, f64) {
        (self.counters, self.cpu_pct, self.end_s - self.start_s)
    }

    fn exposition(&self, total: &Counters, cpu_s: f64) -> String {
        exposition(total, cpu_s, self)
    }
}

fn ops(iv: &ServerInterval) -> Vec<aggro_report::record::OpRecord> {
    PHASES.iter().zip(&iv.histograms).map(|(n, h)| op(n, h)).collect()
}

/// Interval `iv` in aggro's result format (its histograms read now), frames at `tick_hz` planned.
fn interval_record(iv: &ServerInterval, tick_hz: f64) -> aggro_report::record::IntervalRecord {
    interval(iv.start_s, iv.end_s, iv.counters.frames, Some(tick_hz), ops(iv), Summary::default(), iv.cpu_pct)
}

/// The server's run in aggro's result format, its intervals' records `ivs`; `extra.arena_server` holds every
/// interval's profile.
pub fn server_record(
    spec: &serde_json::Value,
    started_at: String,
    ivs: Vec<aggro_report::record::IntervalRecord>,
    (intervals, totals): (&[ServerInterval], &ServerInterval),
    interrupted: bool,
) -> aggro_report::record::RunRecord {
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
        extra: serde_json::json!({ super::record::GAME_SERVER: { "intervals": intervals, "totals": totals } }),
    };
    run_record(w, ivs)
}

/// The server's game settings from the arguments.
pub fn server_config(g: &ServerGameArgs, secret: &str, seed: u64, interval: Duration) -> ServeConfig {
    let mut cfg = ServeConfig::new(Secret::from_passphrase(secret));
    cfg.tick_hz = g.tick;
    cfg.send_flush = g.send_flush;
    cfg.tiers = g.interleave.clone().map(|t| t.0).unwrap_or_default();
    cfg.interest_m = g.interest;
    cfg.zone_shrink_s = g.zone.as_secs_f64();
    cfg.seed = seed;
    cfg.interval = interval;
    cfg
}
