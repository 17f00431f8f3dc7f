//! The server's side of replication for one client: which actors it sees,
//! which baselines it has acknowledged, interleaving by distance, and writing
//! snapshot packets.

use super::bodies::SharedBodies;
use super::history::StateHistory;
use super::replicas::{Replica, Replicas};
use crate::codec::bits::BitWriter;
use crate::codec::msg::{SNAPSHOT_HEAD_BYTES, SnapshotHead};
use crate::codec::state::{ActorState, Baseline, EntryHead, SLOTS, put_head};
use arena_proto::connection::MAX_UNRELIABLE;

/// Interleaving tiers: beyond `beyond_m` metres, replicate an actor only every `skip + 1` frames.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Tier {
    pub beyond_m: f32,
    pub skip: u32,
}

/// Interleaving tiers made ready for choosing candidates (once per server, not per actor): distances squared
/// in cm², so that no square root is taken, nearest first, each with how many frames more than the nearer
/// ones it skips — so that an actor's skip is a sum over the tiers, with no branch to mispredict.
#[derive(Clone, Debug, Default)]
pub struct SkipTable {
    steps: Vec<(f32, u32)>,
}

impl SkipTable {
    pub fn new(tiers: &[Tier]) -> Self {
        let mut sorted = tiers.to_vec();
        sorted.sort_by(|a, b| a.beyond_m.total_cmp(&b.beyond_m));
        let mut most = 0;
        let steps = sorted.iter().map(|t| {
            let step = t.skip.saturating_sub(most);
            most = most.max(t.skip);
            ((t.beyond_m * 100.0).powi(2), step)
        });
        Self { steps: steps.collect() }
    }

    /// The frames to skip for an actor `dist_cm_sq` (its distance squared, in cm²) away: the most of the tiers
    /// it is beyond.
    pub fn skip(&self, dist_cm_sq: f32) -> u32 {
        self.steps.iter().map(|(beyond, step)| (dist_cm_sq > *beyond) as u32 * step).sum()
    }
}

/// A sent snapshot packet, at seq % SENT: its frame and whether the client acknowledged it. A slot's state
/// is a usable baseline while its packet is here and acknowledged; older packets fall back to newer
/// baselines or the full state.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    seq: u32,
    frame: u32,
    acked: bool,
}

const SENT: usize = 256;
/// One skipped actor in this many has its position error measured (a sample, so that skipping stays cheap).
pub const ERROR_SAMPLE: u64 = 64;

/// Per-frame figures of one client's snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub struct SnapshotFigures {
    /// Entries written, and their bits.
    pub entries: u64,
    pub entry_bits: u64,
    /// Entries of moving actors sent as deltas, and their bits.
    pub moving_deltas: u64,
    pub moving_delta_bits: u64,
    /// Actors skipped by interleaving.
    pub skipped: u64,
}

/// What every client's snapshot in one frame shares.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotFrame<'a> {
    pub frame: u32,
    pub hz: u32,
    pub zone_radius_cm: u32,
    /// The actors' states and whether they move, by id.
    pub states: &'a [Option<(ActorState, bool)>],
    /// The actors' states in recent frames, this one's recorded.
    pub history: &'a StateHistory,
}

/// One client's replication state.
#[derive(Debug, Default)]
pub struct ClientReplication {
    /// The actors relevant in the last frame, by id; an actor that stops being relevant is forgotten
    /// (and sent in full when it is again).
    replicas: Replicas,
    /// Skipped actors so far; every [`ERROR_SAMPLE`]th has its position error measured.
    skips: u64,
    /// The snapshot packets sent, at seq % SENT (empty until the first snapshot).
    sent: Vec<Sent>,
    /// The replica indexes of the actors due this frame.
    due: Vec<u32>,
    /// The (replica index, slot) entries of the packet being written.
    packet: Vec<(u32, u8)>,
    payload: Vec<u8>,
    writer: BitWriter,
}

/// An actor to consider for one client this frame: its id and the frames interleaving skips it for (from
/// its distance, see [`SkipTable`]). Only the actors sent have their states read.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub id: u32,
    pub skip: u32,
}

impl ClientReplication {
    /// The client acknowledged packet `seq`: the entries it carried become usable baselines.
    pub fn acked(&mut self, seq: u32) {
        if let Some(sent) = self.sent.get_mut(seq as usize % SENT)
            && sent.seq == seq
        {
            sent.acked = true;
        }
    }

    /// The newest acknowledged slot of `r` other than `slot`, and the frame it holds. Slots are filled in
    /// turn, so going back from the one before `slot`, the first acknowledged is the newest.
    fn baseline_of(sent: &[Sent], r: &Replica, slot: u8) -> Option<(u8, u32)> {
        (1..SLOTS as u8).map(|back| (slot + SLOTS as u8 - back) % SLOTS as u8).find_map(|b| {
            let seq = r.seq[b as usize];
            let p = sent[seq as usize % SENT];
            (seq != 0 && p.seq == seq && p.acked).then_some((b, p.frame))
        })
    }

    /// Writes this frame's snapshot packets for `candidates` (sorted by id, no id twice) and hands each payload to
    /// `send`, which returns the packet's sequence number. Entry bodies come from `bodies`, shared by all
    /// clients in the frame. `error_cm` gets the position error of a sample of the actors skipped by
    /// interleaving (what the client, extrapolating, shows versus the truth).
    pub fn write_snapshot(
        &mut self,
        at: &SnapshotFrame,
        bodies: &mut SharedBodies,
        candidates: &[Candidate],
        mut error_cm: impl FnMut(u64),
        mut send: impl FnMut(&[u8]) -> u32,
    ) -> SnapshotFigures {
        if self.sent.is_empty() {
            self.sent = vec![Sent::default(); SENT];
        }
        let frame = at.frame;
        let budget_bits = (MAX_UNRELIABLE - SNAPSHOT_HEAD_BYTES) * 8 - 256;
        let mut fig = SnapshotFigures::default();
        let mut packet = std::mem::take(&mut self.packet);
        let mut payload = std::mem::take(&mut self.payload);
        packet.clear();
        let due = self.pick_due(at, candidates, &mut error_cm);
        fig.skipped = (candidates.len() - due.len()) as u64;
        let mut prev: i64 = -1;
        self.writer.clear();
        for &i in &due {
            let r = &mut self.replicas.placed_mut()[i as usize];
            let id = r.id;
            let Some(Some((state, moving))) = at.states.get(id as usize) else { continue };
            r.last_sent = frame.wrapping_add(1);
            let slot = r.next;
            let base = Self::baseline_of(&self.sent, r, slot)
                .and_then(|(b, base_frame)| Some(Baseline { slot: b, state: at.history.at(id, base_frame)?, frame: base_frame }));
            let before = self.writer.bit_len();
            put_head(&mut self.writer, prev, EntryHead { id, slot, base_slot: base.map(|b| b.slot) });
            bodies.put(&mut self.writer, id, base, frame, at.hz, state);
            let bits = (self.writer.bit_len() - before) as u64;
            fig.entries += 1;
            fig.entry_bits += bits;
            if *moving && base.is_some() {
                fig.moving_deltas += 1;
                fig.moving_delta_bits += bits;
            }
            r.seq[slot as usize] = 0;
            r.next = (slot + 1) % SLOTS as u8;
            packet.push((i, slot));
            prev = id as i64;
            if self.writer.bit_len() >= budget_bits {
                self.send_packet(at, &mut packet, &mut payload, &mut send);
                prev = -1;
            }
        }
        if !packet.is_empty() || candidates.is_empty() {
            self.send_packet(at, &mut packet, &mut payload, &mut send);
        }
        self.replicas.end();
        self.packet = packet;
        self.payload = payload;
        self.due = due;
        fig
    }

    /// Places every candidate's replica and returns the indexes of those due this frame (the others are skipped
    /// by interleaving; `error_cm` gets a sample of their position errors). The loop has no branch on whether
    /// an actor is skipped — a mispredicted one would also discard the loads of the replicas ahead — so a
    /// skipped actor costs little.
    fn pick_due(&mut self, at: &SnapshotFrame, candidates: &[Candidate], error_cm: &mut impl FnMut(u64)) -> Vec<u32> {
        let frame = at.frame;
        let mut due = std::mem::take(&mut self.due);
        due.resize(candidates.len(), 0);
        let mut n = 0;
        self.replicas.begin();
        for c in candidates {
            let i = self.replicas.place(c.id);
            let last_sent = self.replicas.placed_mut()[i].last_sent;
            let skipped = (c.skip > 0) & (last_sent > 0) & (frame.wrapping_sub(last_sent.wrapping_sub(1)) <= c.skip);
            due[n] = i as u32;
            n += !skipped as usize;
            self.skips += skipped as u64;
            if skipped & self.skips.is_multiple_of(ERROR_SAMPLE)
                && let (Some(sent), Some(now)) = (at.history.at(c.id, last_sent - 1), at.history.at(c.id, frame))
            {
                let (px, py, pz) = sent.predicted(frame.wrapping_sub(last_sent - 1), at.hz);
                let d = ((now.x - px) as f64).hypot((now.y - py) as f64).hypot((now.z - pz) as f64);
                error_cm(d.round() as u64);
            }
        }
        due.truncate(n);
        due
    }

    /// Sends the entries written so far (`packet`: their replica indexes and slots this frame).
    fn send_packet(&mut self, at: &SnapshotFrame, packet: &mut Vec<(u32, u8)>, payload: &mut Vec<u8>, send: &mut impl FnMut(&[u8]) -> u32) {
        payload.clear();
        SnapshotHead { frame: at.frame, zone_radius: at.zone_radius_cm, count: packet.len() as u16 }.write(payload);
        payload.extend_from_slice(self.writer.finish());
        self.writer.clear();
        let seq = send(payload);
        self.sent[seq as usize % SENT] = Sent { seq, frame: at.frame, acked: false };
        let replicas = self.replicas.placed_mut();
        for &(i, slot) in packet.iter() {
            replicas[i as usize].seq[slot as usize] = seq;
        }
        packet.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::view::View;

    fn moving(frame: u32) -> ActorState {
        ActorState { x: 100_000 + frame as i32 * 20, y: 200_000, z: 0, yaw: 3, vx: 600, vy: 0, vz: 0, health: 100 }
    }

    /// The states of `actors` moving actors in `frame`, recorded in `history`.
    fn frame_of(history: &mut StateHistory, actors: u32, frame: u32) -> Vec<Option<(ActorState, bool)>> {
        let states: Vec<_> = (0..actors).map(|_| Some((moving(frame), true))).collect();
        history.record(frame, &states);
        states
    }

    /// Every actor as a candidate, actor n being n × 100 m away.
    fn candidates(tiers: &[Tier], actors: u32) -> Vec<Candidate> {
        let table = SkipTable::new(tiers);
        (0..actors).map(|id| Candidate { id, skip: table.skip((id as f32 * 10_000.0).powi(2)) }).collect()
    }

    #[test]
    fn the_skip_table_takes_the_most_frames_of_the_tiers_an_actor_is_beyond_in_any_order() {
        let m = |d: f32| (d * 100.0).powi(2);
        let table = SkipTable::new(&[Tier { beyond_m: 400.0, skip: 2 }, Tier { beyond_m: 70.0, skip: 3 }, Tier { beyond_m: 900.0, skip: 1 }]);
        let skips: Vec<_> = [0.0, 70.0, 70.5, 400.0, 401.0, 1000.0].iter().map(|d| table.skip(m(*d))).collect();
        assert_eq!(skips, [0, 0, 3, 3, 3, 3]);
        assert_eq!(SkipTable::new(&[]).skip(m(5000.0)), 0);
    }

    #[test]
    fn every_client_decodes_what_the_server_encodes_through_its_own_loss_acks_and_actors_coming_and_going() {
        // Three clients share the frame's bodies; each loses a different share of packets and acks late;
        // actors leave interest and come back (and are then sent in full).
        let hz = 30;
        let lose_every = [3u32, 4, 7];
        let mut clients: Vec<_> = lose_every.iter().map(|_| (ClientReplication::default(), View::default(), Vec::new())).collect();
        let (mut bodies, mut history) = (SharedBodies::default(), StateHistory::default());
        let mut seq = 0;
        for frame in 1..200u32 {
            let states = frame_of(&mut history, 50, frame);
            // A different fifth of the actors out of interest every ten frames.
            let mut cands = candidates(&[], 50);
            cands.retain(|c| c.id % 5 != frame / 10 % 5);
            let at = SnapshotFrame { frame, hz, zone_radius_cm: 0, states: &states, history: &history };
            for ((server, client, in_flight), lose) in clients.iter_mut().zip(lose_every) {
                let mut sent = Vec::new();
                server.write_snapshot(
                    &at,
                    &mut bodies,
                    &cands,
                    |_| {},
                    |p| {
                        seq += 1;
                        sent.push((seq, p.to_vec()));
                        seq
                    },
                );
                // Lost packets vanish; the rest arrive one frame late; acks come back a frame after that.
                in_flight.extend(sent.into_iter().filter(|(s, _)| s % lose != 0).map(|(s, p)| (frame + 1, s, p)));
                let (arrived, later): (Vec<_>, Vec<_>) = in_flight.drain(..).partition(|(at, _, _)| *at <= frame);
                *in_flight = later;
                for (_, s, p) in arrived {
                    let mut n = 0;
                    client
                        .apply(s, &p, hz, |id, st| {
                            assert_eq!(*st, moving(frame - 1), "actor {id} decoded exactly");
                            n += 1;
                        })
                        .unwrap();
                    assert!(n > 0);
                    server.acked(s);
                }
            }
        }
        assert!(bodies.copied > bodies.encoded, "bodies are shared: {} encoded, {} copied", bodies.encoded, bodies.copied);
    }

    #[test]
    fn interleaving_skips_far_actors_and_reports_their_error() {
        let mut server = ClientReplication::default();
        let tiers = [Tier { beyond_m: 70.0, skip: 1 }, Tier { beyond_m: 400.0, skip: 2 }];
        let (mut errors, mut entries, mut history) = (Vec::new(), 0, StateHistory::default());
        for frame in 1..=30u32 {
            let states = frame_of(&mut history, 6, frame);
            let at = SnapshotFrame { frame, hz: 30, zone_radius_cm: 0, states: &states, history: &history };
            let fig = server.write_snapshot(&at, &mut SharedBodies::default(), &candidates(&tiers, 6), |e| errors.push(e), |_| frame);
            entries += fig.entries;
        }
        // Actor 0 at 0 m every frame; 1–4 (100–400 m) every 2nd; 5 (500 m) every 3rd.
        assert_eq!(entries, 30 + 4 * 15 + 10);
        assert_eq!(errors.len() as u64, (6 * 30 - entries) / ERROR_SAMPLE);
        assert!(errors.iter().all(|e| *e == 0), "straight motion at constant speed is extrapolated exactly");
    }
}
