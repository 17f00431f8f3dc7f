//! The states the actors were replicated with in the last frames, kept once for all clients: a client's
//! baseline is "actor A as of frame F", looked up here rather than copied into every client's table
//! (which kept each client's tables several times larger than the caches).

use crate::codec::state::ActorState;

/// Frames kept. A baseline older than this is not used (the actor is then sent in full); baselines are at
/// most four updates old, so this covers interleaving that skips up to 15 frames.
pub const DEPTH: usize = 64;

/// Every actor's state in each of the last [`DEPTH`] frames.
#[derive(Debug)]
pub struct StateHistory {
    /// The frame held in each place (0: none), at frame % DEPTH.
    frames: Vec<u32>,
    /// Per place, the states by actor id.
    states: Vec<Vec<ActorState>>,
}

impl Default for StateHistory {
    fn default() -> Self {
        Self { frames: vec![0; DEPTH], states: vec![Vec::new(); DEPTH] }
    }
}

impl StateHistory {
    /// Keeps frame `frame`'s states (by id; `None`: no such actor).
    pub fn record(&mut self, frame: u32, states: &[Option<(ActorState, bool)>]) {
        let place = frame as usize % DEPTH;
        self.frames[place] = frame;
        let kept = &mut self.states[place];
        kept.clear();
        kept.extend(states.iter().map(|s| s.map_or_else(ActorState::default, |(state, _)| state)));
    }

    /// Actor `id` as of frame `frame`, if that frame is still kept.
    pub fn at(&self, id: u32, frame: u32) -> Option<&ActorState> {
        let place = frame as usize % DEPTH;
        if self.frames[place] != frame || frame == 0 {
            return None;
        }
        self.states[place].get(id as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_kept_until_depth_newer_frames_replace_it() {
        let mut h = StateHistory::default();
        let state = |x| Some((ActorState { x, ..ActorState::default() }, true));
        for frame in 1..=DEPTH as u32 + 1 {
            h.record(frame, &[state(frame as i32), None]);
        }
        assert_eq!(h.at(0, 1), None, "replaced by frame {}", DEPTH + 1);
        assert_eq!(h.at(0, 2).map(|s| s.x), Some(2));
        assert_eq!(h.at(0, DEPTH as u32 + 1).map(|s| s.x), Some(DEPTH as i32 + 1));
        assert_eq!(h.at(2, 2), None, "no such actor");
        assert_eq!(h.at(0, DEPTH as u32 + 2), None, "not yet");
    }
}
