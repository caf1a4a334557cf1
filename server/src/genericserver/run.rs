//! The last stage of a server: [`PreparedServer::run`] serves until a stop signal, runs the
//! post-start hooks, then shuts down in kube-apiserver's order (shutdown delay, pre-shutdown
//! hooks, listener, drain, audit flush).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::director::DirectorService;
use super::hooks::PostStartHook;
use super::lifecycle::LifecycleSignals;
use super::{GenericServer, serve, tls};
use crate::filters;

/// How often the TLS files are read for changes (kube-apiserver polls every minute and also
/// listens for file notifications; a short poll gives the same promptness).
const TLS_FILE_POLL: Duration = Duration::from_secs(2);

/// The whole request handler: the director inside the filter chain.
pub type App = filters::FilterChain<DirectorService>;

/// A server with its listener bound, ready to run.
pub struct PreparedServer {
    pub(super) server: GenericServer,
    pub(super) app: App,
    pub(super) listener: tokio::net::TcpListener,
    pub(super) local: SocketAddr,
    pub(super) tls: Arc<tls::TlsReloader>,
    pub(super) audit: Option<Arc<crate::audit::Auditor>>,
}

impl PreparedServer {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The lifecycle signals.
    pub fn signals(&self) -> &LifecycleSignals {
        &self.server.signals
    }

    /// Serves until `stop` completes, then shuts down gracefully.
    pub async fn run(self, stop: impl Future<Output = ()> + Send) {
        let PreparedServer {
            server,
            app,
            listener,
            local,
            tls,
            audit,
        } = self;
        let signals = server.signals.clone();
        let watcher = tls.spawn_watcher(TLS_FILE_POLL);
        let registry = Arc::clone(&server.api.registry);
        let compactor = storage::compactor::spawn(
            Arc::clone(&server.config.config.backend),
            server.config.config.compaction_interval,
            Box::new(move |revision| registry.compact_caches(revision)),
        );
        let drain = server.config.config.request_timeout + Duration::from_secs(5);
        let serving = tokio::spawn(serve::serve_tls(
            listener,
            tls,
            app,
            signals.clone(),
            drain,
            server.config.config.serving.clone(),
        ));
        tracing::info!(address = %local, "serving securely");

        let hooks = server.post_start.clone();
        let ready = signals.has_been_ready.clone();
        let hook_task = tokio::spawn(async move {
            futures::future::join_all(hooks.iter().map(PostStartHook::run_until_done)).await;
            ready.signal();
        });

        stop.await;
        signals.shutdown_initiated.signal();
        if !server.config.config.shutdown_delay.is_zero() {
            tracing::info!(delay = ?server.config.config.shutdown_delay, "shutdown delay: still serving, /readyz fails");
            tokio::time::sleep(server.config.config.shutdown_delay).await;
        }
        for hook in &server.pre_shutdown {
            if let Err(e) = (hook.run)().await {
                tracing::warn!(hook = %hook.name, error = %e, "pre-shutdown hook failed");
            }
        }
        signals.not_accepting_new_requests.signal();
        // Watch streams end cleanly (their bodies finish) instead of holding the drain until
        // their own timeouts.
        server.api.end_watches();
        let _ = serving.await;
        hook_task.abort();
        watcher.abort();
        if let Some(compactor) = compactor {
            compactor.abort();
        }
        if let Some(audit) = audit {
            // The events of the last requests are written before the process exits.
            let flushed =
                tokio::task::spawn_blocking(move || audit.flush(Duration::from_secs(10))).await;
            if !matches!(flushed, Ok(true)) {
                tracing::warn!("the audit log was not flushed within 10s");
            }
        }
        tracing::info!("server stopped");
    }
}

/// Completes when SIGTERM or SIGINT arrives.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            futures::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => futures::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = futures::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received SIGINT"),
        () = term => tracing::info!("received SIGTERM"),
    }
}
