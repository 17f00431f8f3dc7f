//! A connection several loaders share, each with a request in flight
//! (batched pipelining, as group commit batches syncs): a loader queues its
//! encoded request; whichever loader finds the connection free sends all
//! that is queued in one write and reads the answers in order, handing each
//! loader its own. For protocols that answer a connection's requests in the
//! order they came (Redis; PostgreSQL's extended protocol with a Sync per
//! request). A request is queued whole, so what one request sends together
//! (a Redis step's `MULTI … EXEC`) stays together; state one request leaves
//! for a later one (`WATCH`, `BEGIN`) cannot be shared, which the scenario
//! layer checks.
//!
//! A loader alone on its connection ([`Pipe::Own`]) sends each request as a
//! batch of one, with no queue or lock between it and the socket (the
//! default: what a request costs the generator stays what it was).

use aggro_core::{ErrorClass, StoreError};
use parking_lot::Mutex;
use std::future::Future;
use std::sync::Arc;

/// A connection whose protocol answers pipelined requests in order.
pub(crate) trait Pipelined: Send + 'static {
    /// Requests encoded back to back.
    type Batch: Default + Send;
    /// What reading one request's answer needs to know.
    type Ask: Send;
    /// One request's answer.
    type Answer: Send;
    /// What the connection has been told that later requests rely on; forgotten when it breaks.
    type Known: Default + Send;

    /// Sends `batch`, leaving it empty; opens a connection first if there is none.
    fn send(&mut self, batch: &mut Self::Batch) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Reads the next request's answer; an error means the connection broke.
    fn answer(&mut self, ask: &Self::Ask) -> impl Future<Output = Result<Self::Answer, StoreError>> + Send;
    /// Drops the connection (it broke, or a cancelled batch left answers unread); the next send opens another.
    fn drop_connection(&mut self);
    /// Empties a batch that could not be sent.
    fn discard(batch: &mut Self::Batch);
}

/// One loader's way to its connection: its own, or shared with other loaders.
pub(crate) enum Pipe<P: Pipelined> {
    /// The connection is this loader's alone.
    Own { pipe: P, batch: P::Batch, known: P::Known, in_flight: bool },
    /// Several loaders send through it.
    Shared { shared: Arc<Shared<P>>, slot: Arc<Slot<P>> },
}

impl<P: Pipelined> Pipe<P> {
    /// Handles for `loaders` loaders on connection `pipe`.
    pub(crate) fn handles(pipe: P, loaders: usize) -> Vec<Self> {
        if loaders == 1 {
            return vec![Pipe::Own { pipe, batch: P::Batch::default(), known: P::Known::default(), in_flight: false }];
        }
        let shared = Arc::new(Shared::new(pipe));
        (0..loaders).map(|_| Pipe::Shared { shared: Arc::clone(&shared), slot: Arc::default() }).collect()
    }

    /// Sends one request — `encode` appends it to the batch and says how to read its answer — and
    /// returns its answer.
    pub(crate) async fn request(&mut self, encode: impl FnOnce(&mut P::Batch, &mut P::Known) -> P::Ask) -> Result<P::Answer, StoreError> {
        match self {
            Pipe::Own { pipe, batch, known, in_flight } => {
                if std::mem::take(in_flight) {
                    // A request cancelled midway left its answer unread.
                    pipe.drop_connection();
                    *known = P::Known::default();
                }
                let ask = encode(batch, known);
                *in_flight = true;
                let result = async {
                    pipe.send(batch).await?;
                    pipe.answer(&ask).await
                }
                .await;
                *in_flight = false;
                if result.is_err() {
                    P::discard(batch);
                    pipe.drop_connection();
                    *known = P::Known::default();
                }
                result
            }
            Pipe::Shared { shared, slot } => {
                shared.queue(slot, encode);
                shared.answer(slot).await
            }
        }
    }

    /// Changes what the connection is taken to know (a script whose loading failed is not loaded).
    #[cfg(feature = "redis")]
    pub(crate) fn amend(&mut self, change: impl FnOnce(&mut P::Known)) {
        match self {
            Pipe::Own { known, .. } => change(known),
            Pipe::Shared { shared, .. } => change(&mut shared.queue.lock().known),
        }
    }
}

/// The connection and what waits to go out on it.
pub(crate) struct Shared<P: Pipelined> {
    queue: Mutex<Queue<P>>,
    sender: tokio::sync::Mutex<Sender<P>>,
}

/// Requests queued since the last batch went out.
struct Queue<P: Pipelined> {
    /// Their encoding, back to back.
    batch: P::Batch,
    /// What the connection has been told (or will be, by a queued request).
    known: P::Known,
    waiting: Vec<(Arc<Slot<P>>, P::Ask)>,
}

/// The connection, held by the loader sending a batch, and the batch's buffers (kept for the next).
struct Sender<P: Pipelined> {
    pipe: P,
    batch: P::Batch,
    taken: Vec<(Arc<Slot<P>>, P::Ask)>,
    /// A batch is out whose answers are not all read: its sender was cancelled midway.
    in_flight: bool,
}

/// Where one loader's answer arrives.
pub(crate) struct Slot<P: Pipelined>(Mutex<State<P::Answer>>);

impl<P: Pipelined> Default for Slot<P> {
    fn default() -> Self {
        Self(Mutex::new(State::Idle))
    }
}

enum State<A> {
    Idle,
    Queued,
    Sent,
    Done(Result<A, StoreError>),
}

impl<P: Pipelined> Slot<P> {
    fn set(&self, state: State<P::Answer>) {
        *self.0.lock() = state;
    }

    fn take(&self) -> State<P::Answer> {
        std::mem::replace(&mut *self.0.lock(), State::Idle)
    }
}

impl<P: Pipelined> Shared<P> {
    /// Shares `pipe`.
    fn new(pipe: P) -> Self {
        Self {
            queue: Mutex::new(Queue { batch: P::Batch::default(), known: P::Known::default(), waiting: Vec::new() }),
            sender: tokio::sync::Mutex::new(Sender { pipe, batch: P::Batch::default(), taken: Vec::new(), in_flight: false }),
        }
    }

    /// Queues one request of `slot`'s loader: `encode` appends it to the batch and says how to read its answer.
    fn queue(&self, slot: &Arc<Slot<P>>, encode: impl FnOnce(&mut P::Batch, &mut P::Known) -> P::Ask) {
        let mut q = self.queue.lock();
        let Queue { batch, known, .. } = &mut *q;
        let ask = encode(batch, known);
        q.waiting.push((Arc::clone(slot), ask));
        slot.set(State::Queued);
    }

    /// The answer to `slot`'s queued request, sending the queue if no other loader has.
    async fn answer(&self, slot: &Slot<P>) -> Result<P::Answer, StoreError> {
        let mut sender = self.sender.lock().await;
        match slot.take() {
            State::Done(result) => return result,
            State::Queued => {}
            State::Sent | State::Idle => return Err(StoreError::new(ErrorClass::Disconnected, "request lost with a cancelled batch")),
        }
        if std::mem::take(&mut sender.in_flight) {
            // The answers still due are a cancelled batch's; they would be read as this one's.
            sender.pipe.drop_connection();
            self.queue.lock().known = P::Known::default();
        }
        {
            let mut q = self.queue.lock();
            let Sender { batch, taken, .. } = &mut *sender;
            std::mem::swap(&mut q.batch, batch);
            std::mem::swap(&mut q.waiting, taken);
        }
        for (s, _) in &sender.taken {
            s.set(State::Sent);
        }
        sender.in_flight = true;
        let broke = sender.send().await;
        sender.in_flight = false;
        if broke {
            self.queue.lock().known = P::Known::default();
        }
        match slot.take() {
            State::Done(result) => result,
            _ => unreachable!("a loader's own request is in the batch it sent"),
        }
    }
}

impl<P: Pipelined> Sender<P> {
    /// Sends the batch and hands each request its answer; true if the connection broke.
    async fn send(&mut self) -> bool {
        let Sender { pipe, batch, taken, .. } = self;
        let outcome = async {
            pipe.send(batch).await.map_err(|e| (0, e))?;
            for (i, (slot, ask)) in taken.iter().enumerate() {
                let answer = pipe.answer(ask).await.map_err(|e| (i, e))?;
                slot.set(State::Done(Ok(answer)));
            }
            Ok(())
        }
        .await;
        P::discard(batch);
        let broke = match outcome {
            Ok(()) => false,
            Err((from, e)) => {
                for (slot, _) in &taken[from..] {
                    slot.set(State::Done(Err(StoreError::new(e.class, e.message.clone()))));
                }
                pipe.drop_connection();
                true
            }
        };
        taken.clear();
        broke
    }
}
