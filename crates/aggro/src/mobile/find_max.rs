//! `aggro mobile find-max`: the highest rate with backlog 0 and p99 under a bound.

use super::spec::{self, DriveSpec};
use super::target::{connect_loaders, on_target};
use crate::mobile::args::FindMaxArgs;
use crate::run::find_max::FindMax;
use crate::run::session;
use aggro_core::ErrorSamples;
use aggro_core::mobile::MobileTarget;
use aggro_core::units::format_nanos;
use aggro_core::world::WorldRecord;
use aggro_report::RunRecord;
use aggro_targets::MobileVisitor;
use std::path::PathBuf;
use std::sync::Arc;

struct Search {
    drive: DriveSpec,
    /// The world the store's record names, if it has one.
    world: Option<WorldRecord>,
    find: FindMax,
    out: PathBuf,
}

impl MobileVisitor for Search {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MobileTarget>(self, target: T) -> anyhow::Result<RunRecord> {
        let d = &self.drive;
        let samples = Arc::new(ErrorSamples::default());
        let loaders = connect_loaders(&target, d.exec.loaders, d.workload, d.keys, d.exec.seed, &samples).await?;
        // The result file claims the id: its `all_trials` count what every trial committed.
        let run_id = crate::world::log_run(&target, &target.describe(), "mobile", "mobile find-max", d.workload.name(), d.workload.commits()).await?;
        println!(
            "aggro mobile find-max: {} on {}, {} loaders, {:.0}s per trial, p99 ≤ {}",
            d.workload.name(),
            target.describe(),
            d.exec.loaders,
            self.find.step_ns as f64 / 1e9,
            format_nanos(self.find.p99_bound_ns)
        );
        let connect_one = async || {
            let mut one = connect_loaders(&target, 1, d.workload, d.keys, d.exec.seed, &samples).await?;
            one.pop().ok_or_else(|| anyhow::anyhow!("no loader"))
        };
        let mut record = self.find.run(&d.exec, target.blocking(), d.workload.operations(), loaders, connect_one, &samples).await?;
        record.command = "mobile find-max".into();
        record.spec = serde_json::json!({ "drive": d, "search": self.find.search, "p99_bound_ns": self.find.p99_bound_ns, "step_ns": self.find.step_ns, "target": target.describe() });
        record.world = self.world;
        record.run_ids = vec![run_id];
        session::write(&record, &self.out, &session::Exports::default())?;
        println!("result: {}", self.out.display());
        crate::run::drive::unless_interrupted(&record)?;
        Ok(record)
    }
}

pub fn main(a: FindMaxArgs) -> anyhow::Result<()> {
    let data = spec::resolve_data(&a.drive.data)?;
    let mut drive = spec::resolve_drive(&a.drive, &data)?;
    let find = FindMax::resolve(&a.search);
    let rt = session::runtime(drive.exec.threads)?;
    let (keys, world) = super::target::settle(&rt, &data)?;
    drive.keys = keys;
    let out = session::result_path(a.out, &format!("find-max-{}", drive.workload.name()))?;
    rt.block_on(on_target(&a.drive.data.target, Search { find, out, drive, world })).map(drop)
}
