//! Stopping a run from outside: Ctrl-C, a test, a search that has its answer.

use tokio::sync::watch;

/// A handle that ends the run it was given to; cheap to clone.
#[derive(Clone, Debug)]
pub struct StopHandle {
    tx: std::sync::Arc<watch::Sender<bool>>,
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl StopHandle {
    /// A handle that has not fired.
    pub fn new() -> Self {
        Self { tx: std::sync::Arc::new(watch::channel(false).0) }
    }

    /// Ends the run: no new requests start; those in flight may finish.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }

    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once stopped.
    pub async fn stopped(&self) {
        let mut rx = self.tx.subscribe();
        // Err means the sender is gone, which cannot happen while `self` lives.
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Stops on the first Ctrl-C (SIGINT) or SIGTERM.
    pub fn stop_on_signals(&self) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let term = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term => {}
            }
            me.stop();
        });
    }
}
