//! Whether every HTTP path the server will serve is installed yet: kube-apiserver's
//! "mux and discovery complete" signals. A server whose paths appear after it starts (the
//! extension server serves a custom resource once its CRD is read) registers a
//! [`MuxCompleteSignal`]; until every registered signal is complete, a request that reaches the
//! end of the delegation chain is answered 503 with `Retry-After: 5` instead of 404, so a
//! client that asks for a custom resource just after a restart retries rather than concluding
//! it does not exist.
//!
//! ```
//! # fn example(server: &mut server::genericserver::GenericServer) {
//! let synced = server.add_mux_complete_signal("MyKindsHaveNotSynced");
//! // ... once every kind known at start is served:
//! synced.complete();
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use apimachinery::status::ApiError;

/// One server's signal that its paths are installed (see the module documentation).
#[derive(Clone, Debug)]
pub struct MuxCompleteSignal {
    name: Arc<str>,
    complete: Arc<AtomicBool>,
}

impl MuxCompleteSignal {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            complete: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Marks the paths of this signal's server installed (once is enough; it never reverts).
    pub fn complete(&self) {
        self.complete.store(true, Ordering::Release);
    }

    /// Whether [`MuxCompleteSignal::complete`] was called.
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// The name it was registered with, such as `CRDInformerHasNotSynced`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Every registered signal: what the end of the delegation chain consults.
#[derive(Clone, Debug, Default)]
pub(crate) struct MuxCompleteSignals(Vec<MuxCompleteSignal>);

impl MuxCompleteSignals {
    pub(crate) fn register(&mut self, name: &str) -> MuxCompleteSignal {
        let signal = MuxCompleteSignal::new(name);
        self.0.push(signal.clone());
        signal
    }

    /// The first signal not complete yet, if any.
    pub(crate) fn pending(&self) -> Option<&MuxCompleteSignal> {
        self.0.iter().find(|s| !s.is_complete())
    }

    /// What a request no server handled gets: 503 while a signal is pending (kube-apiserver's
    /// message, `retryAfterSeconds: 5`), 404 after.
    pub(crate) fn unhandled(&self) -> ApiError {
        match self.pending() {
            Some(signal) => {
                tracing::debug!(
                    signal = signal.name(),
                    "a request before all paths are installed"
                );
                ApiError::service_unavailable_retry(
                    "the request has been made before all known HTTP paths have been installed, please try again",
                    5,
                )
            }
            None => ApiError::not_found_path(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unhandled_requests_are_503_until_every_signal_completes_then_404() {
        let mut signals = MuxCompleteSignals::default();
        assert_eq!(
            signals.unhandled().code(),
            404,
            "no signal: nothing to wait for"
        );
        let first = signals.register("CRDInformerHasNotSynced");
        let second = signals.register("Other");
        let early = signals.unhandled();
        assert_eq!(early.code(), 503);
        assert_eq!(early.retry_after_seconds(), Some(5));
        assert_eq!(
            early.message(),
            "the request has been made before all known HTTP paths have been installed, please try again"
        );
        first.complete();
        assert_eq!(signals.pending().map(|s| s.name()), Some("Other"));
        assert_eq!(signals.unhandled().code(), 503);
        second.complete();
        second.complete();
        let late = signals.unhandled();
        assert_eq!(late.code(), 404);
        assert_eq!(
            late.message(),
            "the server could not find the requested resource"
        );
    }
}
