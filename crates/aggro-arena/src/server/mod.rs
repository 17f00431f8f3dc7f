//! The reference game server: fixed-rate frames in four timed phases.
//!
//! - **dispatch**: receive every waiting datagram (recvmmsg), apply inputs,
//!   take RPCs (join, fire) and produce the gunfire events for observers;
//! - **send flush** (optional, the PUBG change): send the reliable RPCs that
//!   dispatch produced at once, instead of with the frame's snapshots;
//! - **simulate**: movement with collision, hitscan shots, damage, death, zone;
//! - **flush**: per client, choose the relevant actors, write delta snapshots
//!   against acknowledged baselines, and send (sendmmsg).
//!
//! When a frame overruns its budget the next one starts late, so the achieved
//! tick rate falls as a real server's does.

pub mod bodies;
pub mod history;
pub mod profile;
pub mod relevance;
pub mod replicas;
pub mod replication;

mod frame;

pub use frame::GameServer;
pub use profile::{PHASES, Profile, ServerInterval};
pub use replication::Tier;

use arena_proto::Secret;
use std::time::Duration;

/// How the server runs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServeConfig {
    /// Target frames per second.
    pub tick_hz: u32,
    /// Send dispatch's reliable RPCs at once instead of at flush.
    pub send_flush: bool,
    /// Replication interleaving tiers (empty: off).
    pub tiers: Vec<Tier>,
    /// Interest radius in metres (None: everyone sees everyone).
    pub interest_m: Option<f32>,
    /// The map's seed.
    pub seed: u64,
    /// Seconds for the safe zone to close.
    pub zone_shrink_s: f64,
    /// Most sessions.
    pub max_clients: usize,
    /// Stop after this long (None: until told).
    #[serde(serialize_with = "crate::clock::secs_opt")]
    pub duration: Option<Duration>,
    /// Interval between profile records.
    #[serde(serialize_with = "crate::clock::secs")]
    pub interval: Duration,
    #[serde(skip)]
    pub secret: Secret,
}

impl ServeConfig {
    /// 30 Hz, no send flush, no interleaving, everyone relevant, 10-minute zone, 5 s intervals.
    pub fn new(secret: Secret) -> Self {
        Self {
            tick_hz: 30,
            send_flush: false,
            tiers: Vec::new(),
            interest_m: None,
            seed: 1,
            zone_shrink_s: 600.0,
            max_clients: 1 << 20,
            duration: None,
            interval: Duration::from_secs(5),
            secret,
        }
    }
}

/// Parses interleaving tiers such as `70m:1,400m:2`.
pub fn parse_tiers(text: &str) -> Result<Vec<Tier>, String> {
    text.split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let (d, k) = t.trim().split_once(':').ok_or_else(|| format!("interleave tier {t:?}: expected DISTANCEm:FRAMES, such as 70m:1"))?;
            let beyond_m = parse_metres(d)?;
            let skip = k.parse::<u32>().map_err(|_| format!("interleave tier {t:?}: {k:?} is not a whole number of frames"))?;
            if skip == 0 || skip > 10 {
                return Err(format!("interleave tier {t:?}: skip 1 to 10 frames"));
            }
            Ok(Tier { beyond_m, skip })
        })
        .collect()
}

/// Parses a distance such as `1000m`, `1.5km` or `70`.
pub fn parse_metres(text: &str) -> Result<f32, String> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("km") { (n, 1000.0) } else { (t.strip_suffix('m').unwrap_or(t), 1.0) };
    match num.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!("{text:?} is not a distance such as 70m or 1.5km")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_and_distances_parse_and_bad_ones_are_explained() {
        assert_eq!(parse_tiers("70m:1,400m:2").unwrap(), vec![Tier { beyond_m: 70.0, skip: 1 }, Tier { beyond_m: 400.0, skip: 2 }]);
        assert_eq!(parse_metres("1.5km").unwrap(), 1500.0);
        assert!(parse_tiers("70m").unwrap_err().contains("expected"));
        assert!(parse_tiers("70m:x").unwrap_err().contains("whole number"));
        assert!(parse_metres("-3m").is_err());
    }
}
