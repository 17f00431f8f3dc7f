//! `aggro arena`'s arguments: the game and relay servers, the swarm, the bench.

use crate::cli::values::{self, checked};
use aggro_arena::server::{Tier, parse_metres, parse_tiers};
use aggro_arena::verdict::Slo;
use aggro_core::Share;
use aggro_swarm::backoff::Backoff;
use aggro_swarm::network::NetSpec;
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum ArenaCommand {
    /// Run the reference game server (phase-timed frames) or the room relay server until stopped or --duration.
    Serve(ServeArgs),
    /// Play bots against an arena or relay server and measure action-to-observer delay.
    Swarm(SwarmArgs),
    /// Start server and swarm as separate processes, sweep player counts (and variants), print one table.
    Bench(ArenaBenchArgs),
}

/// What server and swarm share.
#[derive(Debug, Args, Clone)]
pub struct ArenaCommon {
    /// The secret connect tokens are signed with; server and swarm must agree.
    #[arg(long, env = "AGGRO_ARENA_SECRET", default_value = "aggro-arena-local", hide_env_values = true)]
    pub secret: String,
    /// Seed (map for the server; drops, paths and aim for the swarm).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds between interval records.
    #[arg(long, default_value = "5s", value_parser = values::span)]
    pub interval: Duration,
    /// Result file (default ./aggro-results/TIME-arena-COMMAND.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Serve the counters in Prometheus text format at http://ADDR/metrics (updated every interval).
    #[arg(long, value_name = "ADDR", value_parser = values::address)]
    pub metrics: Option<SocketAddr>,
    /// Print only the summary.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Interleaving tiers given as one value (`70m:1,400m:2`). A type of its own: clap reads an `Option<Vec<_>>`
/// field as a list of values, each parsed alone, and a parser returning the whole list panics at run time.
#[derive(Debug, Clone)]
pub struct Tiers(pub Vec<Tier>);

fn tiers(text: &str) -> Result<Tiers, String> {
    parse_tiers(text).map(Tiers)
}

/// How the server plays the game.
#[derive(Debug, Args, Clone)]
pub struct ServerGameArgs {
    /// Target frames per second.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub tick: u32,
    /// Replication interleaving tiers, such as 70m:1,400m:2 (beyond 70 m skip 1 frame, beyond 400 m skip 2).
    #[arg(long, value_parser = tiers)]
    pub interleave: Option<Tiers>,
    /// Send the reliable RPCs dispatch produced at once, not with the frame's snapshots.
    #[arg(long)]
    pub send_flush: bool,
    /// Interest radius, such as 1000m (default: everyone sees everyone).
    #[arg(long, value_parser = parse_metres)]
    pub interest: Option<f32>,
    /// Time for the safe zone to close.
    #[arg(long, default_value = "10m", value_parser = values::span)]
    pub zone: Duration,
}

#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Which server: the authoritative game server, or the room relay (Photon's model).
    #[arg(long, value_enum, default_value = "game")]
    pub mode: Mode,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7777", value_parser = values::address)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub game: ServerGameArgs,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, value_parser = values::span)]
    pub duration: Option<Duration>,
    /// Most sessions at once.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_clients: usize,
    #[command(flatten)]
    pub common: ArenaCommon,
}

#[derive(Debug, Args, Clone)]
pub struct SwarmArgs {
    /// The server's address.
    #[arg(long, default_value = "127.0.0.1:7777")]
    pub server: String,
    /// Bots kept in play (a bot that leaves is replaced after a second); with --worker, the whole run's count.
    #[arg(long = "ccu", alias = "bots", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub bots: u32,
    /// Run length.
    #[arg(long, default_value = "2m", value_parser = values::span)]
    pub duration: Duration,
    /// Bot behaviour: br against the game server, relay against the relay server.
    #[arg(long = "mode", alias = "behaviour", value_enum, default_value = "br")]
    pub behaviour: Behaviour,
    #[command(flatten)]
    pub relay: RelayArgs,
    #[command(flatten)]
    pub colyseus: ColyseusArgs,
    /// Bots that run this Lua script (docs/BOTS.md) against --server over WebSocket, Socket.IO and HTTP
    /// (sets --mode script).
    #[arg(long, value_name = "FILE")]
    pub script: Option<std::path::PathBuf>,
    /// The CPU one call into the script (a bot's main chunk, an `every` callback, a handler) may take
    /// without waiting: past it the bot stops with an error where the script stood, so no script holds the
    /// swarm, its other bots, --duration or a signal.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = values::span)]
    pub script_budget: std::time::Duration,
    /// With a wss:// (https://) --server: also trust the certificates of this PEM file (a server with a
    /// certificate of its own), beside the public roots.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
    /// This process is shard I of N (1-based, such as 2/4): it takes its share of the bots (whole rooms in relay mode).
    #[arg(long, value_name = "I/N", value_parser = values::worker)]
    pub worker: Option<Share>,
    /// Swarm threads, each with a block of this process's bots (whole rooms in relay mode), its own
    /// sockets and timers (and Lua state): 0, one per CPU this process may use.
    #[arg(long, default_value_t = 0, value_parser = values::threads)]
    pub threads: usize,
    /// Fault injection: throw away this fraction of received datagrams before the bots see them.
    #[arg(long, default_value_t = 0.0)]
    pub receive_loss: f64,
    /// The server's /metrics address: its CPU over the run (aggro's servers) and its longest event-loop delay (a Node
    /// server's `nodejs_eventloop_lag_max_seconds`) go into the bottleneck verdict; with --server-pid too, the
    /// process's own CPU counts.
    #[arg(long, value_name = "ADDR", value_parser = values::address)]
    pub server_metrics: Option<SocketAddr>,
    /// The server's process id (any server, such as your Colyseus one): its CPU and its threads' wait for a
    /// core over the run go into the verdict.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// The service the players must get, judged before any resource (defaults: joins>=99%, disconnects<=1%,
    /// delivery>=99.9%, p99<=100ms; http>=N%, a script's HTTP requests, as joins unless given; state>=N/s, state
    /// updates per bot with every bot seated, only when given); a run that breaks one exits 3, one whose server is
    /// gone exits 1. A script's stages take thresholds of their own, on the time from a bot's start or the rate
    /// over the run: stage:matched p99<5s, stage:matched rate>=30/s; so does its players' way back after losing
    /// their server: reconnect:p99<10s.
    #[arg(long, value_name = "THRESHOLDS", value_parser = SwarmSlo::parse)]
    pub slo: Option<SwarmSlo>,
    /// Players that lose their server come back as real clients do, the same player, after a jittered
    /// exponential backoff from BASE doubling up to CAP (250ms..30s): a scripted bot runs its script again
    /// from the top, a Colyseus bot asks matchmaking for a seat again, a relay bot opens a new session and
    /// joins its room again. Without it a bot sent away leaves play (a newcomer takes a Colyseus or relay
    /// bot's place; a script may call reconnect()).
    #[arg(long, value_name = "BASE..CAP", value_parser = Backoff::parse)]
    pub reconnect: Option<Backoff>,
    /// With --server-pid: the shortest stretch, after every bot joined, over which a steady climb of the
    /// server's memory, open files or threads is judged a leak (exit 3); shorter runs print the trends only.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = values::span)]
    pub leak_window: Duration,
    /// Serve the report on this loopback address while the swarm plays (open http://ADDR/).
    #[arg(long, value_name = "ADDR", value_parser = values::loopback)]
    pub live: Option<SocketAddr>,
    /// Bandwidth budget for the verdict, such as 100mbit or 1gbit.
    #[arg(long, value_parser = values::bandwidth)]
    pub uplink: Option<f64>,
    /// Input ticks per second per bot.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub input_hz: u32,
    /// Shots per second per bot while it sees an enemy.
    #[arg(long, default_value_t = 1.0)]
    pub fire_rate: f32,
    /// Bots per hot-drop cluster.
    #[arg(long, default_value_t = 25)]
    pub cluster: usize,
    /// UDP sockets shared by the bots (0: one per 512 bots, at most 8).
    #[arg(long, default_value_t = 0)]
    pub sockets: usize,
    /// New connections per second while filling up, forced. Without it joins start at 200/s and ramp up
    /// to 1,000/s, halving when joins fail or the server (--server-pid) waits for a core, and the interval
    /// lines say so.
    #[arg(long, value_name = "RATE")]
    pub connect_rate: Option<u32>,
    /// First client id (give each swarm process its own range when several play against one server).
    #[arg(long, default_value_t = 1)]
    pub first_client_id: u64,
    /// Look at the sockets and timers at most once per this long (such as 1ms, or 16ms for a 60 Hz client's
    /// frame loop): fewer wake-ups, so less CPU per bot, at the price of ticks up to this late — bots' sends
    /// then reach the server in bunches, which costs it less than independent clients do. Arrivals are
    /// timed by the kernel's receive stamp: a datagram exactly, a WebSocket message at the arrival of the
    /// last bytes its read took (up to this much long, never short). Default: as soon as anything is ready.
    #[arg(long, value_name = "DURATION", value_parser = values::span_or_zero)]
    pub poll_every: Option<Duration>,
    /// Once sockets were found ready, look at them again no sooner than this long after, while still
    /// waking for every tick on time: one wake-up for many arrivals. Each arrival is still timed by the
    /// kernel's receive stamp; what a bot does on it (a reply; the end of a measured call, which counts
    /// to the answer's stamp) comes up to this much later. 0: at each readiness.
    #[arg(long, value_name = "DURATION", value_parser = values::span_or_zero, default_value = "1ms")]
    pub read_every: Duration,
    /// A network between a share of the bots and the server, added in the swarm (WebSocket, Socket.IO,
    /// HTTP and Colyseus bots): `DELAY[±JITTER][,LOSS%][@SHARE%]`, such as 80ms±20ms,0.5%@40% — each way's
    /// delay ± a uniform jitter, order kept as TCP keeps it, a lost message a retransmission (200 ms) later
    /// holding back those behind it; for 40 % of the bots (default all). docs/BOTS.md says what it leaves out.
    #[arg(long, value_name = "NETWORK", value_parser = NetSpec::parse)]
    pub net: Option<NetSpec>,
    #[command(flatten)]
    pub common: ArenaCommon,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Behaviour {
    /// Battle royale: hot drops, waypoints, shoot at the nearest visible enemy, die and leave.
    Br,
    /// Rooms: join a room of --room-size, raise an event of --msg-bytes every --send-every.
    Relay,
    /// A Colyseus server over WebSocket: matchmake into --room, send a move every --send-every (or play --play FILE).
    Colyseus,
    /// Bots running a Lua script (--script FILE) over WebSocket, Socket.IO and HTTP.
    Script,
}

/// Photon's receiver groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Receivers {
    /// Every member, the sender included (ReceiverGroup.All).
    All,
    /// The other members (ReceiverGroup.Others).
    Others,
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The authoritative game server: simulation, replication, phase-timed frames.
    Game,
    /// The room relay: events relayed to the other members of a room.
    Relay,
    /// Your Colyseus server (bench only: started by --server-cmd, loaded over WebSocket).
    Colyseus,
}

/// The relay behaviour's room profile.
#[derive(Debug, Args, Clone)]
pub struct RelayArgs {
    /// Players per room.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(2..=255))]
    pub room_size: u8,
    /// Each player raises an event this often.
    #[arg(long, default_value = "100ms", value_parser = values::span)]
    pub send_every: Duration,
    /// Bytes per event (its 17-byte header included).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(17..=1172))]
    pub msg_bytes: u32,
    /// Events go on the reliable channel (default: unreliable).
    #[arg(long)]
    pub reliable: bool,
    /// Who gets each event: all members, its sender included (the guide's arithmetic counts this), or the others.
    #[arg(long, value_enum, default_value = "all")]
    pub receivers: Receivers,
    /// Players leaving (each replaced by a newcomer) per second, over the whole swarm.
    #[arg(long, default_value_t = 0.0)]
    pub churn: f64,
    /// Join any room with a free seat (matchmaking) instead of named rooms.
    #[arg(long)]
    pub matchmaking: bool,
}

/// How Colyseus bots play (`--mode colyseus`).
#[derive(Debug, Args, Clone)]
pub struct ColyseusArgs {
    /// The room name to matchmake into (the reference room's is battle).
    #[arg(long, default_value = "battle")]
    pub room: String,
    /// A play file: your room, join method and options, messages (type, payload template, period) and the
    /// observed broadcast (docs/COLYSEUS.md); replaces --room and --send-every.
    #[arg(long, value_name = "FILE")]
    pub play: Option<PathBuf>,
    /// Colyseus bots hold their messages until every bot of this swarm has joined, so each broadcast reaches a
    /// full room and delivery can be checked exactly.
    #[arg(long)]
    pub start_together: bool,
    /// Colyseus bots stop sending this long before the end, so broadcasts in flight are received and counted.
    #[arg(long, default_value = "1s", value_parser = values::span_or_zero)]
    pub drain: Duration,
}

#[derive(Debug, Args, Clone)]
pub struct ArenaBenchArgs {
    /// Which server to load: the game server (players, variants), the relay (CCU, room profile) or your Colyseus
    /// server (CCU, --server-cmd).
    #[arg(long, value_enum, default_value = "game")]
    pub mode: Mode,
    #[command(flatten)]
    pub relay: RelayArgs,
    #[command(flatten)]
    pub colyseus: ColyseusArgs,
    /// Colyseus mode: the command that starts your server, run by `sh -c` with PORT in its environment
    /// (and {port} in the command replaced), such as "node examples/colyseus/server.mjs".
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// A reconnect storm in each run (with --server-cmd; Colyseus bots or --script): the server is killed this long after
    /// the swarm starts and started again on its port; the bots come back (--reconnect 250ms..30s), and each
    /// row says how long the players took to come back and how many never did.
    #[arg(long, value_name = "DURATION", value_parser = values::span)]
    pub restart_at: Option<Duration>,
    /// Your server's players as a Lua script (docs/BOTS.md): the sweep of --players runs them against
    /// --server-cmd's server instead of Colyseus bots (implies --mode colyseus's sweep).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Player counts to sweep (CCU in relay and colyseus modes).
    #[arg(long, default_value = "25,50,100,200", value_delimiter = ',')]
    pub players: Vec<u32>,
    /// Variants to compare with the base server: interleave, send-flush, or both joined by + (interleave+send-flush).
    #[arg(long, value_delimiter = ',')]
    pub compare: Vec<String>,
    #[command(flatten)]
    pub game: ServerGameArgs,
    /// Measured time per run (after the warm-up).
    #[arg(long, default_value = "10s", value_parser = values::span)]
    pub duration: Duration,
    /// Time for bots to connect and land before measuring.
    #[arg(long, default_value = "4s", value_parser = values::span)]
    pub warmup: Duration,
    /// Tiers the interleave variant uses.
    #[arg(long, default_value = "70m:1,400m:2", value_parser = checked(parse_tiers))]
    pub tiers: String,
    /// Shots per second per bot while it sees an enemy.
    #[arg(long, default_value_t = 1.0)]
    pub fire_rate: f32,
    /// Runs per variant, the variants taking turns (base, interleave, …, base, interleave, …); each variant's
    /// runs are merged, so a drift in the machine's speed falls on every variant alike.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Pin the server and the swarm to CPUs of their own: SERVER/SWARM CPU lists such as 0/1-3 (bare
    /// --pin: 0/1). The swarm runs a thread per CPU it is given.
    #[arg(long, value_name = "SERVER/SWARM", num_args = 0..=1, default_missing_value = "0/1", value_parser = values::pins)]
    pub pin: Option<values::Pins>,
    /// Bandwidth budget for the verdict, such as 100mbit or 1gbit.
    #[arg(long, value_parser = values::bandwidth)]
    pub uplink: Option<f64>,
    /// First port to use; each run takes the next one free on 127.0.0.1 (TCP and UDP).
    #[arg(long, default_value_t = 7800)]
    pub port: u16,
    /// The swarms look at their sockets at most once per this long (`aggro arena swarm --poll-every`): less
    /// CPU per bot, but sends in bunches the server handles more cheaply than independent clients' — not for
    /// finding a server's limit.
    #[arg(long, value_name = "DURATION", value_parser = values::span_or_zero)]
    pub poll_every: Option<Duration>,
    /// The swarms read their open sockets at most once per this long (`aggro arena swarm --read-every`,
    /// default 1ms; 0: at each readiness).
    #[arg(long, value_name = "DURATION", value_parser = values::span_or_zero)]
    pub read_every: Option<Duration>,
    #[command(flatten)]
    pub common: ArenaCommon,
}

impl ArenaBenchArgs {
    /// The swarm's command-line arguments for `--poll-every` and `--read-every`, if given.
    pub fn swarm_polling(&self) -> Vec<String> {
        let given = [("--poll-every", self.poll_every), ("--read-every", self.read_every)];
        given.into_iter().filter_map(|(flag, d)| Some([flag.to_string(), values::spell(d?)])).flatten().collect()
    }
}

/// `arena swarm --slo`: the service the players must get, and thresholds on a script's players' way in
/// and back (the operations `stage:NAME` and `reconnect`), checked against the result as `aggro report
/// --slo` checks a run.
#[derive(Clone, Debug, Default)]
pub struct SwarmSlo {
    pub service: Slo,
    pub stages: Vec<aggro_report::slo::Threshold>,
}

impl SwarmSlo {
    fn parse(text: &str) -> Result<SwarmSlo, String> {
        use aggro_swarm::{RECONNECT, STAGE};
        let (stages, service): (Vec<&str>, Vec<&str>) = text
            .split(',')
            .map(str::trim)
            .partition(|t| t.starts_with(STAGE) || t.strip_prefix(RECONNECT).is_some_and(|m| m.starts_with([':', ' '])));
        Ok(SwarmSlo { service: Slo::parse(&service.join(","))?, stages: aggro_report::slo::parse(&stages.join(","))? })
    }
}
