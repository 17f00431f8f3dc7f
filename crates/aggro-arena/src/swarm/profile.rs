//! The swarm's per-interval record: delays, timer lateness, traffic, its own CPU.

use super::bot::Heard;
use aggro_stats::{Histogram, Summary, encode, new_histogram};
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
    run_start_us: u64,
    start_us: u64,
    cpu_start_us: u64,
    delay: Histogram,
    lateness: Histogram,
    pub counters: SwarmCounters,
    totals: Option<SwarmInterval>,
}

impl SwarmProfile {
    pub fn new(now_us: u64) -> Self {
        Self {
            run_start_us: now_us,
            start_us: now_us,
            cpu_start_us: crate::clock::process_cpu_us(),
            delay: new_histogram(),
            lateness: new_histogram(),
            counters: SwarmCounters::default(),
            totals: None,
        }
    }

    pub fn lateness(&mut self, us: u64) {
        let _ = self.lateness.record(us * 1000);
    }

    pub fn heard(&mut self, h: &Heard) {
        for d in &h.delays_us[..h.delays] {
            let _ = self.delay.record(d * 1000);
        }
        let c = &mut self.counters;
        c.snapshots += h.snapshots;
        c.decode_errors += h.decode_errors;
        c.connects += h.connected as u64;
        c.deaths += h.died as u64;
        c.disconnects += h.disconnected as u64;
    }

    pub fn close(&mut self, now_us: u64, active: u64) -> SwarmInterval {
        let cpu = crate::clock::process_cpu_us();
        let hs = [std::mem::replace(&mut self.delay, new_histogram()), std::mem::replace(&mut self.lateness, new_histogram())];
        let start_s = (self.start_us - self.run_start_us) as f64 / 1e6;
        let end_s = (now_us - self.run_start_us) as f64 / 1e6;
        let iv = build(start_s, end_s, active, cpu - self.cpu_start_us, std::mem::take(&mut self.counters), hs);
        self.totals = Some(match self.totals.take() {
            None => iv.clone(),
            Some(t) => {
                let mut hs = t.histograms;
                for (a, b) in hs.iter_mut().zip(&iv.histograms) {
                    a.add(b).expect("auto-resizing histograms add");
                }
                let mut c = t.counters;
                c += iv.counters;
                let cpu_us = ((t.cpu_pct * (t.end_s - t.start_s) + iv.cpu_pct * (iv.end_s - iv.start_s)) * 1e4) as u64;
                build(t.start_s, iv.end_s, active.max(t.active_bots), cpu_us, c, hs)
            }
        });
        self.start_us = now_us;
        self.cpu_start_us = cpu;
        iv
    }

    pub fn totals(&self) -> Option<&SwarmInterval> {
        self.totals.as_ref()
    }
}

fn build(start_s: f64, end_s: f64, active: u64, cpu_us: u64, c: SwarmCounters, histograms: [Histogram; 2]) -> SwarmInterval {
    let secs = (end_s - start_s).max(1e-9);
    let cpu_pct = cpu_us as f64 / 1e4 / secs;
    let lateness = Summary::of(&histograms[1]);
    let per_bot = |v: u64| if active == 0 { 0.0 } else { v as f64 / active as f64 / secs };
    // A short interval (the last one) says little about CPU.
    let long_enough = secs >= 0.5;
    let warning = if long_enough && cpu_pct > 90.0 {
        Some(format!("the swarm used {cpu_pct:.0}% of a core: it, not the server, may be the bottleneck — use fewer bots per process or more processes"))
    } else if long_enough && lateness.p99_ns > 5_000_000 {
        Some(format!("the swarm's input ticks ran late (p99 {:.1} ms): its figures may describe the swarm, not the server", lateness.p99_ns as f64 / 1e6))
    } else {
        None
    };
    SwarmInterval {
        start_s,
        end_s,
        active_bots: active,
        gunfire_delay: Summary::of(&histograms[0]),
        gunfire_delay_hdr: encode::to_base64(&histograms[0]),
        timer_lateness: lateness,
        timer_lateness_hdr: encode::to_base64(&histograms[1]),
        cpu_pct,
        snapshots_per_bot_s: per_bot(c.snapshots),
        kb_in_per_bot_s: per_bot(c.bytes_in) / 1000.0,
        warning,
        counters: c,
        histograms,
    }
}
