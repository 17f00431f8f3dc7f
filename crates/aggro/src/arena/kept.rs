//! What `arena swarm` makes of each interval as it closes: the interval's record for the result file
//! (its histograms encoded, a script's own operations among them), which the arena's process keeps on
//! disk ([`super::process`]), and what runs across intervals — the script's tally and the watched
//! server's readings — kept here. The interval's histograms are never kept.

use super::record::{counts, interval, op};
use super::soak::Watch;
use super::tally::Tally;
use aggro_report::record::{IntervalRecord, OpRecord};
use aggro_swarm::{Behaviour, SwarmCounters, SwarmInterval};

/// The operation that counts the bots' sessions, so a report, its `errors` threshold and a merge see
/// what the players met: a join is a success; a failed join (`connect`), a refusal (`server`) and a
/// disconnect of a seated bot (`disconnected`) are its failures.
pub const SESSIONS: &str = "session";

/// The operation of request→reply round trips (a play's `reply`), from a message's send to its reply.
pub const ROUND_TRIP: &str = "round_trip";

/// The sessions' figures of counters `c`.
pub fn sessions<B: Behaviour>(c: &SwarmCounters) -> aggro_stats::OpStats {
    use aggro_core::ErrorClass;
    let refused = if B::REFUSALS_FAIL { c.refused } else { 0 };
    counts(c.connects, &[(ErrorClass::Connect, c.failed_joins), (ErrorClass::Server, refused), (ErrorClass::Disconnected, c.disconnects)])
}

/// What runs across the intervals, and how each interval's record is made.
#[derive(Debug)]
pub struct Kept {
    /// The bots' planned ticks per second.
    rate: Option<f64>,
    pub tally: Tally,
    pub soak: Watch,
}

impl Kept {
    /// Nothing kept yet; `rate`: the bots' planned ticks per second; `server_pid`: the server to watch.
    pub fn new(rate: Option<f64>, server_pid: Option<u32>) -> Self {
        Self { rate, tally: Tally::default(), soak: Watch::new(server_pid) }
    }

    /// Keeps what runs across intervals of `iv` (its histograms read now), and returns its record, a
    /// round-trip operation in it.
    pub fn interval<B: Behaviour>(&mut self, iv: &SwarmInterval) -> IntervalRecord {
        let ops = [op(B::DELAY, &iv.histograms[0]), OpRecord::from_stats(SESSIONS, &sessions::<B>(&iv.counters)), op(ROUND_TRIP, &iv.histograms[2])];
        let named = super::named::interval_ops(&iv.named);
        let mut record =
            interval(iv.start_s, iv.end_s, iv.counters.packets_out, self.rate, ops.into_iter().chain(named).collect(), iv.timer_lateness, iv.cpu_pct);
        record.cpu.generator_rss_bytes = iv.gauges.rss_bytes;
        self.tally.add(iv);
        self.soak.interval();
        record
    }
}

/// Takes the round-trip operation out of every record of a run that timed none.
pub fn drop_round_trips(records: &mut [IntervalRecord]) {
    records.iter_mut().for_each(|r| r.ops.retain(|o| o.name != ROUND_TRIP));
}
