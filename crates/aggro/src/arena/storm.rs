//! A reconnect storm, from a scripted swarm's tally: the players who lost their server and came back
//! (`--reconnect`, or `reconnect()` in the script) — how long each took, from losing it to its socket
//! open again (p50/p90/p99: for players who all lost it at once, the time until that share was back),
//! the attempts they made and their peak per second, and the players still out of play at the end. A
//! player who never came back is a player not served.

use super::tally::Tally;
use aggro_arena::verdict::{Limit, Verdict};
use aggro_core::units::format_nanos;
use aggro_report::record::RunRecord;
use aggro_swarm::RECONNECT;
use serde::Serialize;

/// The storm's figures.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Storm {
    /// Players who came back, and how long they took (from losing their server), ms.
    pub back: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Attempts to come back, and the most in one interval, per second.
    pub attempts: u64,
    pub peak_attempts_per_s: f64,
    /// Players who lost their server and were not back in play at the end.
    pub out_at_end: u64,
}

impl Storm {
    /// The storm of the intervals `tally` added; None when no player lost its server and tried to come back.
    pub fn of(tally: &Tally) -> Option<Storm> {
        let w = &tally.whole;
        let none = aggro_stats::new_histogram();
        let h = w.timed.iter().find(|(op, _)| op == RECONNECT).map_or(&none, |(_, h)| h);
        if w.reconnect_attempts == 0 && h.is_empty() && w.out_of_play == 0 {
            return None;
        }
        let at = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        Some(Storm {
            back: h.len(),
            p50_ms: at(0.5),
            p90_ms: at(0.9),
            p99_ms: at(0.99),
            max_ms: h.max() as f64 / 1e6,
            attempts: w.reconnect_attempts,
            peak_attempts_per_s: tally.peak_attempts_per_s,
            out_at_end: w.out_of_play,
        })
    }

    /// The storm of shards' `record` merged (`aggro merge`), from their storms `shards` and each merged
    /// interval's attempts (`attempts[k]`, the shards' summed): the way back's times from the merged
    /// record's totals, the players and attempts summed, the peak from the merged intervals. None when no
    /// shard had one.
    pub fn merged(record: &RunRecord, shards: &[Storm], attempts: &[u64]) -> Result<Option<Storm>, aggro_stats::encode::DecodeError> {
        if shards.is_empty() {
            return Ok(None);
        }
        let h = aggro_report::timeline::merged(record.totals.iter().filter(|o| o.name == RECONNECT).map(|o| o.latency_hdr.as_str()))?;
        let at = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        let peak = record.intervals.iter().zip(attempts).map(|(iv, &n)| n as f64 / (iv.end_s - iv.start_s).max(1e-3)).fold(0.0, f64::max);
        Ok(Some(Storm {
            back: h.len(),
            p50_ms: at(0.5),
            p90_ms: at(0.9),
            p99_ms: at(0.99),
            max_ms: h.max() as f64 / 1e6,
            attempts: shards.iter().map(|s| s.attempts).sum(),
            peak_attempts_per_s: peak,
            out_at_end: shards.iter().map(|s| s.out_at_end).sum(),
        }))
    }

    /// The lines the run prints.
    pub fn lines(&self) -> Vec<String> {
        let t = |ms: f64| format_nanos((ms * 1e6) as u64);
        let mut line = format!(
            "reconnects: {} players came back after losing their server, p50 {} p90 {} p99 {} max {} after they lost it; {} attempts (peak {:.1}/s)",
            self.back,
            t(self.p50_ms),
            t(self.p90_ms),
            t(self.p99_ms),
            t(self.max_ms),
            self.attempts,
            self.peak_attempts_per_s
        );
        if self.out_at_end > 0 {
            line.push_str(&format!("; {} still out of play at the end", self.out_at_end));
        }
        vec![line]
    }

    /// A service failure when players never came back (unless the verdict was already about the players).
    pub fn judge(&self, verdict: &Verdict) -> Option<Verdict> {
        (self.out_at_end > 0 && !matches!(verdict.limit, Limit::Gone | Limit::Service)).then(|| Verdict {
            limit: Limit::Service,
            evidence: format!(
                "{} players who lost their server were not back in play at the end ({} came back, p99 {:.0} ms)",
                self.out_at_end, self.back, self.p99_ms
            ),
        })
    }
}
