//! `aggro arena bench --mode relay`: the relay server and a relay swarm as
//! separate processes, a sweep of CCU with one room profile, one table with
//! the Photon counters and a bottleneck verdict per run, and one result file
//! (`extra.relay_bench.rows`) that `aggro plan --from` fits.

use super::pair::{Measured, Pair, busiest, cpu, merged, scratch, secs, sum};
use super::record::ms;
use super::record::{Whole, op, run_record};
use crate::arena::args::{ArenaBenchArgs, Receivers};
use crate::cli::values::spell;
use crate::exit::BadInput;
use crate::run::session;
use aggro_arena::relay::{RelayCounters, RelayInterval};
use aggro_arena::verdict::{Evidence, Verdict, judge};
use aggro_report::record::now_rfc3339;
use aggro_stats::{Histogram, Summary};
use aggro_swarm::SwarmCounters;
use serde::Serialize;

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub ccu: u32,
    pub server_cpu_pct: f64,
    pub swarm_cpu_pct: f64,
    pub events_in_per_s: f64,
    pub events_out_per_s: f64,
    pub events_in_per_room_s: f64,
    pub events_out_per_room_s: f64,
    pub packets_in_per_s: f64,
    pub packets_out_per_s: f64,
    /// Server bytes in + out per second.
    pub server_bytes_per_s: f64,
    pub resends_per_s: f64,
    pub relay_delay: Summary,
    pub swarm_lateness: Summary,
    pub reliable_disorder: f64,
    pub reliable_missing: f64,
    pub unreliable_lost: f64,
    pub kernel_drops: f64,
    pub verdict: Verdict,
    #[serde(skip)]
    delay_hdr: Histogram,
}

pub fn main(a: ArenaBenchArgs) -> anyhow::Result<()> {
    let (measure, warmup) = (a.duration, a.warmup);
    if a.players.is_empty() || a.players.iter().any(|p| *p < a.relay.room_size as u32) {
        return Err(BadInput(format!(
            "--players: give one or more CCU counts of at least --room-size ({}), such as 1000,2000,3000",
            a.relay.room_size
        ))
        .into());
    }
    let budget = a.uplink;
    let dir = scratch()?;
    let started_at = now_rfc3339();
    let mut rows = Vec::new();
    let mut ports = super::ports::Ports::from(a.port);
    for (k, ccu) in a.players.iter().enumerate() {
        eprintln!("[{}/{}] {ccu} CCU in rooms of {}: {warmup:?} warm-up + {measure:?} measured", k + 1, a.players.len(), a.relay.room_size);
        let pair = Pair::new(dir.path(), &a.common, a.pin.as_ref(), ports.take()?, warmup, measure)?;
        rows.push(run_one(&pair, &a, *ccu, budget)?);
    }
    print_table(&rows);
    let r = &a.relay;
    let spec = serde_json::json!({ "mode": "relay", "ccu": a.players, "room_size": r.room_size, "send_every": spell(r.send_every), "msg_bytes": r.msg_bytes, "reliable": r.reliable, "receivers": format!("{:?}", r.receivers).to_lowercase(),
        "churn": r.churn, "matchmaking": r.matchmaking, "warmup_s": warmup.as_secs_f64(), "measured_s": measure.as_secs_f64(), "pinned": a.pin, "seed": a.common.seed, "uplink_bytes_per_s": a.uplink });
    let w = Whole {
        command: "arena bench",
        spec,
        started_at,
        operations: rows.iter().map(|r| format!("relay_delay/{}", r.ccu)).collect(),
        totals: rows.iter().map(|r| op(&format!("relay_delay/{}", r.ccu), &r.delay_hdr)).collect(),
        lag: Summary::default(),
        count: rows.len() as u64,
        elapsed_s: (warmup + measure).as_secs_f64() * rows.len() as f64,
        stop_kind: "completed",
        stop_message: "every run finished".into(),
        generator_bound: rows.iter().any(|r| r.verdict.limit == aggro_arena::verdict::Limit::SwarmCpu),
        extra: serde_json::json!({ "relay_bench": { "rows": rows } }),
    };
    let out = session::result_path(a.common.out.clone(), "relay-bench")?;
    session::write(&run_record(w, Vec::new()), &out, &session::Exports::default())?;
    println!("result: {}", out.display());
    Ok(())
}

fn run_one(pair: &Pair, a: &ArenaBenchArgs, ccu: u32, budget: Option<f64>) -> anyhow::Result<Row> {
    let r = &a.relay;
    let mut swarm: Vec<String> =
        ["--mode", "relay", "--ccu", &ccu.to_string(), "--room-size", &r.room_size.to_string(), "--send-every", &spell(r.send_every)]
            .into_iter()
            .chain(["--msg-bytes", &r.msg_bytes.to_string(), "--churn", &r.churn.to_string(), "--connect-rate", "2000"])
            .chain(["--receivers", if r.receivers == Receivers::All { "all" } else { "others" }])
            .map(String::from)
            .collect();
    swarm.extend(r.reliable.then(|| "--reliable".to_string()));
    swarm.extend(r.matchmaking.then(|| "--matchmaking".to_string()));
    swarm.extend(a.swarm_polling());
    let m: Measured<RelayInterval> = pair.run(&["--mode".into(), "relay".into()], &swarm)?;
    let (sv, sw) = (m.server_intervals(), m.swarm_intervals());
    if sv.is_empty() || sw.is_empty() {
        anyhow::bail!("the run at {ccu} CCU left no measured interval; use a longer --duration");
    }
    let s_secs = secs(&sv);
    let server = |k: fn(&RelayCounters) -> u64| sum(&sv, |iv| k(&iv.counters));
    let swarm = |k: fn(&SwarmCounters) -> u64| sum(&sw, |iv| k(&iv.counters));
    let per_s = |k: fn(&RelayCounters) -> u64| server(k) / s_secs;
    let rooms = server(|c| c.room_ticks) / server(|c| c.ticks).max(1.0);
    let delay = merged(sw.iter().map(|iv| iv.delay_hdr.as_str()));
    let lateness = Summary::of(&merged(sw.iter().map(|iv| iv.timer_lateness_hdr.as_str())));
    let drops = |iv: Option<&&RelayInterval>| iv.map_or(0, |iv| iv.gauges.process.kernel_drops);
    let kernel_drops = drops(sv.last()).saturating_sub(drops(sv.first())) as f64;
    let sessions = sv.iter().map(|iv| iv.gauges.connections).max().unwrap_or(0).max(1) as f64;
    let evidence = Evidence {
        server_cpu_pct: Some(cpu(&sv)),
        server_kernel_drops: kernel_drops as u64,
        swarm_cpu_pct: busiest(&sw),
        swarm_lateness_p99_ms: ms(lateness.p99_ns),
        bytes_per_s: per_s(|c| c.bytes_in) + per_s(|c| c.bytes_out),
        bandwidth_budget: budget,
        queue_full: (server(|c| c.queue_full) + swarm(|c| c.queue_full)) as u64,
        queued_per_session: sv.iter().map(|iv| iv.gauges.queued_reliable).max().unwrap_or(0) as f64 / sessions,
        ..Evidence::default()
    };
    Ok(Row {
        ccu,
        server_cpu_pct: cpu(&sv),
        swarm_cpu_pct: cpu(&sw),
        events_in_per_s: per_s(|c| c.events_in),
        events_out_per_s: per_s(|c| c.events_out),
        events_in_per_room_s: per_s(|c| c.events_in) / rooms.max(1e-9),
        events_out_per_room_s: per_s(|c| c.events_out) / rooms.max(1e-9),
        packets_in_per_s: per_s(|c| c.packets_in),
        packets_out_per_s: per_s(|c| c.packets_out),
        server_bytes_per_s: evidence.bytes_per_s,
        resends_per_s: per_s(|c| c.resends),
        relay_delay: Summary::of(&delay),
        swarm_lateness: lateness,
        reliable_disorder: swarm(|c| c.reliable_disorder),
        reliable_missing: swarm(|c| c.reliable_missing),
        unreliable_lost: swarm(|c| c.unreliable_lost),
        kernel_drops,
        verdict: judge(&evidence),
        delay_hdr: delay,
    })
}

fn print_table(rows: &[Row]) {
    println!(
        "| CCU | server CPU | swarm CPU | events in/s | relayed/s | per room in / out /s | packets in / out /s | MB/s in+out | delay p50 / p99 ms | swarm lateness p99 ms | resends/s | lost / missing | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {:.0}% | {:.0}% | {:.0} | {:.0} | {:.1} / {:.1} | {:.0} / {:.0} | {:.2} | {:.2} / {:.2} | {:.2} | {:.1} | {:.0} / {:.0} | {:?} |",
            r.ccu,
            r.server_cpu_pct,
            r.swarm_cpu_pct,
            r.events_in_per_s,
            r.events_out_per_s,
            r.events_in_per_room_s,
            r.events_out_per_room_s,
            r.packets_in_per_s,
            r.packets_out_per_s,
            r.server_bytes_per_s / 1e6,
            ms(r.relay_delay.p50_ns),
            ms(r.relay_delay.p99_ns),
            ms(r.swarm_lateness.p99_ns),
            r.resends_per_s,
            r.unreliable_lost,
            r.reliable_missing,
            r.verdict.limit,
        );
    }
    for r in rows {
        println!("{} CCU: {}", r.ccu, r.verdict.evidence);
    }
}
