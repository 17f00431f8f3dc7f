//! The relay server (the Photon guide's room model): clients join
//! rooms of K players; each raises events that the server relays, reliable or
//! unreliable, to the room's other members. No simulation: the cost measured
//! is the relay's — packets, authentication tags, reliable bookkeeping,
//! matchmaking — which is what bounds a Photon-style server's CCU.
//!
//! - [`msg`]: the room control messages and the event layout.
//! - [`rooms`]: named and matched rooms.
//! - [`server`]: the event loop (receive in batches, relay, flush, housekeeping).
//! - [`profile`]: the counters the guide tells users to watch.

pub mod msg;
pub mod profile;
pub mod rooms;
pub mod server;

pub use profile::{RelayCounters, RelayGauges, RelayInterval};
pub use server::RelayServer;

use arena_proto::Secret;
use std::time::Duration;

/// How the relay server runs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RelayConfig {
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

impl RelayConfig {
    /// Up to 2^20 sessions, until told to stop, 5 s intervals.
    pub fn new(secret: Secret) -> Self {
        Self { max_clients: 1 << 20, duration: None, interval: Duration::from_secs(5), secret }
    }
}
