//! The bottleneck verdict: which limit a run hit first, with the numbers that
//! show it. What the players got is judged first: a server gone, or a service
//! that broke its thresholds (joins, disconnects, delivery, delay), is named
//! with the resource that explains it, and only a run that served every player
//! may say "no limit reached". Then the swarm — a run whose load generator
//! saturated says nothing about the server (Photon's warning: add load
//! machines) — then the server's resources.

use serde::{Deserialize, Serialize};

/// A run's evidence, from the swarm and (when known) the server.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Evidence {
    /// Server CPU, % of one core (the relay and game servers are one thread); None when unknown.
    pub server_cpu_pct: Option<f64>,
    /// Datagrams the kernel dropped at the server's socket (its loop fell behind).
    pub server_kernel_drops: u64,
    pub swarm_cpu_pct: f64,
    /// How late the swarm's ticks went out, p99 ms.
    pub swarm_lateness_p99_ms: f64,
    /// Server traffic, bytes per second in and out, and the budget (None: no budget given).
    pub bytes_per_s: f64,
    pub bandwidth_budget: Option<f64>,
    /// Reliable messages refused by full send queues (server and swarm), and unacked slices per session.
    pub queue_full: u64,
    pub queued_per_session: f64,
    /// What the players got, when the run knows (the swarm does; a bench point may not).
    pub service: Option<Service>,
    /// The share of the run's wall time the server's threads waited for a core (/proc schedstat): a
    /// starved server, not a slow one.
    pub server_wait_pct: Option<f64>,
    /// The longest the server's event loop was held up over the run, ms, when it tells (a Node
    /// server's page).
    pub server_loop_max_ms: Option<f64>,
    /// The thresholds the service is judged by.
    pub slo: Slo,
    /// The flag that lets the swarm watch this server (None: `--server-pid` or `--server-metrics`).
    pub watch_flag: Option<&'static str>,
}

/// What the players got.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Service {
    /// Bots that joined (were seated).
    pub joined: u64,
    /// Bots asked for, when each should hold a seat at once (0: not judged), and the most seated at once.
    pub asked: u64,
    pub seated_peak: u64,
    /// Joins that failed or were refused (none when every bot got in).
    pub failed_joins: u64,
    /// Seated bots the server disconnected.
    pub disconnects: u64,
    /// Messages that never arrived, and those that did.
    pub lost: u64,
    pub delivered: u64,
    /// Action-to-observer delay, p99 ms, over this many events.
    pub delay_p99_ms: f64,
    pub delay_events: u64,
    /// HTTP requests the bots made (a scripted bot's login, matchmaking) that were answered, and those that
    /// failed (no answer, or a status of 400 and above).
    pub http_ok: u64,
    pub http_failed: u64,
    /// The server's process was gone at the end.
    pub server_died: bool,
    /// State updates per seated bot per second while (nearly) every bot was seated, and the most any
    /// interval got — what the server sends when it keeps up (0: no state updates seen).
    pub state_per_bot_s: f64,
    pub state_best_per_bot_s: f64,
}

impl Service {
    fn join_failure_pct(&self) -> f64 {
        pct(self.failed_joins, self.joined + self.failed_joins)
    }

    fn disconnect_pct(&self) -> f64 {
        pct(self.disconnects, self.joined)
    }

    fn http_failure_pct(&self) -> f64 {
        pct(self.http_failed, self.http_ok + self.http_failed)
    }

    fn delivery_pct(&self) -> f64 {
        100.0 - pct(self.lost, self.lost + self.delivered)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// The service a game team would accept; `--slo` changes it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Slo {
    /// Joins that must succeed, %.
    pub joins_pct: f64,
    /// HTTP requests (a scripted bot's login, matchmaking) that must succeed, %: the joins' threshold
    /// unless given, a login being a player's way in as often as a socket is.
    pub http_pct: Option<f64>,
    /// Seated bots the server may disconnect, %.
    pub disconnects_pct: f64,
    /// Messages that must arrive, %.
    pub delivery_pct: f64,
    /// Action-to-observer delay p99 at most, ms.
    pub delay_p99_ms: f64,
    /// State updates per bot per second with every bot seated, at least this many, when given: the
    /// rate the room sends while it keeps up is its own (Colyseus patches only a changed state), so
    /// there is no default.
    pub state_per_bot_s: Option<f64>,
}

impl Default for Slo {
    fn default() -> Self {
        Slo { joins_pct: 99.0, http_pct: None, disconnects_pct: 1.0, delivery_pct: 99.9, delay_p99_ms: 100.0, state_per_bot_s: None }
    }
}

impl Slo {
    /// Parses `joins>=99%,http>=99%,disconnects<=1%,delivery>=99.9%,p99<=100ms,state>=18/s` (any of them;
    /// the rest keep their defaults).
    pub fn parse(text: &str) -> Result<Slo, String> {
        let mut slo = Slo::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                format!("bad --slo threshold {part:?} (examples: joins>=99%, http>=99%, disconnects<=1%, delivery>=99.9%, p99<=100ms, state>=18/s)")
            };
            let (name, value) = part.split_once(">=").or_else(|| part.split_once("<=")).or_else(|| part.split_once(['<', '>'])).ok_or_else(bad)?;
            let number = |v: &str| v.trim().parse::<f64>().map_err(|_| bad());
            match name.trim() {
                "joins" => slo.joins_pct = number(value.trim().trim_end_matches('%'))?,
                "http" => slo.http_pct = Some(number(value.trim().trim_end_matches('%'))?),
                "disconnects" => slo.disconnects_pct = number(value.trim().trim_end_matches('%'))?,
                "delivery" => slo.delivery_pct = number(value.trim().trim_end_matches('%'))?,
                "state" => slo.state_per_bot_s = Some(number(value.trim().trim_end_matches("/s"))?),
                "p99" | "delay:p99" => {
                    slo.delay_p99_ms = aggro_core::units::parse_duration(value.trim()).map_err(|_| bad())?.as_secs_f64() * 1e3;
                }
                _ => return Err(bad()),
            }
        }
        Ok(slo)
    }
}

/// A limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The swarm saturated: the run is invalid as a test of the server.
    SwarmCpu,
    ServerCpu,
    Bandwidth,
    ReliableBacklog,
    /// Nothing reached its limit: every player was served and the server has headroom.
    None,
    /// The server was gone: nothing listening, every join failed, or its process died.
    Gone,
    /// The players were not served within the thresholds.
    Service,
    /// The players were served, but a watched server's memory, open files or threads climbed steadily
    /// through a long run.
    Leak,
}

/// Which limit bound, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub limit: Limit,
    pub evidence: String,
}

/// An event loop held up this long is blocked by the server's code (a 20 Hz room misses a patch).
pub const LOOP_STALL_MS: f64 = 50.0;
/// A core this busy is saturated (the rest goes to the kernel and the scheduler).
pub const CPU_LIMIT_PCT: f64 = 90.0;
/// Swarm ticks later than this at p99 mean the swarm fell behind.
pub const LATENESS_LIMIT_MS: f64 = 5.0;
/// Late ticks are the swarm's own doing only while it is this busy: a swarm
/// late at a few percent of a core was held up by something else on the
/// machine (as the executor's generator signals judge it, issue 21).
pub const LATE_SWARM_CPU_PCT: f64 = 50.0;
/// Traffic above this share of the budget is at the limit.
pub const BANDWIDTH_SHARE: f64 = 0.9;
/// More unacked reliable slices than this per session is a backlog.
pub const QUEUED_PER_SESSION: f64 = 64.0;

/// Judges the evidence.
pub fn judge(e: &Evidence) -> Verdict {
    if let Some(gone) = e.service.and_then(|s| judge_gone(&s)) {
        return gone;
    }
    let late = e.swarm_lateness_p99_ms > LATENESS_LIMIT_MS;
    if e.swarm_cpu_pct >= CPU_LIMIT_PCT || (late && e.swarm_cpu_pct >= LATE_SWARM_CPU_PCT) {
        return v_swarm(e);
    }
    let judged = e.service.and_then(|s| judge_service(e, &s)).unwrap_or_else(|| judge_server(e));
    if late {
        // Late at little CPU: the machine was busy, not the swarm; the
        // verdict stands, with the caveat beside it.
        let caveat = format!(
            " (the swarm's ticks ran late by {:.1} ms at p99 while it used {:.0}% of a core: something else on this machine took the CPU)",
            e.swarm_lateness_p99_ms, e.swarm_cpu_pct
        );
        return Verdict { evidence: judged.evidence + &caveat, ..judged };
    }
    judged
}

fn judge_gone(s: &Service) -> Option<Verdict> {
    let v = |evidence: String| Some(Verdict { limit: Limit::Gone, evidence });
    if s.server_died {
        return v(format!("the server's process died during the run ({} bots had joined, {} disconnected)", s.joined, s.disconnects));
    }
    if s.joined == 0 {
        return v(format!("no bot joined: {} joins failed — nothing listening, or every join refused", s.failed_joins));
    }
    None
}

/// The first threshold the service broke, named with the resource that explains it.
fn judge_service(e: &Evidence, s: &Service) -> Option<Verdict> {
    let slo = &e.slo;
    let broke = if s.join_failure_pct() > 100.0 - slo.joins_pct {
        format!("{:.1}% of joins failed ({} of {})", s.join_failure_pct(), s.failed_joins, s.joined + s.failed_joins)
    } else if s.http_failure_pct() > 100.0 - slo.http_pct.unwrap_or(slo.joins_pct) {
        // A player's way in (a login, matchmaking) is HTTP as often as a socket: held to the joins' threshold
        // unless told otherwise.
        format!("{:.1}% of HTTP requests failed ({} of {})", s.http_failure_pct(), s.http_failed, s.http_ok + s.http_failed)
    } else if s.asked > 0 && (s.seated_peak as f64) < s.asked as f64 * slo.joins_pct / 100.0 {
        format!("only {} of the {} bots asked for were ever seated at once", s.seated_peak, s.asked)
    } else if s.disconnect_pct() > slo.disconnects_pct {
        format!("the server disconnected {:.1}% of the seated bots ({} of {})", s.disconnect_pct(), s.disconnects, s.joined)
    } else if s.delivery_pct() < slo.delivery_pct {
        format!("{:.2}% of messages arrived ({} lost)", s.delivery_pct(), s.lost)
    } else if s.delay_events > 0 && s.delay_p99_ms > slo.delay_p99_ms {
        format!("delay p99 {:.1} ms is over {:.0} ms", s.delay_p99_ms, slo.delay_p99_ms)
    } else if let Some(least) = slo.state_per_bot_s.filter(|least| s.state_per_bot_s < *least) {
        format!(
            "state updates fell to {:.1}/s per bot with every bot seated, under the {least}/s asked (the most any interval got: {:.1}/s)",
            s.state_per_bot_s, s.state_best_per_bot_s
        )
    } else {
        return None;
    };
    Some(Verdict { limit: Limit::Service, evidence: format!("service: {broke} — {}", explanation(e)) })
}

/// A server whose threads waited this share of the wall time (or more) for a core was starved by the
/// machine: what it could serve is bounded by the core time it got, not the time it used.
pub const STARVED_WAIT_PCT: f64 = 10.0;

/// The resource that explains a broken service.
fn explanation(e: &Evidence) -> String {
    match (e.server_cpu_pct, e.server_wait_pct) {
        (Some(cpu), Some(wait)) if wait >= STARVED_WAIT_PCT => {
            format!("server CPU {cpu:.0}% + {wait:.0}% waiting for a core: the machine, not the server's code")
        }
        (Some(cpu), _) if cpu >= CPU_LIMIT_PCT => format!("server CPU {cpu:.0}% of its core: the server's own limit"),
        (Some(cpu), _) if e.server_loop_max_ms.is_some_and(|l| l >= LOOP_STALL_MS) => format!(
            "server CPU {cpu:.0}%, but its event loop was held up for as long as {:.0} ms: the server's own code blocks it",
            e.server_loop_max_ms.unwrap_or_default()
        ),
        (Some(cpu), wait) => format!(
            "server CPU {cpu:.0}%{}: not its CPU — look at the server's own errors and event loop",
            wait.map_or(String::new(), |w| format!(" + {w:.0}% waiting for a core"))
        ),
        (None, _) => format!("server CPU unknown (give {})", e.watch_flag.unwrap_or("--server-pid or --server-metrics")),
    }
}

fn v_swarm(e: &Evidence) -> Verdict {
    Verdict {
        limit: Limit::SwarmCpu,
        evidence: format!(
            "the swarm's busiest thread used {:.0}% of a core and its ticks ran late by {:.1} ms at p99: the test is invalid as a measure of the server — add swarm threads (--threads), processes or machines (--worker)",
            e.swarm_cpu_pct, e.swarm_lateness_p99_ms
        ),
    }
}

/// The server's limits, the swarm having held its schedule (or been held up by others).
fn judge_server(e: &Evidence) -> Verdict {
    let v = |limit, evidence: String| Verdict { limit, evidence };
    if let Some(cpu) = e.server_cpu_pct.filter(|c| *c >= CPU_LIMIT_PCT) {
        return v(Limit::ServerCpu, format!("the server used {cpu:.0}% of its core"));
    }
    if e.server_kernel_drops > 0 {
        return v(Limit::ServerCpu, format!("the kernel dropped {} datagrams at the server's socket: its loop fell behind", e.server_kernel_drops));
    }
    if let Some(budget) = e.bandwidth_budget.filter(|b| e.bytes_per_s >= b * BANDWIDTH_SHARE) {
        return v(
            Limit::Bandwidth,
            format!(
                "traffic of {:.1} Mbit/s is {:.0}% of the {:.1} Mbit/s budget",
                e.bytes_per_s * 8e-6,
                e.bytes_per_s / budget * 100.0,
                budget * 8e-6
            ),
        );
    }
    if e.queue_full > 0 || e.queued_per_session > QUEUED_PER_SESSION {
        return v(
            Limit::ReliableBacklog,
            format!("{} reliable messages refused by full queues; {:.1} unacked slices per session", e.queue_full, e.queued_per_session),
        );
    }
    let server = e.server_cpu_pct.map_or(format!("server CPU unknown (give {})", e.watch_flag.unwrap_or("--server-pid or --server-metrics")), |c| {
        format!("server {c:.0}% of a core")
    });
    let bandwidth = e.bandwidth_budget.map_or(String::new(), |b| format!(", traffic {:.0}% of the budget", e.bytes_per_s / b * 100.0));
    let served = e.service.map_or(String::new(), |s| match s.delay_events + s.lost + s.delivered {
        0 => format!("every player served ({} joined; delivery not checked: no message carried from/seq/t), ", s.joined),
        _ => format!("every player served ({} joined, delay p99 {:.1} ms), ", s.joined, s.delay_p99_ms),
    });
    v(Limit::None, format!("no limit reached: {served}{server}, swarm {:.0}%{bandwidth}", e.swarm_cpu_pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_limit_hit_is_named_and_a_saturated_swarm_invalidates_the_run() {
        let calm = Evidence {
            server_cpu_pct: Some(40.0),
            swarm_cpu_pct: 30.0,
            swarm_lateness_p99_ms: 0.5,
            bytes_per_s: 1e6,
            bandwidth_budget: Some(12.5e6),
            ..Evidence::default()
        };
        assert_eq!(judge(&calm).limit, Limit::None);
        assert!(judge(&calm).evidence.contains("server 40%"));
        let busy_swarm = Evidence { swarm_cpu_pct: 95.0, server_cpu_pct: Some(99.0), ..calm };
        assert_eq!(judge(&busy_swarm).limit, Limit::SwarmCpu, "the swarm is judged before the server");
        assert_eq!(judge(&Evidence { swarm_lateness_p99_ms: 9.0, swarm_cpu_pct: 60.0, ..calm }).limit, Limit::SwarmCpu);
        // Late at 30 % of a core: held up by something else; the server's verdict stands, with the caveat.
        let held_up = judge(&Evidence { swarm_lateness_p99_ms: 22.6, swarm_cpu_pct: 1.0, ..calm });
        assert_eq!(held_up.limit, Limit::None);
        assert!(held_up.evidence.contains("late by 22.6 ms") && held_up.evidence.contains("something else"), "{}", held_up.evidence);
        assert_eq!(judge(&Evidence { server_cpu_pct: Some(93.0), ..calm }).limit, Limit::ServerCpu);
        assert_eq!(judge(&Evidence { server_kernel_drops: 5, ..calm }).limit, Limit::ServerCpu);
        let full_pipe = judge(&Evidence { bytes_per_s: 12e6, ..calm });
        assert_eq!(full_pipe.limit, Limit::Bandwidth);
        assert!(full_pipe.evidence.contains("96%"), "{}", full_pipe.evidence);
        assert_eq!(judge(&Evidence { queue_full: 1, ..calm }).limit, Limit::ReliableBacklog);
        assert!(judge(&Evidence { server_cpu_pct: None, ..calm }).evidence.contains("unknown"));
    }

    #[test]
    fn players_not_served_come_before_any_resource_and_a_dead_server_before_all() {
        let served = Service { joined: 500, delivered: 10_000, delay_p99_ms: 12.0, delay_events: 10_000, ..Service::default() };
        let calm =
            Evidence { server_cpu_pct: Some(61.0), server_wait_pct: Some(44.0), swarm_cpu_pct: 30.0, service: Some(served), ..Evidence::default() };
        assert_eq!(judge(&calm).limit, Limit::None);
        assert!(judge(&calm).evidence.contains("every player served"));
        let failing = judge(&Evidence { service: Some(Service { joined: 253, failed_joins: 247, ..served }), ..calm });
        assert_eq!(failing.limit, Limit::Service);
        assert!(
            failing.evidence.contains("49.4% of joins failed") && failing.evidence.contains("the machine, not the server's code"),
            "{}",
            failing.evidence
        );
        let slow = judge(&Evidence { service: Some(Service { delay_p99_ms: 1_969.0, ..served }), server_wait_pct: None, ..calm });
        assert_eq!(slow.limit, Limit::Service);
        assert!(slow.evidence.contains("delay p99 1969.0 ms") && slow.evidence.contains("not its CPU"), "{}", slow.evidence);
        let blocked = judge(&Evidence {
            service: Some(Service { delay_p99_ms: 210.0, ..served }),
            server_wait_pct: Some(2.0),
            server_loop_max_ms: Some(201.0),
            ..calm
        });
        assert!(
            blocked.evidence.contains("its event loop was held up for as long as 201 ms: the server's own code blocks it"),
            "{}",
            blocked.evidence
        );
        let dead = Evidence { service: Some(Service { server_died: true, ..served }), swarm_cpu_pct: 99.0, ..calm };
        assert_eq!(judge(&dead).limit, Limit::Gone, "a dead server is named even when the swarm saturated");
        assert_eq!(judge(&Evidence { service: Some(Service { joined: 0, failed_joins: 30, ..served }), ..calm }).limit, Limit::Gone);
        // Logins refused by a server that died mid-run: a player's way in failed, as a join would.
        let logins = judge(&Evidence { service: Some(Service { http_ok: 60, http_failed: 1_140, ..served }), ..calm });
        assert_eq!(logins.limit, Limit::Service);
        assert!(logins.evidence.contains("95.0% of HTTP requests failed (1140 of 1200)"), "{}", logins.evidence);
        assert_eq!(judge(&Evidence { service: Some(Service { http_ok: 1_000, http_failed: 5, ..served }), ..calm }).limit, Limit::None);
        // An HTTP threshold of its own: stricter than the joins', or looser.
        let few = Service { http_ok: 1_000, http_failed: 5, ..served };
        assert_eq!(judge(&Evidence { service: Some(few), slo: Slo::parse("http>=99.9%").unwrap(), ..calm }).limit, Limit::Service);
        let loose = Evidence { service: Some(Service { http_ok: 60, http_failed: 20, ..served }), slo: Slo::parse("http>=70%").unwrap(), ..calm };
        assert_eq!(judge(&loose).limit, Limit::None, "{}", judge(&loose).evidence);
        let unseated = judge(&Evidence { service: Some(Service { asked: 200, seated_peak: 144, ..served }), ..calm });
        assert_eq!(unseated.limit, Limit::Service, "bots never seated are players not served");
        assert!(unseated.evidence.contains("only 144 of the 200 bots asked for were ever seated at once"), "{}", unseated.evidence);
        assert_eq!(judge(&Evidence { service: Some(Service { asked: 200, seated_peak: 199, ..served }), ..calm }).limit, Limit::None);
        let starving = Service { state_per_bot_s: 3.9, state_best_per_bot_s: 20.0, ..served };
        assert_eq!(judge(&Evidence { service: Some(starving), ..calm }).limit, Limit::None, "a room's own rate is not judged unless asked");
        let asked = Slo::parse("state>=18/s").unwrap();
        let starved = judge(&Evidence { service: Some(starving), slo: asked, ..calm });
        assert_eq!(starved.limit, Limit::Service);
        assert!(
            starved
                .evidence
                .contains("state updates fell to 3.9/s per bot with every bot seated, under the 18/s asked (the most any interval got: 20.0/s)"),
            "{}",
            starved.evidence
        );
        let steady = Service { state_per_bot_s: 19.0, state_best_per_bot_s: 20.0, ..served };
        assert_eq!(judge(&Evidence { service: Some(steady), slo: asked, ..calm }).limit, Limit::None);
        let loose = Slo::parse("p99<=3s, joins>=50%").unwrap();
        assert_eq!(judge(&Evidence { slo: loose, service: Some(Service { delay_p99_ms: 1_969.0, ..served }), ..calm }).limit, Limit::None);
        assert!(Slo::parse("latency<5").is_err());
    }
}
