//! The secure listener: accepts TCP connections, completes TLS, records the client's certificate
//! chain on each request and serves HTTP/1.1 or h2 with hyper; stops accepting when the
//! lifecycle says so and lets open connections finish.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::lifecycle::LifecycleSignals;
use crate::authn::PeerCertificates;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connections may take to close once no request is in flight (h2 waits for the
/// client to acknowledge GOAWAY; an unresponsive client must not hold the process).
const CONNECTION_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Counts requests whose handler has not answered yet.
#[derive(Clone, Default)]
struct InFlight(Arc<(std::sync::atomic::AtomicUsize, tokio::sync::Notify)>);

impl InFlight {
    fn enter(&self) -> InFlightGuard {
        self.0.0.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        InFlightGuard(self.clone())
    }

    async fn drained(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.0.0.load(std::sync::atomic::Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

struct InFlightGuard(InFlight);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.0.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
            self.0.0.1.notify_waiters();
        }
    }
}

/// Serves `app` on `listener` until `signals.not_accepting_new_requests` fires; then closes the
/// listener (`listener_stopped`), waits up to `drain_timeout` for in-flight requests
/// (`in_flight_drained`) and gives open connections a short grace to close.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<super::tls::TlsReloader>,
    app: super::App,
    signals: LifecycleSignals,
    drain_timeout: Duration,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(1000);
    let builder = Arc::new(builder);
    let in_flight = InFlight::default();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = signals.not_accepting_new_requests.wait() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (config, verifier) = tls.current_with_verifier();
        let acceptor = TlsAcceptor::from(config);
        let app = app.clone();
        let builder = Arc::clone(&builder);
        let watcher = graceful.watcher();
        let in_flight = in_flight.clone();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let chain: Vec<_> = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
                .unwrap_or_default();
            let verified = verifier.check(&chain);
            let certs = PeerCertificates::checked(chain, verified);
            let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(certs.clone());
                let guard = in_flight.enter();
                let app = app.clone();
                async move {
                    let resp = app.oneshot(req).await;
                    drop(guard);
                    resp
                }
            });
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                .into_owned();
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    signals.listener_stopped.signal();
    if tokio::time::timeout(drain_timeout, in_flight.drained())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within {drain_timeout:?}");
    }
    signals.in_flight_drained.signal();
    if tokio::time::timeout(CONNECTION_CLOSE_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("closing connections that did not finish within {CONNECTION_CLOSE_GRACE:?}");
    }
}
