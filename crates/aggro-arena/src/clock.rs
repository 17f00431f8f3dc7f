//! The one clock server and swarm share: CLOCK_MONOTONIC in µs. Two processes
//! on one machine read the same clock, which is what makes the swarm's
//! action-to-observer delays exact rather than estimated.

pub use aggro_core::clock::tighten_timer_slack;

/// Microseconds of CLOCK_MONOTONIC.
pub fn now_us() -> u64 {
    aggro_core::clock::monotonic_ns() / 1_000
}

/// Milliseconds of the wall clock (connect tokens expire by it).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Sleeps until `deadline_us`: the kernel's sleep for all but the last 50 µs, then a spin on the
/// clock. Returns the lateness in µs.
pub fn sleep_until(deadline_us: u64) -> u64 {
    loop {
        let now = now_us();
        if now >= deadline_us {
            return now - deadline_us;
        }
        let left = deadline_us - now;
        if left > 50 {
            std::thread::sleep(std::time::Duration::from_micros(left - 50));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// CPU time this process has used, in µs (user + system).
pub fn process_cpu_us() -> u64 {
    cpu_us(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of the calling thread, in µs: a swarm thread's own, beside its siblings'.
pub fn thread_cpu_us() -> u64 {
    cpu_us(libc::RUSAGE_THREAD)
}

fn cpu_us(who: libc::c_int) -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(who, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Serialises a duration as seconds (`#[serde(serialize_with = "crate::clock::secs")]`).
pub fn secs<S: serde::Serializer>(d: &std::time::Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Serialises an optional duration as seconds or null.
pub fn secs_opt<S: serde::Serializer>(d: &Option<std::time::Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => secs(d, s),
        None => s.serialize_none(),
    }
}
