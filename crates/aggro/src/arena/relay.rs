//! `aggro arena serve --mode relay`: the room relay server (after Photon's load tests).

use super::process::metrics_server;
use super::process::{self, Reported};
use super::record::ms;
use super::record::{Whole, interval, op, run_record};
use crate::arena::args::ServeArgs;
use aggro_arena::relay::profile::{RelayCounters, exposition};
use aggro_arena::relay::{RelayConfig, RelayInterval, RelayServer};
use aggro_arena::udp::BatchSocket;
use aggro_report::record::now_rfc3339;
use aggro_stats::Summary;
use anyhow::Context;
use arena_proto::Secret;

pub fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let listen = a.listen;
    let mut cfg = RelayConfig::new(Secret::from_passphrase(&a.common.secret));
    cfg.duration = a.duration;
    cfg.interval = a.common.interval;
    cfg.max_clients = a.max_clients;
    let sock = BatchSocket::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    let metrics = metrics_server(a.common.metrics)?;
    let spec = serde_json::json!({ "listen": listen.to_string(), "mode": "relay", "server": &cfg });
    let started_at = now_rfc3339();
    let mut server = RelayServer::new(cfg, sock);
    if !a.common.quiet {
        println!("relay server on {listen}{}", metrics.as_ref().map_or(String::new(), |m| format!(", metrics at http://{}/metrics", m.local_addr())));
    }
    // Each interval's record is made as it closes, its histograms read then.
    let done =
        process::run(&a.common, "arena-relay", metrics.as_ref(), |stop, on_interval| server.run(stop, |iv| on_interval(iv, interval_record(iv))))?;
    let record = relay_record(&spec, started_at, done.records, (&done.intervals, &done.totals), done.interrupted);
    process::finish(&done.out, &record, &done.totals, &[])
}

impl Reported for RelayInterval {
    type Counters = RelayCounters;

    fn line(&self) -> String {
        let g = &self.gauges;
        format!(
            "{:7.1}s  conns {:5} rooms {:5} | events {:.0}/s in {:.0}/s out ({:.1} in, {:.1} out per room/s) | {:.0} pkt/s in {:.0} out, {:.2} MB/s out | resends {:.0}/s queued {} | loop late p99 {:.2} ms | cpu {:.0}% rss {:.0} MB",
            self.end_s,
            g.connections,
            g.rooms,
            self.events_in_per_s,
            self.events_out_per_s,
            self.events_in_per_room_s,
            self.events_out_per_room_s,
            self.packets_in_per_s,
            self.packets_out_per_s,
            self.bytes_out_per_s / 1e6,
            self.resends_per_s,
            g.queued_reliable,
            ms(self.loop_lateness.p99_ns),
            self.cpu_pct,
            g.process.rss_bytes as f64 / 1e6,
        )
    }

    fn live(&self) -> (RelayCounters, f64, f64) {
        (self.counters, self.cpu_pct, self.end_s - self.start_s)
    }

    fn exposition(&self, total: &RelayCounters, cpu_s: f64) -> String {
        exposition(total, cpu_s, self)
    }
}

/// Interval `iv` in aggro's result format (its histogram read now).
fn interval_record(iv: &RelayInterval) -> aggro_report::record::IntervalRecord {
    interval(iv.start_s, iv.end_s, iv.counters.events_in, None, vec![op("loop_lateness", &iv.histogram)], Summary::default(), iv.cpu_pct)
}

/// The relay server's run in aggro's result format, its intervals' records `ivs`: the operation is the loop's
/// lateness; `extra.relay_server` holds every interval's counters.
pub fn relay_record(
    spec: &serde_json::Value,
    started_at: String,
    ivs: Vec<aggro_report::record::IntervalRecord>,
    (intervals, totals): (&[RelayInterval], &RelayInterval),
    interrupted: bool,
) -> aggro_report::record::RunRecord {
    let w = Whole {
        command: "arena serve",
        spec: spec.clone(),
        started_at,
        operations: vec!["loop_lateness".into()],
        totals: vec![op("loop_lateness", &totals.histogram)],
        lag: Summary::default(),
        count: totals.counters.events_in,
        elapsed_s: totals.end_s,
        stop_kind: if interrupted { "interrupted" } else { "completed" },
        stop_message: if interrupted { "stopped by a signal".into() } else { "the duration passed".into() },
        generator_bound: false,
        extra: serde_json::json!({ super::record::RELAY_SERVER: { "intervals": intervals, "totals": totals } }),
    };
    run_record(w, ivs)
}
