//! `aggro arena swarm`: bots against an arena server (`br`), a relay server (`relay`), a Colyseus server
//! over WebSocket (`colyseus`), or any server a Lua script plays (`script`).

use super::kept::{Kept, ROUND_TRIP, SESSIONS, drop_round_trips, sessions};
use super::process::metrics_server;
use super::process::{self, Reported};
use super::record::ms;
use super::record::{Whole, op, run_record, timed};
use super::server_watch::ServerWatch;
use crate::arena::args::{Behaviour as Kind, Receivers, SwarmArgs, SwarmSlo};
use crate::exit::BadInput;
use crate::live::Live;
use aggro_arena::verdict::{Evidence, Limit, Service, Verdict, judge};
use aggro_core::Share;
use aggro_report::record::now_rfc3339;
use aggro_report::record::{IntervalRecord, OpRecord};
use aggro_swarm::SwarmCounters;
use aggro_swarm::br::{Br, BrConfig};
use aggro_swarm::colyseus::ColyseusBots;
use aggro_swarm::colyseus::failures::Failures;
use aggro_swarm::colyseus::play::Play;
use aggro_swarm::colyseus::received::Received;
use aggro_swarm::profile::exposition;
use aggro_swarm::relay::RelayBots;
use aggro_swarm::{Behaviour, Swarm, SwarmConfig, SwarmInterval, run_threads};
use arena_proto::Secret;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub fn main(a: SwarmArgs) -> anyhow::Result<()> {
    crate::run::session::check_out(a.common.out.as_deref())?;
    let mut a = a;
    if a.script.is_some() {
        a.behaviour = Kind::Script;
    }
    let (server, tls_host) = match a.behaviour {
        Kind::Colyseus | Kind::Script => websocket_address(&a.server)?,
        _ => (address(&a.server, "server")?, None),
    };
    // The process that serves the port, whose CPU the verdict reads (a wrapper's or a subshell's pid is
    // replaced by its child's; another process's is refused, naming the right one).
    a.server_pid = a.server_pid.map(|pid| super::listener::measured_pid(pid, server.port())).transpose()?;
    if let Some(file) = &a.ca_file {
        if tls_host.is_none() {
            return Err(BadInput("--ca-file is for a wss:// (or https://) --server".into()).into());
        }
        std::fs::metadata(file).map_err(|e| BadInput(format!("--ca-file {}: {e}", file.display())))?;
    }
    let mut cfg = SwarmConfig::new(server, Secret::from_passphrase(&a.common.secret));
    cfg.tls = tls_host.map(|host| aggro_swarm::websocket::tls::TlsTarget { host, ca_file: a.ca_file.clone() });
    cfg.duration = a.duration;
    cfg.interval = a.common.interval;
    cfg.sockets = a.sockets;
    // A forced rate, or joins paced up to 1,000 a second.
    cfg.connect_rate = a.connect_rate.unwrap_or(1000).max(1);
    cfg.pace_joins = a.connect_rate.is_none();
    cfg.server_pid = a.server_pid;
    cfg.seed = a.common.seed;
    cfg.first_client_id = a.first_client_id;
    cfg.poll_every = a.poll_every.unwrap_or_default();
    cfg.read_every = a.read_every;
    if a.net.is_some() && !matches!(a.behaviour, Kind::Colyseus | Kind::Script) {
        return Err(BadInput("--net is for bots on TCP (--script, --mode colyseus); the UDP swarm loses datagrams with --receive-loss".into()).into());
    }
    cfg.net = a.net;
    if !(0.0..1.0).contains(&a.receive_loss) {
        return Err(BadInput(format!("--receive-loss: {} is not a fraction in [0, 1)", a.receive_loss)).into());
    }
    cfg.receive_loss = a.receive_loss;
    if a.reconnect.is_some() && a.behaviour == Kind::Br {
        return Err(BadInput("--reconnect is for players that come back as themselves (--script, --mode colyseus, --mode relay)".into()).into());
    }
    let share = a.worker.unwrap_or_default();
    let worker = [share.index + 1, share.of];
    match a.behaviour {
        Kind::Br => {
            if !(a.fire_rate.is_finite() && a.fire_rate >= 0.0) {
                return Err(BadInput(format!("--fire-rate: {} is not a rate of shots per second", a.fire_rate)).into());
            }
            let mine = take_bots(&mut cfg, &share, a.bots as u64, 1);
            cfg.tick_every = std::time::Duration::from_secs_f64(1.0 / a.input_hz as f64);
            let br = BrConfig { fire_hz: a.fire_rate, cluster: a.cluster.max(1) };
            let spec = serde_json::json!({ "swarm": &cfg, "behaviour": "br", "br": &br, "worker": worker });
            let seed = cfg.seed;
            run(&a, cfg, 1, spec, None, |c, block| Ok(Br::new(br.clone(), c.bots, seed ^ (mine.start + block.start))))
        }
        Kind::Relay => {
            let r = &a.relay;
            let churn_per_s = churn(&a, &share)?;
            // Whole rooms per shard, so no room is split between processes.
            let k = r.room_size as u64;
            let first_room = take_bots(&mut cfg, &share, a.bots as u64, k).start / k;
            cfg.tick_every = r.send_every;
            let bots = RelayBots {
                room_size: r.room_size,
                msg_bytes: r.msg_bytes as usize,
                reliable: r.reliable,
                to_all: r.receivers == Receivers::All,
                churn_per_s,
                matchmaking: r.matchmaking,
                first_room: first_room as u32,
                bots: cfg.bots,
                reconnect: a.reconnect,
            };
            let spec = serde_json::json!({ "swarm": &cfg, "behaviour": "relay", "relay": &bots, "worker": worker });
            // Threads take whole rooms too; a bot's lifetime under churn is the worker's.
            run(&a, cfg, r.room_size as usize, spec, None, |_, block| {
                Ok(RelayBots { first_room: bots.first_room + (block.start / k) as u32, ..bots.clone() })
            })
        }
        Kind::Colyseus => {
            let c = &a.colyseus;
            let play = match &c.play {
                Some(file) => Play::load(file).map_err(|e| BadInput(format!("--play {}: {e}", file.display())))?,
                None => Play::reference(&c.room, a.relay.send_every),
            };
            take_bots(&mut cfg, &share, a.bots as u64, 1);
            // A play without messages still ticks (to join); once a second is enough.
            cfg.tick_every = play.tick().unwrap_or(std::time::Duration::from_secs(1));
            cfg.drain = c.drain;
            if cfg.drain >= cfg.duration {
                return Err(BadInput(format!("--drain {:?} leaves nothing of --duration {:?}", c.drain, a.duration)).into());
            }
            let (room, observe) = (play.room.clone(), play.observe.clone());
            // One set of bots' settings for every thread: the joined count (--start-together), the server's
            // failures and the messages received are the process's, shared.
            let bots = ColyseusBots {
                reconnect: a.reconnect,
                ..ColyseusBots::new(play, if c.start_together { cfg.bots } else { 0 }, cfg.bots, churn(&a, &share)?)
            };
            let told = Told { room: Some(room), observe, failures: Arc::clone(&bots.failures), received: Arc::clone(&bots.received) };
            let spec = serde_json::json!({ "swarm": &cfg, "behaviour": "colyseus", "colyseus": &bots, "worker": worker });
            run(&a, cfg, 1, spec, Some(told), |_, _| Ok(bots.clone()))
        }
        Kind::Script => script(&a, cfg, &share, worker),
    }
}

#[cfg(feature = "lua")]
fn script(a: &SwarmArgs, mut cfg: SwarmConfig, share: &Share, worker: [u64; 2]) -> anyhow::Result<()> {
    use aggro_swarm::script::ScriptBots;
    let file = a.script.as_deref().ok_or_else(|| BadInput("--mode script needs --script FILE".into()))?;
    let source = std::fs::read_to_string(file).map_err(|e| BadInput(format!("--script {}: {e}", file.display())))?;
    if source.trim().is_empty() {
        return Err(BadInput(format!("--script {}: the script is empty (docs/BOTS.md shows a bot from an empty file up)", file.display())).into());
    }
    let name = file.file_name().map_or("script".into(), |n| n.to_string_lossy().to_string());
    // Checked here, so a bad script is bad input; each thread loads it again into a Lua state of its own.
    ScriptBots::load(&source, &name).map_err(BadInput)?;
    take_bots(&mut cfg, share, a.bots as u64, 1);
    // Bots keep their own timers; the nominal tick only paces the first.
    cfg.tick_every = std::time::Duration::from_secs(1);
    let spec = serde_json::json!({ "swarm": &cfg, "behaviour": "script", "script": { "file": file, "source": source, "reconnect": a.reconnect }, "worker": worker });
    // What the server said of failures, gathered from every thread's bots, for the verdict to quote.
    let failures: Arc<Mutex<Failures>> = Arc::default();
    let told = Told { room: None, observe: None, failures: Arc::clone(&failures), received: Arc::default() };
    run(a, cfg, 1, spec, Some(told), |_, block| {
        let bots = ScriptBots::load(&source, &name).map_err(std::io::Error::other)?;
        Ok(bots.budget(a.script_budget)?.numbered_from(block.start as usize).reporting_to(Arc::clone(&failures)).reconnecting(a.reconnect))
    })
}

#[cfg(not(feature = "lua"))]
fn script(_: &SwarmArgs, _: SwarmConfig, _: &Share, _: [u64; 2]) -> anyhow::Result<()> {
    Err(BadInput("this aggro was built without Lua scripts (cargo build --features lua)".into()).into())
}

/// Thread `t` of `threads`: its configuration (its bots, their first client id, its share of the join
/// rate) and its block of the process's bots — whole `unit`s, blocks in thread order.
fn thread_block(cfg: &SwarmConfig, unit: usize, t: usize, threads: usize) -> (SwarmConfig, std::ops::Range<u64>) {
    let mut mine = cfg.clone();
    let thread = Share::new(t as u64, threads as u64).expect("a thread of the swarm's");
    let block = take_bots(&mut mine, &thread, cfg.bots as u64, unit.max(1) as u64);
    mine.connect_rate = (cfg.connect_rate / threads as u32).max(1);
    (mine, block)
}

/// `share`'s block of `bots` bots, in whole `unit`s of them (rooms): the swarm's bot count and first client id; returns the range.
fn take_bots(cfg: &mut SwarmConfig, share: &Share, bots: u64, unit: u64) -> std::ops::Range<u64> {
    let units = share.range(bots.div_ceil(unit));
    let mine = (units.start * unit).min(bots)..(units.end * unit).min(bots);
    cfg.bots = (mine.end - mine.start) as usize;
    cfg.first_client_id += mine.start;
    mine
}

/// `--churn`, checked, as this worker's share: players leaving per second.
fn churn(a: &SwarmArgs, share: &Share) -> anyhow::Result<f64> {
    let churn = a.relay.churn;
    if !(churn.is_finite() && churn >= 0.0) {
        return Err(BadInput(format!("--churn: {churn} is not a rate of players per second")).into());
    }
    Ok(churn / share.of as f64)
}

/// A WebSocket server's address: `ws://HOST:PORT` (or `http://…`, or a bare `HOST:PORT`), or over TLS
/// `wss://HOST:PORT` (or `https://…`): the address, and the TLS name when there is one.
fn websocket_address(text: &str) -> anyhow::Result<(SocketAddr, Option<String>)> {
    let (bare, tls) = match ["wss://", "https://"].iter().find_map(|s| text.strip_prefix(s)) {
        Some(rest) => (rest, true),
        None => (text.strip_prefix("ws://").or_else(|| text.strip_prefix("http://")).unwrap_or(text), false),
    };
    let bare = bare.trim_end_matches('/');
    if bare.contains('/') {
        return Err(BadInput(format!("--server {text}: give the server's root (ws://HOST:PORT); paths go in the play or the script")).into());
    }
    let addr = address(bare, "server").map_err(|_| BadInput(format!("--server: {text:?} is not a WebSocket address such as ws://127.0.0.1:2567")))?;
    let host = bare.rsplit_once(':').map_or(bare, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
    Ok((addr, tls.then(|| host.to_string())))
}

/// What a Colyseus play tells beyond the counters: its room (for hints), the type it observes, and
/// what the server said to the bots it refused, failed or sent away.
struct Told {
    /// The Colyseus room the bots join (None: scripted bots, whose script names what they join).
    room: Option<String>,
    observe: Option<String>,
    failures: Arc<Mutex<Failures>>,
    received: Arc<Received>,
}

impl Told {
    fn failures(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs the swarm of `cfg.bots` bots on `--threads` threads, each with a block of whole `unit`s of them
/// (rooms in relay mode): `make(thread's config, its block of the process's bots)` makes a thread's
/// bots, on that thread.
fn run<B: Behaviour>(
    a: &SwarmArgs,
    cfg: SwarmConfig,
    unit: usize,
    mut spec: serde_json::Value,
    told: Option<Told>,
    make: impl Fn(&SwarmConfig, std::ops::Range<u64>) -> std::io::Result<B> + Sync,
) -> anyhow::Result<()> {
    if cfg.bots == 0 {
        return Err(BadInput("this worker's share is empty: fewer bots (or rooms) than workers".into()).into());
    }
    let units = cfg.bots.div_ceil(unit.max(1));
    let threads = crate::run::session::cores(a.threads).min(units);
    spec["threads"] = threads.into();
    let watch = ServerWatch::from_flags(a.server_metrics, a.server_pid);
    let budget = a.uplink;
    let SwarmSlo { service: slo, stages: stage_slo } = a.slo.clone().unwrap_or_default();
    let scripted = spec["behaviour"] == "script";
    // Bots whose way in is timed in stages: a script's (`stage()`), or the built-in bots' own.
    let staged = scripted || !B::STAGES.is_empty();
    if !staged && let Some(t) = stage_slo.first() {
        return Err(BadInput(format!("--slo {}: these bots have no stages (a script's `stage()`, Colyseus and relay bots have)", t.text())).into());
    }
    let metrics = metrics_server(a.common.metrics)?;
    let started_at = now_rfc3339();
    let server = cfg.server;
    if !a.common.quiet {
        let on = if threads > 1 { format!(" on {threads} threads") } else { String::new() };
        println!("swarm of {} bots against {server} for {:?}{on}", cfg.bots, cfg.duration);
    }
    let server_before = watch.map(ServerWatch::read).transpose()?;
    let live = a.live.map(|addr| Live::start(addr, "arena swarm", &spec, &started_at, &[B::DELAY, SESSIONS])).transpose()?;
    let rate = planned_rate(&spec);
    let mut kept = Kept::new(rate, a.server_pid);
    let make_swarm = |t: usize| {
        let (mine, block) = thread_block(&cfg, unit, t, threads);
        let bots = make(&mine, block)?;
        Swarm::new(mine, bots).map_err(|e| std::io::Error::new(e.kind(), format!("cannot open the swarm's sockets: {e}")))
    };
    let done = process::run(&a.common, "arena-swarm", metrics.as_ref(), |stop, on_interval| {
        run_threads(threads, make_swarm, stop, |iv: &SwarmInterval| {
            let record = kept.interval::<B>(iv);
            if let Some(live) = &live {
                feed_live::<B>(live, iv, &record);
                if scripted {
                    live.extra("script", super::named::script_extra(&kept.tally));
                } else if staged {
                    live.extra("funnel", serde_json::json!(super::funnel::Funnel::of(&kept.tally)));
                    live.extra("storm", serde_json::json!(super::storm::Storm::of(&kept.tally)));
                }
            }
            on_interval(iv, record);
        })
    })?;
    let (intervals, totals) = (&done.intervals, &done.totals);
    let mut ivs = done.records;
    if totals.round_trip.count == 0 {
        drop_round_trips(&mut ivs);
    }
    // The server may have died during the run: its figures are then unknown, and the result is written anyway.
    let server_after = watch.and_then(|w| match w.read() {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("warning: the server's figures after the run are unknown ({e:#}): it is gone");
            None
        }
    });
    let secs = totals.end_s.max(1e-9);
    let mut evidence = Evidence {
        swarm_cpu_pct: totals.busiest_thread_pct,
        swarm_lateness_p99_ms: ms(totals.timer_lateness.p99_ns),
        bytes_per_s: (totals.counters.bytes_in + totals.counters.bytes_out) as f64 / secs,
        bandwidth_budget: budget,
        queue_full: totals.counters.queue_full,
        service: Some(service::<B>(cfg.bots, intervals, (cfg.duration - cfg.drain).as_secs_f64(), totals, watch.is_some() && server_after.is_none())),
        slo,
        // Only aggro's own servers have a /metrics page.
        watch_flag: told.as_ref().map(|_| "--server-pid"),
        ..Evidence::default()
    };
    if let (Some(before), Some(after)) = (server_before, server_after) {
        // The server's own view replaces the swarm's where it has one.
        evidence.server_cpu_pct = Some((after.cpu_s - before.cpu_s) / secs * 100.0);
        evidence.server_kernel_drops = (after.kernel_drops - before.kernel_drops) as u64;
        if let (Some(b), Some(a)) = (before.bytes, after.bytes) {
            evidence.bytes_per_s = (a - b) / secs;
        }
        if let (Some(b), Some(a)) = (before.wait_s, after.wait_s) {
            evidence.server_wait_pct = Some((a - b) / secs * 100.0);
        }
        // The page read before the run began the window this covers.
        evidence.server_loop_max_ms = after.loop_max_s.map(|s| s * 1e3);
    }
    // The scripts' own measures over the whole run (none but a scripted swarm's).
    let whole = &kept.tally.whole;
    if let Some(service) = evidence.service.as_mut() {
        // Scripted bots' HTTP requests: answered ones are timed as `http`, failed ones counted by class.
        service.http_ok = whole.timed.iter().filter(|(n, _)| n == "http").map(|(_, h)| h.len()).sum();
        service.http_failed = whole.failed.iter().filter(|(n, _, _)| n == "http").map(|(_, _, k)| k).sum();
    }
    let mut verdict = judge(&evidence);
    if super::named::only_the_script_failed(&totals.counters) {
        // Not the server's absence: the script stopped every bot before it could join (the run exits 2).
        verdict.evidence =
            format!("no bot joined: the script stopped all {} before they could (script errors, not the server)", totals.counters.script_errors);
    }
    let failures = told.as_ref().map_or(Vec::new(), |t| t.failures().lines());
    let received = match told.as_ref() {
        // Scripted bots count by type on their own thread; the named measures carry it.
        Some(Told { room: None, .. }) => whole.received.clone(),
        Some(t) => t.received.by_type(),
        None => Vec::new(),
    };
    if let (Limit::Gone | Limit::Service, Some(text)) = (verdict.limit, told.as_ref().and_then(|t| t.failures().commonest().map(str::to_string))) {
        verdict.evidence += &format!(" — the server said: {text}");
    }
    let mut record = swarm_record::<B>(&spec, started_at, ivs, (intervals, totals), &verdict, (&failures, &received), done.interrupted);
    let mut notes = vec![format!("verdict: {:?} — {}", verdict.limit, verdict.evidence)];
    if staged {
        notes.extend(super::named::add(&mut record, &kept.tally));
        if scripted {
            record.extra["script"] = super::named::script_extra(&kept.tally);
        } else {
            record.extra["funnel"] = serde_json::json!(super::funnel::Funnel::of(&kept.tally));
            record.extra["storm"] = serde_json::json!(super::storm::Storm::of(&kept.tally));
        }
        if let Some(v) = super::funnel::judge(&stage_slo, &record, &mut notes, &verdict) {
            restate(&mut record, &mut notes, &mut verdict, v);
        }
        if let Some(v) = super::storm::Storm::of(&kept.tally).and_then(|s| s.judge(&verdict)) {
            restate(&mut record, &mut notes, &mut verdict, v);
        }
    }
    if let Some(v) =
        kept.soak.judge(intervals, (cfg.duration - cfg.drain).as_secs_f64(), a.leak_window.as_secs_f64(), &mut record, &mut notes, &verdict)
    {
        restate(&mut record, &mut notes, &mut verdict, v);
    }
    if !failures.is_empty() {
        notes.push(format!("failures, by what the server said: {}", failures.join("; ")));
    }
    if !received.is_empty() {
        notes.push(format!("messages received, by type: {}", received.iter().map(|(t, n)| format!("{t} {n}")).collect::<Vec<_>>().join(", ")));
    }
    match &told {
        _ if totals.counters.connects > 0 || scripted => {}
        Some(Told { room: Some(room), .. }) => {
            notes.push(format!("no bot joined a room: is a Colyseus server listening on ws://{server}, with the room {room:?} defined?"))
        }
        _ => notes.push(format!("no bot was accepted: is an arena server listening on {server}, with the same --secret?")),
    }
    if let Some(observe) =
        told.as_ref().and_then(|t| t.observe.as_deref()).filter(|_| totals.counters.connects > 0 && totals.counters.events_received == 0)
    {
        let others = match received.is_empty() {
            true => "none of any type did".to_string(),
            false => format!("types that did: {}", received.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>().join(", ")),
        };
        notes.push(format!("warning: no {observe:?} message arrived ({others}): is [observe] type the name the room broadcasts?"));
    }
    if let Some(live) = &live {
        live.finish(&record);
    }
    process::finish(&done.out, &record, totals, &notes)?;
    if done.interrupted {
        return Err(crate::exit::Interrupted.into());
    }
    if let Some(first) = whole.errors.first().filter(|_| super::named::only_the_script_failed(&totals.counters)) {
        return Err(BadInput(format!(
            "no bot joined and the server refused or failed none: the script stopped them ({first}); the result file was written"
        ))
        .into());
    }
    match verdict.limit {
        Limit::Gone => anyhow::bail!("the server is gone: {} (the result file was written)", verdict.evidence),
        Limit::Service | Limit::Leak => Err(crate::exit::ThresholdsFailed(format!("{} (the result file was written)", verdict.evidence)).into()),
        _ => Ok(()),
    }
}

/// Replaces the run's verdict with `new`: in the first note, which states it, and in the result.
fn restate(record: &mut aggro_report::record::RunRecord, notes: &mut [String], verdict: &mut Verdict, new: Verdict) {
    *verdict = new;
    notes[0] = format!("verdict: {:?} — {}", verdict.limit, verdict.evidence);
    record.extra[super::record::SWARM]["verdict"] = serde_json::json!(verdict);
}

/// The bots' planned ticks per second, from the run's spec.
fn planned_rate(spec: &serde_json::Value) -> Option<f64> {
    let tick_s = spec["swarm"]["tick_every"].as_f64().filter(|t| *t > 0.0);
    tick_s.zip(spec["swarm"]["bots"].as_f64()).map(|(t, b)| b / t)
}

/// `--live`: the swarm's report served while it plays — each interval (its `record`), and its figures
/// merged into the running totals (delay and sessions).
fn feed_live<B: Behaviour>(live: &Live, iv: &SwarmInterval, record: &IntervalRecord) {
    let mut merged = aggro_stats::Recorder::new(2);
    merged.ops[0] = timed(&iv.histograms[0]);
    merged.ops[1] = sessions::<B>(&iv.counters);
    live.interval(record, &merged);
}

/// What the players got, from the swarm's totals: a Colyseus join the matchmaker refused failed too (a
/// relay's full room is only asked again); `server_died` when the watched server was gone at the end;
/// the state rate from the intervals before `quiet_s` (the drain, when bots play no more).
fn service<B: Behaviour>(asked: usize, intervals: &[SwarmInterval], quiet_s: f64, totals: &SwarmInterval, server_died: bool) -> Service {
    let c = &totals.counters;
    let refused = if B::REFUSALS_FAIL { c.refused } else { 0 };
    let playing: Vec<&SwarmInterval> = intervals.iter().filter(|iv| iv.end_s <= quiet_s + 1e-3).collect();
    let (state_per_bot_s, state_best_per_bot_s) = state_rate(&playing);
    Service {
        state_per_bot_s,
        state_best_per_bot_s,
        asked: if B::SEATS_EVERY_BOT { asked as u64 } else { 0 },
        seated_peak: totals.active_bots,
        joined: c.connects,
        failed_joins: c.failed_joins + refused,
        disconnects: c.disconnects,
        lost: c.reliable_missing + c.unreliable_lost,
        delivered: c.events_received,
        delay_p99_ms: ms(totals.delay.p99_ns),
        delay_events: totals.delay.count,
        server_died,
        // Filled in from the scripts' named measures, which only scripted swarms have.
        http_ok: 0,
        http_failed: 0,
    }
}

/// State updates per bot per second: the mean over the intervals with at least 95 % of the most bots
/// ever seated (full load), and the most any interval got (what the server sends while it keeps up).
fn state_rate(intervals: &[&SwarmInterval]) -> (f64, f64) {
    let most = intervals.iter().map(|iv| iv.active_bots).max().unwrap_or(0);
    let best = intervals.iter().map(|iv| iv.snapshots_per_bot_s).fold(0.0, f64::max);
    let full: Vec<f64> = intervals.iter().filter(|iv| most > 0 && iv.active_bots * 100 >= most * 95).map(|iv| iv.snapshots_per_bot_s).collect();
    if full.is_empty() {
        return (0.0, 0.0);
    }
    (full.iter().sum::<f64>() / full.len() as f64, best)
}

impl Reported for SwarmInterval {
    type Counters = SwarmCounters;

    fn line(&self) -> String {
        let (d, c) = (self.delay, &self.counters);
        // No message carried a sender, a number and a send time: nothing was timed, and 0.0 ms would read as instant.
        let delay = match d.count {
            0 => "delay not checked (no message carried from/seq/t)".to_string(),
            n => format!("delay p50 {:.1} p99 {:.1} ms ({n} events)", ms(d.p50_ns), ms(d.p99_ns)),
        };
        let mut s = format!(
            "{:7.1}s  bots {:5}  {delay} | tick lateness p99 {:.2} ms | {:.1} kB/s in per bot | cpu {:.0}%",
            self.end_s,
            self.active_bots,
            ms(self.timer_lateness.p99_ns),
            self.kb_in_per_bot_s,
            self.cpu_pct,
        );
        if c.joins + c.refused + c.failed_joins > 0 {
            s.push_str(&format!(" | joins {} refused {} failed {}", c.joins, c.refused, c.failed_joins));
        }
        // State patches are a Colyseus room's: other swarms receive none.
        if self.snapshots_per_bot_s > 0.0 {
            s.push_str(&format!(" | patches {:.1}/s per bot", self.snapshots_per_bot_s));
        }
        if self.round_trip.count > 0 {
            let r = self.round_trip;
            s.push_str(&format!(" | round trip p50 {:.1} p99 {:.1} ms ({} replies)", ms(r.p50_ns), ms(r.p99_ns), r.count));
        }
        if c.net_held > 0 {
            s.push_str(&format!(
                " | --net held {} messages {:.1} ms each on average (one way), {} of them lost and retransmitted",
                c.net_held,
                c.net_added_us as f64 / c.net_held as f64 / 1000.0,
                c.net_retransmitted
            ));
        }
        if c.retried_opens > 0 {
            s.push_str(&format!(" | {} connections retransmitted while opening (the server's listen queue overflowed?)", c.retried_opens));
        }
        if c.events_sent > 0 {
            s.push_str(&format!(
                " | events {} sent {} received, reliable disorder {} missing {}, unreliable lost {}",
                c.events_sent, c.events_received, c.reliable_disorder, c.reliable_missing, c.unreliable_lost
            ));
        }
        if let Some(rate) = self.join_rate {
            s.push_str(&format!(" | joining at {rate:.0}/s"));
        }
        if let Some(news) = &self.join_news {
            s.push_str(&format!("\n  {news}"));
        }
        if let Some(w) = &self.warning {
            s.push_str("\n  warning: ");
            s.push_str(w);
        }
        s
    }

    fn live(&self) -> (SwarmCounters, f64, f64) {
        (self.counters, self.cpu_pct, self.end_s - self.start_s)
    }

    fn exposition(&self, total: &SwarmCounters, cpu_s: f64) -> String {
        exposition(total, cpu_s, self)
    }
}

/// The swarm's run in aggro's result format, its intervals' records `ivs` ([`Kept`]): the operation is the
/// behaviour's delay; lag is timer lateness.
pub fn swarm_record<B: Behaviour>(
    spec: &serde_json::Value,
    started_at: String,
    ivs: Vec<IntervalRecord>,
    (intervals, totals): (&[SwarmInterval], &SwarmInterval),
    verdict: &Verdict,
    (failures, received): (&[String], &[(String, u64)]),
    interrupted: bool,
) -> aggro_report::record::RunRecord {
    // A play that names replies times its round trips: an operation of their own.
    let round_trips = totals.round_trip.count > 0;
    let w = Whole {
        command: "arena swarm",
        spec: spec.clone(),
        started_at,
        operations: [B::DELAY, SESSIONS].into_iter().chain(round_trips.then_some(ROUND_TRIP)).map(String::from).collect(),
        totals: [op(B::DELAY, &totals.histograms[0]), OpRecord::from_stats(SESSIONS, &sessions::<B>(&totals.counters))]
            .into_iter()
            .chain(round_trips.then(|| op(ROUND_TRIP, &totals.histograms[2])))
            .collect(),
        lag: totals.timer_lateness,
        count: totals.counters.packets_out,
        elapsed_s: totals.end_s,
        stop_kind: if interrupted { "interrupted" } else { "completed" },
        stop_message: if interrupted { "stopped by a signal".into() } else { "the duration passed".into() },
        generator_bound: intervals.iter().any(|iv| iv.warning.is_some()),
        extra: serde_json::json!({ super::record::SWARM: { "intervals": intervals, "totals": totals, "verdict": verdict, "failures": failures, "received": received } }),
    };
    run_record(w, ivs)
}

/// A socket address argument (host:port), or bad input.
fn address(text: &str, what: &str) -> anyhow::Result<SocketAddr> {
    crate::cli::values::address(text).map_err(|e| BadInput(format!("--{what}: {e}")).into())
}
