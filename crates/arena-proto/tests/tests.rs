//! The protocol in memory: a server and clients over conditioned links.

use arena_proto::conditioner::{Link, LinkProfile};
use arena_proto::{Client, ClientEvent, ClientState, ConnectToken, DropReason, Secret, Server, ServerConfig, ServerEvent};

const UNIX_MS: u64 = 1_000_000;
const STEP_US: u64 = 10_000;

fn token(secret: &Secret, client_id: u64, expires_at_ms: u64) -> ([u8; 40], arena_proto::SessionKey) {
    ConnectToken { client_id, expires_at_ms, nonce: client_id * 31 + 7 }.issue(secret)
}

/// A server at address 0 and clients at addresses 1.., each with a link each way.
struct World {
    server: Server<u32>,
    clients: Vec<Client>,
    up: Vec<Link>,
    down: Vec<Link>,
    now: u64,
    /// Unreliable payloads each side received: (client index, payload).
    server_unreliable: Vec<(usize, Vec<u8>)>,
    client_unreliable: Vec<Vec<Vec<u8>>>,
    server_reliable: Vec<Vec<Vec<u8>>>,
    client_reliable: Vec<Vec<Vec<u8>>>,
    slots: Vec<Option<u32>>,
}

impl World {
    fn new(n: usize, profile: LinkProfile) -> Self {
        let secret = Secret::from_passphrase("test");
        let clients = (0..n).map(|i| {
            let (t, k) = token(&secret, 100 + i as u64, UNIX_MS + 60_000);
            Client::new(t, k, 0)
        });
        let clients = clients.collect();
        Self {
            server: Server::new(ServerConfig::new(secret)),
            clients,
            up: (0..n).map(|i| Link::new(profile, 1 + i as u64)).collect(),
            down: (0..n).map(|i| Link::new(profile, 1001 + i as u64)).collect(),
            now: 0,
            server_unreliable: Vec::new(),
            client_unreliable: vec![Vec::new(); n],
            server_reliable: vec![Vec::new(); n],
            client_reliable: vec![Vec::new(); n],
            slots: vec![None; n],
        }
    }

    fn index_of(&self, slot: u32) -> usize {
        self.slots.iter().position(|s| *s == Some(slot)).expect("known slot")
    }

    /// One step: clients send (request or data with `up_payload`), the server receives and answers with `down_payload`.
    fn step(&mut self, up_payload: impl Fn(usize, u64) -> Vec<u8>, down_payload: impl Fn(usize, u64) -> Vec<u8>) {
        self.now += STEP_US;
        let now = self.now;
        let mut buf = Vec::new();
        for (i, c) in self.clients.iter_mut().enumerate() {
            if c.write_request(now, &mut buf) {
                self.up[i].send(now, &buf);
            } else if let Some(conn) = c.connection() {
                conn.write_data(now, &up_payload(i, now), &mut buf);
                self.up[i].send(now, &buf);
            }
        }
        for i in 0..self.clients.len() {
            for p in self.up[i].receive(now) {
                match self.server.process_packet(now, UNIX_MS, 1 + i as u32, &p) {
                    Ok(ServerEvent::Connected { slot, .. }) => self.slots[i] = Some(slot),
                    Ok(ServerEvent::Data { slot, payload }) => {
                        let who = self.index_of(slot);
                        if !payload.is_empty() {
                            self.server_unreliable.push((who, payload.to_vec()));
                        }
                    }
                    _ => {}
                }
            }
        }
        for (addr, p) in self.server.drain_handshakes().collect::<Vec<_>>() {
            self.down[addr as usize - 1].send(now, &p);
        }
        for i in 0..self.clients.len() {
            let Some(slot) = self.slots[i] else { continue };
            let Some((_, conn)) = self.server.session(slot) else { continue };
            while let Some(m) = conn.receive_reliable() {
                self.server_reliable[i].push(m);
            }
            conn.write_data(now, &down_payload(i, now), &mut buf);
            self.down[i].send(now, &buf);
        }
        for (i, c) in self.clients.iter_mut().enumerate() {
            for p in self.down[i].receive(now) {
                if let Ok(ClientEvent::Data(payload)) = c.process_packet(now, &p)
                    && !payload.is_empty()
                {
                    self.client_unreliable[i].push(payload.to_vec());
                }
            }
            if let Some(conn) = c.connection() {
                while let Some(m) = conn.receive_reliable() {
                    self.client_reliable[i].push(m);
                }
            }
        }
    }

    fn idle(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step(|_, _| Vec::new(), |_, _| Vec::new());
        }
    }
}

fn message(i: usize, n: u32) -> Vec<u8> {
    // Sizes from 0 to 5 KiB so that some are fragmented.
    let len = (n as usize * 977 + i * 131) % 5000;
    let mut m = n.to_le_bytes().to_vec();
    m.extend((0..len).map(|k| (k as u32 ^ n) as u8));
    m
}

fn reliable_exchange(profile: LinkProfile) -> World {
    let mut w = World::new(3, profile);
    w.idle(20);
    assert!(w.clients.iter().all(|c| c.state() == ClientState::Connected), "all connect through the bad link");
    const MESSAGES: u32 = 200;
    for n in 0..MESSAGES {
        for i in 0..3 {
            let slot = w.slots[i].unwrap();
            w.server.session(slot).unwrap().1.send_reliable(&message(i, n)).unwrap();
            w.clients[i].connection().unwrap().send_reliable(&message(i + 10, n)).unwrap();
        }
        if n % 4 == 0 {
            w.idle(1);
        }
    }
    let all_acked = |w: &mut World| {
        (0..3).all(|i| w.clients[i].connection().unwrap().stats().queued == 0 && w.server.session(w.slots[i].unwrap()).unwrap().1.stats().queued == 0)
    };
    for _ in 0..5000 {
        if all_acked(&mut w) {
            break;
        }
        w.idle(1);
    }
    w.idle(100);
    for i in 0..3 {
        let expect_down: Vec<_> = (0..MESSAGES).map(|n| message(i, n)).collect();
        let expect_up: Vec<_> = (0..MESSAGES).map(|n| message(i + 10, n)).collect();
        assert!(w.client_reliable[i] == expect_down, "client {i}: every reliable message once, in order");
        assert!(
            w.server_reliable[i] == expect_up,
            "server from {i}: every reliable message once, in order: {} of {}, queued {:?}",
            w.server_reliable[i].len(),
            expect_up.len(),
            w.clients[i].connection().unwrap().stats()
        );
        assert_eq!(w.clients[i].connection().unwrap().stats().queued, 0, "all acked");
    }
    w
}

#[test]
fn reliable_messages_arrive_once_in_order_over_a_lossy_duplicating_reordering_link() {
    let bad = LinkProfile { loss: 0.2, duplicate: 0.1, latency_us: 20_000, jitter_us: 40_000 };
    let mut w = reliable_exchange(bad);
    let c = w.clients[0].connection().unwrap().stats();
    assert!(c.resends > 0, "loss forces resends: {c:?}");
    assert!(w.up[0].duplicated > 0 && w.up[0].lost > 0);
    assert!(w.server.stats().drops.of(DropReason::Replayed) > 0, "link duplicates are dropped by the replay window");
}

#[test]
fn a_perfect_link_needs_no_resends() {
    let mut w = reliable_exchange(LinkProfile { latency_us: 5_000, ..LinkProfile::default() });
    for i in 0..3 {
        assert_eq!(w.clients[i].connection().unwrap().stats().resends, 0);
    }
}

#[test]
fn unreliable_payloads_are_never_retried_or_repeated() {
    let bad = LinkProfile { loss: 0.3, duplicate: 0.3, latency_us: 10_000, jitter_us: 30_000 };
    let mut w = World::new(2, bad);
    w.idle(30);
    let tagged = |i: usize, now: u64| [i as u8].into_iter().chain(now.to_le_bytes()).collect::<Vec<u8>>();
    for _ in 0..500 {
        w.step(tagged, tagged);
    }
    w.idle(20);
    for i in 0..2 {
        let got = &w.client_unreliable[i];
        let mut unique = got.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), got.len(), "no payload delivered twice");
        assert!(got.len() < 500 && got.len() > 250, "about 70% of 500 arrive, none twice: {}", got.len());
        let conn = w.clients[i].connection().unwrap().stats();
        assert_eq!(conn.resends, 0, "nothing reliable was sent, so nothing was resent");
    }
}

#[test]
fn a_full_reliable_queue_refuses_and_counts() {
    let mut w = World::new(1, LinkProfile::default());
    w.idle(3);
    let conn = w.clients[0].connection().unwrap();
    let mut refused = 0;
    for _ in 0..2000 {
        if conn.send_reliable(&[1; 100]).is_err() {
            refused += 1;
        }
    }
    assert_eq!(refused, 2000 - 1024);
    assert_eq!(conn.stats().queue_full, refused);
    assert_eq!(conn.stats().queued, 1024);
}

#[test]
fn forged_expired_and_reused_tokens_are_refused_and_counted() {
    let secret = Secret::from_passphrase("test");
    let mut server: Server<u32> = Server::new(ServerConfig::new(secret.clone()));
    let mut buf = Vec::new();
    let mut request = |server: &mut Server<u32>, t: ([u8; 40], _), from: u32| {
        let mut c = Client::new(t.0, t.1, 0);
        c.write_request(0, &mut buf);
        server.process_packet(0, UNIX_MS, from, &buf).map(|_| ())
    };
    let forged = token(&Secret::from_passphrase("other"), 1, UNIX_MS + 1000);
    assert_eq!(request(&mut server, forged, 1), Err(DropReason::BadToken));
    let expired = token(&secret, 2, UNIX_MS - 1);
    assert_eq!(request(&mut server, expired, 1), Err(DropReason::ExpiredToken));
    let good = token(&secret, 3, UNIX_MS + 1000);
    assert_eq!(request(&mut server, good, 1), Ok(()));
    assert_eq!(request(&mut server, good, 1), Ok(()), "a repeated request from the same address is answered again");
    assert_eq!(request(&mut server, good, 2), Err(DropReason::TokenReused), "a stolen token from elsewhere is refused");
    // A token's bytes with a key that is not its own: the request's tag fails.
    let other_key = token(&secret, 4, UNIX_MS + 1000).1;
    assert_eq!(request(&mut server, (good.0, other_key), 1), Err(DropReason::BadTag));
    let s = server.stats();
    assert_eq!((s.drops.of(DropReason::BadToken), s.drops.of(DropReason::ExpiredToken), s.drops.of(DropReason::TokenReused)), (1, 1, 1));
    assert_eq!(server.sessions(), 1);
}

#[test]
fn replayed_spoofed_and_impersonating_packets_are_dropped_and_counted() {
    let mut w = World::new(2, LinkProfile::default());
    w.idle(3);
    let (a, b) = (w.slots[0].unwrap(), w.slots[1].unwrap());
    let mut pa = Vec::new();
    w.clients[0].connection().unwrap().write_data(w.now, b"move", &mut pa);
    assert!(matches!(w.server.process_packet(w.now, UNIX_MS, 1, &pa), Ok(ServerEvent::Data { payload: b"move", .. })));
    assert_eq!(w.server.process_packet(w.now, UNIX_MS, 1, &pa).unwrap_err(), DropReason::Replayed);
    // A's packet sent from B's address.
    let mut pa2 = Vec::new();
    w.clients[0].connection().unwrap().write_data(w.now, b"move", &mut pa2);
    assert_eq!(w.server.process_packet(w.now, UNIX_MS, 2, &pa2).unwrap_err(), DropReason::WrongAddress);
    // From B's address, claiming B's slot, but signed with A's key: B is being impersonated.
    let mut forged = pa2.clone();
    forged[1..5].copy_from_slice(&b.to_le_bytes());
    assert_eq!(w.server.process_packet(w.now, UNIX_MS, 2, &forged).unwrap_err(), DropReason::BadTag);
    // A flipped byte anywhere fails the tag.
    let mut bent = pa2.clone();
    bent[12] ^= 0x40;
    assert_eq!(w.server.process_packet(w.now, UNIX_MS, 1, &bent).unwrap_err(), DropReason::BadTag);
    // A server packet reflected back at the server.
    let mut down = Vec::new();
    w.server.session(a).unwrap().1.write_data(w.now, b"snap", &mut down);
    assert_eq!(w.server.process_packet(w.now, UNIX_MS, 1, &down).unwrap_err(), DropReason::WrongDirection);
    let d = w.server.stats().drops;
    assert_eq!((d.of(DropReason::Replayed), d.of(DropReason::WrongAddress), d.of(DropReason::BadTag)), (1, 1, 2));
    // The genuine next packet still goes through.
    assert!(matches!(w.server.process_packet(w.now, UNIX_MS, 1, &pa2), Ok(ServerEvent::Data { .. })));
}

#[test]
fn a_flood_of_garbage_leaves_the_server_serving_real_clients() {
    let mut w = World::new(2, LinkProfile::default());
    w.idle(3);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..100_000u64 {
        let len = (next() % 1400) as usize;
        let mut p: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 3 == 0 && len > 9 {
            // Plausible headers: a real kind and a live slot.
            p[0] = 0x04;
            p[1..5].copy_from_slice(&w.slots[(i % 2) as usize].unwrap().to_le_bytes());
        }
        let from = if i % 5 == 0 { 1 } else { 99 };
        assert!(w.server.process_packet(w.now, UNIX_MS, from, &p).is_err());
    }
    assert_eq!(w.server.stats().drops.total(), 100_000);
    w.step(|i, _| vec![i as u8; 10], |_, _| b"snap".to_vec());
    w.step(|i, _| vec![i as u8; 10], |_, _| b"snap".to_vec());
    assert_eq!(w.server.sessions(), 2);
    assert!(w.server_unreliable.len() >= 2 && w.client_unreliable.iter().all(|u| !u.is_empty()));
}

#[test]
fn a_full_server_denies_and_a_silent_client_times_out() {
    let secret = Secret::from_passphrase("test");
    let mut w = World::new(3, LinkProfile::default());
    w.server = Server::new(ServerConfig { max_clients: 2, ..ServerConfig::new(secret) });
    w.idle(5);
    let states: Vec<_> = w.clients.iter().map(Client::state).collect();
    assert_eq!(states.iter().filter(|s| **s == ClientState::Connected).count(), 2);
    assert_eq!(states.iter().filter(|s| matches!(s, ClientState::Denied(_))).count(), 1);
    let gone = w.server.update(w.now + 6_000_000);
    assert_eq!(gone.len(), 2);
    assert_eq!(w.server.sessions(), 0);
    assert!(w.clients[0].update(w.now + 6_000_000));
    assert_eq!(w.clients[0].state(), ClientState::Disconnected);
}

#[test]
fn reliable_slices_leave_an_ack_owed_until_a_data_packet_carries_it() {
    let mut w = World::new(1, LinkProfile::default());
    w.idle(3);
    let slot = w.slots[0].unwrap();
    let mut buf = Vec::new();
    let mut deliver = |w: &mut World, now: u64, reliable: bool| {
        let conn = w.clients[0].connection().unwrap();
        if reliable {
            conn.send_reliable(b"hello").unwrap();
        }
        conn.write_data(now, &[], &mut buf);
        w.server.process_packet(now, UNIX_MS, 1, &buf).unwrap();
    };
    deliver(&mut w, 1_000_000, false);
    assert_eq!(w.server.session(slot).unwrap().1.ack_owed_since(), None, "a packet without slices needs no ack");
    deliver(&mut w, 1_001_000, true);
    deliver(&mut w, 1_002_000, true);
    assert_eq!(w.server.session(slot).unwrap().1.ack_owed_since(), Some(1_001_000), "owed since the first unacked slice");
    w.server.session(slot).unwrap().1.write_data(1_003_000, &[], &mut Vec::new());
    assert_eq!(w.server.session(slot).unwrap().1.ack_owed_since(), None, "a data packet carries the ack");
}
