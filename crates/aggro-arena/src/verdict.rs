//! The bottleneck verdict: which limit a run hit first, with the numbers that
//! show it. The swarm is judged first — a run whose load generator saturated
//! says nothing about the server (Photon's warning: add load machines).

use serde::Serialize;

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
}

/// A limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The swarm saturated: the run is invalid as a test of the server.
    SwarmCpu,
    ServerCpu,
    Bandwidth,
    ReliableBacklog,
    /// Nothing reached its limit: the server has headroom.
    None,
}

/// Which limit bound, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub limit: Limit,
    pub evidence: String,
}

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
    let late = e.swarm_lateness_p99_ms > LATENESS_LIMIT_MS;
    if e.swarm_cpu_pct >= CPU_LIMIT_PCT || (late && e.swarm_cpu_pct >= LATE_SWARM_CPU_PCT) {
        return v_swarm(e);
    }
    let judged = judge_server(e);
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

fn v_swarm(e: &Evidence) -> Verdict {
    Verdict {
        limit: Limit::SwarmCpu,
        evidence: format!(
            "the swarm used {:.0}% of a core and its ticks ran late by {:.1} ms at p99: the test is invalid as a measure of the server — add swarm processes or machines (--worker)",
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
        return v(Limit::Bandwidth, format!("traffic of {:.1} Mbit/s is {:.0}% of the {:.1} Mbit/s budget", e.bytes_per_s * 8e-6, e.bytes_per_s / budget * 100.0, budget * 8e-6));
    }
    if e.queue_full > 0 || e.queued_per_session > QUEUED_PER_SESSION {
        return v(Limit::ReliableBacklog, format!("{} reliable messages refused by full queues; {:.1} unacked slices per session", e.queue_full, e.queued_per_session));
    }
    let server = e.server_cpu_pct.map_or("server CPU unknown (give --server-metrics)".to_string(), |c| format!("server {c:.0}% of a core"));
    let bandwidth = e.bandwidth_budget.map_or(String::new(), |b| format!(", traffic {:.0}% of the budget", e.bytes_per_s / b * 100.0));
    v(Limit::None, format!("no limit reached: {server}, swarm {:.0}%{bandwidth}", e.swarm_cpu_pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_limit_hit_is_named_and_a_saturated_swarm_invalidates_the_run() {
        let calm = Evidence { server_cpu_pct: Some(40.0), swarm_cpu_pct: 30.0, swarm_lateness_p99_ms: 0.5, bytes_per_s: 1e6, bandwidth_budget: Some(12.5e6), ..Evidence::default() };
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
}
