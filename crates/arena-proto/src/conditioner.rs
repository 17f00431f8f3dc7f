//! A link conditioner: a one-way link that loses, duplicates, delays and
//! reorders datagrams, deterministically from a seed. For tests and experiments.

/// How bad the link is.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkProfile {
    /// Fraction of datagrams lost.
    pub loss: f64,
    /// Fraction of datagrams delivered twice.
    pub duplicate: f64,
    /// Fixed one-way delay.
    pub latency_us: u64,
    /// Extra random delay, uniform in [0, jitter): reorders datagrams closer together than this.
    pub jitter_us: u64,
}

/// One direction of a conditioned link.
#[derive(Debug)]
pub struct Link {
    profile: LinkProfile,
    state: u64,
    in_flight: Vec<(u64, u64, Vec<u8>)>,
    order: u64,
    /// Datagrams lost so far.
    pub lost: u64,
    /// Datagrams duplicated so far.
    pub duplicated: u64,
}

impl Link {
    /// A link with `profile`, its randomness from `seed`.
    pub fn new(profile: LinkProfile, seed: u64) -> Self {
        Self { profile, state: seed | 1, in_flight: Vec::new(), order: 0, lost: 0, duplicated: 0 }
    }

    fn unit(&mut self) -> f64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sends a datagram at `now_us`.
    pub fn send(&mut self, now_us: u64, packet: &[u8]) {
        if self.unit() < self.profile.loss {
            self.lost += 1;
            return;
        }
        let copies = if self.unit() < self.profile.duplicate { 2 } else { 1 };
        self.duplicated += copies - 1;
        for _ in 0..copies {
            let jitter = (self.unit() * self.profile.jitter_us as f64) as u64;
            self.order += 1;
            self.in_flight.push((now_us + self.profile.latency_us + jitter, self.order, packet.to_vec()));
        }
    }

    /// Datagrams whose time has come by `now_us`, in arrival order.
    pub fn receive(&mut self, now_us: u64) -> Vec<Vec<u8>> {
        self.in_flight.sort_unstable_by_key(|(at, order, _)| (*at, *order));
        let ready = self.in_flight.partition_point(|(at, _, _)| *at <= now_us);
        self.in_flight.drain(..ready).map(|(_, _, p)| p).collect()
    }

    /// Datagrams still in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}
