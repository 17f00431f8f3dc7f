//! The action profile: what a zone does per period, from TOML.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The paper's 250-player profile, as shipped in `profiles/mmo-250.toml`.
pub const DEFAULT_PROFILE: &str = include_str!("../../../../profiles/mmo-250.toml");

/// One of the paper's actions, in the order a period runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// A random account queried by user name; one of its players chosen.
    Login,
    /// The chosen player loaded and leased.
    LoadPlayer,
    /// Money, experience and position changed.
    MoneyUpdate,
    /// A guild, its ranks and members loaded.
    GuildRoster,
    /// A player leaves one guild and joins another.
    JoinGuild,
    /// A new item in a player's inventory.
    CreateItem,
    /// Changed objects pushed to the database.
    WriteList,
    /// An item deleted.
    DeleteItem,
    /// An item changed.
    UpdateItem,
    /// An item's stack size changed.
    ItemStackSize,
    /// A new quest object for a player.
    CompleteQuest,
    /// A friend list changed.
    Friend,
    /// An ignore list changed.
    Ignore,
    /// A player leaves the simulation.
    EjectPlayer,
    /// Ejected players written and released.
    EjectList,
    /// Every other new or dirty object pushed to the database.
    Checkpoint,
}

impl Action {
    /// Every action, in period order.
    pub const ALL: [Action; 16] = [
        Action::Login,
        Action::LoadPlayer,
        Action::MoneyUpdate,
        Action::GuildRoster,
        Action::JoinGuild,
        Action::CreateItem,
        Action::WriteList,
        Action::DeleteItem,
        Action::UpdateItem,
        Action::ItemStackSize,
        Action::CompleteQuest,
        Action::Friend,
        Action::Ignore,
        Action::EjectPlayer,
        Action::EjectList,
        Action::Checkpoint,
    ];

    /// Its name, as in the paper and the profile.
    pub fn name(self) -> &'static str {
        match self {
            Action::Login => "Login",
            Action::LoadPlayer => "LoadPlayer",
            Action::MoneyUpdate => "MoneyUpdate",
            Action::GuildRoster => "GuildRoster",
            Action::JoinGuild => "JoinGuild",
            Action::CreateItem => "CreateItem",
            Action::WriteList => "WriteList",
            Action::DeleteItem => "DeleteItem",
            Action::UpdateItem => "UpdateItem",
            Action::ItemStackSize => "ItemStackSize",
            Action::CompleteQuest => "CompleteQuest",
            Action::Friend => "Friend",
            Action::Ignore => "Ignore",
            Action::EjectPlayer => "EjectPlayer",
            Action::EjectList => "EjectList",
            Action::Checkpoint => "Checkpoint",
        }
    }

    /// Whether it pushes the zone's changes to the store.
    pub fn is_push(self) -> bool {
        matches!(self, Action::WriteList | Action::EjectList | Action::Checkpoint)
    }

    /// Its operation id in a run's recorder (0 is the whole period).
    pub fn op(self) -> usize {
        self as usize + 1
    }
}

/// Operation names of a play run: the period, then every action.
pub const OPERATIONS: [&str; 17] = [
    "period",
    "Login",
    "LoadPlayer",
    "MoneyUpdate",
    "GuildRoster",
    "JoinGuild",
    "CreateItem",
    "WriteList",
    "DeleteItem",
    "UpdateItem",
    "ItemStackSize",
    "CompleteQuest",
    "Friend",
    "Ignore",
    "EjectPlayer",
    "EjectList",
    "Checkpoint",
];

/// Counts per period for a zone of `players` players.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The zone size the counts are for.
    pub players: u32,
    /// Count per period of each action, in [`Action::ALL`] order.
    pub counts: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    players: u32,
    actions: BTreeMap<String, f64>,
}

impl Profile {
    /// The paper's 250-player profile.
    pub fn paper() -> Self {
        Self::from_toml(DEFAULT_PROFILE).unwrap_or_else(|e| unreachable!("the shipped profile parses: {e}"))
    }

    /// Parses a profile; every action must be named, with a count ≥ 0.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| format!("bad profile: {e}"))?;
        if file.players == 0 {
            return Err("bad profile: players must be at least 1".into());
        }
        if let Some(unknown) = file.actions.keys().find(|k| !Action::ALL.iter().any(|a| a.name() == k.as_str())) {
            let names: Vec<_> = Action::ALL.iter().map(|a| a.name()).collect();
            return Err(format!("bad profile: unknown action {unknown:?} (actions are {})", names.join(", ")));
        }
        let counts = Action::ALL
            .iter()
            .map(|a| match file.actions.get(a.name()) {
                Some(&c) if c.is_finite() && c >= 0.0 => Ok(c),
                Some(c) => Err(format!("bad profile: {} = {c} (a count must be 0 or more)", a.name())),
                None => Err(format!("bad profile: {} is missing (give 0 to leave it out)", a.name())),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { players: file.players, counts })
    }

    /// The same profile for a zone of `players` players: counts scale
    /// linearly, except the three pushes (WriteList, EjectList, Checkpoint),
    /// which are the period's round trips and stay as many per period
    /// whatever the zone's size.
    pub fn scaled_to(&self, players: u32) -> Self {
        let f = players as f64 / self.players as f64;
        let counts = Action::ALL.iter().zip(&self.counts).map(|(a, &c)| if a.is_push() { c } else { c * f }).collect();
        Self { players, counts }
    }

    /// The count of `action` per period.
    pub fn count(&self, action: Action) -> f64 {
        self.counts[action as usize]
    }
}

/// Whole counts for each period from fractional ones: the fractions carry
/// over, so the long-run average is exact.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    carry: [f64; 16],
}

impl Tally {
    /// This period's count of each action.
    pub fn next(&mut self, profile: &Profile) -> [u32; 16] {
        std::array::from_fn(|i| {
            let due = self.carry[i] + profile.counts[i];
            let whole = (due + 1e-9).floor();
            self.carry[i] = due - whole;
            whole as u32
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_profile_is_the_papers_table() {
        let p = Profile::paper();
        assert_eq!(p.players, 250);
        assert_eq!(p.count(Action::MoneyUpdate), 500.0);
        assert_eq!(p.count(Action::DeleteItem), 200.0);
        assert_eq!(p.count(Action::Checkpoint), 1.0);
        let total: f64 = p.counts.iter().sum();
        assert_eq!(total, 2259.0);
        for a in Action::ALL {
            assert_eq!(OPERATIONS[a.op()], a.name());
        }
    }

    #[test]
    fn counts_scale_and_fractions_carry() {
        let p = Profile::paper().scaled_to(100);
        assert_eq!(p.count(Action::MoneyUpdate), 200.0);
        assert_eq!(p.count(Action::Checkpoint), 1.0, "pushes are per period, whatever the zone's size");
        assert_eq!(Profile::paper().scaled_to(20).count(Action::WriteList), 1.0);
        let mut t = Tally::default();
        let logins: u32 = (0..10).map(|_| t.next(&p)[Action::Login as usize]).sum();
        assert_eq!(logins, 4);
    }

    #[test]
    fn bad_profiles_are_refused_clearly() {
        assert!(Profile::from_toml("players = 250\n[actions]\nLogin = 1").unwrap_err().contains("LoadPlayer is missing"));
        let typo = DEFAULT_PROFILE.replace("Friend =", "Freind =");
        assert!(Profile::from_toml(&typo).unwrap_err().contains("unknown action \"Freind\""));
        assert!(Profile::from_toml(&DEFAULT_PROFILE.replace("Ignore = 25", "Ignore = -1")).is_err());
        assert!(Profile::from_toml("players = ").is_err());
    }
}
