//! `aggro run`: the main job — the MMO player-minute benchmark of Versant's paper
//! on aggro's embedded engine (stackdb, synced commits) in a temporary
//! directory, no server needed: populate, the login test, one zone of 250
//! players, two zones at once, verify.

use crate::mmo;
use crate::mmo::args::{LoginArgs, LoginClients, MmoRunArgs, MmoVerifyArgs, PlayArgs, WorldArgs};
use aggro_workloads::mmo::book::TimeSplit;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

pub fn main(a: TourArgs) -> anyhow::Result<()> {
    let temp;
    let dir = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempdir()?;
            temp.0.clone()
        }
    };
    let target = crate::cli::target::parse(&format!("stackdb:{}", dir.join("world").display())).map_err(|e| anyhow::anyhow!(e))?;
    let world = WorldArgs { target, accounts: Some(a.accounts), world_seed: Some(1) };
    println!("aggro run: the MMO player-minute benchmark of Versant's paper on stackdb, aggro's embedded engine, in {}\n", dir.display());
    let populated = mmo::populate::populate(&world)?;
    let run = |name: &str| MmoRunArgs {
        world: world.clone(),
        seed: Some(1),
        interval: Duration::from_secs(5),
        threads: 0,
        out: Some(dir.join(format!("{name}.json"))),
        quiet: false,
    };
    println!("\n== the login test: 4 clients × {} logins", a.logins);
    let login = mmo::login::main(LoginArgs { run: MmoRunArgs { quiet: true, ..run("login") }, clients: LoginClients::Count(4), logins: a.logins })?;
    let play = |name: &str, clients: u32, periods: u64| PlayArgs {
        run: run(name),
        players: 250,
        clients,
        periods,
        profile: None,
        realtime: false,
        duration: Duration::from_secs(600),
        game_minute: Duration::from_secs(60),
        lease: Duration::from_secs(300),
        table_every: (periods * clients as u64 / 2).max(1),
        max_errors: 0.0,
        live: None,
        shard: Default::default(),
    };
    println!("\n== the game operations test: one zone of 250 players, {} periods (the paper's profile)", a.periods);
    let one = mmo::play::main(play("play-1-zone", 1, a.periods))?;
    println!("\n== two zones of 250 players at once, {} periods each (the paper's two-client test)", a.periods / 2);
    let two = mmo::play::main(play("play-2-zones", 2, a.periods / 2))?;
    println!("\n== verify: no item duplicated or orphaned, counts and the clients' ledger agree, no lease held");
    mmo::verify::main(MmoVerifyArgs { world: world.clone(), results: vec![dir.join("play-1-zone.json"), dir.join("play-2-zones.json")] })?;
    let ratio = |r: &aggro_report::RunRecord| r.extra["mmo_play"]["player_minute_ratio"].as_f64().unwrap_or(0.0);
    let period = |r: &aggro_report::RunRecord| r.extra["mmo_play"]["mean_period_ms"].as_f64().unwrap_or(0.0);
    let shape = |r: &aggro_report::RunRecord| {
        let p = &r.extra["mmo_play"];
        let time = serde_json::from_value::<TimeSplit>(p["time"].clone()).map_or(String::new(), |t| format!("; {}", t.describe()));
        format!(
            "median {:.2}ms, longest {:.0}ms, Checkpoint {:.0}% of the time{time}",
            p["median_period_ms"].as_f64().unwrap_or(0.0),
            p["max_period_ms"].as_f64().unwrap_or(0.0),
            p["checkpoint_share"].as_f64().unwrap_or(0.0) * 100.0
        )
    };
    let logins = login.extra["mmo_login"]["logins_per_s"].as_f64().unwrap_or(0.0);
    println!("\n== summary (stackdb, every push and lease a synced commit; the paper: Versant on a 2008 quad-core with one disk)");
    println!("population     {:>10.0} items/s", populated.items_per_s);
    println!("login test     {logins:>10.0} logins/s        (paper: ~4,000 with 8 clients)");
    println!(
        "one zone       {:>10.0} player-minutes per minute, mean period {:.2}ms (paper: 340, 176 ms) → ~{:.0} players per server, extrapolated",
        ratio(&one),
        period(&one),
        250.0 * ratio(&one)
    );
    println!("                           periods: {}", shape(&one));
    println!(
        "two zones      {:>10.0} player-minutes per minute, mean period {:.2}ms, {:.2}× one zone (paper: 280, 417–424 ms, 0.82×)",
        ratio(&two),
        period(&two),
        ratio(&two) / ratio(&one).max(1.0)
    );
    println!("                           periods: {}", shape(&two));
    if a.dir.is_some() {
        println!("results kept in {}", dir.display());
    }
    Ok(())
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> anyhow::Result<TempDir> {
    let base = std::env::temp_dir().join(format!("aggro-run-{}", std::process::id()));
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
    Ok(TempDir(base))
}

#[derive(Debug, Args)]
pub struct TourArgs {
    /// Accounts in the temporary world (5 players and 500 items each).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub accounts: u32,
    /// Periods of the one-zone play test (the two-zone test runs half as many per zone).
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(2..))]
    pub periods: u64,
    /// Logins per client in the login test (4 clients).
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub logins: u64,
    /// Keep the database and results here instead of a temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}
