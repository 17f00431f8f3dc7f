//! Every decoder over mutated real packets and random bytes: no panic, and the
//! server goes on serving its session afterwards. (The same entry points are
//! cargo-fuzz targets in `fuzz/` for longer runs.)

use aggro_arena::codec::bits::BitWriter;
use aggro_arena::codec::msg::{ClientRpc, Input, ServerRpc, SnapshotHead};
use aggro_arena::codec::state::{ActorState, put_entry};
use aggro_arena::fuzzing::{connected_pair, payloads, protocol};
use arena_proto::ServerEvent;

fn corpus() -> Vec<Vec<u8>> {
    let (mut server, mut client) = connected_pair();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let conn = client.connection().unwrap();
    conn.send_reliable(&[7; 3000]).unwrap();
    let mut input = Vec::new();
    Input { seq: 1, sent_at_us: 5, move_x: 3, move_y: -4, yaw: 9 }.write(&mut input);
    conn.write_data(1, &input, &mut buf);
    out.push(buf.clone());
    let (_, sconn) = server.session(0).unwrap();
    let mut snap = Vec::new();
    let mut w = BitWriter::default();
    for id in 0..20 {
        put_entry(&mut w, id as i64 - 1, id, 0, None, 5, 30, &ActorState { x: 1000 * id as i32, health: 100, vx: 600, ..ActorState::default() });
    }
    SnapshotHead { frame: 5, zone_radius: 1, count: 20 }.write(&mut snap);
    snap.extend_from_slice(w.finish());
    sconn.write_data(1, &snap, &mut buf);
    out.push(buf.clone());
    out.push(snap);
    out.push(input);
    for m in [ClientRpc::Join { x: 1, y: 2 }, ClientRpc::Fire { shot_at_us: 3, aim: 4 }] {
        let mut b = Vec::new();
        m.write(&mut b);
        out.push(b);
    }
    let mut b = Vec::new();
    ServerRpc::Fired { shooter: 1, shot_at_us: 2 }.write(&mut b);
    out.push(b);
    out
}

#[test]
fn decoders_survive_mutated_packets_and_random_bytes() {
    let corpus = corpus();
    let mut s = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for round in 0..20_000 {
        let mut p = corpus[round % corpus.len()].clone();
        match next() % 4 {
            0 => {
                let i = next() as usize % p.len().max(1);
                if let Some(b) = p.get_mut(i) {
                    *b ^= 1 << (next() % 8);
                }
            }
            1 => p.truncate(next() as usize % (p.len() + 1)),
            2 => p.extend((0..next() % 64).map(|_| next() as u8)),
            _ => p = (0..next() % 1500).map(|_| next() as u8).collect(),
        }
        protocol(&p);
        payloads(&p);
    }
    // After all that, a genuine packet still goes through.
    let (mut server, mut client) = connected_pair();
    let mut buf = Vec::new();
    for p in &corpus {
        let mut bent = p.clone();
        if let Some(b) = bent.last_mut() {
            *b ^= 0x20;
        }
        assert!(server.process_packet(1, 0, 7, &bent).is_err(), "a bent packet is refused");
    }
    client.connection().unwrap().write_data(2, b"ok", &mut buf);
    assert!(matches!(server.process_packet(2, 0, 7, &buf), Ok(ServerEvent::Data { payload: b"ok", .. })));
}
