//! What a player costs, as launch reports give it: traffic per player in kbit/s (Clanforge's figure), and
//! with the machine's price per hour (`--price-per-hour`, what a cloud lists for it) the machine's share
//! per CCU-month (Photon's load-test report priced a CCU per month), and with a price per GB of traffic
//! (`--price-per-gb`) the traffic's share. A month is 730 hours, the planned server full the whole time.

/// Hours in a month, as cloud price lists count them.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// A player's cost at the planned CCU per server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Traffic per player (in + out, as the sweeps measured it), kbit/s.
    pub kbps_per_player: f64,
    /// The machine's price per CCU-month, when its price per hour is given.
    pub machine_per_ccu_month: Option<f64>,
    /// The traffic's price per CCU-month, when a price per GB is given.
    pub traffic_per_ccu_month: Option<f64>,
}

impl Cost {
    /// The cost of a player on a server that holds `ccu` players of `bytes_per_ccu` bytes/s each.
    pub fn of(ccu: f64, bytes_per_ccu: f64, price_per_hour: Option<f64>, price_per_gb: Option<f64>) -> Cost {
        Cost {
            kbps_per_player: bytes_per_ccu * 8.0 / 1000.0,
            machine_per_ccu_month: price_per_hour.filter(|_| ccu > 0.0).map(|p| p * HOURS_PER_MONTH / ccu),
            traffic_per_ccu_month: price_per_gb.map(|p| bytes_per_ccu * HOURS_PER_MONTH * 3600.0 / 1e9 * p),
        }
    }

    /// The lines `aggro plan` prints.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("per player: {:.1} kbit/s of traffic (in + out, as measured)", self.kbps_per_player)];
        if let Some(m) = self.machine_per_ccu_month {
            lines.push(format!("  the machine: ${m:.4} per CCU-month ({HOURS_PER_MONTH:.0} h, the server full)"));
        }
        if let Some(t) = self.traffic_per_ccu_month {
            lines.push(format!("  its traffic: ${t:.4} per CCU-month (in + out priced alike: price only egress by halving it if in ≈ out)"));
        }
        if let (Some(m), Some(t)) = (self.machine_per_ccu_month, self.traffic_per_ccu_month) {
            lines.push(format!("  in all: ${:.4} per CCU-month", m + t));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_players_share_of_the_machine_and_the_traffic() {
        // 4,000 CCU on a $0.40/h machine, 3,000 B/s each, $0.05 per GB.
        let c = Cost::of(4000.0, 3000.0, Some(0.40), Some(0.05));
        assert!((c.kbps_per_player - 24.0).abs() < 1e-9);
        assert!((c.machine_per_ccu_month.unwrap() - 0.073).abs() < 1e-9, "{c:?}");
        assert!((c.traffic_per_ccu_month.unwrap() - 0.3942).abs() < 1e-9, "{c:?}");
        assert!(c.lines().iter().any(|l| l.contains("in all: $0.4672 per CCU-month")), "{:?}", c.lines());
        assert_eq!(Cost::of(0.0, 3000.0, Some(0.4), None).machine_per_ccu_month, None, "no player, no share");
    }
}
