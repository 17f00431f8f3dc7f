//! A background thread of the database (the checkpoint thread, the sweep's): woken by the
//! committing threads, it does everything due each time it wakes; the error it met is reported by
//! the next wake-up, and dropping it waits for the work under way and ends it.

use crate::error::{Error, Result};
use crate::sync::lock;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

pub(crate) struct Worker {
    name: &'static str,
    wake: Option<SyncSender<()>>,
    /// The error the thread met last, not reported yet.
    failed: Arc<Mutex<Option<Error>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Starts thread `name`, running `work` at each wake-up.
    pub(crate) fn start(name: &'static str, work: impl Fn() -> Result<()> + Send + 'static) -> std::io::Result<Worker> {
        // One wake-up waiting is enough: the thread does everything due when it wakes.
        let (wake, woken): (SyncSender<()>, Receiver<()>) = std::sync::mpsc::sync_channel(1);
        let failed = Arc::new(Mutex::new(None));
        let on_thread = Arc::clone(&failed);
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            for () in woken {
                if let Err(e) = work() {
                    *lock(&on_thread) = Some(e);
                }
            }
        })?;
        Ok(Worker { name, wake: Some(wake), failed, thread: Some(thread) })
    }

    /// Wakes the thread, after reporting the error it met since the last call, if any.
    pub(crate) fn wake(&self) -> Result<()> {
        if let Some(e) = lock(&self.failed).take() {
            return Err(e);
        }
        if let Some(wake) = &self.wake {
            match wake.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => return Err(Error::Format(format!("the {} thread ended", self.name))),
            }
        }
        Ok(())
    }

    /// Ends the thread after the work under way and reports the error it met since the last wake-up,
    /// if any.
    pub(crate) fn stop(self) -> Result<()> {
        let failed = Arc::clone(&self.failed);
        drop(self);
        lock(&failed).take().map_or(Ok(()), Err)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the wake-ups ends the thread's loop after the work under way.
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
