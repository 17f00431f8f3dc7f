//! The server's per-interval profile: frame and phase times from HDR
//! histograms, the achieved tick rate, traffic per client, reliability
//! counters, replication cost and fidelity.

use crate::span::{Record, Span};
use aggro_stats::{Histogram, Summary, encode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The timed phases of a frame, in order; `frame` is the whole, and `flush_sendmmsg` the part of `flush` spent
/// in the send system calls (the rest is choosing, encoding and sealing the snapshots).
pub const PHASES: [&str; 6] = ["frame", "dispatch", "send_flush", "simulate", "flush", "flush_sendmmsg"];

counters! {
/// Counters the server adds to during an interval.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Counters {
    pub frames: u64,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub resends: u64,
    pub shots: u64,
    pub hits: u64,
    pub deaths: u64,
    /// Gunfire events relayed to observers.
    pub fired_rpcs: u64,
    pub connects: u64,
    pub disconnects: u64,
    /// Sessions summed over frames (÷ frames = mean sessions).
    pub client_frames: u64,
    /// Snapshot entries written and their bits; moving actors sent as deltas, and their bits.
    pub entries: u64,
    pub entry_bits: u64,
    pub moving_deltas: u64,
    pub moving_delta_bits: u64,
    /// Actor updates skipped by interleaving.
    pub skipped: u64,
}
}

/// A histogram's figures with the histogram itself (HdrHistogram V2-DEFLATE, base64).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Dist {
    #[serde(flatten)]
    pub summary: Summary,
    pub hdr: String,
}

impl Dist {
    fn of(h: &Histogram) -> Self {
        Self { summary: Summary::of(h), hdr: encode::to_base64(h) }
    }
}

/// One interval (or the whole run) of the server.
/// Written into the server's result file, and read back by the benches that ran it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerInterval {
    pub start_s: f64,
    pub end_s: f64,
    /// Frames per second achieved.
    pub tick_hz: f64,
    /// Sessions at the end.
    pub clients: u64,
    /// Unacked reliable slices across all sessions at the end.
    pub queued_reliable: u64,
    /// Per phase (see [`PHASES`]): time in ns.
    pub phases: BTreeMap<String, Dist>,
    /// Position error of actors skipped by interleaving, in cm (the "ns" fields hold cm).
    pub position_error_cm: Dist,
    /// Per client per second: kB out and in, packets out and in (over the mean number of sessions).
    pub kb_out_per_client_s: f64,
    pub kb_in_per_client_s: f64,
    pub packets_out_per_client_s: f64,
    pub packets_in_per_client_s: f64,
    /// Mean bytes of a moving actor's delta entry.
    pub bytes_per_moving_update: f64,
    /// Server CPU, % of one core.
    pub cpu_pct: f64,
    /// Dropped datagrams by reason.
    pub drops: BTreeMap<String, u64>,
    pub counters: Counters,
    #[serde(skip)]
    pub histograms: Vec<Histogram>,
}

/// Collects one interval at a time and the whole run.
pub type Profile = crate::span::Profile<ServerInterval>;

/// Read when an interval closes: sessions and unacked reliable slices now, datagrams dropped by reason
/// (during the interval; over the whole run for the totals).
#[derive(Clone, Debug, Default)]
pub struct ServerGauges {
    pub clients: u64,
    pub queued_reliable: u64,
    pub drops: BTreeMap<String, u64>,
}

/// Histogram index of the position error (after the phases).
const ERROR_CM: usize = PHASES.len();

impl crate::span::Profile<ServerInterval> {
    /// Records one frame's phase times, ns, in [`PHASES`] order.
    pub fn frame(&mut self, ns: [u64; PHASES.len()], clients: u64) {
        self.counters.client_frames += clients;
        for (i, v) in ns.into_iter().enumerate() {
            self.record(i, v.max(1));
        }
        self.counters.frames += 1;
    }

    /// Records a skipped actor's position error.
    pub fn position_error(&mut self, cm: u64) {
        self.record(ERROR_CM, cm);
    }
}

impl Record for ServerInterval {
    type Counters = Counters;
    type Gauges = ServerGauges;
    const HISTOGRAMS: usize = PHASES.len() + 1;

    fn summarise(span: Span<Counters>, g: &ServerGauges) -> Self {
        let (secs, c) = (span.secs(), span.counters);
        let mean_clients = if c.frames == 0 { 0.0 } else { c.client_frames as f64 / c.frames as f64 };
        let per_client = |v: u64| if mean_clients == 0.0 { 0.0 } else { v as f64 / mean_clients / secs };
        let hs = &span.histograms;
        let phases = PHASES.iter().zip(hs).map(|(n, h)| (n.to_string(), Dist::of(h))).collect();
        ServerInterval {
            start_s: span.start_s,
            end_s: span.end_s,
            tick_hz: c.frames as f64 / secs,
            clients: g.clients,
            queued_reliable: g.queued_reliable,
            phases,
            position_error_cm: Dist::of(&hs[ERROR_CM]),
            kb_out_per_client_s: per_client(c.bytes_out) / 1000.0,
            kb_in_per_client_s: per_client(c.bytes_in) / 1000.0,
            packets_out_per_client_s: per_client(c.packets_out),
            packets_in_per_client_s: per_client(c.packets_in),
            bytes_per_moving_update: if c.moving_deltas == 0 { 0.0 } else { c.moving_delta_bits as f64 / 8.0 / c.moving_deltas as f64 },
            cpu_pct: span.cpu_pct(),
            drops: g.drops.clone(),
            counters: c,
            histograms: span.histograms,
        }
    }
}

/// The game server's Prometheus page: the run's totals (`total`, `cpu_s`) as counters, and the last
/// interval's gauges.
pub fn exposition(total: &Counters, cpu_s: f64, last: &ServerInterval) -> String {
    let mut e = crate::metrics::Exposition::default();
    let t = total;
    for (name, help, v) in [
        ("aggro_arena_frames_total", "Frames run.", t.frames),
        ("aggro_arena_packets_in_total", "Datagrams received.", t.packets_in),
        ("aggro_arena_packets_out_total", "Datagrams sent.", t.packets_out),
        ("aggro_arena_bytes_in_total", "Bytes received.", t.bytes_in),
        ("aggro_arena_bytes_out_total", "Bytes sent.", t.bytes_out),
        ("aggro_arena_connects_total", "Sessions opened.", t.connects),
        ("aggro_arena_disconnects_total", "Sessions closed (goodbyes and timeouts).", t.disconnects),
        ("aggro_arena_resends_total", "Reliable slices sent again.", t.resends),
        ("aggro_arena_shots_total", "Shots fired.", t.shots),
        ("aggro_arena_gunfire_events_total", "Gunfire events relayed to observers.", t.fired_rpcs),
    ] {
        e.counter(name, help, v as f64);
    }
    e.counter("process_cpu_seconds_total", "CPU time of the game server process.", cpu_s);
    let frame = last.phases.get("frame").map(|d| d.summary).unwrap_or_default();
    for (name, help, v) in [
        ("process_resident_memory_bytes", "Resident memory of the game server process.", crate::procstat::rss_bytes() as f64),
        ("aggro_arena_clients", "Sessions now.", last.clients as f64),
        ("aggro_arena_queued_reliable", "Unacknowledged reliable slices now.", last.queued_reliable as f64),
        ("aggro_arena_tick_hz", "Achieved tick rate, last interval.", last.tick_hz),
        ("aggro_arena_cpu_ratio", "CPU used in the last interval, cores.", last.cpu_pct / 100.0),
        ("aggro_arena_frame_p99_seconds", "99th percentile frame time, last interval.", frame.p99_ns as f64 / 1e9),
        ("aggro_arena_frame_max_seconds", "Longest frame, last interval.", frame.max_ns as f64 / 1e9),
    ] {
        e.gauge(name, help, v);
    }
    e.finish()
}
