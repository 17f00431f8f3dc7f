//! `aggro mmo play`: the game operations test.
//!
//! Each client is a zone of `--players` players, filled (login + load,
//! leased) before the first period. Closed loop by default: the executor
//! hands out `periods × clients` periods and each zone runs its next as soon
//! as its last ends; `--realtime` paces one period per game-minute per zone
//! through the same executor, open loop, and reports latency and backlog.

use super::target::{on_target, owner_id, preflight};
use crate::console::Verbosity;
use crate::exit::BadInput;
use crate::mmo::args::PlayArgs;
use crate::run::Run;
use crate::run::session;
use aggro_core::mmo::{MmoConn, MmoTarget, WorldSpec};
use aggro_core::world::WorldRecord;
use aggro_core::{ErrorSamples, Pacing, RatePlan};
use aggro_report::RunRecord;
use aggro_runner::{BacklogRule, Placement, RunPlan, StopHandle, TimerMode};
use aggro_targets::MmoVisitor;
use aggro_workloads::mmo::book::{PeriodBook, PlaySummary, summary_lines};
use aggro_workloads::mmo::{ItemLedger, OPERATIONS, PeriodLoader, Profile, Zone};
use std::path::PathBuf;
use std::sync::Arc;

/// Everything a play run needs, resolved; recorded in the result.
#[derive(Clone, Debug, serde::Serialize)]
struct PlaySpec {
    world: WorldSpec,
    profile: Profile,
    players: u32,
    clients: u32,
    /// The zones this process runs: all of them, or a worker's share (`--worker`).
    zones: Vec<u32>,
    periods_per_client: u64,
    realtime: bool,
    game_minute_ns: u64,
    lease_ms: u64,
    seed: u64,
}

struct Play {
    spec: PlaySpec,
    /// The store's record of the world, if it has one.
    world_record: Option<WorldRecord>,
    plan: RunPlan,
    threads: usize,
    quiet: bool,
    table_every: u64,
    /// Largest share of failed periods, in %, that still gives a capacity figure.
    max_errors: f64,
    out: PathBuf,
    start_at: Option<std::time::SystemTime>,
    live: Option<std::net::SocketAddr>,
}

impl Play {
    /// What a play run prints once its result is written: the paper's summary, the capacity figure (or why
    /// there is none), and any zone that could not release its players.
    fn print_outcome(&self, summary: &PlaySummary, record: &RunRecord, shutdown_errors: &[String]) {
        let s = &self.spec;
        let extrapolated = s.players as f64 * summary.player_minute_ratio;
        println!();
        for line in summary_lines(summary) {
            println!("{line}");
        }
        println!(
            "Periods= {}  Players= {}  Items= {}  GuildLoaded= {}  Logins= {}  lease refusals= {}  objects pushed= {}",
            summary.periods,
            summary.players,
            summary.items,
            summary.counts.guilds_loaded,
            summary.counts.logins,
            summary.counts.lease_refusals,
            summary.counts.objects_pushed
        );
        let failed = Failed::of(record);
        if s.realtime {
            session::print_summary(record);
        } else {
            println!("mean period {:.2}ms over {} periods{}", summary.mean_period_ms, summary.periods, failed.note());
            println!(
                "median period {:.2}ms, longest {:.2}ms; Checkpoint took {:.0}% of the period time",
                summary.median_period_ms,
                summary.max_period_ms,
                summary.checkpoint_share * 100.0
            );
            if failed.share() * 100.0 > self.max_errors {
                println!(
                    "no capacity figure: {} — more than the {}% --max-errors allows; a store that fails its players has no player-minutes to give",
                    failed.describe(),
                    self.max_errors
                );
            } else {
                println!(
                    "the store ran {:.0} player-minutes per minute ({} zone(s) of {} players, 60 s ÷ each zone's mean period, summed){}",
                    summary.player_minute_ratio,
                    s.zones.len(),
                    s.players,
                    failed.note()
                );
                println!(
                    "extrapolated: {:.0} players per server ({} players × {:.0}) — an extrapolation from a {}-player zone, not a measurement of that many players",
                    extrapolated, s.players, summary.player_minute_ratio, s.players
                );
            }
            for line in zone_lines(summary) {
                println!("{line}");
            }
            println!("{}", record.stop_message);
            for e in &record.error_samples {
                println!("first {} error: {}", e.class, e.message);
            }
        }
        for e in shutdown_errors {
            println!("warning: a zone could not release its players at the end: {e}");
        }
    }
}

/// Each zone's share of the player-minutes and, for zones on threads of their own, where their time
/// went: a zone waiting on the store, not on a core or its own work, means the store is the limit.
fn zone_lines(summary: &PlaySummary) -> Vec<String> {
    let mut lines = Vec::new();
    if summary.zones.len() > 1 {
        for z in summary.zones.iter().take(16) {
            let time = z.time.map_or(String::new(), |t| format!("; {}", t.describe()));
            lines.push(format!(
                "zone {}: {} periods, mean {:.2}ms, {:.0} player-minutes per minute ({:.0}% of the total){time}",
                z.zone,
                z.periods,
                z.mean_period_ms,
                z.player_minute_ratio,
                z.share * 100.0
            ));
        }
        if summary.zones.len() > 16 {
            lines.push(format!("… and {} zones more (every zone in the result file)", summary.zones.len() - 16));
        }
    }
    if let Some(t) = summary.time {
        let limit = if t.waiting_on_store > t.waiting_for_core.max(0.1) {
            " — the store, not the zones' cores, held them back"
        } else if t.waiting_for_core > t.waiting_on_store.max(0.1) {
            " — the machine's cores, not the store, held them back"
        } else {
            ""
        };
        lines.push(format!("the zones' time: {}{limit}", t.describe()));
    }
    lines
}

/// Connects, logs in, loads and leases each zone's players: one loader per zone. The first connection
/// checks the store and logs the run.
async fn fill_zones<T: MmoTarget>(
    s: &PlaySpec,
    target: &T,
    profile: &Profile,
    book: &Arc<PeriodBook>,
    samples: &Arc<ErrorSamples>,
) -> anyhow::Result<(Vec<PeriodLoader<T::Conn>>, String)> {
    let mut loaders = Vec::new();
    let mut run_id = String::new();
    for &i in &s.zones {
        let mut conn = target.connect().await.map_err(|e| crate::exit::store_error(format_args!("zone {i}"), e))?;
        if loaders.is_empty() {
            preflight(&mut conn, target, &s.world).await?;
            run_id = crate::world::log_run(target, &target.describe(), "mmo", "mmo play", "play", true).await?;
        }
        let mut zone = Zone::new(conn, s.world, owner_id(i), s.lease_ms, s.seed ^ (i as u64) << 40);
        zone.fill(s.players as usize).await.map_err(|e| crate::exit::store_error(format_args!("filling zone {i}"), e))?;
        loaders.push(PeriodLoader::new(i as usize, zone, profile.clone(), Arc::clone(book), Arc::clone(samples), target.blocking()));
    }
    Ok((loaders, run_id))
}

/// A clean shutdown: every zone writes what is dirty and releases its leases. Returns the items each
/// player's account gained or lost in committed pushes and what pushes in doubt may have added, and the
/// zones' shutdown errors.
async fn shut_down<C: MmoConn>(loaders: &mut [PeriodLoader<C>]) -> (ItemLedger, Vec<String>) {
    let mut ledger = ItemLedger::default();
    let mut shutdown_errors = Vec::new();
    for loader in loaders {
        if let Err(e) = loader.zone_mut().shutdown().await {
            shutdown_errors.push(e.to_string());
        }
        ledger.add(&loader.zone().ledger);
    }
    (ledger, shutdown_errors)
}

impl MmoVisitor for Play {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MmoTarget>(mut self, target: T) -> anyhow::Result<RunRecord> {
        let s = &self.spec;
        self.plan.placement = if target.blocking() { Placement::Threads } else { Placement::Tasks };
        let samples = Arc::new(ErrorSamples::default());
        let quiet = self.quiet;
        let book = Arc::new(PeriodBook::new(
            Box::new(move |l| {
                if !quiet {
                    println!("{l}")
                }
            }),
            self.table_every,
        ));
        let profile = s.profile.scaled_to(s.players);
        println!(
            "aggro mmo play: {} zone(s) of {} players on {}, {}, seed {}",
            s.zones.len(),
            s.players,
            target.describe(),
            if s.realtime {
                format!("one period per {:.1}s game-minute per zone", s.game_minute_ns as f64 / 1e9)
            } else {
                format!("{} periods per zone, back to back", s.periods_per_client)
            },
            s.seed
        );
        let started = std::time::Instant::now();
        let (loaders, run_id) = fill_zones(s, &target, &profile, &book, &samples).await?;
        let fill_s = started.elapsed().as_secs_f64();
        println!("{} players logged in, loaded and leased in {fill_s:.2}s", s.players as usize * s.zones.len());
        let stop = StopHandle::new();
        stop.stop_on_signals();
        let run = Run {
            command: "mmo play",
            spec: serde_json::json!({ "play": s, "plan": self.plan, "target": target.describe() }),
            names: &OPERATIONS,
            plan: &self.plan,
            verbosity: Verbosity { quiet: self.quiet || !s.realtime },
            samples: &samples,
            threads: self.threads,
            start_at: self.start_at,
            live: self.live,
        };
        let (mut outcome, mut record) = run.go(loaders, &stop).await?;
        let (ledger, shutdown_errors) = shut_down(&mut outcome.loaders).await;
        let summary = book.summary(&outcome.totals);
        let ledger_complete = outcome.loaders.len() == s.zones.len() && shutdown_errors.is_empty();
        let extrapolated = s.players as f64 * summary.player_minute_ratio;
        record.world = self.world_record.take();
        record.run_ids = vec![run_id];
        record.extra = serde_json::json!({ "mmo_play": {
            "player_minute_ratio": summary.player_minute_ratio,
            "extrapolated_players_per_server": extrapolated,
            "mean_period_ms": summary.mean_period_ms,
            "median_period_ms": summary.median_period_ms,
            "max_period_ms": summary.max_period_ms,
            "checkpoint_share": summary.checkpoint_share,
            "zones": summary.zones,
            "time": summary.time,
            "periods": summary.periods,
            "fill_seconds": fill_s,
            "counts": summary.counts,
            "table": summary.table,
            "committed_items": ledger.committed,
            "items_in_doubt": ledger.in_doubt,
            "ledger_complete": ledger_complete,
            "shutdown_errors": shutdown_errors,
        }});
        drop(outcome);
        crate::run::drive::note_nodes(&mut record, target.nodes());
        session::write(&record, &self.out, &session::Exports::default())?;
        self.print_outcome(&summary, &record, &shutdown_errors);
        println!("result: {}", self.out.display());
        Ok(record)
    }
}

/// Runs `aggro mmo play`; returns the result record.
pub fn main(a: PlayArgs) -> anyhow::Result<RunRecord> {
    let profile = match &a.profile {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| BadInput(format!("cannot read {}: {e}", path.display())))?;
            Profile::from_toml(&text).map_err(|e| BadInput(format!("{}: {e}", path.display())))?
        }
        None => Profile::paper(),
    };
    let interval_ns = a.run.interval.as_nanos() as u64;
    let duration_ns = a.duration.as_nanos() as u64;
    let game_minute_ns = a.game_minute.as_nanos() as u64;
    let lease_ms = a.lease.as_millis() as u64;
    if lease_ms == 0 {
        return Err(BadInput("--lease must be at least 1ms".into()).into());
    }
    let share = a.shard.worker.unwrap_or_default();
    let (start_at, live) = (a.shard.start_at, a.live);
    if share.of > 1 && a.run.seed.is_none() {
        return Err(BadInput("--worker needs --seed: every shard of a run must play the same zones the same way".into()).into());
    }
    let zones: Vec<u32> = (0..a.clients).filter(|&z| u64::from(z) % share.of == share.index).collect();
    if zones.is_empty() {
        return Err(BadInput(format!("--worker {}: this shard's share of {} zones is empty", share.index + 1, a.clients)).into());
    }
    let rt = session::runtime(a.run.threads)?;
    let (world, world_record) = super::target::settle_world(&rt, &a.run.world)?;
    if a.players as u64 * a.clients as u64 > world.players() as u64 / 2 {
        return Err(BadInput(format!(
            "{} zones of {} players need a world of more than {} players; this one has {} (populate more --accounts)",
            a.clients,
            a.players,
            2 * a.players as u64 * a.clients as u64,
            world.players()
        ))
        .into());
    }
    let seed = session::seed_or_clock(a.run.seed);
    let rate =
        if a.realtime { RatePlan::fixed(a.clients as f64 * 1e9 / game_minute_ns as f64, duration_ns) } else { RatePlan::Max { duration_ns: None } };
    let plan = RunPlan {
        rate,
        pacing: Pacing::Even,
        limit: (!a.realtime).then_some(a.periods * a.clients as u64),
        interval_ns,
        backlog_rule: BacklogRule::Off,
        drain_ns: game_minute_ns.max(10_000_000_000),
        seed,
        placement: Placement::Tasks,
        share,
        timer: TimerMode::default(),
        per_loader: false,
        each_loader_limit: None,
        // A loader is a zone: its periods are its own players'.
        keep_stripes: true,
    };
    let play = Play {
        spec: PlaySpec {
            world,
            profile,
            players: a.players,
            clients: a.clients,
            zones,
            periods_per_client: a.periods,
            realtime: a.realtime,
            game_minute_ns,
            lease_ms,
            seed,
        },
        plan,
        threads: a.run.threads,
        quiet: a.run.quiet,
        table_every: a.table_every,
        max_errors: a.max_errors,
        out: session::result_path(a.run.out.clone(), "mmo-play")?,
        start_at,
        live,
        world_record,
    };
    let record = rt.block_on(on_target(&a.run.world.target, play))?;
    crate::run::drive::unless_interrupted(&record)?;
    let failed = Failed::of(&record);
    if record.stop_reason.get("kind").and_then(|k| k.as_str()) == Some("failing") {
        anyhow::bail!("{}: {} (the result file was written)", record.stop_message, failed.describe());
    }
    if failed.share() * 100.0 > a.max_errors {
        let why = format!("{} (more than --max-errors {}%; the result file was written)", failed.describe(), a.max_errors);
        return Err(crate::exit::ThresholdsFailed(why).into());
    }
    Ok(record)
}

/// The periods of a run in which an action failed.
struct Failed {
    periods: u64,
    of: u64,
}

impl Failed {
    fn of(record: &RunRecord) -> Failed {
        let t = record.totals.first();
        Failed { periods: t.map_or(0, |t| t.errors), of: t.map_or(0, |t| t.ok + t.errors + t.conflicts) }
    }

    fn share(&self) -> f64 {
        if self.of == 0 { 0.0 } else { self.periods as f64 / self.of as f64 }
    }

    fn describe(&self) -> String {
        format!("{} of {} periods ({:.1}%) had a failed action", self.periods, self.of, self.share() * 100.0)
    }

    /// Said after every figure the failures colour; nothing when none failed.
    fn note(&self) -> String {
        if self.periods == 0 { String::new() } else { format!(" — {}", self.describe()) }
    }
}
