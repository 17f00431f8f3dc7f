//! `arena swarm`'s soak watch: with `--server-pid`, the server's memory, open files, threads and CPU at
//! each interval's close (in the result's intervals); at the end a line through each, and through aggro's
//! own memory, from the moment the bots were all in until they stopped playing. A server resource that
//! climbed steadily over at least `--leak-window` is a `Leak` verdict (unless the players were not served,
//! which comes first); aggro's own climbing is a warning about the run.

use aggro_arena::verdict::{Limit, Verdict};
use aggro_report::host::{ServerSampler, ServerUse};
use aggro_report::record::RunRecord;
use aggro_report::soak::Soak;
use aggro_swarm::SwarmInterval;

/// The server's resources as intervals close.
#[derive(Debug)]
pub struct Watch {
    sampler: Option<ServerSampler>,
    samples: Vec<Option<ServerUse>>,
}

impl Watch {
    /// Watches process `pid`, if given.
    pub fn new(pid: Option<u32>) -> Self {
        Self { sampler: pid.map(ServerSampler::new), samples: Vec::new() }
    }

    /// Reads the server as an interval closes (nothing once it is gone).
    pub fn interval(&mut self) {
        let sample = self.sampler.as_mut().and_then(ServerSampler::sample);
        self.samples.push(sample);
    }

    /// Puts the readings into `record`'s intervals and its soak into `extra.soak`, fitted over the intervals
    /// after the joins ended (`swarm`) and before the drain (`quiet_s`), judged over `window_s`; prints its
    /// lines into `notes` (only when a server was watched or the run lasted the window). A new verdict when
    /// a server resource leaked and `verdict` was not about the players.
    pub fn judge(
        self,
        swarm: &[SwarmInterval],
        quiet_s: f64,
        window_s: f64,
        record: &mut RunRecord,
        notes: &mut Vec<String>,
        verdict: &Verdict,
    ) -> Option<Verdict> {
        for (interval, sample) in record.intervals.iter_mut().zip(self.samples) {
            interval.server = sample;
        }
        let settled_s = swarm.iter().filter(|iv| iv.join_rate.is_some()).map(|iv| iv.end_s).fold(0.0, f64::max);
        let playing = record.intervals.iter().take_while(|i| i.end_s <= quiet_s + 1e-3).count();
        let soak = Soak::of(&record.intervals[..playing], settled_s, window_s);
        let watched = self.sampler.is_some();
        if watched || quiet_s - settled_s >= window_s {
            notes.extend(soak.watched.iter().map(|w| w.text.clone()));
        }
        if soak.watched.iter().any(|w| w.leak && !w.server) {
            notes.push("warning: aggro's own memory climbed through the run: report it — this run's figures may be aggro's".into());
        }
        let leaks = soak.leaks();
        let found = (!leaks.is_empty() && !matches!(verdict.limit, Limit::Gone | Limit::Service))
            .then(|| Verdict { limit: Limit::Leak, evidence: format!("the players were served, but the server leaks: {}", leaks.join("; ")) });
        record.extra["soak"] = serde_json::json!(soak);
        found
    }
}
