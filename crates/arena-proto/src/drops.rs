//! Why an incoming packet was dropped, counted per reason.

/// The reasons, in counter order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// Too short, too long, unknown kind, or a body that does not parse.
    Malformed,
    /// The tag does not match: forged, altered, or claiming another client's slot.
    BadTag,
    /// A sequence number already received: a duplicate or a replay.
    Replayed,
    /// Older than the replay window.
    TooOld,
    /// A slot no session holds.
    UnknownSlot,
    /// A session's packet from an address that is not the session's.
    WrongAddress,
    /// A connect request with a forged or unreadable token.
    BadToken,
    /// A connect request with an expired token.
    ExpiredToken,
    /// A token already bound to another address.
    TokenReused,
    /// The wrong direction (a server packet sent to the server, or the reverse).
    WrongDirection,
    /// A sealed packet for a connection in the wrong state (not connected yet, already gone).
    Unexpected,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 11] = [
        DropReason::Malformed,
        DropReason::BadTag,
        DropReason::Replayed,
        DropReason::TooOld,
        DropReason::UnknownSlot,
        DropReason::WrongAddress,
        DropReason::BadToken,
        DropReason::ExpiredToken,
        DropReason::TokenReused,
        DropReason::WrongDirection,
        DropReason::Unexpected,
    ];

    /// A stable snake_case name for result files.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::BadTag => "bad_tag",
            DropReason::Replayed => "replayed",
            DropReason::TooOld => "too_old",
            DropReason::UnknownSlot => "unknown_slot",
            DropReason::WrongAddress => "wrong_address",
            DropReason::BadToken => "bad_token",
            DropReason::ExpiredToken => "expired_token",
            DropReason::TokenReused => "token_reused",
            DropReason::WrongDirection => "wrong_direction",
            DropReason::Unexpected => "unexpected",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).expect("listed")
    }
}

/// Dropped packets per reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops([u64; DropReason::ALL.len()]);

impl Drops {
    /// Counts one drop.
    pub fn count(&mut self, r: DropReason) {
        self.0[r.index()] += 1;
    }

    /// Drops for one reason.
    pub fn of(&self, r: DropReason) -> u64 {
        self.0[r.index()]
    }

    /// All drops.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// (reason, count) for every reason with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|r| (*r, self.of(*r))).filter(|(_, n)| *n > 0)
    }
}
