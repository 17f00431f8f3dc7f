//! `aggro mmo populate`.

use super::target::on_target;
use crate::mmo::args::WorldArgs;
use aggro_core::mmo::{MmoTarget, WorldSpec};
use aggro_core::world::WorldShape;
use aggro_targets::MmoVisitor;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What a population took.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Populated {
    /// Seconds in all.
    pub seconds: f64,
    /// Items inserted per second.
    pub items_per_s: f64,
}

struct Populate {
    world: WorldSpec,
}

impl MmoVisitor for Populate {
    type Output = anyhow::Result<Populated>;

    async fn visit<T: MmoTarget>(self, target: T) -> anyhow::Result<Populated> {
        let w = &self.world;
        println!(
            "populating {}: {} accounts, {} players, {} items, {} guilds ({} ranks), {} quest templates, {} item descriptors, ~{} MB of objects",
            target.describe(),
            w.accounts,
            w.players(),
            w.items(),
            w.guilds(),
            w.guilds() * w.ranks_per_guild,
            w.quest_templates(),
            w.item_descriptors,
            w.approx_bytes() >> 20
        );
        let bar = ProgressBar::new(w.accounts as u64);
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("populating {bar:40} {pos}/{len} accounts {per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let started = std::time::Instant::now();
        let progress = |n: u64| bar.set_position(n);
        aggro_workloads::mmo::populate::populate(&target, w, &progress).await.map_err(|e| crate::exit::populate_error(target.describe(), e))?;
        let shape = WorldShape::Mmo { accounts: w.accounts, world_seed: w.seed };
        let record = crate::world::write(&target, &target.describe(), shape).await?;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        let items_per_s = w.items() as f64 / seconds.max(1e-9);
        println!("populated in {seconds:.1}s: {items_per_s:.0} items/s, {:.0} players/s", w.players() as f64 / seconds.max(1e-9));
        println!("world record: {}", record.describe());
        Ok(Populated { seconds, items_per_s })
    }
}

/// Populates the world the arguments name.
pub fn populate(a: &WorldArgs) -> anyhow::Result<Populated> {
    let world = super::target::world(a)?;
    crate::run::session::runtime(0)?.block_on(on_target(&a.target, Populate { world }))
}

pub fn main(a: WorldArgs) -> anyhow::Result<()> {
    populate(&a).map(drop)
}
