//! `aggro mmo login`: the login test. `--clients auto` doubles the clients
//! until logins/s stops rising by 5% (the paper added clients until the
//! server's CPU reached ~80%).

use super::target::{on_target, preflight};
use crate::console::Verbosity;
use crate::mmo::args::{LoginArgs, LoginClients};
use crate::run::Run;
use crate::run::session;
use aggro_core::mmo::{MmoTarget, WorldSpec};
use aggro_core::world::WorldRecord;
use aggro_core::{ErrorSamples, Pacing, RatePlan};
use aggro_report::RunRecord;
use aggro_runner::{BacklogRule, Placement, RunPlan, StopHandle};
use aggro_targets::MmoVisitor;
use aggro_workloads::mmo::LoginLoader;
use std::path::PathBuf;
use std::sync::Arc;

const OPS: [&str; 1] = ["login"];
/// Most clients `auto` tries.
const AUTO_LIMIT: u32 = 256;

struct Login {
    world: WorldSpec,
    /// The store's record of that world, if it has one.
    world_record: Option<WorldRecord>,
    clients: Option<u32>,
    logins: u64,
    seed: u64,
    interval_ns: u64,
    threads: usize,
    quiet: bool,
    out: PathBuf,
}

/// One trial's headline.
#[derive(Clone, Debug, serde::Serialize)]
struct Trial {
    clients: u32,
    logins_per_s: f64,
    p99_ms: f64,
}

impl Login {
    async fn trial<T: MmoTarget>(&self, target: &T, clients: u32) -> anyhow::Result<(RunRecord, Trial)> {
        let samples = Arc::new(ErrorSamples::default());
        let mut loaders = Vec::new();
        for i in 0..clients {
            let mut conn = target.connect().await.map_err(|e| crate::exit::store_error(format_args!("client {i}"), e))?;
            if i == 0 {
                preflight(&mut conn, target, &self.world).await?;
            }
            loaders.push(LoginLoader::new(conn, &self.world, self.seed ^ clients as u64, Arc::clone(&samples)));
        }
        let plan = RunPlan {
            rate: RatePlan::Max { duration_ns: None },
            pacing: Pacing::Even,
            limit: Some(clients as u64 * self.logins),
            interval_ns: self.interval_ns,
            backlog_rule: BacklogRule::Off,
            drain_ns: 10_000_000_000,
            seed: self.seed,
            placement: if target.blocking() { Placement::Threads } else { Placement::Tasks },
            share: aggro_core::Share::WHOLE,
            timer: aggro_runner::TimerMode::default(),
            per_loader: false,
            each_loader_limit: None,
            keep_stripes: false,
        };
        let stop = StopHandle::new();
        stop.stop_on_signals();
        let spec = serde_json::json!({ "world": self.world, "clients": clients, "logins_per_client": self.logins, "plan": plan, "target": target.describe() });
        let run = Run {
            command: "mmo login",
            spec,
            names: &OPS,
            plan: &plan,
            verbosity: Verbosity { quiet: true },
            samples: &samples,
            threads: self.threads,
            start_at: None,
            live: None,
        };
        let (_, mut record) = run.go(loaders, &stop).await?;
        record.world = self.world_record.clone();
        let ok = record.totals[0].ok;
        let trial = Trial { clients, logins_per_s: ok as f64 / record.elapsed_s.max(1e-9), p99_ms: record.totals[0].latency.p99_ns as f64 / 1e6 };
        if !self.quiet {
            println!("{clients:>4} clients: {:>9.0} logins/s, p99 {:.3}ms", trial.logins_per_s, trial.p99_ms);
        }
        Ok((record, trial))
    }
}

impl MmoVisitor for Login {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MmoTarget>(self, target: T) -> anyhow::Result<RunRecord> {
        println!("aggro mmo login: {} logins per client on {}, {} accounts", self.logins, target.describe(), self.world.accounts);
        let mut trials = Vec::new();
        let (mut record, first) = self.trial(&target, self.clients.unwrap_or(1)).await?;
        let mut best = first.clone();
        trials.push(first);
        if self.clients.is_none() {
            let mut n = 2;
            while n <= AUTO_LIMIT {
                let (r, t) = self.trial(&target, n).await?;
                trials.push(t.clone());
                let rising = t.logins_per_s > best.logins_per_s * 1.05;
                if t.logins_per_s > best.logins_per_s {
                    best = t;
                    record = r;
                }
                if !rising {
                    break;
                }
                n *= 2;
            }
            println!("throughput stopped rising: best {:.0} logins/s with {} clients", best.logins_per_s, best.clients);
        }
        record.extra = serde_json::json!({ "mmo_login": { "logins_per_s": best.logins_per_s, "clients": best.clients, "trials": trials } });
        session::write(&record, &self.out, &session::Exports::default())?;
        session::print_summary(&record);
        println!("{:.0} logins/s with {} clients", best.logins_per_s, best.clients);
        println!("result: {}", self.out.display());
        Ok(record)
    }
}

/// Runs `aggro mmo login`; returns the result record (the best trial).
pub fn main(a: LoginArgs) -> anyhow::Result<RunRecord> {
    let clients = match a.clients {
        LoginClients::Auto => None,
        LoginClients::Count(n) => Some(n),
    };
    let interval_ns = a.run.interval.as_nanos() as u64;
    let rt = session::runtime(a.run.threads)?;
    let (world, world_record) = super::target::settle_world(&rt, &a.run.world)?;
    let login = Login {
        world,
        world_record,
        clients,
        logins: a.logins,
        seed: session::seed_or_clock(a.run.seed),
        interval_ns,
        threads: a.run.threads,
        quiet: a.run.quiet,
        out: session::result_path(a.run.out.clone(), "mmo-login")?,
    };
    let record = rt.block_on(on_target(&a.run.world.target, login))?;
    crate::run::drive::unless_interrupted(&record)?;
    let errors = record.totals.first().map_or(0, |t| t.errors);
    if errors > 0 {
        anyhow::bail!("{errors} logins failed (the result file was written)");
    }
    Ok(record)
}
