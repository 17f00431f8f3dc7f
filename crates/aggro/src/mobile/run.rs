//! `aggro mobile run`.

use super::spec::{self, DriveSpec};
use super::target::{connect_loaders, on_target};
use crate::mobile::args::RunArgs;
use crate::run::drive::{self, Outputs};
use aggro_core::ErrorSamples;
use aggro_core::mobile::MobileTarget;
use aggro_core::world::WorldRecord;
use aggro_report::RunRecord;
use aggro_targets::MobileVisitor;
use std::sync::Arc;

struct Run {
    drive: DriveSpec,
    /// The world the store's record names, if it has one.
    world: Option<WorldRecord>,
    /// The plan (its placement set once the target is known) and outputs.
    outputs: Outputs,
}

impl MobileVisitor for Run {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MobileTarget>(mut self, target: T) -> anyhow::Result<RunRecord> {
        drive::place(&mut self.outputs.plan, target.blocking());
        let d = &self.drive;
        let samples = Arc::new(ErrorSamples::default());
        let loaders = connect_loaders(&target, d.exec.loaders, d.workload, d.keys, d.exec.seed, &samples).await?;
        let run_id = crate::world::log_run(&target, &target.describe(), "mobile", "mobile run", d.workload.name(), d.workload.commits()).await?;
        eprintln!(
            "aggro mobile run: {} on {}, {} loaders, {}, seed {}",
            d.workload.name(),
            target.describe(),
            d.exec.loaders,
            self.outputs.describe_rate(),
            d.exec.seed
        );
        let spec = serde_json::json!({ "drive": d, "plan": self.outputs.plan, "target": target.describe() });
        let mut record = self.outputs.run("mobile run", spec, d.workload.operations(), loaders, &samples, d.exec.threads).await?;
        record.world = self.world;
        record.run_ids = vec![run_id];
        drive::note_nodes(&mut record, target.nodes());
        self.outputs.deliver(&record)?;
        Ok(record)
    }
}

pub fn main(a: RunArgs) -> anyhow::Result<()> {
    let data = spec::resolve_data(&a.drive.data)?;
    let mut drive = spec::resolve_drive(&a.drive, &data)?;
    let outputs = Outputs::resolve(a.run, &drive.exec, &a.drive.exec, drive.workload.name())?;
    let rt = crate::run::session::runtime(drive.exec.threads)?;
    let (keys, world) = super::target::settle(&rt, &data)?;
    drive.keys = keys;
    let record = rt.block_on(on_target(&a.drive.data.target, Run { world, outputs, drive }))?;
    drive::exit_status(&record)
}
