//! Parsing what users type: durations (`3m`, `10s`, `50ms`), rates and bandwidths.

use std::time::Duration;

/// Parses a human duration such as `3m`, `1h30m`, `10s` or `250ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| format!("bad duration {text:?}: {e} (try 30s, 3m, 250ms)"))
}

/// Parses a duration that must be longer than zero (a run's length, an interval).
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

/// A bandwidth such as `100mbit`, `1gbit`, `512kbit`, `10MB/s` or `1.5GB/s`, in bytes per second.
pub fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let units: [(&str, f64); 8] = [
        ("gbit", 1e9 / 8.0),
        ("mbit", 1e6 / 8.0),
        ("kbit", 1e3 / 8.0),
        ("bit", 1.0 / 8.0),
        ("gb/s", 1e9),
        ("mb/s", 1e6),
        ("kb/s", 1e3),
        ("b/s", 1.0),
    ];
    let (num, scale) = units
        .iter()
        .find_map(|(u, s)| lower.strip_suffix(u).map(|n| (n.to_string(), *s)))
        .ok_or_else(|| format!("{t:?} has no unit: give such as 100mbit, 1gbit or 10MB/s"))?;
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("{t:?} is not a bandwidth such as 100mbit")),
    }
}

/// The highest request rate a run may ask for: a hundred times what one process issues (the null
/// target schedules about a million a second), and far from the schedule's nanosecond resolution,
/// where every slot would fall at one instant and a run would never end.
pub const MAX_RATE: f64 = 1e8;

/// Refuses a rate above [`MAX_RATE`], naming `what` gave it.
pub fn check_rate(rate: f64, what: &str) -> Result<f64, String> {
    if rate > MAX_RATE {
        return Err(format!(
            "{what}: {rate:e} requests/s is more than aggro can schedule (at most 100M/s per process); \
             for the most a target takes, give --rate max, or run workers side by side"
        ));
    }
    Ok(rate)
}

/// Parses a positive request rate per second, such as `1215` or `2.5k`, up to [`MAX_RATE`].
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1_000.0),
        None => match t.strip_suffix(['m', 'M']) {
            Some(n) => (n, 1_000_000.0),
            None => (t, 1.0),
        },
    };
    let value: f64 = number.parse().map_err(|_| format!("bad rate {text:?}: expected a number of requests per second"))?;
    let rate = value * scale;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("bad rate {text:?}: must be above zero"));
    }
    check_rate(rate, &format!("bad rate {text:?}"))
}

/// Formats nanoseconds compactly for tables: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn format_nanos(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.1}µs", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2}ms", v / 1e6)
    } else {
        format!("{:.2}s", v / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_parse_in_bits_and_bytes() {
        assert_eq!(parse_bandwidth("100mbit").unwrap(), 12_500_000.0);
        assert_eq!(parse_bandwidth("1Gbit").unwrap(), 125_000_000.0);
        assert_eq!(parse_bandwidth("10MB/s").unwrap(), 10_000_000.0);
        assert!(parse_bandwidth("100").unwrap_err().contains("no unit"));
        assert!(parse_bandwidth("-3mbit").is_err());
    }

    #[test]
    fn a_positive_duration_refuses_zero() {
        assert_eq!(parse_positive_duration("2s"), Ok(Duration::from_secs(2)));
        assert!(parse_positive_duration("0s").unwrap_err().contains("longer than zero"));
    }

    #[test]
    fn durations_and_rates_parse() {
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("three").is_err());
        assert_eq!(parse_rate("1215").unwrap(), 1215.0);
        assert_eq!(parse_rate("2.5k").unwrap(), 2500.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-4").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(parse_rate("100M").unwrap(), MAX_RATE);
        assert!(parse_rate("1e30").unwrap_err().contains("more than aggro can schedule"));
        assert!(parse_rate("inf").is_err());
    }

    #[test]
    fn nanos_format_by_magnitude() {
        assert_eq!(format_nanos(850), "850ns");
        assert_eq!(format_nanos(12_300), "12.3µs");
        assert_eq!(format_nanos(4_560_000), "4.56ms");
        assert_eq!(format_nanos(1_200_000_000), "1.20s");
    }
}
