//! The swarm's per-interval record: delays, timer lateness, traffic, its own CPU — one swarm thread's,
//! or several threads' merged into one.

use aggro_arena::span::{Record, Span};
use aggro_stats::{Histogram, Summary, encode};
use serde::{Deserialize, Serialize};

aggro_arena::counters! {
/// What the swarm counts.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct SwarmCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub snapshots: u64,
    pub decode_errors: u64,
    pub connects: u64,
    /// Bots that left play: died (br) or churned out (relay).
    pub deaths: u64,
    pub respawns: u64,
    /// Server goodbyes and timeouts.
    pub disconnects: u64,
    pub socket_errors: u64,
    /// Relay: rooms joined and joins refused (room full).
    pub joins: u64,
    pub refused: u64,
    /// Relay: events raised, and events of others received.
    pub events_sent: u64,
    pub events_received: u64,
    /// Relay, reliable events: received twice or out of order, and missing (both must stay 0).
    pub reliable_disorder: u64,
    pub reliable_missing: u64,
    /// Relay, unreliable events: never arrived (a gap in a sender's numbers), or arrived late (after a later one).
    pub unreliable_lost: u64,
    pub unreliable_late: u64,
    /// Reliable events refused by a full send queue.
    pub queue_full: u64,
    /// Datagrams thrown away by the `receive_loss` fault injection.
    pub injected_losses: u64,
    /// Colyseus: joins that failed before the room seated the bot (connection or handshake failed), error
    /// frames from the server, and messages of types the play does not observe.
    pub failed_joins: u64,
    pub server_errors: u64,
    pub other_messages: u64,
    /// TCP connections (WebSocket, HTTP) that had to retransmit before the server answered — a SYN or
    /// the first request sent again, each costing its join ≥ 200 ms: on a local server, its listen queue
    /// overflowed (the joins outran its accepts).
    pub retried_opens: u64,
    /// Scripted bots stopped by an error their script raised.
    pub script_errors: u64,
    /// `--net`: messages and requests its network held, those of them it lost once (a retransmission
    /// later), and the time it held them in all, µs.
    #[serde(default)]
    pub net_held: u64,
    #[serde(default)]
    pub net_retransmitted: u64,
    #[serde(default)]
    pub net_added_us: u64,
}
}

/// One interval (or the whole run) of the swarm.
/// Written into the swarm's result file, and read back by the benches that ran it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwarmInterval {
    pub start_s: f64,
    pub end_s: f64,
    /// Bots in the match at the end.
    pub active_bots: u64,
    /// Action-to-observer delay (gunfire in br, an event's relay in relay), ns.
    pub delay: Summary,
    pub delay_hdr: String,
    /// Request→reply round trips (a play's `reply`): from a message's send to its reply's arrival.
    pub round_trip: Summary,
    pub round_trip_hdr: String,
    /// How late input ticks went out, ns.
    pub timer_lateness: Summary,
    pub timer_lateness_hdr: String,
    /// Swarm CPU, % of one core (its threads' together).
    pub cpu_pct: f64,
    /// The busiest swarm thread's CPU, % of one core: a thread near a whole core is the swarm's limit,
    /// whatever its siblings use.
    #[serde(default)]
    pub busiest_thread_pct: f64,
    /// Per active bot per second.
    pub snapshots_per_bot_s: f64,
    pub kb_in_per_bot_s: f64,
    /// Resident memory, and its sockets' kernel receive queues and drops, when the interval closed.
    pub gauges: aggro_arena::procstat::ProcessGauges,
    /// Set when the swarm itself may be the bottleneck (its CPU near a full core or its timers late).
    pub warning: Option<String>,
    /// Joins per second when the interval closed, while bots were still joining; and why the rate
    /// was cut, when it was ([`crate::pacer`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_news: Option<String>,
    pub counters: SwarmCounters,
    /// Delay, timer lateness and round trip, in that order (read back empty: the `_hdr` fields hold them).
    #[serde(skip, default = "three_histograms")]
    pub histograms: [Histogram; 3],
    /// What the bots measured and counted by name (a script's `measure` and `count`) and the script
    /// errors first seen in it; in-process only (a result file holds them as operations), but for the
    /// players' attempts to come back, written as `reconnect_attempts` (what a merge of shards' storms
    /// takes its peak from).
    #[serde(rename = "reconnect_attempts", serialize_with = "attempts_only", deserialize_with = "attempts_read", default)]
    pub named: NamedMeasures,
}

/// Writes an interval's [`NamedMeasures`] as its players' attempts to come back.
fn attempts_only<S: serde::Serializer>(named: &NamedMeasures, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(named.reconnect_attempts)
}

/// Reads an interval's attempts to come back, the one part of its [`NamedMeasures`] written.
fn attempts_read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<NamedMeasures, D::Error> {
    Ok(NamedMeasures { reconnect_attempts: u64::deserialize(d)?, ..NamedMeasures::default() })
}

/// A script's stage `NAME` is timed into operation `stage:NAME`.
pub const STAGE: &str = "stage:";

/// A scripted player's way back after losing its server is timed into this operation.
pub const RECONNECT: &str = "reconnect";

/// Measurements and counters by name, in the order names were first used, and script errors' texts.
#[derive(Clone, Debug, Default)]
pub struct NamedMeasures {
    /// The successes of each timed name.
    pub timed: Vec<(String, Histogram)>,
    /// Failures of a timed name by class (`connect`, `timeout`, `server`, …): (name, class, count).
    pub failed: Vec<(String, String, u64)>,
    pub counted: Vec<(String, u64)>,
    /// Messages and events received by type (scripted bots; the Colyseus bots share a table of their own).
    pub received: Vec<(String, u64)>,
    pub errors: Vec<String>,
    /// Scripted bots that started.
    pub started: u64,
    /// For each stage a script named, the bots playing at the close that had not reached it (threads
    /// summed).
    pub short_of: Vec<(String, u64)>,
    /// Attempts of players who lost their server to come back.
    pub reconnect_attempts: u64,
    /// Players who lost their server and were not back in play at the close (threads summed).
    pub out_of_play: u64,
}

/// Script errors kept word for word across a swarm's threads (the rest are only counted).
pub const ERRORS_KEPT: usize = 5;

impl NamedMeasures {
    /// Adds `other`'s: histograms of one name added, counters summed, the first errors kept.
    pub fn add(&mut self, other: &NamedMeasures) {
        for (name, h) in &other.timed {
            match self.timed.iter_mut().find(|(n, _)| n == name) {
                Some((_, mine)) => mine.add(h).expect("auto-resizing histograms add"),
                None => self.timed.push((name.clone(), h.clone())),
            }
        }
        add_counts(&mut self.counted, &other.counted);
        add_counts(&mut self.received, &other.received);
        add_counts(&mut self.short_of, &other.short_of);
        self.started += other.started;
        self.reconnect_attempts += other.reconnect_attempts;
        self.out_of_play += other.out_of_play;
        for (name, class, n) in &other.failed {
            match self.failed.iter_mut().find(|(f, c, _)| f == name && c == class) {
                Some((_, _, mine)) => *mine += n,
                None => self.failed.push((name.clone(), class.clone(), *n)),
            }
        }
        let room = ERRORS_KEPT.saturating_sub(self.errors.len());
        self.errors.extend(other.errors.iter().take(room).cloned());
    }
}

/// Adds `theirs` to `mine`, count by name (a name new to `mine` goes at its end).
fn add_counts(mine: &mut Vec<(String, u64)>, theirs: &[(String, u64)]) {
    for (name, n) in theirs {
        match mine.iter_mut().find(|(m, _)| m == name) {
            Some((_, count)) => *count += n,
            None => mine.push((name.clone(), *n)),
        }
    }
}

impl SwarmInterval {
    /// One stretch of several swarm threads as one: histograms added, counters and bots summed, CPU
    /// summed (the busiest thread kept apart), sockets' queues summed, memory the process's.
    pub fn merge(parts: &[SwarmInterval]) -> SwarmInterval {
        let start_s = parts.iter().map(|p| p.start_s).fold(f64::INFINITY, f64::min);
        let end_s = parts.iter().map(|p| p.end_s).fold(0.0, f64::max);
        let mut histograms = three_histograms();
        let mut counters = SwarmCounters::default();
        let mut gauges = SwarmGauges::default();
        let mut named = NamedMeasures::default();
        let mut cpu_us = 0.0;
        for p in parts {
            for (h, theirs) in histograms.iter_mut().zip(&p.histograms) {
                h.add(theirs).expect("auto-resizing histograms add");
            }
            counters += p.counters;
            gauges.active += p.active_bots;
            gauges.process.rss_bytes = gauges.process.rss_bytes.max(p.gauges.rss_bytes);
            gauges.process.receive_queue_bytes += p.gauges.receive_queue_bytes;
            gauges.process.kernel_drops += p.gauges.kernel_drops;
            named.add(&p.named);
            cpu_us += p.cpu_pct * 1e4 * (p.end_s - p.start_s);
        }
        let span = Span { start_s, end_s, cpu_us: cpu_us as u64, histograms: histograms.into(), counters };
        let mut merged = SwarmInterval::summarise(span, &gauges);
        merged.busiest_thread_pct = parts.iter().map(|p| p.busiest_thread_pct).fold(0.0, f64::max);
        merged.warning = parts.iter().find_map(|p| p.warning.clone());
        merged.join_rate = parts.iter().filter_map(|p| p.join_rate).reduce(|a, b| a + b);
        let news: Vec<&str> = parts.iter().filter_map(|p| p.join_news.as_deref()).collect();
        merged.join_news = (!news.is_empty()).then(|| news.join("\n  "));
        merged.named = named;
        merged
    }
}

fn three_histograms() -> [Histogram; 3] {
    std::array::from_fn(|_| aggro_stats::new_histogram())
}

/// The swarm's profile: the open interval and the run.
pub type SwarmProfile = aggro_arena::span::Profile<SwarmInterval>;

/// Read when an interval closes: bots in play (for the whole run: the most at any close), and memory and
/// kernel queues.
#[derive(Clone, Copy, Debug, Default)]
pub struct SwarmGauges {
    pub active: u64,
    pub process: aggro_arena::procstat::ProcessGauges,
}

const DELAY: usize = 0;
const LATENESS: usize = 1;
const ROUND_TRIP: usize = 2;

/// What the swarm records in its profile's histograms (the profile type is the arena's).
pub trait SwarmRecords {
    /// Records how late a tick went out.
    fn lateness(&mut self, us: u64);
    /// Records an action-to-observer delay.
    fn delay(&mut self, us: u64);
    /// Records a request→reply round trip.
    fn round_trip(&mut self, us: u64);
}

impl SwarmRecords for SwarmProfile {
    fn lateness(&mut self, us: u64) {
        self.record(LATENESS, us * 1000);
    }

    fn delay(&mut self, us: u64) {
        self.record(DELAY, us * 1000);
    }

    fn round_trip(&mut self, us: u64) {
        self.record(ROUND_TRIP, us * 1000);
    }
}

impl Record for SwarmInterval {
    type Counters = SwarmCounters;
    type Gauges = SwarmGauges;
    const HISTOGRAMS: usize = 3;
    // A swarm thread's own: the process's would count its sibling threads too.
    const CPU: fn() -> u64 = aggro_arena::clock::thread_cpu_us;

    fn summarise(span: Span<SwarmCounters>, g: &SwarmGauges) -> Self {
        let (secs, cpu_pct, c) = (span.secs(), span.cpu_pct(), span.counters);
        let [delay, lateness, round_trip]: [Histogram; 3] = span.histograms.try_into().expect("three histograms");
        let late = Summary::of(&lateness);
        let (active, gauges) = (g.active, g.process);
        let per_bot = |v: u64| if active == 0 { 0.0 } else { v as f64 / active as f64 / secs };
        // A short interval (the last one) says little about CPU.
        let long_enough = secs >= 0.5;
        let warning = if long_enough && cpu_pct > 90.0 {
            Some(format!(
                "a swarm thread used {cpu_pct:.0}% of a core: it, not the server, may be the bottleneck — use more --threads or more processes"
            ))
        } else if long_enough && late.p99_ns > 5_000_000 {
            Some(format!(
                "the swarm's input ticks ran late (p99 {:.1} ms): its figures may describe the swarm, not the server",
                late.p99_ns as f64 / 1e6
            ))
        } else {
            None
        };
        SwarmInterval {
            start_s: span.start_s,
            end_s: span.end_s,
            active_bots: active,
            delay: Summary::of(&delay),
            delay_hdr: encode::to_base64(&delay),
            round_trip: Summary::of(&round_trip),
            round_trip_hdr: encode::to_base64(&round_trip),
            timer_lateness: late,
            timer_lateness_hdr: encode::to_base64(&lateness),
            cpu_pct,
            busiest_thread_pct: cpu_pct,
            snapshots_per_bot_s: per_bot(c.snapshots),
            kb_in_per_bot_s: per_bot(c.bytes_in) / 1000.0,
            gauges,
            warning,
            join_rate: None,
            join_news: None,
            counters: c,
            histograms: [delay, lateness, round_trip],
            named: NamedMeasures::default(),
        }
    }
}

/// The swarm's Prometheus page: the run's totals (`total`, `cpu_s`) as counters, and the last interval's
/// gauges.
pub fn exposition(total: &SwarmCounters, cpu_s: f64, last: &SwarmInterval) -> String {
    let mut e = aggro_arena::metrics::Exposition::default();
    let t = total;
    for (name, help, v) in [
        ("aggro_swarm_packets_in_total", "Datagrams received.", t.packets_in),
        ("aggro_swarm_packets_out_total", "Datagrams sent.", t.packets_out),
        ("aggro_swarm_bytes_in_total", "Bytes received.", t.bytes_in),
        ("aggro_swarm_bytes_out_total", "Bytes sent.", t.bytes_out),
        ("aggro_swarm_connects_total", "Bots accepted by the server.", t.connects),
        ("aggro_swarm_disconnects_total", "Server goodbyes and timeouts.", t.disconnects),
        ("aggro_swarm_left_total", "Bots that left play (died or churned out).", t.deaths),
        ("aggro_swarm_joins_total", "Rooms joined.", t.joins),
        ("aggro_swarm_refused_total", "Joins the server refused (room full, matchmaking error).", t.refused),
        ("aggro_swarm_failed_joins_total", "Joins that failed before a seat (connection, handshake, HTTP).", t.failed_joins),
        (
            "aggro_swarm_retried_opens_total",
            "Connections that retransmitted before the server's first answer (its listen queue overflowed?).",
            t.retried_opens,
        ),
        ("aggro_swarm_events_sent_total", "Events raised.", t.events_sent),
        ("aggro_swarm_events_received_total", "Events of others received.", t.events_received),
        ("aggro_swarm_reliable_disorder_total", "Reliable events received twice or out of order.", t.reliable_disorder),
        ("aggro_swarm_reliable_missing_total", "Reliable events never received.", t.reliable_missing),
        ("aggro_swarm_unreliable_lost_total", "Unreliable events lost.", t.unreliable_lost),
        ("aggro_swarm_queue_full_total", "Reliable events refused by a full send queue.", t.queue_full),
    ] {
        e.counter(name, help, v as f64);
    }
    e.counter("process_cpu_seconds_total", "CPU time of the swarm process.", cpu_s);
    for (name, help, v) in [
        ("process_resident_memory_bytes", "Resident memory of the swarm process.", last.gauges.rss_bytes as f64),
        ("aggro_swarm_receive_queue_bytes", "Bytes waiting in the sockets' kernel receive queues.", last.gauges.receive_queue_bytes as f64),
        ("aggro_swarm_active_bots", "Bots in play.", last.active_bots as f64),
        ("aggro_swarm_cpu_ratio", "CPU used in the last interval, cores.", last.cpu_pct / 100.0),
        ("aggro_swarm_delay_p50_seconds", "Median action-to-observer delay, last interval.", last.delay.p50_ns as f64 / 1e9),
        ("aggro_swarm_delay_p99_seconds", "99th percentile action-to-observer delay, last interval.", last.delay.p99_ns as f64 / 1e9),
        ("aggro_swarm_timer_lateness_p99_seconds", "99th percentile of tick lateness, last interval.", last.timer_lateness.p99_ns as f64 / 1e9),
    ] {
        e.gauge(name, help, v);
    }
    e.finish()
}
