//! `aggro scenario populate` (and `aggro pgbench -i`).

use super::input::Input;
use super::target::on_target;
use crate::scenario::args::ScenarioPopulateArgs;
use aggro_core::scenario::{Family, ScenarioTarget};
use aggro_targets::ScenarioVisitor;
use indicatif::{ProgressBar, ProgressStyle};

/// Populates the target as the input's `[populate]` says.
pub struct Populate {
    pub input: Input,
    pub seed: u64,
}

impl ScenarioVisitor for Populate {
    type Output = anyhow::Result<()>;

    async fn visit<T: ScenarioTarget>(self, target: T) -> anyhow::Result<()> {
        let scenario = self.input.compile(&target).await?;
        // On SQL stores and Cassandra, whose scenario tables are dropped apart from aggro's own: a record saying the
        // population is under way, then the rows, then the record saying it is complete, so a
        // population cut short is refused by later runs. On stackdb and Redis the reset removes every
        // key, the record with them: a cut store holds none. DynamoDB keeps none for scenarios.
        let record = async |complete: bool| match self.input.world_shape(complete) {
            Some(shape) if target.family() != Family::Dynamo => crate::world::write(&target, &target.describe(), shape).await.map(Some),
            _ => Ok(None),
        };
        if matches!(target.family(), Family::Sql | Family::Cql) {
            record(false).await?;
        }
        let bar = ProgressBar::new(0);
        bar.set_style(ProgressStyle::with_template("populating {bar:40} {pos}/{len} rows").unwrap_or_else(|_| ProgressStyle::default_bar()));
        let started = std::time::Instant::now();
        let progress = |done: u64, total: u64| {
            bar.set_length(total);
            bar.set_position(done);
        };
        let rows = aggro_workloads::scenario::populate(&target, &scenario, self.seed, &progress)
            .await
            .map_err(|e| crate::exit::populate_error(target.describe(), e))?;
        // The runs logged before are of the data just replaced.
        target
            .forget_runs(super::verify::RUN_LOG)
            .await
            .map_err(|e| crate::exit::store_error(format_args!("{}: populated, but the run log could not be emptied", target.describe()), e))?;
        let world = record(true).await?;
        bar.finish_and_clear();
        let secs = started.elapsed().as_secs_f64();
        match (&self.input, rows) {
            (Input::Pgbench { scale: Some(scale), .. }, _) => {
                println!("initialized pgbench's tables on {} at scale {scale} ({} accounts) in {secs:.1}s", target.describe(), scale * 100_000)
            }
            (_, 0) => println!("set up {} on {} in {secs:.1}s (its setup and finish commands; no rows to load)", scenario.name, target.describe()),
            _ => println!(
                "populated {} for {} in {secs:.1}s: {rows} rows ({:.0} rows/s)",
                target.describe(),
                scenario.name,
                rows as f64 / secs.max(1e-9)
            ),
        }
        crate::world::announce(world.as_ref());
        Ok(())
    }
}

pub fn main(a: ScenarioPopulateArgs) -> anyhow::Result<()> {
    let input = Input::file(a.scenario.file, &a.scenario.sets)?;
    crate::run::session::runtime(0)?.block_on(on_target(&a.scenario.target, Populate { input, seed: a.seed }))
}
