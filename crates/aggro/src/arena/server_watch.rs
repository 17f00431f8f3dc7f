//! Where the swarm reads its server's figures, before and after a run: the /metrics page a server
//! serves (`--server-metrics`: aggro's own servers' counters, and a Node server's longest event-loop
//! delay as prom-client names it, `nodejs_eventloop_lag_max_seconds`) and the server's process
//! (`--server-pid`: its CPU and the time its threads waited for a core). Either, or both.

use crate::exit::BadInput;
use aggro_arena::metrics::{parse, scrape};
use anyhow::Context;
use std::net::SocketAddr;

/// What to read.
#[derive(Clone, Copy, Debug)]
pub struct ServerWatch {
    metrics: Option<SocketAddr>,
    pid: Option<u32>,
}

/// The server's figures at one moment.
#[derive(Clone, Copy, Debug)]
pub struct ServerTotals {
    /// CPU seconds so far: the process's own when known, else its page's.
    pub cpu_s: f64,
    pub kernel_drops: f64,
    /// Bytes in + out, when the server tells.
    pub bytes: Option<f64>,
    /// Seconds its threads waited for a core, when its process is known.
    pub wait_s: Option<f64>,
    /// The longest event-loop delay since the page was last read, when the server tells.
    pub loop_max_s: Option<f64>,
}

impl ServerWatch {
    /// The watch the flags ask for, if any.
    pub fn from_flags(metrics: Option<SocketAddr>, pid: Option<u32>) -> Option<Self> {
        (metrics.is_some() || pid.is_some()).then_some(Self { metrics, pid })
    }

    /// The server's figures now; an error when its process or its page is gone.
    pub fn read(self) -> anyhow::Result<ServerTotals> {
        let mut t = ServerTotals { cpu_s: 0.0, kernel_drops: 0.0, bytes: None, wait_s: None, loop_max_s: None };
        if let Some(addr) = self.metrics {
            let page = scrape(addr).with_context(|| format!("--server-metrics: cannot scrape http://{addr}/metrics"))?;
            let m = parse(&page).map_err(|e| anyhow::anyhow!("--server-metrics: {e}"))?;
            let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
            let both = |suffix: &str| get(&format!("aggro_relay_{suffix}")) + get(&format!("aggro_arena_{suffix}"));
            t.cpu_s = get("process_cpu_seconds_total");
            t.kernel_drops = both("kernel_drops_total");
            t.bytes = Some(both("bytes_in_total") + both("bytes_out_total"));
            t.loop_max_s = m.get("nodejs_eventloop_lag_max_seconds").copied();
        }
        if let Some(pid) = self.pid {
            t.cpu_s = aggro_core::clock::process_cpu_s(Some(pid)).ok_or_else(|| BadInput(format!("--server-pid {pid}: no such process")))?;
            t.wait_s = aggro_core::clock::process_wait_s(pid);
        }
        Ok(t)
    }
}
