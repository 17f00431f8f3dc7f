//! Time as the executor sees it: nanoseconds since the run's origin.
//!
//! Two clocks implement [`Clock`]. [`MonotonicClock`] reads `CLOCK_MONOTONIC`
//! and waits on a `timerfd` registered with tokio's reactor, so a wait ends
//! within microseconds of its deadline instead of on tokio's 1 ms timer wheel:
//! at a few thousand requests per second a millisecond of harness lag would be
//! charged to the backend's latency. [`TokioClock`] follows `tokio::time`, so
//! tests can run the executor on a paused clock.

use std::future::Future;

/// Nanoseconds since a clock's origin.
pub type Nanos = u64;

/// A source of time and of waits, injected into the executor.
pub trait Clock: Clone + Send + Sync + 'static {
    /// The waiter type this clock hands out.
    type Waiter: Waiter;
    /// Nanoseconds since this clock's origin.
    fn now(&self) -> Nanos;
    /// A new waiter; each concurrent waiting party needs its own.
    fn waiter(&self) -> std::io::Result<Self::Waiter>;
}

/// Something that can sleep until a deadline on its clock.
pub trait Waiter: Send + 'static {
    /// Returns once the clock reads at least `deadline`.
    fn wait_until(&mut self, deadline: Nanos) -> impl Future<Output = ()> + Send;
}

/// The real clock: `CLOCK_MONOTONIC` with timerfd waits.
#[derive(Clone, Debug)]
pub struct MonotonicClock {
    origin: Nanos,
}

/// Nanoseconds of `CLOCK_MONOTONIC` (one clock for every process on the machine).
pub fn monotonic_ns() -> Nanos {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        tighten_timer_slack();
        Self { origin: monotonic_ns() }
    }
}

/// CPU time (user + system, its threads included) a process has used, in seconds: this process (`None`), by
/// its CPU clock to the nanosecond, or process `pid`, from `/proc/<pid>/stat` in the kernel's ticks (10 ms
/// here); None when it is gone.
pub fn process_cpu_s(pid: Option<u32>) -> Option<f64> {
    let Some(pid) = pid else {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; the process CPU clock always exists on Linux.
        let ok = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0;
        return ok.then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9);
    };
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: the fields after its closing parenthesis start at field 3
    // (state), so utime (field 14) and stime (15) are the 12th and 13th there.
    let mut f = text[text.rfind(')')? + 1..].split_whitespace();
    // A zombie (dead, not yet reaped) is gone.
    if matches!(f.next(), Some("Z" | "X")) {
        return None;
    }
    let mut f = f.skip(10);
    let (user, system): (u64, u64) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some((user + system) as f64 / if ticks > 0 { ticks as f64 } else { 100.0 })
}

/// Time process `pid`'s threads have spent runnable but waiting for a core, in seconds (the second field
/// of each `/proc/<pid>/task/<tid>/schedstat`, summed); None when it is gone or the kernel keeps no
/// schedstats.
pub fn process_wait_s(pid: u32) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut wait_ns = 0u64;
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        wait_ns += text.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    }
    Some(wait_ns as f64 / 1e9)
}

/// Resident memory of this process in bytes (`/proc/self/statm`'s resident pages × the page size; 0 where
/// unavailable).
pub fn rss_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = text.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page
}

/// Wakes this thread's sleeps and timers on time: the kernel's default timer
/// slack (50 µs) would delay every wake-up by up to that much; 1 µs keeps waits honest.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and has no other effect.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
}

impl Clock for MonotonicClock {
    type Waiter = TimerFdWaiter;

    fn now(&self) -> Nanos {
        monotonic_ns().saturating_sub(self.origin)
    }

    fn waiter(&self) -> std::io::Result<TimerFdWaiter> {
        TimerFdWaiter::new(self.clone())
    }
}

/// A timerfd armed at absolute `CLOCK_MONOTONIC` deadlines.
pub struct TimerFdWaiter {
    clock: MonotonicClock,
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
}

impl std::fmt::Debug for TimerFdWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerFdWaiter").finish_non_exhaustive()
    }
}

impl TimerFdWaiter {
    fn new(clock: MonotonicClock) -> std::io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        // SAFETY: `owned` is a valid, non-blocking timerfd that this AsyncFd alone
        // owns for its whole life, so the registration cannot outlive the fd.
        let fd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }?;
        Ok(Self { clock, fd })
    }

    fn arm(&self, absolute: Nanos) {
        use std::os::fd::AsRawFd;
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (absolute / 1_000_000_000) as libc::time_t, tv_nsec: (absolute % 1_000_000_000) as libc::c_long },
        };
        // SAFETY: the fd is a timerfd we own; `spec` is a valid itimerspec.
        unsafe { libc::timerfd_settime(self.fd.get_ref().as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    }

    fn drain(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut expirations = 0u64;
        // SAFETY: reading 8 bytes into a u64 from our own non-blocking timerfd.
        let n = unsafe { libc::read(self.fd.get_ref().as_raw_fd(), (&mut expirations as *mut u64).cast(), std::mem::size_of::<u64>()) };
        n == std::mem::size_of::<u64>() as isize
    }
}

impl Waiter for TimerFdWaiter {
    async fn wait_until(&mut self, deadline: Nanos) {
        if self.clock.now() >= deadline {
            return;
        }
        self.arm(self.clock.origin + deadline);
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                // The reactor is gone (runtime shutting down): fall back to a plain sleep.
                let left = deadline.saturating_sub(self.clock.now());
                std::thread::sleep(std::time::Duration::from_nanos(left));
                return;
            };
            let fired = self.drain();
            guard.clear_ready();
            if fired || self.clock.now() >= deadline {
                return;
            }
        }
    }
}

/// A clock that follows `tokio::time`, for tests on a paused clock.
#[derive(Clone, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is tokio's now.
    pub fn start() -> Self {
        Self { origin: tokio::time::Instant::now() }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::start()
    }
}

impl Clock for TokioClock {
    type Waiter = TokioWaiter;

    fn now(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }

    fn waiter(&self) -> std::io::Result<TokioWaiter> {
        Ok(TokioWaiter { origin: self.origin })
    }
}

/// Waits with `tokio::time::sleep_until`.
#[derive(Debug)]
pub struct TokioWaiter {
    origin: tokio::time::Instant,
}

impl Waiter for TokioWaiter {
    async fn wait_until(&mut self, deadline: Nanos) {
        tokio::time::sleep_until(self.origin + std::time::Duration::from_nanos(deadline)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_cpu_is_read_from_its_pid() {
        let pid = Some(std::process::id());
        let mine = process_cpu_s(pid).expect("this process");
        // Spin until the kernel's tick count moves (bounded, so a starved machine fails instead of hanging).
        let busy = std::time::Instant::now();
        while process_cpu_s(pid).unwrap() < mine + 0.05 && busy.elapsed() < std::time::Duration::from_secs(20) {
            std::hint::black_box(busy.elapsed());
        }
        assert!(process_cpu_s(pid).unwrap() >= mine + 0.05);
        assert!(process_cpu_s(None).unwrap() >= mine + 0.05, "this process by its CPU clock");
        assert_eq!(process_cpu_s(Some(u32::MAX)), None);
    }

    #[tokio::test]
    async fn timerfd_wait_ends_close_to_its_deadline() {
        let clock = MonotonicClock::start();
        let mut waiter = clock.waiter().unwrap();
        for step in [200_000u64, 1_500_000, 50_000] {
            let deadline = clock.now() + step;
            waiter.wait_until(deadline).await;
            let late = clock.now() - deadline;
            assert!(clock.now() >= deadline);
            // Generous bound: a loaded CI machine may be slow, but never a whole 20 ms late.
            assert!(late < 20_000_000, "woke {late} ns late");
        }
    }

    #[tokio::test]
    async fn waiting_for_the_past_returns_at_once() {
        let clock = MonotonicClock::start();
        let mut waiter = clock.waiter().unwrap();
        waiter.wait_until(0).await;
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = TokioClock::start();
        let mut waiter = clock.waiter().unwrap();
        waiter.wait_until(3_000_000_000).await;
        assert_eq!(clock.now(), 3_000_000_000);
    }
}
