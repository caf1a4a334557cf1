//! Post-start and pre-shutdown hooks: named async tasks run after the listener is up and before
//! it stops. Each post-start hook has a `/readyz/poststarthook/<name>` (and livez) check.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The boxed future a hook returns; `Err` carries a message for the logs.
pub type HookFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A hook body.
pub type HookFn = Arc<dyn Fn() -> HookFuture + Send + Sync>;

/// A named post-start hook and whether it completed.
#[derive(Clone)]
pub struct PostStartHook {
    /// The hook's name, such as `apiary-bootstrap-namespaces`.
    pub name: String,
    /// What it runs.
    pub run: HookFn,
    /// Set once it succeeded.
    pub done: Arc<AtomicBool>,
}

impl PostStartHook {
    /// Creates a hook.
    pub fn new(name: impl Into<String>, run: HookFn) -> Self {
        Self {
            name: name.into(),
            run,
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether it has completed successfully.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Runs the hook, retrying failures each second until it succeeds.
    pub async fn run_until_done(&self) {
        loop {
            match (self.run)().await {
                Ok(()) => {
                    self.done.store(true, Ordering::Release);
                    tracing::info!(hook = %self.name, "post-start hook finished");
                    return;
                }
                Err(e) => {
                    tracing::warn!(hook = %self.name, error = %e, "post-start hook failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// A named pre-shutdown hook.
#[derive(Clone)]
pub struct PreShutdownHook {
    /// The hook's name.
    pub name: String,
    /// What it runs.
    pub run: HookFn,
}
