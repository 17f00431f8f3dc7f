//! Parsing what users type: durations (`3m`, `10s`, `50ms`) and rates.

use std::time::Duration;

/// Parses a human duration such as `3m`, `1h30m`, `10s` or `250ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| format!("bad duration {text:?}: {e} (try 30s, 3m, 250ms)"))
}

/// Parses a positive request rate per second, such as `1215` or `2.5k`.
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
    Ok(rate)
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
    fn durations_and_rates_parse() {
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("three").is_err());
        assert_eq!(parse_rate("1215").unwrap(), 1215.0);
        assert_eq!(parse_rate("2.5k").unwrap(), 2500.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-4").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn nanos_format_by_magnitude() {
        assert_eq!(format_nanos(850), "850ns");
        assert_eq!(format_nanos(12_300), "12.3µs");
        assert_eq!(format_nanos(4_560_000), "4.56ms");
        assert_eq!(format_nanos(1_200_000_000), "1.20s");
    }
}
