//! Lifecycle signals of the server, as Kubernetes' `lifecycleSignals`: each fires once and can
//! be awaited or polled by health checks, filters and the shutdown sequence.

use tokio::sync::watch;

/// A one-shot, cloneable event.
#[derive(Clone, Debug)]
pub struct Signal {
    name: &'static str,
    tx: std::sync::Arc<watch::Sender<bool>>,
}

impl Signal {
    /// Creates an unsignaled event.
    pub fn new(name: &'static str) -> Self {
        let (tx, _) = watch::channel(false);
        Self {
            name,
            tx: std::sync::Arc::new(tx),
        }
    }

    /// The event's name, for logs.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Fires the event (idempotent).
    pub fn signal(&self) {
        if !*self.tx.borrow() {
            tracing::info!(signal = self.name, "lifecycle signal");
        }
        self.tx.send_replace(true);
    }

    /// Whether the event has fired.
    pub fn is_signaled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Waits until the event fires.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // An error means the sender is gone, which cannot happen while `self` holds it.
        let _ = rx.wait_for(|fired| *fired).await;
    }
}

/// The server's lifecycle events, in the order they normally fire.
#[derive(Clone, Debug)]
pub struct LifecycleSignals {
    /// The server answered ready for the first time (all post-start hooks finished).
    pub has_been_ready: Signal,
    /// A termination signal arrived; `/readyz` fails from now on.
    pub shutdown_initiated: Signal,
    /// `--shutdown-delay-duration` elapsed; the listener stops and long-running requests end.
    pub not_accepting_new_requests: Signal,
    /// The listener is closed.
    pub listener_stopped: Signal,
    /// Every in-flight request finished (or the drain deadline passed).
    pub in_flight_drained: Signal,
}

impl Default for LifecycleSignals {
    fn default() -> Self {
        Self {
            has_been_ready: Signal::new("HasBeenReady"),
            shutdown_initiated: Signal::new("ShutdownInitiated"),
            not_accepting_new_requests: Signal::new("NotAcceptingNewRequest"),
            listener_stopped: Signal::new("HTTPServerStoppedListening"),
            in_flight_drained: Signal::new("InFlightRequestsDrained"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_once_and_wakes_waiters() {
        let s = Signal::new("x");
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { s.wait().await })
        };
        assert!(!s.is_signaled());
        s.signal();
        s.signal();
        assert!(s.is_signaled());
        assert!(waiter.await.is_ok());
    }
}
