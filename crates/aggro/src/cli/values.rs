//! The flags' value parsers: each turns what was typed into the value a command uses, so bad input is
//! refused while the command line is read — clap names the flag and exits 2 — and no handler parses
//! text again. The spelling itself (`30s`, `2.5k`, `100mbit`) is `aggro_core::units`'.

use aggro_core::Share;
use aggro_core::units::{parse_bandwidth, parse_duration, parse_positive_duration, parse_rate};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, SystemTime};

/// A duration longer than zero: a run's length, an interval, a period.
pub fn span(text: &str) -> Result<Duration, String> {
    parse_positive_duration(text)
}

/// A duration that may be zero: a drain, a polling period.
pub fn span_or_zero(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// An executor's reporting interval: at least 10 ms.
pub fn interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < Duration::from_millis(10) { Err("must be at least 10ms".into()) } else { Ok(d) }
}

/// How a duration flag is written again for a child process or a result's spec (`1s 500ms`).
pub fn spell(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A request rate per second, such as `1215` or `2.5k`.
pub fn rate(text: &str) -> Result<f64, String> {
    parse_rate(text)
}

/// `--rate`: requests per second, or `max` for a closed loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// Each loader as fast as it can.
    Max,
    /// This many requests per second, open loop.
    PerSecond(f64),
}

/// Parses `--rate`.
pub fn rate_or_max(text: &str) -> Result<Rate, String> {
    if text.trim() == "max" { Ok(Rate::Max) } else { parse_rate(text).map(Rate::PerSecond) }
}

/// A bandwidth in bytes per second, typed as `100mbit`, `1gbit` or `10MB/s`.
pub fn bandwidth(text: &str) -> Result<f64, String> {
    parse_bandwidth(text)
}

/// A socket address (`127.0.0.1:7777`, `localhost:9100`), resolved.
pub fn address(text: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| format!("{text:?} is not an address such as 127.0.0.1:7777"))
}

/// A loopback address (`--live`: the page shows the run's spec, so it is served to this machine only).
pub fn loopback(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|_| format!("{text:?} is not HOST:PORT, such as 127.0.0.1:8089"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address; the live view only serves 127.0.0.1 or ::1"));
    }
    Ok(addr)
}

/// `--worker I/N` (1-based shard I of N) as a share of the run's schedule.
pub fn worker(text: &str) -> Result<Share, String> {
    let bad = || format!("{text:?} is not I/N with 1 <= I <= N, such as 2/4");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    i.checked_sub(1).and_then(|index| Share::new(index, n)).ok_or_else(bad)
}

/// `--start-at` (RFC 3339) as a wall-clock time.
pub fn start_at(text: &str) -> Result<SystemTime, String> {
    humantime::parse_rfc3339_weak(text.trim()).map_err(|e| format!("{text:?} is not an RFC 3339 time such as 2026-11-22T10:00:00Z: {e}"))
}

/// A share in percent, 0 to 100 (a trailing `%` is allowed).
pub fn percent(text: &str) -> Result<f64, String> {
    let value: f64 = text.trim_end_matches('%').parse().map_err(|_| format!("`{text}` is not a percentage"))?;
    if (0.0..=100.0).contains(&value) { Ok(value) } else { Err(format!("{value} is not between 0 and 100")) }
}

/// A fraction strictly between 0 and 1.
pub fn fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("{text:?} is not a fraction between 0 and 1")),
    }
}

/// `--threads`: a worker count up to 1024 (beyond that the threads' stacks alone exhaust a machine
/// before a request is sent), 0 for one per CPU.
pub fn threads(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(n),
        Ok(n) => Err(format!("{n} worker threads is more than aggro runs (at most 1024; 0 means one per CPU)")),
        Err(_) => Err(format!("{text:?} is not a thread count")),
    }
}

/// Which CPUs a bench's server and its swarm run on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pins {
    pub server: Vec<usize>,
    pub swarm: Vec<usize>,
}

/// `--pin SERVER/SWARM`: two CPU lists such as `0/1` or `0/1-3,6`, each CPU one this machine has.
pub fn pins(text: &str) -> Result<Pins, String> {
    let (server, swarm) = text.split_once('/').ok_or_else(|| format!("--pin {text:?}: expected SERVER_CPUS/SWARM_CPUS such as 0/1-3"))?;
    // SAFETY: sysconf reads a constant of the system.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    let list = |part: &str| -> Result<Vec<usize>, String> {
        let mut out = Vec::new();
        for item in part.split(',') {
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
                return Err(format!("--pin {text:?}: {item:?} is not a CPU or a range of CPUs such as 1-3"));
            };
            if a > b || b >= cpus {
                return Err(format!("--pin {text:?}: {item:?} is not among this machine's CPUs (0-{})", cpus - 1));
            }
            out.extend(a..=b);
        }
        Ok(out)
    };
    Ok(Pins { server: list(server)?, swarm: list(swarm)? })
}

/// A flag whose text is checked when read but handed on as typed (to a child process, into a result's
/// spec): `checked(parse)` refuses what `parse` refuses.
pub fn checked<T: 'static>(parse: fn(&str) -> Result<T, String>) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |text| parse(text).map(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_through_their_spelling() {
        for d in [Duration::from_millis(100), Duration::from_millis(1500), Duration::ZERO, Duration::from_secs(7200)] {
            assert_eq!(span_or_zero(&spell(d)), Ok(d));
        }
        assert!(span("0s").is_err());
        assert!(interval("5ms").unwrap_err().contains("10ms"));
    }

    #[test]
    fn rates_shards_and_addresses_are_checked() {
        assert_eq!(rate_or_max("max"), Ok(Rate::Max));
        assert_eq!(rate_or_max("2.5k"), Ok(Rate::PerSecond(2500.0)));
        assert!(rate_or_max("fast").is_err());
        assert_eq!(worker("2/4").map(|s| (s.index, s.of)), Ok((1, 4)));
        assert!(worker("0/4").is_err() && worker("5/4").is_err() && worker("x").is_err());
        assert!(loopback("10.0.0.1:80").unwrap_err().contains("loopback"));
        assert!(loopback("127.0.0.1:8089").is_ok());
        assert!(percent("101").is_err() && percent("2.5%") == Ok(2.5));
        assert!(threads("1025").is_err());
        assert_eq!(pins("0/0"), Ok(Pins { server: vec![0], swarm: vec![0] }));
        assert!(pins("0").is_err() && pins("0/x").is_err() && pins("0/9999").is_err() && pins("0/1-0").is_err());
        assert_eq!(checked(rate)("2k"), Ok("2k".to_string()));
    }
}
