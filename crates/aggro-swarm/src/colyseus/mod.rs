//! The `colyseus` behaviour (issue 19): each bot plays a room of a Colyseus
//! server as `@colyseus/sdk` would — reserves a seat over HTTP
//! (`POST /matchmake/<method>/<room>`), opens the WebSocket
//! `/<processId>/<roomId>?sessionId=…`, answers the server's JOIN_ROOM, then
//! sends its [`play`]'s messages on schedule. It counts state patches and
//! their bytes, decodes every message, and for the observed message type (the
//! reference room's `moved`, a broadcast of another bot's move) records the
//! action-to-observer delay from the sender's `t` and checks each sender's
//! `seq`: every broadcast received once, in order, or the gap counted. With `--reconnect`, a seated
//! player who loses its server comes back as the same player after a jittered backoff (matchmaking
//! again), timed from losing it to its seat again.

pub mod failures;
pub mod play;
pub mod protocol;
pub mod received;

use super::backoff::{Backoff, Lost};
use super::peers::{Order, Peers};
use super::way_in::{Reached, StageNames};
use super::websocket::{HttpRequest, Request, Requests, WebSockets, WsEvent};
use super::{Behaviour, Churn, Heard, Player, SwarmConfig};
use aggro_core::rng::Rng;
use failures::Failures;
use play::{Play, Values};
use protocol::{Frame, MessageType};
use received::Received;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The colyseus behaviour's settings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ColyseusBots {
    #[serde(serialize_with = "play_of")]
    pub play: Arc<Play>,
    /// Bots hold their messages until this many bots of the swarm have joined (0: send at once), so
    /// every bot of a room hears every broadcast and delivery can be checked exactly.
    pub start_at: usize,
    /// Bots leaving (each replaced by a newcomer: a new seat, a new connection) per second over the swarm;
    /// 0: none leave.
    pub churn_per_s: f64,
    /// Bots in the swarm (for the lifetime that gives the churn rate).
    pub bots: usize,
    /// A seated player who loses its server comes back after this backoff (None: it leaves play, and a
    /// newcomer takes its place).
    pub reconnect: Option<Backoff>,
    /// Bots joined so far (shared by the swarm's bots).
    #[serde(skip)]
    pub joined: Arc<AtomicUsize>,
    /// What the server said to bots it refused, failed or sent away.
    #[serde(skip)]
    pub failures: Arc<Mutex<Failures>>,
    /// Messages received, by type.
    #[serde(skip)]
    pub received: Arc<Received>,
}

fn play_of<S: serde::Serializer>(p: &Arc<Play>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&**p, s)
}

impl ColyseusBots {
    /// `bots` bots playing `play`, holding their messages until `start_at` have joined, `churn_per_s` of them
    /// leaving (and replaced) each second.
    pub fn new(play: Play, start_at: usize, bots: usize, churn_per_s: f64) -> Self {
        Self {
            play: Arc::new(play),
            start_at,
            churn_per_s,
            bots,
            reconnect: None,
            joined: Arc::new(AtomicUsize::new(0)),
            failures: Arc::default(),
            received: Arc::default(),
        }
    }
}

impl Behaviour for ColyseusBots {
    type Transport = WebSockets;
    type Bot = ColyseusBot;
    const DELAY: &'static str = "broadcast_delay";
    const REFUSALS_FAIL: bool = true;
    const SEATS_EVERY_BOT: bool = true;
    const STAGES: StageNames = &["seat", "connected", "joined", "first_state"];

    fn bot(&mut self, _: &SwarmConfig, _: usize, client_id: u64, _: u64, mut rng: Rng) -> ColyseusBot {
        let (x, y) = (rng.unit() * 1000.0, rng.unit() * 1000.0);
        let churn = Churn::new(self.bots, self.churn_per_s);
        ColyseusBot {
            id: client_id,
            cfg: self.clone(),
            churn,
            rng,
            stage: Stage::Start,
            x,
            y,
            next_send: Vec::new(),
            seq: 0,
            peers: Peers::default(),
            left: false,
            sent_away: false,
            leave_at_us: None,
            way: Reached::default(),
            began: false,
            lost: None,
        }
    }
}

/// Where a bot is in joining its room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    Matchmaking,
    Connecting,
    Playing,
    /// Refused, disconnected or failed: retired and replaced by the swarm.
    Gone,
}

/// One Colyseus bot.
#[derive(Debug)]
pub struct ColyseusBot {
    /// Its id (`$bot`): its number in the swarm, plus 2³² × its generation, so a newcomer in a departed
    /// bot's place is a new sender.
    id: u64,
    cfg: ColyseusBots,
    churn: Churn,
    rng: Rng,
    stage: Stage,
    x: f64,
    y: f64,
    /// When each of the play's messages is next due (µs), once playing.
    next_send: Vec<u64>,
    /// Messages sent of the observed type (its `$seq`).
    seq: u32,
    /// Each other bot heard from, with the newest `seq` seen.
    peers: Peers,
    /// Its goodbye was written.
    left: bool,
    /// The swarm sent it away while it was on its way in or playing (the run's end, not a failure).
    sent_away: bool,
    /// Its way in: the stages reached ([`ColyseusBots`]' `STAGES`: seat, connected, joined, first_state).
    way: Reached,
    /// Its way in began (a player coming back keeps its way in).
    began: bool,
    /// With `--reconnect`: it lost its server and is not back in play yet.
    lost: Option<Lost>,
    /// With churn: when it leaves play.
    leave_at_us: Option<u64>,
}

/// Reading a seat reservation: the WebSocket's path, or why there is none.
fn seat_path(status: u16, body: &[u8]) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(120)])))?;
    let field = |k: &str| v.get(k).and_then(|x| x.as_str());
    match (status, field("processId"), field("roomId"), field("sessionId")) {
        (200, Some(process), Some(room), Some(session)) => Ok(format!("/{process}/{room}?sessionId={session}")),
        _ => Err(format!("HTTP {status}: {}", v.get("error").and_then(|e| e.as_str()).unwrap_or("no seat reservation in the answer"))),
    }
}

impl ColyseusBot {
    /// Counts a failure told by `text` among the swarm's.
    fn failed(&self, text: String) {
        self.cfg.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).note(text);
    }

    /// Marks stage `k` of its way in reached at `now_us`, for the swarm to time once.
    fn reach(&mut self, k: usize, now_us: u64, heard: &mut Heard) {
        if let Some(us) = self.way.reach(k, now_us) {
            heard.reached.push((k, us));
        }
    }

    /// It lost its server (or failed an attempt to come back): with `--reconnect` it tries again after
    /// the backoff's next wait, the same player; without, it is gone. Returns whether it will come back.
    fn lose(&mut self, now_us: u64, out: &mut Requests, heard: &mut Heard) -> bool {
        let Some(backoff) = self.cfg.reconnect else {
            self.gone(heard);
            return false;
        };
        backoff.again(&mut self.lost, now_us, now_us, self.rng.unit());
        (self.stage, self.next_send) = (Stage::Start, Vec::new());
        self.leave_at_us = None;
        out.0.push(Request::Close);
        true
    }

    fn gone(&mut self, heard: &mut Heard) {
        if self.stage != Stage::Gone {
            self.stage = Stage::Gone;
            heard.gone = true;
        }
    }

    fn message(&mut self, now_us: u64, kind: MessageType<'_>, payload: &[u8], heard: &mut Heard) {
        match kind {
            MessageType::Name(name) => self.cfg.received.count(name),
            MessageType::Number(n) => {
                // `#n`, written without allocating (a numeric type is common on a busy room).
                let mut buf = [0u8; 24];
                let mut w = &mut buf[..];
                let _ = std::io::Write::write_fmt(&mut w, format_args!("#{n}"));
                let len = 24 - w.len();
                self.cfg.received.count(std::str::from_utf8(&buf[..len]).unwrap_or("#?"));
            }
        }
        if let MessageType::Name(k) = kind
            && self.cfg.play.is_reply(k)
        {
            match protocol::map_numbers(payload, ["t"]) {
                Ok([Some(t)]) => heard.round_trips_us.push(now_us.saturating_sub(t as u64)),
                _ => heard.counters.decode_errors += 1,
            }
        }
        let observed = self.cfg.play.observe.as_deref();
        if !matches!((kind, observed), (MessageType::Name(k), Some(o)) if k == o) {
            heard.counters.other_messages += 1;
            return;
        }
        let c = &mut heard.counters;
        c.events_received += 1;
        let Ok([Some(t), from, seq]) = protocol::map_numbers(payload, ["t", "from", "seq"]) else {
            c.decode_errors += 1;
            return;
        };
        heard.delays_us.push(now_us.saturating_sub(t as u64));
        let (Some(from), Some(seq)) = (from, seq) else { return };
        match self.peers.heard(from as u64, seq as u32) {
            Order::First | Order::Next => {}
            Order::Late => c.reliable_disorder += 1,
            Order::Gap(n) => c.reliable_missing += n as u64,
        }
    }

    /// Sends the play's messages that are due.
    fn play(&mut self, now_us: u64, out: &mut Requests, heard: &mut Heard) -> bool {
        let start_at = self.cfg.start_at;
        if start_at > 0 && self.cfg.joined.load(Ordering::Relaxed) < start_at {
            return false;
        }
        let play = &*self.cfg.play;
        if self.next_send.is_empty() {
            self.next_send = vec![now_us; play.sends.len()];
        }
        let mut any = false;
        for (i, send) in play.sends.iter().enumerate() {
            let (due, every) = (self.next_send[i], send.every.as_micros() as u64);
            if due > now_us {
                continue;
            }
            // Keep the message's phase (the tick that runs it comes a little late); a send more than a period
            // behind skips ahead.
            self.next_send[i] = if now_us - due > every { now_us + every } else { due + every };
            // The first message is the one the observed broadcast echoes: it is counted and numbered.
            if i == 0 {
                self.seq += 1;
                heard.counters.events_sent += 1;
            }
            self.x = (self.x + (self.rng.unit() - 0.5) * 20.0).clamp(0.0, 1000.0);
            self.y = (self.y + (self.rng.unit() - 0.5) * 20.0).clamp(0.0, 1000.0);
            // Each message its own buffer: the WebSocket takes it as it is.
            let mut message = Vec::with_capacity(64);
            protocol::write_message_head(&send.kind, &mut message);
            if send.payload != play::Field::Nil {
                send.payload.write(&Values { t: now_us, seq: self.seq, bot: self.id, x: self.x, y: self.y }, &mut message);
            }
            out.0.push(Request::Send(message));
            any = true;
        }
        any
    }
}

impl Player<WebSockets> for ColyseusBot {
    fn active(&self) -> bool {
        self.stage == Stage::Playing
    }

    fn gone(&self) -> bool {
        self.stage == Stage::Gone
    }

    fn tick(&mut self, due_us: u64, now_us: u64, out: &mut Requests, heard: &mut Heard) -> bool {
        match self.stage {
            Stage::Start if self.lost.is_some_and(|l| now_us < l.next_us) => false,
            Stage::Start => {
                if self.lost.is_some() {
                    heard.attempted = true;
                } else if !std::mem::replace(&mut self.began, true) {
                    // Its first tick is due at its intended moment to join: its way in is timed from there.
                    self.way = Reached::born(due_us);
                    heard.began = true;
                }
                let play = &self.cfg.play;
                // The templates' variables were all found when the play was read.
                let options = play.join_options(self.id).expect("join options checked when read");
                let token = play.token(self.id).expect("token checked when read");
                let body = serde_json::to_vec(&options).expect("JSON options");
                out.0.push(Request::Http(HttpRequest::post_json(format!("/matchmake/{}/{}", play.method, play.room), body, token)));
                self.stage = Stage::Matchmaking;
                true
            }
            Stage::Playing if self.leave_at_us.is_some_and(|t| now_us >= t) => {
                heard.counters.deaths += 1;
                self.gone(heard);
                false
            }
            Stage::Playing => self.play(now_us, out, heard),
            _ => false,
        }
    }

    fn receive(&mut self, now_us: u64, event: WsEvent<'_>, out: &mut Requests, heard: &mut Heard) -> bool {
        match event {
            WsEvent::Response { status, body } if self.stage == Stage::Matchmaking => match seat_path(status, body) {
                Ok(path) => {
                    self.reach(0, now_us, heard);
                    out.0.push(Request::Open { path, headers: Vec::new() });
                    self.stage = Stage::Connecting;
                    return true;
                }
                Err(why) => {
                    // A player coming back that is turned away tries again: an attempt of the storm's.
                    heard.counters.refused += u64::from(self.lost.is_none());
                    self.failed(format!("refused by matchmaking: {why}"));
                    if self.lost.is_none() || !self.lose(now_us, out, heard) {
                        self.gone(heard);
                    }
                }
            },
            WsEvent::Opened => self.reach(1, now_us, heard),
            WsEvent::Response { .. } => {}
            WsEvent::Message(frame) => match protocol::read(frame) {
                Ok(Frame::Joined) if self.stage == Stage::Connecting => {
                    self.reach(2, now_us, heard);
                    self.stage = Stage::Playing;
                    heard.counters.connects += 1;
                    heard.counters.joins += 1;
                    match self.lost.take() {
                        // The same player, back in play: a new session, owed only what is sent from now on.
                        Some(lost) => {
                            heard.back_after_us = Some(now_us.saturating_sub(lost.at_us));
                            self.peers = Peers::default();
                        }
                        None => drop(self.cfg.joined.fetch_add(1, Ordering::Relaxed)),
                    }
                    self.leave_at_us = self.churn.leave_at(now_us, &mut self.rng);
                    out.0.push(Request::Send(vec![protocol::JOIN_ROOM]));
                    return true;
                }
                Ok(Frame::State | Frame::Patch) => {
                    self.reach(3, now_us, heard);
                    heard.counters.snapshots += 1;
                }
                Ok(Frame::Data { kind, payload }) => self.message(now_us, kind, payload, heard),
                // `onJoin` threw: the server refuses the seat with its error, then closes.
                Ok(Frame::Error { code, message }) if self.stage == Stage::Connecting => {
                    heard.counters.refused += 1;
                    self.failed(format!("refused on joining: {message} (code {code})"));
                    self.gone(heard);
                }
                Ok(Frame::Error { code, message }) => {
                    heard.counters.server_errors += 1;
                    self.failed(format!("server error: {message} (code {code})"));
                }
                Ok(Frame::Leave) => {
                    heard.counters.disconnects += 1;
                    self.lose(now_us, out, heard);
                }
                Ok(Frame::Joined | Frame::Other(_)) => heard.counters.other_messages += 1,
                Err(_) => heard.counters.decode_errors += 1,
            },
            // Colyseus speaks binary only.
            WsEvent::Text(_) => heard.counters.decode_errors += 1,
            WsEvent::HttpFailed { why } if self.stage == Stage::Matchmaking => {
                heard.counters.failed_joins += u64::from(self.lost.is_none());
                self.failed(format!("join failed: {why}"));
                if self.lost.is_none() || !self.lose(now_us, out, heard) {
                    self.gone(heard);
                }
            }
            WsEvent::HttpFailed { .. } => {}
            WsEvent::Closed { why } => {
                let coming_back = match self.stage {
                    Stage::Playing => {
                        heard.counters.disconnects += 1;
                        self.failed(format!("disconnected: {why}"));
                        self.lose(now_us, out, heard)
                    }
                    Stage::Gone => false,
                    // Waiting for its next attempt: the close of the link it lost.
                    Stage::Start => true,
                    _ => {
                        heard.counters.failed_joins += u64::from(self.lost.is_none());
                        self.failed(format!("join failed: {why}"));
                        self.lost.is_some() && self.lose(now_us, out, heard)
                    }
                };
                if !coming_back {
                    self.gone(heard);
                }
            }
        }
        // A player losing its server closes what is left of its link.
        !out.0.is_empty()
    }

    fn reached(&self) -> Option<u64> {
        (matches!(self.stage, Stage::Matchmaking | Stage::Connecting | Stage::Playing) || self.lost.is_some() || self.sent_away)
            .then(|| self.way.bits())
    }

    fn coming_back(&self) -> bool {
        self.lost.is_some()
    }

    fn next_tick(&self) -> Option<u64> {
        // Waiting to come back: its next attempt; else one period after its last tick.
        self.lost.filter(|_| self.stage == Stage::Start).map(|l| l.next_us)
    }

    fn leave(&mut self, _: u64, out: &mut Requests) -> bool {
        self.sent_away |= matches!(self.stage, Stage::Matchmaking | Stage::Connecting | Stage::Playing) || self.lost.is_some();
        self.stage = Stage::Gone;
        if std::mem::replace(&mut self.left, true) {
            return false;
        }
        out.0.push(Request::Close);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_reservation_gives_the_socket_path_and_a_refusal_its_reason() {
        let ok = br#"{"name":"battle","sessionId":"s1","roomId":"r1","processId":"p1"}"#;
        assert_eq!(seat_path(200, ok), Ok("/p1/r1?sessionId=s1".into()));
        let full = br#"{"code":4212,"error":"no rooms found with provided criteria"}"#;
        assert_eq!(seat_path(520, full), Err("HTTP 520: no rooms found with provided criteria".into()));
        assert!(seat_path(200, b"<html>").unwrap_err().contains("<html>"));
    }
}
