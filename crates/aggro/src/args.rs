//! Command-line values the commands share, checked into bad input (exit 2)
//! that names the flag: the parsing itself is `aggro_core::units`'.

use crate::BadInput;
use aggro_core::units::{parse_bandwidth, parse_duration, parse_positive_duration};
use std::time::Duration;

/// A duration flag (`--what`), longer than zero.
pub fn duration(text: &str, what: &str) -> anyhow::Result<Duration> {
    parse_positive_duration(text).map_err(|e| BadInput(format!("--{what}: {e}")).into())
}

/// A duration flag (`--what`) that may be zero.
pub fn duration_or_zero(text: &str, what: &str) -> anyhow::Result<Duration> {
    parse_duration(text).map_err(|e| BadInput(format!("--{what}: {e}")).into())
}

/// An optional bandwidth flag (`--what`), in bytes per second.
pub fn bandwidth(text: Option<&str>, what: &str) -> anyhow::Result<Option<f64>> {
    text.map(|t| parse_bandwidth(t).map_err(|e| BadInput(format!("--{what}: {e}")).into())).transpose()
}
