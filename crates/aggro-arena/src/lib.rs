//! The arena: aggro's reference authoritative UDP game server (after the PUBG server article) and
//! room relay server (Photon's model). The bots that play against them are the `aggro-swarm` crate.
//!
//! # Layout
//! - [`clock`]: the monotonic clock server and swarm share, precise sleeps, CPU time.
//! - [`udp`]: a nonblocking socket that receives and sends in batches.
//! - [`arrival`]: the kernel's receive stamps, on the shared clock.
//! - [`game`]: the map, the spatial grid and the match (movement, shots, zone).
//! - [`codec`]: bit codes, actor states and deltas, the game's messages, the client's view.
//! - [`server`]: the frame loop and its phases, replication, the per-phase profile.
//! - [`relay`]: the relay server: rooms, matchmaking, events relayed to members (Photon's room model).
//! - [`metrics`]: the counters in Prometheus text format, served at `/metrics`.
//! - [`procstat`]: resident memory and a UDP socket's kernel queue, from /proc.
//! - [`span`]: interval bookkeeping (clocks, CPU, histograms, run totals) for the server's and the
//!   swarm's profiles.
//! - [`verdict`]: which limit a run hit first (swarm CPU, server CPU, bandwidth, reliable backlog).
//! - [`fuzzing`]: the decoders' fuzz entry points (cargo-fuzz targets in `fuzz/`, a corpus test in CI).
//!
//! The wire protocol underneath is the `arena-proto` crate.

/// Declares a struct of `u64` counters together with its field-by-field `+=`, so a counter added later
/// cannot be left out of an interval's or a run's sums (the swarm's counters too).
#[macro_export]
macro_rules! counters {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($(#[$fm:meta])* pub $f:ident: u64,)* }) => {
        $(#[$m])* $vis struct $name { $($(#[$fm])* pub $f: u64,)* }
        impl std::ops::AddAssign for $name {
            fn add_assign(&mut self, o: Self) {
                $(self.$f += o.$f;)*
            }
        }
    };
}

pub mod arrival;
pub mod clock;
pub mod codec;
pub mod fuzzing;
pub mod game;
pub mod metrics;
pub mod procstat;
pub mod relay;
pub mod server;
pub mod span;
pub mod udp;
pub mod verdict;
