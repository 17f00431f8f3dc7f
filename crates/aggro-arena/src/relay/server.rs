//! The relay's event loop. Each turn: wait for datagrams (or the next
//! housekeeping), take every waiting one in batches (recvmmsg), relay each
//! event to the other members of its sender's room, then send one packet per
//! member with anything to send — the relayed unreliable events framed
//! together, reliable slices, acks — in one sendmmsg. The busier the server,
//! the more each turn batches. Housekeeping every 10 ms resends what is due,
//! acknowledges reliable data no packet has carried an ack for within 20 ms
//! (the connection knows since when it owes one),
//! and samples the rooms; timeouts are checked every second.

use super::RelayConfig;
use super::msg::{Control, Event, frame, frames};
use super::profile::{RelayGauges, RelayInterval, RelayProfile};
use super::rooms::Rooms;
use crate::clock::{now_us, unix_ms};
use crate::procstat::ProcessGauges;
use crate::udp::{BATCH, BatchSocket, Traffic, wait_readable};
use arena_proto::connection::MAX_UNRELIABLE;
use arena_proto::{Server, ServerConfig, ServerEvent};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

const HOUSEKEEPING_US: u64 = 10_000;
const ACK_DELAY_US: u64 = 20_000;
/// Most packets one member gets in one turn (more waits for the next turn).
const PACKETS_PER_TURN: usize = 64;

#[derive(Debug)]
struct Member {
    /// Unique per join, never reused (slots are).
    id: u32,
    room: Option<u32>,
    /// Unreliable events for this member's next packets, framed.
    pending: Vec<u8>,
    dirty: bool,
    resends_seen: u64,
}

/// The relay's state apart from its socket: sessions, members, rooms, counters.
#[derive(Debug)]
struct Relay {
    proto: Server<SocketAddr>,
    members: Vec<Option<Member>>,
    rooms: Rooms,
    /// Members with something to send this turn.
    dirty: Vec<u32>,
    /// A room's members while the relay sends to them (reused).
    scratch: Vec<u32>,
    next_member: u32,
    msg: Vec<u8>,
    profile: RelayProfile,
}

/// A relay server on a bound socket.
#[derive(Debug)]
pub struct RelayServer {
    cfg: RelayConfig,
    sock: BatchSocket,
    relay: Relay,
    buf: Vec<u8>,
    traffic_seen: Traffic,
}

impl RelayServer {
    pub fn new(cfg: RelayConfig, sock: BatchSocket) -> Self {
        let proto = Server::new(ServerConfig { max_clients: cfg.max_clients, ..ServerConfig::new(cfg.secret.clone()) });
        let relay = Relay {
            proto,
            members: Vec::new(),
            rooms: Rooms::default(),
            dirty: Vec::new(),
            scratch: Vec::new(),
            next_member: 1,
            msg: Vec::new(),
            profile: RelayProfile::new(now_us()),
        };
        Self { cfg, sock, relay, buf: Vec::with_capacity(arena_proto::MTU), traffic_seen: Traffic::default() }
    }

    /// The socket's address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Relays until `stop` is set or the configured duration passes; `on_interval` sees each interval (the
    /// caller keeps what it wants of each). Returns the whole run.
    pub fn run(&mut self, stop: &AtomicBool, mut on_interval: impl FnMut(&RelayInterval)) -> std::io::Result<RelayInterval> {
        crate::clock::tighten_timer_slack();
        let start = now_us();
        self.relay.profile = RelayProfile::new(start);
        let end = self.cfg.duration.map_or(u64::MAX, |d| start + d.as_micros() as u64);
        let interval_us = self.cfg.interval.as_micros().max(1) as u64;
        let (mut next_interval, mut next_house, mut next_timeouts) = (start + interval_us, start + HOUSEKEEPING_US, start + 1_000_000);
        let mut pollfd = [self.sock.pollfd()];
        while !stop.load(Ordering::Relaxed) {
            wait_readable(&mut pollfd, next_house.min(next_interval).min(end));
            let now = now_us();
            if now >= end {
                break;
            }
            self.receive(now)?;
            self.relay.flush(now, &mut self.sock, &mut self.buf);
            if now >= next_house {
                self.relay.profile.lateness(now - next_house);
                self.relay.housekeeping(now, &mut self.sock, &mut self.buf);
                next_house = if now - next_house > HOUSEKEEPING_US { now + HOUSEKEEPING_US } else { next_house + HOUSEKEEPING_US };
            }
            if now >= next_timeouts {
                next_timeouts = now + 1_000_000;
                for (slot, _) in self.relay.proto.update(now) {
                    self.relay.leave(slot);
                }
            }
            if now >= next_interval {
                let iv = self.close_interval(now);
                on_interval(&iv);
                next_interval += interval_us;
            }
        }
        self.goodbye();
        let iv = self.close_interval(now_us());
        on_interval(&iv);
        Ok(self.relay.profile.totals(&iv.gauges).expect("an interval was closed"))
    }

    fn receive(&mut self, now: u64) -> std::io::Result<()> {
        let unix = unix_ms();
        loop {
            let n = self.sock.recv_batch()?;
            for i in 0..n {
                let (from, bytes) = self.sock.received(i);
                if let Some(from) = from {
                    self.relay.take(now, unix, from, bytes);
                }
            }
            if n < BATCH {
                break;
            }
        }
        for (addr, p) in self.relay.proto.drain_handshakes() {
            self.sock.send(addr, &p);
        }
        Ok(())
    }

    fn close_interval(&mut self, now: u64) -> RelayInterval {
        let traffic = self.sock.traffic();
        let t = traffic.since(self.traffic_seen);
        self.traffic_seen = traffic;
        let r = &mut self.relay;
        let c = &mut r.profile.counters;
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out) = (t.packets_in, t.bytes_in, t.packets_out, t.bytes_out);
        let mut queued = 0;
        for (slot, m) in r.members.iter_mut().enumerate() {
            let (Some(m), Some((_, conn))) = (m.as_mut(), r.proto.session(slot as u32)) else { continue };
            let st = conn.stats();
            queued += st.queued;
            c.resends += st.resends - m.resends_seen;
            m.resends_seen = st.resends;
        }
        let gauges = RelayGauges {
            connections: r.proto.sessions() as u64,
            rooms: r.rooms.len() as u64,
            queued_reliable: queued,
            process: ProcessGauges::read(self.sock.local_addr().ok().map(|a| a.port())),
        };
        r.profile.close(now, &gauges)
    }

    /// Tells every client the server is going away.
    fn goodbye(&mut self) {
        let now = now_us();
        for slot in 0..self.relay.members.len() as u32 {
            if let Some(addr) = self.relay.proto.disconnect(now, slot, &mut self.buf) {
                self.sock.send(addr, &self.buf);
            }
        }
        self.sock.flush();
    }
}

impl Relay {
    /// Takes one datagram.
    fn take(&mut self, now: u64, unix: u64, from: SocketAddr, bytes: &[u8]) {
        match self.proto.process_packet(now, unix, from, bytes) {
            Ok(ServerEvent::Connected { slot, .. }) => {
                let s = slot as usize;
                if self.members.len() <= s {
                    self.members.resize_with(s + 1, || None);
                }
                self.members[s] = Some(Member { id: self.next_member, room: None, pending: Vec::new(), dirty: false, resends_seen: 0 });
                self.next_member = self.next_member.wrapping_add(1).max(1);
                self.profile.counters.connects += 1;
            }
            Ok(ServerEvent::Data { slot, payload }) => {
                for event in frames(payload) {
                    self.relay(slot, event, false);
                }
                self.take_reliable(slot);
            }
            Ok(ServerEvent::Disconnected { slot, .. }) => self.leave(slot),
            Ok(ServerEvent::Handled) | Err(_) => {}
        }
    }

    /// Acts on the reliable messages session `slot` delivered.
    fn take_reliable(&mut self, slot: u32) {
        while let Some(m) = self.proto.session(slot).and_then(|(_, conn)| conn.receive_reliable()) {
            match Control::read(&m) {
                Some(Control::Join { room, capacity }) => self.join(slot, room, capacity),
                Some(_) => {}
                None => self.relay(slot, &m, true),
            }
        }
    }

    fn join(&mut self, slot: u32, room: u32, capacity: u8) {
        if self.members.get(slot as usize).and_then(Option::as_ref).is_some_and(|m| m.room.is_some()) {
            self.leave_room(slot);
        }
        let reply = match self.rooms.join(slot, room, capacity) {
            Ok(id) => {
                let m = self.members[slot as usize].as_mut().expect("a session's member");
                m.room = Some(id);
                let member = m.id;
                self.profile.counters.joins += 1;
                self.tell_room(id, slot, Control::MemberJoined { member });
                Control::Joined { room: id, member, members: self.rooms.members(id).len() as u8 }
            }
            Err(_) => {
                self.profile.counters.refused += 1;
                Control::Refused { room }
            }
        };
        self.msg.clear();
        reply.write(&mut self.msg);
        self.send_reliable(slot);
    }

    fn leave(&mut self, slot: u32) {
        self.leave_room(slot);
        if let Some(m) = self.members.get_mut(slot as usize) {
            *m = None;
        }
        self.profile.counters.disconnects += 1;
    }

    fn leave_room(&mut self, slot: u32) {
        let Some(m) = self.members.get_mut(slot as usize).and_then(Option::as_mut) else { return };
        let (Some(room), member) = (m.room.take(), m.id) else { return };
        self.rooms.leave(slot, room);
        self.tell_room(room, slot, Control::MemberLeft { member });
    }

    /// Sends `c` reliably to every member of `room` but `except`.
    fn tell_room(&mut self, room: u32, except: u32, c: Control) {
        self.msg.clear();
        c.write(&mut self.msg);
        let members = self.room_members(room);
        for &to in members.iter().filter(|&&to| to != except) {
            self.send_reliable(to);
        }
        self.scratch = members;
    }

    /// The members of `room`, in the reused scratch list (one room lookup, however many receivers);
    /// give it back through `self.scratch`.
    fn room_members(&mut self, room: u32) -> Vec<u32> {
        let mut members = std::mem::take(&mut self.scratch);
        members.clear();
        members.extend_from_slice(self.rooms.members(room));
        members
    }

    /// Queues `self.msg` on `to`'s reliable channel; false if its queue is full.
    fn send_reliable(&mut self, to: u32) -> bool {
        let Some((_, conn)) = self.proto.session(to) else { return false };
        if conn.send_reliable(&self.msg).is_err() {
            self.profile.counters.queue_full += 1;
            return false;
        }
        mark_dirty(&mut self.members, &mut self.dirty, to);
        true
    }

    /// Relays event `event` from `from` to the other members of its room, or to all of them (a sender outside
    /// any room, or a malformed event, is ignored).
    fn relay(&mut self, from: u32, event: &[u8], reliable: bool) {
        let Some(sender) = self.members.get(from as usize).and_then(Option::as_ref) else { return };
        let (Some(room), Some(head)) = (sender.room, Event::read(event)) else { return };
        self.msg.clear();
        self.msg.extend_from_slice(event);
        Event::stamp(&mut self.msg, sender.id);
        let c = &mut self.profile.counters;
        c.events_in += 1;
        c.event_bytes_in += event.len() as u64;
        let members = self.room_members(room);
        for &to in &members {
            if to == from && !head.to_all {
                continue;
            }
            let sent = if reliable {
                self.send_reliable(to)
            } else {
                let Some(m) = self.members[to as usize].as_mut() else { continue };
                frame(&mut m.pending, &self.msg);
                mark_dirty(&mut self.members, &mut self.dirty, to);
                true
            };
            if sent {
                self.profile.counters.events_out += 1;
                self.profile.counters.event_bytes_out += event.len() as u64;
            }
        }
        self.scratch = members;
    }

    /// Sends every dirty member its packets: pending unreliable events (as many packets as they need),
    /// then reliable slices while any are due.
    fn flush(&mut self, now: u64, sock: &mut BatchSocket, buf: &mut Vec<u8>) {
        for slot in self.dirty.drain(..) {
            let Some(m) = self.members.get_mut(slot as usize).and_then(Option::as_mut) else { continue };
            m.dirty = false;
            let Some((addr, conn)) = self.proto.session(slot) else { continue };
            let mut rest = &m.pending[..];
            for _ in 0..PACKETS_PER_TURN {
                let cut = whole_frames(rest, MAX_UNRELIABLE);
                conn.write_data(now, &rest[..cut], buf);
                sock.send(addr, buf);
                rest = &rest[cut..];
                if rest.is_empty() && !conn.has_reliable_due(now) {
                    break;
                }
            }
            m.pending.clear();
        }
        sock.flush();
    }

    /// Resends what is due, acknowledges reliable data no packet has acknowledged within the ack delay,
    /// samples the rooms.
    fn housekeeping(&mut self, now: u64, sock: &mut BatchSocket, buf: &mut Vec<u8>) {
        for slot in 0..self.members.len() as u32 {
            let Some((_, conn)) = self.proto.session(slot) else { continue };
            let resend = conn.has_reliable_due(now);
            let ack = conn.ack_owed_since().is_some_and(|t| now - t >= ACK_DELAY_US);
            if ack && !resend && self.members[slot as usize].as_ref().is_some_and(|m| !m.dirty) {
                self.profile.counters.ack_packets += 1;
            }
            if resend || ack {
                mark_dirty(&mut self.members, &mut self.dirty, slot);
            }
        }
        let c = &mut self.profile.counters;
        c.room_ticks += self.rooms.len() as u64;
        c.ticks += 1;
        self.flush(now, sock, buf);
    }
}

fn mark_dirty(members: &mut [Option<Member>], dirty: &mut Vec<u32>, slot: u32) {
    if let Some(m) = members.get_mut(slot as usize).and_then(Option::as_mut)
        && !m.dirty
    {
        m.dirty = true;
        dirty.push(slot);
    }
}

/// The length of the longest run of whole frames at the start of `framed` that fits `max` bytes (at least
/// one frame, so an oversized one cannot stall the queue; write_data cuts it).
fn whole_frames(framed: &[u8], max: usize) -> usize {
    let mut at = 0;
    while at + 2 <= framed.len() {
        let next = at + 2 + u16::from_le_bytes([framed[at], framed[at + 1]]) as usize;
        if next > framed.len() || (next > max && at > 0) {
            break;
        }
        at = next;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_take_whole_frames_up_to_the_limit() {
        let mut p = Vec::new();
        for n in [500, 500, 500] {
            frame(&mut p, &vec![1; n]);
        }
        assert_eq!(whole_frames(&p, 1100), 1004, "two frames fit, the third waits");
        assert_eq!(whole_frames(&p[1004..], 1100), 502);
        assert_eq!(whole_frames(&p, 400), 502, "an oversized frame still goes, alone");
        assert_eq!(whole_frames(&[], 1100), 0);
    }
}
