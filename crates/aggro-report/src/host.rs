//! Facts about the machine, and the generator watching itself — and a server it loads — through /proc.

use serde::{Deserialize, Serialize};

/// The machine a run ran on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// CPUs this process may use.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

impl HostInfo {
    /// Reads the current machine's facts.
    pub fn current() -> Self {
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).map(str::to_string))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        Self {
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            memory_bytes,
        }
    }
}

/// CPU use over one interval.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuUse {
    /// aggro's own CPU time as a fraction of one core (1.0 = one core busy).
    pub generator_cores: f64,
    /// The whole machine's busy fraction (0–1), steal excluded.
    pub machine_busy: f64,
    /// Fraction of the machine's time stolen by the hypervisor.
    pub machine_steal: f64,
    /// aggro's resident memory in bytes.
    pub generator_rss_bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct Counters {
    wall_ns: u64,
    self_cpu_s: f64,
    total: u64,
    idle: u64,
    steal: u64,
}

/// Samples /proc at interval boundaries; cheap (three small reads).
pub struct CpuSampler {
    last: Counters,
    start: std::time::Instant,
}

impl std::fmt::Debug for CpuSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuSampler").finish_non_exhaustive()
    }
}

impl Default for CpuSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuSampler {
    /// A sampler whose first interval starts now.
    pub fn new() -> Self {
        let mut s = Self { last: Counters::default(), start: std::time::Instant::now() };
        s.last = s.read();
        s
    }

    fn read(&self) -> Counters {
        let mut c = Counters { wall_ns: self.start.elapsed().as_nanos() as u64, ..Counters::default() };
        c.self_cpu_s = aggro_core::clock::process_cpu_s(None).unwrap_or(0.0);
        if let Ok(stat) = std::fs::read_to_string("/proc/stat")
            && let Some(line) = stat.lines().next()
        {
            let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            if f.len() >= 8 {
                c.total = f.iter().take(8).sum();
                c.idle = f[3] + f[4];
                c.steal = f[7];
            }
        }
        c
    }

    /// CPU use since the previous call (or since creation).
    pub fn sample(&mut self) -> CpuUse {
        let now = self.read();
        let last = std::mem::replace(&mut self.last, now);
        let wall_s = (now.wall_ns.saturating_sub(last.wall_ns)) as f64 / 1e9;
        let total = now.total.saturating_sub(last.total) as f64;
        let fraction = |x: u64| if total > 0.0 { x as f64 / total } else { 0.0 };
        let steal = now.steal.saturating_sub(last.steal);
        let idle = now.idle.saturating_sub(last.idle);
        CpuUse {
            generator_cores: if wall_s > 0.0 { (now.self_cpu_s - last.self_cpu_s).max(0.0) / wall_s } else { 0.0 },
            machine_busy: (1.0 - fraction(idle) - fraction(steal)).max(0.0),
            machine_steal: fraction(steal),
            generator_rss_bytes: aggro_core::clock::rss_bytes(),
        }
    }
}

/// A watched server's resources at an interval's close.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerUse {
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Open file descriptors (sockets among them); None when /proc does not let aggro list them.
    pub fds: Option<u64>,
    /// Threads.
    pub threads: u64,
    /// CPU over the interval, in cores (1.0 = one core busy).
    pub cpu_cores: f64,
}

/// Reads a server's resources at each interval's close.
#[derive(Debug)]
pub struct ServerSampler {
    pid: u32,
    last: Option<(std::time::Instant, f64)>,
}

impl ServerSampler {
    /// A sampler of process `pid`, its first interval's CPU counted from now.
    pub fn new(pid: u32) -> Self {
        Self { pid, last: aggro_core::clock::process_cpu_s(Some(pid)).map(|cpu| (std::time::Instant::now(), cpu)) }
    }

    /// Its resources now, CPU since the last call; None when the process is gone.
    pub fn sample(&mut self) -> Option<ServerUse> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.split_whitespace().next()?.parse::<u64>().ok());
        let cpu = aggro_core::clock::process_cpu_s(Some(self.pid))?;
        let now = std::time::Instant::now();
        let cpu_cores = match self.last.replace((now, cpu)) {
            Some((then, before)) => (cpu - before).max(0.0) / now.duration_since(then).as_secs_f64().max(1e-9),
            None => 0.0,
        };
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.pid)).ok().map(|d| d.count() as u64);
        Some(ServerUse { rss_bytes: field("VmRSS:")? * 1024, fds, threads: field("Threads:")?, cpu_cores })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_as_generator_cpu() {
        let mut s = CpuSampler::new();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let u = s.sample();
        assert!(u.generator_cores > 0.3, "{u:?}");
        assert!(u.machine_busy > 0.0 && u.machine_busy <= 1.0);
        assert!(u.generator_rss_bytes > 0);
        assert!(HostInfo::current().cpus >= 1);
    }
}
