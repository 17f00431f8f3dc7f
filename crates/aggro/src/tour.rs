//! `aggro run`: the main job, on an embedded database in a temporary
//! directory, no server needed.
//!
//! Today it drives the seed-001 trio (write, consistent-read, read) against
//! aggro's own embedded engine, stackdb, then verifies the store against what
//! the runs committed. The MMO player-minute test replaces the trio once it
//! lands (see the issues); the shape of the job — populate, drive at a rate,
//! verify, report — stays.

use crate::cli::{DataArgs, DriveArgs, MobileCommand, PopulateArgs, RunArgs, TourArgs, VerifyArgs};
use anyhow::Context;

/// The tour's steps: workload and rate (requests per second).
const STEPS: [(&str, &str); 3] = [("write", "1000"), ("consistent-read", "500"), ("read", "5000")];

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
    let data = DataArgs {
        target: format!("stackdb:{}", dir.join("world").display()),
        users: a.users,
        spread: "none".into(),
    };
    println!("aggro run: the mobile-game transactions of seed 001 on stackdb (aggro's embedded engine) in {}", dir.display());
    crate::mobile::main(MobileCommand::Populate(PopulateArgs { data: data.clone() }))?;
    let mut results = Vec::new();
    for (workload, rate) in STEPS {
        let out = dir.join(format!("{workload}.json"));
        println!("\n== {workload} at {rate}/s for {}", a.duration);
        crate::mobile::main(MobileCommand::Run(RunArgs {
            drive: DriveArgs {
                data: data.clone(),
                workload: workload.into(),
                loaders: 8,
                pacing: "even".into(),
                interval: "5s".into(),
                stop_on_backlog: "rate".into(),
                drain: "10s".into(),
                seed: Some(1),
                threads: 0,
                quiet: false,
                per_loader: false,
            },
            rate: rate.into(),
            stages: None,
            duration: a.duration.clone(),
            requests: None,
            out: Some(out.clone()),
            csv: None,
        }))?;
        results.push(out);
    }
    println!("\n== verify: every committed transaction is in the store, nothing else is");
    crate::mobile::main(MobileCommand::Verify(VerifyArgs { data, results }))?;
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
