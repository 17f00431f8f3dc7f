//! How the swarm runs, whatever its bots do: the server, the bots and their pace, the sockets, the
//! intervals, the added network.

use arena_proto::Secret;
use std::net::SocketAddr;
use std::time::Duration;

/// How the swarm runs, whatever its bots do.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SwarmConfig {
    /// The server's address.
    #[serde(serialize_with = "display")]
    pub server: SocketAddr,
    /// Bots kept in play.
    pub bots: usize,
    /// Each bot's tick: an input (br) or an event (relay) every this long.
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub tick_every: Duration,
    /// UDP sockets shared by the bots.
    pub sockets: usize,
    /// New connections per second while filling up: the rate, or with `pace_joins` the most.
    pub connect_rate: u32,
    /// Joins ramp up to `connect_rate` and back off when they fail or the server starves ([`pacer`](crate::pacer)).
    pub pace_joins: bool,
    /// The server's process, when known: a pacer backs off when it waits for a core.
    pub server_pid: Option<u32>,
    /// A bot that left (died, or churned out) is replaced after this long.
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub respawn_after: Duration,
    /// Run length (from the first connection).
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub duration: Duration,
    /// Interval between records.
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub interval: Duration,
    /// Seed of every bot's choices.
    pub seed: u64,
    /// Client ids start here (so several swarms against one server do not collide).
    pub first_client_id: u64,
    /// Fault injection: this fraction of received datagrams is thrown away before any bot sees it.
    pub receive_loss: f64,
    /// Bots stop ticking this long before the end, so what they sent is received before they leave.
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub drain: Duration,
    /// The swarm looks at its sockets and timers at most once per this long, as a game client's frame
    /// loop does: fewer wake-ups, less CPU per bot. What arrives meanwhile is timed by the kernel's stamp of
    /// its arrival ([`Transport::arrived_us`](crate::Transport::arrived_us): a datagram exactly; a WebSocket message at the arrival of the
    /// last bytes its read took, so messages read together err long by up to this much, never short); ticks
    /// may go out as late (their lateness is counted from the look that found them due), so sends reach
    /// the server in bunches, which it handles more cheaply than independent clients' (zero: as soon as
    /// anything is ready).
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub poll_every: Duration,
    /// Once sockets were found ready, the swarm looks at them again no sooner than this long after —
    /// while still waking for each tick exactly: a wake-up per so many readinesses instead of one per
    /// readiness, where most of a busy swarm's CPU went. What arrives meanwhile is timed by the kernel's
    /// stamp of its arrival, as with `poll_every`; what a bot does on an arrival (a reply, the end of a
    /// `measure`d call, which counts to the answer's stamp) happens up to this much later (zero: at
    /// once).
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub read_every: Duration,
    /// A network between a share of the bots and the server: delay, jitter and loss added in the swarm
    /// (the WebSocket transport's bots; [`network`](crate::network)).
    pub net: Option<crate::network::NetSpec>,
    /// TLS under the WebSocket transport's connections (`wss://`, `https://`).
    pub tls: Option<crate::websocket::tls::TlsTarget>,
    #[serde(skip)]
    pub secret: Secret,
}

fn display<S: serde::Serializer>(a: &SocketAddr, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(a)
}

impl SwarmConfig {
    /// 100 bots ticking at 30 Hz, 1,000 connects/s, 2 minutes, sockets read at most once a millisecond.
    pub fn new(server: SocketAddr, secret: Secret) -> Self {
        Self {
            server,
            bots: 100,
            tick_every: Duration::from_micros(1_000_000 / 30),
            sockets: 0,
            connect_rate: 1000,
            pace_joins: false,
            server_pid: None,
            respawn_after: Duration::from_secs(1),
            duration: Duration::from_secs(120),
            interval: Duration::from_secs(5),
            seed: 1,
            first_client_id: 1,
            receive_loss: 0.0,
            drain: Duration::ZERO,
            poll_every: Duration::ZERO,
            read_every: Duration::from_millis(1),
            net: None,
            tls: None,
            secret,
        }
    }

    /// Ticks per second of the whole swarm.
    pub fn tick_rate(&self) -> f64 {
        self.bots as f64 / self.tick_every.as_secs_f64().max(1e-6)
    }
}
