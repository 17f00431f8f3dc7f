//! `aggro plan`: the capacity planner (after Photon's load tests). With a room profile alone it
//! is the Photon guide's arithmetic; with measured sweeps (`--from`) it fits
//! the server's cost per player and predicts CCU per server for a core count
//! and a NIC, naming the resource that binds, and what a player costs ([`cost`]).

pub mod args;
pub mod arithmetic;
pub mod cost;
pub mod fit;

use crate::arena::args::Receivers;
use crate::exit::BadInput;
use crate::plan::args::PlanArgs;
use arithmetic::RoomProfile;

pub fn main(a: PlanArgs) -> anyhow::Result<()> {
    let profile = RoomProfile {
        room_size: a.room_size as u32,
        send_every_s: a.send_every.as_secs_f64(),
        msg_bytes: a.msg_bytes as f64,
        to_all: a.receivers == Receivers::All,
    };
    let uplink = a.uplink;
    if a.from.is_empty() {
        print_arithmetic(&profile, a.ccu.unwrap_or(1000) as f64, uplink);
        return Ok(());
    }
    let nic = a.nic;
    if !(a.headroom > 0.0 && a.headroom <= 1.0) {
        return Err(BadInput(format!("--headroom: {} is not a share of a core in (0, 1]", a.headroom)).into());
    }
    if let Some(price) = [a.price_per_hour, a.price_per_gb].into_iter().flatten().find(|p| !(p.is_finite() && *p >= 0.0)) {
        return Err(BadInput(format!("--price-per-hour, --price-per-gb: {price} is not a price")).into());
    }
    let (points, failed) = fit::read_points(&a.from)?;
    fit::enough(&points, &failed)?;
    // Sweeps that give no line to plan on are input this command cannot use, like a missing file.
    let model = fit::Model::fit(&points).map_err(|e| BadInput(format!("--from: {e:#}")))?;
    let plan = model.plan(a.cores.max(1), nic, a.headroom, &failed);
    fit::print(&model, &plan, a.ccu.map(f64::from));
    for line in cost::Cost::of(plan.ccu, model.bytes_per_ccu, a.price_per_hour, a.price_per_gb).lines() {
        println!("{line}");
    }
    Ok(())
}

fn print_arithmetic(p: &RoomProfile, ccu: f64, uplink: Option<f64>) {
    let t = p.traffic(ccu);
    let to = if p.to_all { "all members" } else { "the other members" };
    println!("room of {} players, an event of {} B every {:.0} ms each, to {to}:", p.room_size, p.msg_bytes, p.send_every_s * 1000.0);
    println!(
        "  per room: {:.0} messages in + {:.0} out = {:.0} messages/s, {:.1} KB/s",
        t.messages_in_per_room_s,
        t.messages_out_per_room_s,
        t.messages_per_room_s,
        t.bytes_per_room_s / 1000.0
    );
    println!(
        "  {:.0} CCU in {:.0} rooms: {:.0} messages/s, {:.2} MB/s ({:.1} Mbit/s)",
        t.ccu,
        t.rooms,
        t.messages_per_s,
        t.bytes_per_s / 1e6,
        t.bytes_per_s * 8e-6
    );
    if let Some(u) = uplink {
        println!(
            "  uplink {:.1} Mbit/s: {:.0}% used; it carries at most {:.0} CCU of this profile",
            u * 8e-6,
            t.bytes_per_s / u * 100.0,
            p.ccu_within(u)
        );
    }
    println!("  (payload only, as the guide counts it: every packet adds UDP/IP headers and this protocol's 26+ bytes)");
}
