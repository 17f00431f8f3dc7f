//! `aggro plan`: the capacity planner (seed 003). With a room profile alone it
//! is the Photon guide's arithmetic; with measured sweeps (`--from`) it fits
//! the server's cost per player and predicts CCU per server for a core count
//! and a NIC, naming the resource that binds.

pub mod arithmetic;
pub mod fit;

use crate::BadInput;
use crate::arena::duration;
use crate::cli::{PlanArgs, Receivers};
use arithmetic::RoomProfile;

pub fn main(a: PlanArgs) -> anyhow::Result<()> {
    let profile = RoomProfile { room_size: a.room_size as u32, send_every_s: duration(&a.send_every, "send-every")?.as_secs_f64(), msg_bytes: a.msg_bytes as f64, to_all: a.receivers == Receivers::All };
    let uplink = a.uplink.as_deref().map(|u| parse_bandwidth(u).map_err(|e| BadInput(format!("--uplink: {e}")))).transpose()?;
    if a.from.is_empty() {
        print_arithmetic(&profile, a.ccu.unwrap_or(1000) as f64, uplink);
        return Ok(());
    }
    let nic = a.nic.as_deref().map(|u| parse_bandwidth(u).map_err(|e| BadInput(format!("--nic: {e}")))).transpose()?;
    if !(a.headroom > 0.0 && a.headroom <= 1.0) {
        return Err(BadInput(format!("--headroom: {} is not a share of a core in (0, 1]", a.headroom)).into());
    }
    let points = fit::read_points(&a.from)?;
    let model = fit::Model::fit(&points)?;
    let plan = model.plan(a.cores.max(1), nic, a.headroom);
    fit::print(&model, &plan, a.ccu.map(f64::from));
    Ok(())
}

fn print_arithmetic(p: &RoomProfile, ccu: f64, uplink: Option<f64>) {
    let t = p.traffic(ccu);
    let to = if p.to_all { "all members" } else { "the other members" };
    println!("room of {} players, an event of {} B every {:.0} ms each, to {to}:", p.room_size, p.msg_bytes, p.send_every_s * 1000.0);
    println!("  per room: {:.0} messages in + {:.0} out = {:.0} messages/s, {:.1} KB/s", t.messages_in_per_room_s, t.messages_out_per_room_s, t.messages_per_room_s, t.bytes_per_room_s / 1000.0);
    println!("  {:.0} CCU in {:.0} rooms: {:.0} messages/s, {:.2} MB/s ({:.1} Mbit/s)", t.ccu, t.rooms, t.messages_per_s, t.bytes_per_s / 1e6, t.bytes_per_s * 8e-6);
    if let Some(u) = uplink {
        println!("  uplink {:.1} Mbit/s: {:.0}% used; it carries at most {:.0} CCU of this profile", u * 8e-6, t.bytes_per_s / u * 100.0, p.ccu_within(u));
    }
    println!("  (payload only, as the guide counts it: every packet adds UDP/IP headers and this protocol's 26+ bytes)");
}

/// A bandwidth such as `100mbit`, `1gbit`, `512kbit`, `10MB/s` or `1.5GB/s`, in bytes per second.
pub fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let units: [(&str, f64); 8] = [("gbit", 1e9 / 8.0), ("mbit", 1e6 / 8.0), ("kbit", 1e3 / 8.0), ("bit", 1.0 / 8.0), ("gb/s", 1e9), ("mb/s", 1e6), ("kb/s", 1e3), ("b/s", 1.0)];
    let (num, scale) = units.iter().find_map(|(u, s)| lower.strip_suffix(u).map(|n| (n.to_string(), *s))).ok_or_else(|| format!("{t:?} has no unit: give such as 100mbit, 1gbit or 10MB/s"))?;
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("{t:?} is not a bandwidth such as 100mbit")),
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
}
