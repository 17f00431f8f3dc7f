//! The relay server's per-interval record: the counters the Photon guide says
//! to watch, as totals and per-second rates, with the loop's lateness as an
//! HDR histogram.

use crate::span::{Record, Span};
use aggro_stats::{Histogram, Summary, encode};
use serde::{Deserialize, Serialize};

counters! {
/// What the relay server counts.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct RelayCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub connects: u64,
    pub disconnects: u64,
    pub joins: u64,
    pub refused: u64,
    /// Events raised by clients, and their bytes.
    pub events_in: u64,
    pub event_bytes_in: u64,
    /// Events relayed to members, and their bytes.
    pub events_out: u64,
    pub event_bytes_out: u64,
    /// Reliable slices sent again.
    pub resends: u64,
    /// Reliable events not relayed: the member's send queue was full.
    pub queue_full: u64,
    /// Packets sent only to acknowledge.
    pub ack_packets: u64,
    /// Rooms summed over housekeeping ticks, and the ticks (their ratio: mean rooms).
    pub room_ticks: u64,
    pub ticks: u64,
}
}

/// Gauges read when an interval closes.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct RelayGauges {
    pub connections: u64,
    pub rooms: u64,
    /// Unacknowledged reliable slices over all sessions.
    pub queued_reliable: u64,
    /// Memory, and the socket's kernel receive queue and drops.
    #[serde(flatten)]
    pub process: crate::procstat::ProcessGauges,
}

/// One interval (or the whole run) of the relay server.
/// Written into the relay's result file, and read back by the benches that ran it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RelayInterval {
    pub start_s: f64,
    pub end_s: f64,
    /// Server CPU, % of one core.
    pub cpu_pct: f64,
    #[serde(flatten)]
    pub gauges: RelayGauges,
    pub connects_per_s: f64,
    pub disconnects_per_s: f64,
    pub packets_in_per_s: f64,
    pub packets_out_per_s: f64,
    pub bytes_in_per_s: f64,
    pub bytes_out_per_s: f64,
    /// Events in and out per second, and per room per second (over the mean number of rooms).
    pub events_in_per_s: f64,
    pub events_out_per_s: f64,
    pub events_in_per_room_s: f64,
    pub events_out_per_room_s: f64,
    pub resends_per_s: f64,
    /// How late the loop's housekeeping ran (resends, acks, timeouts), ns.
    pub loop_lateness: Summary,
    pub loop_lateness_hdr: String,
    pub counters: RelayCounters,
    #[serde(skip, default = "aggro_stats::new_histogram")]
    pub histogram: Histogram,
}

/// The relay server's profile: the open interval and the run.
pub type RelayProfile = crate::span::Profile<RelayInterval>;

impl crate::span::Profile<RelayInterval> {
    /// Records how late the loop's housekeeping ran.
    pub fn lateness(&mut self, us: u64) {
        self.record(0, us * 1000);
    }
}

impl Record for RelayInterval {
    type Counters = RelayCounters;
    type Gauges = RelayGauges;
    const HISTOGRAMS: usize = 1;

    fn summarise(span: Span<RelayCounters>, gauges: &RelayGauges) -> Self {
        let (secs, cpu_pct, c) = (span.secs(), span.cpu_pct(), span.counters);
        let [lateness]: [Histogram; 1] = span.histograms.try_into().expect("one histogram");
        let per_s = |v: u64| v as f64 / secs;
        let rooms = c.room_ticks as f64 / c.ticks.max(1) as f64;
        let per_room = |v: u64| if rooms > 0.0 { per_s(v) / rooms } else { 0.0 };
        RelayInterval {
            start_s: span.start_s,
            end_s: span.end_s,
            cpu_pct,
            gauges: *gauges,
            connects_per_s: per_s(c.connects),
            disconnects_per_s: per_s(c.disconnects),
            packets_in_per_s: per_s(c.packets_in),
            packets_out_per_s: per_s(c.packets_out),
            bytes_in_per_s: per_s(c.bytes_in),
            bytes_out_per_s: per_s(c.bytes_out),
            events_in_per_s: per_s(c.events_in),
            events_out_per_s: per_s(c.events_out),
            events_in_per_room_s: per_room(c.events_in),
            events_out_per_room_s: per_room(c.events_out),
            resends_per_s: per_s(c.resends),
            loop_lateness: Summary::of(&lateness),
            loop_lateness_hdr: encode::to_base64(&lateness),
            counters: c,
            histogram: lateness,
        }
    }
}

/// The relay server's Prometheus page: the run's totals (`total`, `cpu_s`) as counters, and the last
/// interval's gauges and rates.
pub fn exposition(total: &RelayCounters, cpu_s: f64, last: &RelayInterval) -> String {
    let mut e = crate::metrics::Exposition::default();
    let t = total;
    for (name, help, v) in [
        ("aggro_relay_packets_in_total", "Datagrams received.", t.packets_in),
        ("aggro_relay_packets_out_total", "Datagrams sent.", t.packets_out),
        ("aggro_relay_bytes_in_total", "Bytes received.", t.bytes_in),
        ("aggro_relay_bytes_out_total", "Bytes sent.", t.bytes_out),
        ("aggro_relay_connects_total", "Sessions opened.", t.connects),
        ("aggro_relay_disconnects_total", "Sessions closed (goodbyes and timeouts).", t.disconnects),
        ("aggro_relay_joins_total", "Room joins.", t.joins),
        ("aggro_relay_refused_total", "Room joins refused.", t.refused),
        ("aggro_relay_events_in_total", "Events raised by clients.", t.events_in),
        ("aggro_relay_event_bytes_in_total", "Bytes of events raised.", t.event_bytes_in),
        ("aggro_relay_events_out_total", "Events relayed to members.", t.events_out),
        ("aggro_relay_event_bytes_out_total", "Bytes of events relayed.", t.event_bytes_out),
        ("aggro_relay_resends_total", "Reliable slices sent again.", t.resends),
        ("aggro_relay_queue_full_total", "Reliable events not relayed: the member's queue was full.", t.queue_full),
        ("aggro_relay_kernel_drops_total", "Datagrams the kernel dropped (receive buffer full).", last.gauges.process.kernel_drops),
    ] {
        e.counter(name, help, v as f64);
    }
    e.counter("process_cpu_seconds_total", "CPU time of the relay process.", cpu_s);
    let g = &last.gauges;
    for (name, help, v) in [
        ("process_resident_memory_bytes", "Resident memory of the relay process.", g.process.rss_bytes as f64),
        ("aggro_relay_connections", "Sessions now.", g.connections as f64),
        ("aggro_relay_rooms", "Rooms now.", g.rooms as f64),
        ("aggro_relay_queued_reliable", "Unacknowledged reliable slices now.", g.queued_reliable as f64),
        ("aggro_relay_receive_queue_bytes", "Bytes waiting in the socket's kernel receive queue.", g.process.receive_queue_bytes as f64),
        ("aggro_relay_cpu_ratio", "CPU used in the last interval, cores.", last.cpu_pct / 100.0),
        ("aggro_relay_events_in_per_room_per_second", "Events raised per room per second, last interval.", last.events_in_per_room_s),
        ("aggro_relay_events_out_per_room_per_second", "Events relayed per room per second, last interval.", last.events_out_per_room_s),
        ("aggro_relay_loop_lateness_p99_seconds", "99th percentile of the loop's lateness, last interval.", last.loop_lateness.p99_ns as f64 / 1e9),
    ] {
        e.gauge(name, help, v);
    }
    e.finish()
}
