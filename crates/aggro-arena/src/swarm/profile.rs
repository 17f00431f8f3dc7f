//! The swarm's per-interval record: delays, timer lateness, traffic, its own CPU.

use super::bot::Heard;
use crate::span::{Span, Spans};
use aggro_stats::{Histogram, Summary, encode};
use serde::Serialize;

/// What the swarm counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SwarmCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub snapshots: u64,
    pub decode_errors: u64,
    pub connects: u64,
    pub deaths: u64,
    pub respawns: u64,
    /// Server goodbyes and timeouts.
    pub disconnects: u64,
    pub socket_errors: u64,
}

impl std::ops::AddAssign for SwarmCounters {
    fn add_assign(&mut self, o: Self) {
        macro_rules! add { ($($f:ident),*) => { $(self.$f += o.$f;)* } }
        add!(packets_in, bytes_in, packets_out, bytes_out, snapshots, decode_errors, connects, deaths, respawns, disconnects, socket_errors);
    }
}

/// One interval (or the whole run) of the swarm.
#[derive(Clone, Debug, Serialize)]
pub struct SwarmInterval {
    pub start_s: f64,
    pub end_s: f64,
    /// Bots in the match at the end.
    pub active_bots: u64,
    /// Action-to-observer (gunfire) delay, ns.
    pub gunfire_delay: Summary,
    pub gunfire_delay_hdr: String,
    /// How late input ticks went out, ns.
    pub timer_lateness: Summary,
    pub timer_lateness_hdr: String,
    /// Swarm CPU, % of one core.
    pub cpu_pct: f64,
    /// Per active bot per second.
    pub snapshots_per_bot_s: f64,
    pub kb_in_per_bot_s: f64,
    /// Set when the swarm itself may be the bottleneck (its CPU near a full core or its timers late).
    pub warning: Option<String>,
    pub counters: SwarmCounters,
    /// Gunfire delay and timer lateness, in that order.
    #[serde(skip)]
    pub histograms: [Histogram; 2],
}

#[derive(Debug)]
pub(super) struct SwarmProfile {
    spans: Spans<SwarmCounters>,
    pub counters: SwarmCounters,
    /// The most bots in the match at an interval's end.
    peak_active: u64,
}

const DELAY: usize = 0;
const LATENESS: usize = 1;

impl SwarmProfile {
    pub fn new(now_us: u64) -> Self {
        Self { spans: Spans::new(now_us, 2), counters: SwarmCounters::default(), peak_active: 0 }
    }

    pub fn lateness(&mut self, us: u64) {
        self.spans.record(LATENESS, us * 1000);
    }

    pub fn heard(&mut self, h: &Heard) {
        for d in &h.delays_us[..h.delays] {
            self.spans.record(DELAY, d * 1000);
        }
        let c = &mut self.counters;
        c.snapshots += h.snapshots;
        c.decode_errors += h.decode_errors;
        c.connects += h.connected as u64;
        c.deaths += h.died as u64;
        c.disconnects += h.disconnected as u64;
    }

    pub fn close(&mut self, now_us: u64, active: u64) -> SwarmInterval {
        self.peak_active = self.peak_active.max(active);
        summarise(self.spans.close(now_us, std::mem::take(&mut self.counters)), active)
    }

    /// The run so far, its per-bot figures over the peak number of bots.
    pub fn totals(&self) -> Option<SwarmInterval> {
        Some(summarise(self.spans.totals()?.clone(), self.peak_active))
    }
}

fn summarise(span: Span<SwarmCounters>, active: u64) -> SwarmInterval {
    let (secs, cpu_pct, c) = (span.secs(), span.cpu_pct(), span.counters);
    let [delay, lateness]: [Histogram; 2] = span.histograms.try_into().expect("two histograms");
    let late = Summary::of(&lateness);
    let per_bot = |v: u64| if active == 0 { 0.0 } else { v as f64 / active as f64 / secs };
    // A short interval (the last one) says little about CPU.
    let long_enough = secs >= 0.5;
    let warning = if long_enough && cpu_pct > 90.0 {
        Some(format!("the swarm used {cpu_pct:.0}% of a core: it, not the server, may be the bottleneck — use fewer bots per process or more processes"))
    } else if long_enough && late.p99_ns > 5_000_000 {
        Some(format!("the swarm's input ticks ran late (p99 {:.1} ms): its figures may describe the swarm, not the server", late.p99_ns as f64 / 1e6))
    } else {
        None
    };
    SwarmInterval {
        start_s: span.start_s,
        end_s: span.end_s,
        active_bots: active,
        gunfire_delay: Summary::of(&delay),
        gunfire_delay_hdr: encode::to_base64(&delay),
        timer_lateness: late,
        timer_lateness_hdr: encode::to_base64(&lateness),
        cpu_pct,
        snapshots_per_bot_s: per_bot(c.snapshots),
        kb_in_per_bot_s: per_bot(c.bytes_in) / 1000.0,
        warning,
        counters: c,
        histograms: [delay, lateness],
    }
}
