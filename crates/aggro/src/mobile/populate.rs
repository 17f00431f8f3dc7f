//! `aggro mobile populate`.

use super::spec;
use super::target::on_target;
use crate::mobile::args::PopulateArgs;
use aggro_core::mobile::MobileTarget;
use aggro_core::world::WorldShape;
use aggro_targets::MobileVisitor;
use aggro_workloads::mobile::KeySpace;
use indicatif::{ProgressBar, ProgressStyle};

struct Populate {
    keys: KeySpace,
}

impl MobileVisitor for Populate {
    type Output = anyhow::Result<()>;

    async fn visit<T: MobileTarget>(self, target: T) -> anyhow::Result<()> {
        let ids = self.keys.all_stored_ids();
        let bar = ProgressBar::new(ids.len() as u64);
        bar.set_style(ProgressStyle::with_template("populating {bar:40} {pos}/{len} users").unwrap_or_else(|_| ProgressStyle::default_bar()));
        let started = std::time::Instant::now();
        let progress = |n: u64| bar.set_position(n);
        target.populate(&ids, &progress).await.map_err(|e| crate::exit::populate_error(target.describe(), e))?;
        let shape = WorldShape::Mobile { users: self.keys.users, spread: self.keys.spread.name().into() };
        let world = crate::world::write(&target, &target.describe(), shape).await?;
        bar.finish_and_clear();
        let secs = started.elapsed().as_secs_f64();
        println!(
            "populated {} users ({} records) in {}: {:.0} users/s, spread {:?}",
            ids.len(),
            ids.len() * 2,
            target.describe(),
            ids.len() as f64 / secs.max(1e-9),
            self.keys.spread
        );
        println!("world record: {}", world.describe());
        Ok(())
    }
}

pub fn main(a: PopulateArgs) -> anyhow::Result<()> {
    let keys = spec::resolve_data(&a.data)?.keys();
    crate::run::session::runtime(0)?.block_on(on_target(&a.data.target, Populate { keys }))
}
