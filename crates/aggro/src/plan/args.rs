//! `aggro plan`'s arguments.

use crate::arena::args::Receivers;
use crate::cli::values::{self};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `aggro plan`: either a room profile (the arithmetic) or measured sweeps (the planner).
#[derive(Debug, Args, Clone)]
pub struct PlanArgs {
    /// Measured relay (or arena) sweep result files to fit; without them, only the arithmetic.
    #[arg(long, value_delimiter = ',')]
    pub from: Vec<PathBuf>,
    /// Players per room.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(2..=255))]
    pub room_size: u8,
    /// Each player raises an event this often.
    #[arg(long, default_value = "100ms", value_parser = values::span)]
    pub send_every: Duration,
    /// Bytes per event.
    #[arg(long, default_value_t = 200)]
    pub msg_bytes: u32,
    /// Who gets each event: all members (as the guide counts: 4 players, 160 out per room per second) or the others.
    #[arg(long, value_enum, default_value = "all")]
    pub receivers: Receivers,
    /// Players to plan for.
    #[arg(long)]
    pub ccu: Option<u32>,
    /// The server's uplink (the arithmetic's budget), such as 100mbit.
    #[arg(long, value_parser = values::bandwidth)]
    pub uplink: Option<f64>,
    /// The NIC of the planned server (with --from), such as 1gbit.
    #[arg(long, value_parser = values::bandwidth)]
    pub nic: Option<f64>,
    /// Cores of the planned server (with --from): one relay process per core.
    #[arg(long, default_value_t = 1)]
    pub cores: u32,
    /// Highest CPU use per core the plan allows.
    #[arg(long, default_value_t = 0.8)]
    pub headroom: f64,
    /// The planned server's price per hour (with --from), such as 0.40 for a cloud machine: the plan gives
    /// its share per CCU-month.
    #[arg(long, value_name = "DOLLARS")]
    pub price_per_hour: Option<f64>,
    /// The price of a GB of traffic (with --from): the plan gives a player's traffic per CCU-month.
    #[arg(long, value_name = "DOLLARS")]
    pub price_per_gb: Option<f64>,
}
