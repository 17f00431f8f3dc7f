//! A Redis connection several loaders share, each with a request in flight
//! (batched pipelining, as group commit batches syncs): a loader queues its
//! encoded commands; whichever loader finds the connection free sends all
//! that is queued in one write and reads the replies in order, handing each
//! loader its own. Redis answers a connection's commands in the order they
//! came and a loader's commands are queued together, so a step's
//! `MULTI … EXEC` stays whole; state that spans steps (`WATCH`) cannot be
//! shared, which the scenario layer checks.
//!
//! One loader alone on a connection takes the same path: it queues, finds
//! the connection free, and sends its own request.

use super::resp::Reply as Resp;
use super::{Link, RedisTarget};
use aggro_core::{ErrorClass, StoreError};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;

/// The connection and what waits to go out on it.
pub(crate) struct Shared {
    queue: Mutex<Queue>,
    sender: tokio::sync::Mutex<Sender>,
}

/// Requests queued since the last batch went out.
pub(crate) struct Queue {
    /// Their commands, encoded back to back.
    pub(crate) encoded: Vec<u8>,
    /// SHA-1s (hex) of the scripts loaded on the connection (or queued to be).
    pub(crate) loaded: HashSet<String>,
    waiting: Vec<(Arc<Slot>, usize)>,
}

/// The connection, held by the loader sending a batch, and the batch's buffers (kept for the next).
struct Sender {
    link: Link,
    batch: Vec<u8>,
    taken: Vec<(Arc<Slot>, usize)>,
    /// A batch is out whose replies are not all read: its sender was cancelled midway.
    in_flight: bool,
}

/// Where one loader's replies arrive.
#[derive(Default)]
pub(crate) struct Slot(Mutex<State>);

#[derive(Default)]
enum State {
    #[default]
    Idle,
    Queued,
    Sent,
    Done(Result<Vec<Resp>, StoreError>),
}

impl Slot {
    fn set(&self, state: State) {
        *self.0.lock() = state;
    }
}

fn copy(e: &StoreError) -> StoreError {
    StoreError::new(e.class, e.message.clone())
}

impl Shared {
    /// A connection to `target`, opened now.
    pub(crate) async fn open(target: &RedisTarget) -> Result<Self, StoreError> {
        let sender = Sender { link: Link::open(target).await?, batch: Vec::new(), taken: Vec::new(), in_flight: false };
        Ok(Self {
            queue: Mutex::new(Queue { encoded: Vec::with_capacity(4096), loaded: HashSet::new(), waiting: Vec::new() }),
            sender: tokio::sync::Mutex::new(sender),
        })
    }

    /// Queues one request of `slot`'s loader: `encode` appends its commands and returns how many replies
    /// they get.
    pub(crate) fn queue(&self, slot: &Arc<Slot>, encode: impl FnOnce(&mut Queue) -> usize) {
        let mut q = self.queue.lock();
        let replies = encode(&mut q);
        q.waiting.push((Arc::clone(slot), replies));
        slot.set(State::Queued);
    }

    /// Forgets that a script is loaded (its `SCRIPT LOAD` failed).
    pub(crate) fn forget_script(&self, sha: &str) {
        self.queue.lock().loaded.remove(sha);
    }

    /// The replies to `slot`'s queued request, sending the queue if no other loader has.
    pub(crate) async fn replies(&self, slot: &Slot) -> Result<Vec<Resp>, StoreError> {
        let mut sender = self.sender.lock().await;
        match std::mem::take(&mut *slot.0.lock()) {
            State::Done(result) => return result,
            State::Queued => {}
            State::Sent | State::Idle => return Err(StoreError::new(ErrorClass::Disconnected, "request lost with a cancelled batch")),
        }
        if std::mem::take(&mut sender.in_flight) {
            // The replies still due are a cancelled batch's; they would be read as this one's.
            sender.link.live.forget();
            self.queue.lock().loaded.clear();
        }
        {
            let mut q = self.queue.lock();
            let Sender { batch, taken, .. } = &mut *sender;
            std::mem::swap(&mut q.encoded, batch);
            std::mem::swap(&mut q.waiting, taken);
        }
        for (s, _) in &sender.taken {
            s.set(State::Sent);
        }
        sender.in_flight = true;
        let broke = sender.send().await;
        sender.in_flight = false;
        if broke {
            self.queue.lock().loaded.clear();
        }
        match std::mem::take(&mut *slot.0.lock()) {
            State::Done(result) => result,
            _ => unreachable!("a loader's own request is in the batch it sent"),
        }
    }
}

impl Sender {
    /// Sends the batch and hands each request its replies; true if the connection broke.
    async fn send(&mut self) -> bool {
        let Sender { link, batch, taken, .. } = self;
        let outcome = async {
            let c = link.conn().await.map_err(|e| (0, e))?;
            c.push_encoded(batch);
            c.flush().await.map_err(|e| (0, e))?;
            for (i, (slot, n)) in taken.iter().enumerate() {
                let mut replies = Vec::with_capacity(*n);
                for _ in 0..*n {
                    replies.push(c.read().await.map_err(|e| (i, e))?);
                }
                slot.set(State::Done(Ok(replies)));
            }
            Ok(())
        }
        .await;
        batch.clear();
        let broke = match outcome {
            Ok(()) => false,
            Err((from, e)) => {
                for (slot, _) in &taken[from..] {
                    slot.set(State::Done(Err(copy(&e))));
                }
                let broke = matches!(e.class, ErrorClass::Disconnected | ErrorClass::Protocol);
                let _ = link.keep_if_healthy::<()>(Err(e));
                broke
            }
        };
        taken.clear();
        broke
    }
}
