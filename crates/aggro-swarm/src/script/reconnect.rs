//! A scripted player who loses its server comes back as a real client does (`--reconnect BASE..CAP`,
//! or `reconnect()` in its script): what it was doing is dropped and its script runs again from the top
//! after a jittered exponential backoff ([`Backoff`]) — the same bot and the same player (its id, name
//! and stages kept), not a newcomer. An attempt that ends before its socket opens (the script raised on
//! a refused connect, or ran to its end) waits longer and tries again. The player is back when its socket
//! opens: timed from the moment it lost its server into operation `reconnect`.

use super::state::{Context, Timer, Wake};
use crate::RECONNECT;
use crate::backoff::Backoff;
use crate::websocket::Request;
use aggro_arena::clock::now_us;

impl Context {
    /// Bot `bot` lost its server now (or its script asked): its timers, coroutines and socket are dropped,
    /// and its script runs again after the backoff's wait for its next attempt.
    pub fn come_back(&mut self, bot: usize) {
        let (now, backoff) = (self.now_us, self.backoff.unwrap_or(Backoff::DEFAULT));
        let b = &mut self.bots[bot];
        b.lost_at_us.get_or_insert(now);
        let wait_us = backoff.wait_us(b.attempts, b.rng.unit());
        b.attempts += 1;
        (b.main, b.http) = (None, None);
        b.timers.clear();
        b.timers.push(Timer { at_us: now + wait_us, what: Wake::Restart });
        if b.socket.take().is_some() {
            self.out.push(Request::Close);
        }
    }

    /// Whether bot `bot` lost its server and is not back yet.
    pub fn coming_back(&self, bot: usize) -> bool {
        self.bots[bot].lost_at_us.is_some()
    }

    /// Bot `bot`'s socket opened: a player coming back is back, timed from when it lost its server.
    pub fn back(&mut self, bot: usize) {
        let b = &mut self.bots[bot];
        if let Some(lost) = b.lost_at_us.take() {
            b.attempts = 0;
            self.measures.record(RECONNECT, now_us().saturating_sub(lost));
        }
    }
}
