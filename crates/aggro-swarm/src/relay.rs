//! The `relay` behaviour (Photon's room model): each bot joins a
//! room — a named one (bot i of the swarm sits in room `first_room + i / K`)
//! or any with a free seat (matchmaking) — and raises an event of B bytes
//! every tick, reliable or unreliable, to the others or to all, once its room is full (a match starts
//! when its players are in; the guide's arithmetic assumes full rooms). It checks what the server relays to
//! it: every other member's reliable events exactly once and in order, and
//! counts unreliable events lost or late, never expecting them again. With
//! churn, bots leave after a random lifetime and are replaced, so joins and
//! leaves go on through the run.
//!
//! A bot whose server says goodbye, or falls silent for the protocol's 5 s, has lost it: it is replaced
//! by a newcomer a second later or, with `--reconnect`, comes back as the same player after a jittered
//! backoff — a new session (a new token for its client id) and its room joined again, owed only the
//! events sent from then on — timed into `reconnect` from the last moment it heard its server.

use super::backoff::{Backoff, Lost};
use super::datagrams::{Datagram, Datagrams};
use super::peers::{Order, Peers};
use super::way_in::{Reached, StageNames};
use super::{Behaviour, Churn, Heard, Player, SwarmConfig, arena_client, goodbye};
use aggro_arena::relay::msg::{ANY_ROOM, Control, Event, frame, frames};
use aggro_core::rng::Rng;
use arena_proto::{Client, ClientEvent, ClientState, Secret};

/// An attempt to come back that no accept answers within this long (the protocol's silence timeout) failed.
const ATTEMPT_US: u64 = 5_000_000;

/// The relay behaviour's settings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RelayBots {
    /// Members per room (K).
    pub room_size: u8,
    /// Bytes of each event, its 17-byte header included (B).
    pub msg_bytes: usize,
    /// Events go on the reliable channel (else unreliable).
    pub reliable: bool,
    /// Events go to every member, the sender included (else to the others).
    pub to_all: bool,
    /// Bots leaving (each replaced) per second over the whole swarm; 0: none leave.
    pub churn_per_s: f64,
    /// Join any room with a free seat instead of a named one.
    pub matchmaking: bool,
    /// The first named room (a worker's share starts here).
    pub first_room: u32,
    /// Bots in the swarm (for the lifetime that gives the churn rate).
    pub bots: usize,
    /// A bot that loses its server comes back as the same player after this backoff (None: it leaves
    /// play, and a newcomer takes its place).
    pub reconnect: Option<Backoff>,
}

impl Behaviour for RelayBots {
    type Transport = Datagrams;
    type Bot = RelayBot;
    const DELAY: &'static str = "relay_delay";
    const STAGES: StageNames = &["connected", "joined", "matched"];

    fn bot(&mut self, cfg: &SwarmConfig, index: usize, client_id: u64, now_us: u64, mut rng: Rng) -> RelayBot {
        let client = arena_client(&cfg.secret, client_id, now_us, &mut rng);
        let room = if self.matchmaking { ANY_ROOM } else { self.first_room + (index / self.room_size.max(1) as usize) as u32 };
        let churn = Churn::new(self.bots, self.churn_per_s);
        RelayBot {
            client,
            secret: cfg.secret.clone(),
            client_id,
            lost: None,
            trying_since: None,
            room,
            cfg: self.clone(),
            churn,
            rng,
            joined: false,
            join_sent: false,
            members: 0,
            seq: 0,
            leave_at_us: None,
            gone: false,
            left: false,
            peers: Peers::default(),
            out: Vec::new(),
            event: Vec::new(),
            way: None,
        }
    }
}

/// One relay bot.
#[derive(Debug)]
pub struct RelayBot {
    client: Client,
    /// What it needs to start a new session as the same player.
    secret: Secret,
    client_id: u64,
    /// With `--reconnect`: it lost its server and is not back in play yet.
    lost: Option<Lost>,
    /// When its current attempt to come back began (its new session's first request).
    trying_since: Option<u64>,
    room: u32,
    cfg: RelayBots,
    churn: Churn,
    rng: Rng,
    joined: bool,
    join_sent: bool,
    /// Members of its room, itself included, as the server has told it.
    members: u8,
    seq: u32,
    leave_at_us: Option<u64>,
    gone: bool,
    left: bool,
    /// Each other member heard from, with the newest event number seen.
    peers: Peers,
    out: Vec<u8>,
    event: Vec<u8>,
    /// Its way in (connected, joined, matched: its room full), once its first tick began it.
    way: Option<Reached>,
}

/// The relay bots' stages ([`RelayBots`]' `STAGES`).
const CONNECTED: usize = 0;
const JOINED: usize = 1;
const MATCHED: usize = 2;

impl RelayBot {
    /// Marks stage `k` of its way in reached at `now_us`, for the swarm to time once.
    fn reach(&mut self, k: usize, now_us: u64, heard: &mut Heard) {
        if let Some(us) = self.way.as_mut().and_then(|w| w.reach(k, now_us)) {
            heard.reached.push((k, us));
        }
    }

    /// Its room is full: the match begins (its events go out from its next tick).
    fn matched(&mut self, now_us: u64, heard: &mut Heard) {
        if self.joined && self.members >= self.cfg.room_size {
            self.reach(MATCHED, now_us, heard);
        }
    }

    fn event(&mut self, now_us: u64, bytes: &[u8], reliable: bool, heard: &mut Heard) {
        let c = &mut heard.counters;
        let Some(e) = Event::read(bytes) else {
            c.decode_errors += 1;
            return;
        };
        c.events_received += 1;
        heard.delays_us.push(now_us.saturating_sub(e.sent_at_us));
        match (reliable, self.peers.heard(e.from as u64, e.seq)) {
            (_, Order::First | Order::Next) => {}
            (true, Order::Late) => c.reliable_disorder += 1,
            (true, Order::Gap(n)) => c.reliable_missing += n as u64,
            (false, Order::Late) => c.unreliable_late += 1,
            (false, Order::Gap(n)) => c.unreliable_lost += n as u64,
        }
    }

    /// It lost its server at `at_us` (or failed an attempt to come back): with `--reconnect` it tries again
    /// after the backoff's next wait, the same player; without, it leaves play.
    fn lose(&mut self, at_us: u64, now_us: u64, heard: &mut Heard) {
        let Some(backoff) = self.cfg.reconnect else {
            self.gone = true;
            heard.gone = true;
            return;
        };
        backoff.again(&mut self.lost, at_us, now_us, self.rng.unit());
        (self.trying_since, self.joined, self.join_sent, self.members, self.leave_at_us) = (None, false, false, 0, None);
    }

    /// On its way back: waits for its next attempt, starts it (a new session) or gives up on one no accept
    /// answered. False while it has nothing to send.
    fn come_back(&mut self, now_us: u64, heard: &mut Heard) -> bool {
        let Some(lost) = self.lost else { return true };
        match self.trying_since {
            None if now_us < lost.next_us => false,
            None => {
                self.client = arena_client(&self.secret, self.client_id, now_us, &mut self.rng);
                (self.trying_since, self.left, self.peers) = (Some(now_us), false, Peers::default());
                heard.attempted = true;
                true
            }
            Some(t) if matches!(self.client.state(), ClientState::Denied(_)) || now_us.saturating_sub(t) > ATTEMPT_US => {
                self.lose(now_us, now_us, heard);
                false
            }
            Some(_) => true,
        }
    }

    fn control(&mut self, now_us: u64, c: Control, heard: &mut Heard) {
        match c {
            Control::Joined { members, .. } => {
                self.joined = true;
                self.members = members;
                heard.counters.joins += 1;
                if let Some(lost) = self.lost.take() {
                    // The same player, back in play: a new session, owed only what is sent from now on.
                    heard.back_after_us = Some(now_us.saturating_sub(lost.at_us));
                    self.trying_since = None;
                }
                self.leave_at_us = self.churn.leave_at(now_us, &mut self.rng);
                self.reach(JOINED, now_us, heard);
                self.matched(now_us, heard);
            }
            // A full room: ask again next tick.
            Control::Refused { .. } => {
                heard.counters.refused += 1;
                self.join_sent = false;
            }
            Control::MemberLeft { member } => {
                self.members = self.members.saturating_sub(1);
                self.peers.forget(member as u64);
            }
            Control::MemberJoined { .. } => {
                self.members = self.members.saturating_add(1);
                self.matched(now_us, heard);
            }
            Control::Join { .. } => {}
        }
    }
}

impl Player<Datagrams> for RelayBot {
    fn active(&self) -> bool {
        self.joined && !self.gone && self.client.state() == ClientState::Connected
    }

    fn gone(&self) -> bool {
        self.gone
    }

    fn tick(&mut self, due_us: u64, now_us: u64, out: &mut Vec<u8>, heard: &mut Heard) -> bool {
        if self.way.is_none() {
            // Its first tick is due at its intended moment to join: its way in is timed from there.
            self.way = Some(Reached::born(due_us));
            heard.began = true;
        }
        if !self.come_back(now_us, heard) {
            return false;
        }
        // Connected, its server silent for the protocol's timeout: it is gone (timed from its last word).
        let heard_last = self.client.connection().map(|c| c.last_received_us());
        if self.client.update(now_us) {
            heard.counters.disconnects += 1;
            self.lose(heard_last.unwrap_or(now_us), now_us, heard);
            return false;
        }
        if self.client.write_request(now_us, out) {
            return true;
        }
        if self.joined && self.leave_at_us.is_some_and(|t| now_us >= t) {
            self.gone = true;
            heard.gone = true;
            heard.counters.deaths += 1;
            return false;
        }
        let Some(conn) = self.client.connection() else { return false };
        if !self.join_sent {
            self.out.clear();
            Control::Join { room: self.room, capacity: self.cfg.room_size }.write(&mut self.out);
            let _ = conn.send_reliable(&self.out);
            self.join_sent = true;
        }
        self.out.clear();
        if self.joined && self.members >= self.cfg.room_size {
            self.seq += 1;
            self.event.clear();
            Event { to_all: self.cfg.to_all, from: 0, seq: self.seq, sent_at_us: now_us }.write(self.cfg.msg_bytes, &mut self.event);
            heard.counters.events_sent += 1;
            if !self.cfg.reliable {
                frame(&mut self.out, &self.event);
            } else if conn.send_reliable(&self.event).is_err() {
                heard.counters.queue_full += 1;
            }
        }
        conn.write_data(now_us, &self.out, out);
        true
    }

    fn receive(&mut self, now_us: u64, arrival: Datagram<'_>, _: &mut Vec<u8>, heard: &mut Heard) -> bool {
        match self.client.process_packet(now_us, arrival.bytes) {
            Ok(ClientEvent::Connected { .. }) => {
                heard.counters.connects += 1;
                self.reach(CONNECTED, now_us, heard);
            }
            Ok(ClientEvent::Data(payload)) => {
                for e in frames(payload) {
                    self.event(now_us, e, false, heard);
                }
            }
            Ok(ClientEvent::Disconnected) => {
                heard.counters.disconnects += 1;
                self.lose(now_us, now_us, heard);
            }
            // A full server turned its first session away: a join that failed (on its way back, a refusal is
            // one of the storm's attempts: `come_back`).
            Ok(ClientEvent::Denied(_)) if self.lost.is_none() => heard.counters.failed_joins += 1,
            _ => {}
        }
        while let Some(m) = self.client.connection().and_then(|c| c.receive_reliable()) {
            match Control::read(&m) {
                Some(c) => self.control(now_us, c, heard),
                None => self.event(now_us, &m, true, heard),
            }
        }
        false
    }

    fn reached(&self) -> Option<u64> {
        self.way.filter(|_| !self.gone).map(|w| w.bits())
    }

    fn coming_back(&self) -> bool {
        self.lost.is_some()
    }

    fn next_tick(&self) -> Option<u64> {
        // Waiting to come back: its next attempt; else one period after its last tick.
        self.lost.filter(|_| self.trying_since.is_none()).map(|l| l.next_us)
    }

    fn leave(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        goodbye(&mut self.client, &mut self.left, now_us, out)
    }
}
