//! The secure listener: accepts TCP connections (at most [`ServingOptions::max_open_connections`]
//! at once; at the bound a connection without an authenticated user, or of the user holding most, makes room, through
//! `eviction`), completes TLS, records the client's certificate chain on each request and serves
//! HTTP/1.1 or h2 with hyper, with kube-apiserver's limits: a header read timeout, an idle
//! timeout, 1 MiB of request headers (request-targets up to that too, through `long_target`
//! for HTTP/1.1 and `long_target_h2` for h2), bounded concurrent h2 streams; stops accepting when the lifecycle says so
//! and lets open connections finish.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::lifecycle::LifecycleSignals;
use super::tls::TlsReloader;
use crate::authn::PeerConnection;
use crate::filters::timeout::ResponseDeadline;

mod activity;
mod eviction;
mod hpack;
mod long_target;
mod long_target_h2;

use self::activity::{Activity, ActivityIo, Counter, TrackedBody};
use self::eviction::Evictable;
use self::long_target::{Handoff, Http1Targets};
use self::long_target_h2::Http2Targets;

/// How long a TLS handshake may take. kube-apiserver's Go server has no bound of its own
/// (its header read timeout starts after the handshake); 10 s is Go's client-side
/// `TLSHandshakeTimeout`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connections may take to close once no request is in flight (h2 waits for the
/// client to acknowledge GOAWAY; an unresponsive client must not hold the process).
const CONNECTION_CLOSE_GRACE: Duration = Duration::from_secs(5);
/// The largest request head: kube-apiserver's `MaxHeaderBytes: 1 << 20`. It bounds HTTP/1.1
/// request lines with headers and h2 header lists (`SETTINGS_MAX_HEADER_LIST_SIZE`).
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// The h2 concurrent stream limit when `--http2-max-streams-per-connection` is 0
/// (kube-apiserver's default, matching Go's client `initialMaxConcurrentStreams`).
pub const DEFAULT_HTTP2_MAX_STREAMS: u32 = 100;
/// kube-apiserver's `ReadHeaderTimeout`: a request head must arrive within 32 s of its first
/// byte (of the connection, for the first request).
pub const DEFAULT_READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// kube-apiserver's `IdleTimeout`: a connection without a request in progress is closed after
/// 90 s (HTTP/1.1 keep-alive and h2 alike).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// kube-apiserver's TCP keep-alive period (`defaultKeepAlivePeriod`), which finds dead peers.
const TCP_KEEPALIVE: Duration = Duration::from_secs(180);
/// How many connections may be open at once by default. Go's server has no bound (the file
/// descriptor limit is the bound); this one keeps descriptors for storage and files.
pub const DEFAULT_MAX_OPEN_CONNECTIONS: usize = 10_000;

/// How the secure port treats connections.
#[derive(Clone, Debug)]
pub struct ServingOptions {
    /// `--http2-max-streams-per-connection` (0: [`DEFAULT_HTTP2_MAX_STREAMS`]).
    pub http2_max_streams_per_connection: u32,
    /// How long an HTTP/1.1 request head may take ([`DEFAULT_READ_HEADER_TIMEOUT`]).
    pub read_header_timeout: Duration,
    /// How long a connection may stay without a request ([`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
    /// The most connections open at once (0: unbounded). At the bound the oldest connection on
    /// which no request was authenticated as a user is closed for a new one, else the oldest of
    /// the user holding the most (see `eviction`); when there is none, new connections wait in
    /// the listen backlog.
    pub max_open_connections: usize,
}

impl Default for ServingOptions {
    fn default() -> Self {
        Self {
            http2_max_streams_per_connection: 0,
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_open_connections: DEFAULT_MAX_OPEN_CONNECTIONS,
        }
    }
}

/// Whether a new connection starts like a plain HTTP/1.x request rather than a TLS
/// handshake (Go's `tlsRecordHeaderLooksLikeHTTP`: the first five bytes).
async fn looks_like_http(tcp: &tokio::net::TcpStream) -> bool {
    let mut first = [0u8; 5];
    match tcp.peek(&mut first).await {
        Ok(5) => [&b"GET /"[..], b"HEAD ", b"POST ", b"PUT /", b"OPTIO"].contains(&&first[..]),
        _ => false,
    }
}

/// Answers a plain HTTP request on the TLS port as Go's server does, then closes.
async fn refuse_plain_http(mut tcp: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let answer =
        b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
    let _ = tcp.write_all(answer).await;
    let _ = tcp.shutdown().await;
}

fn builder(opts: &ServingOptions) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        // The header read timeout is enforced per connection by `Activity`, from the first byte
        // of a request as Go does, not from the end of the previous response.
        .header_read_timeout(None)
        // Go allows `MaxHeaderBytes` plus 4096 bytes of slack for the request head; hyper's
        // head limit is its read buffer.
        .max_buf_size(MAX_HEADER_BYTES + 4096);
    let streams = match opts.http2_max_streams_per_connection {
        0 => DEFAULT_HTTP2_MAX_STREAMS,
        n => n,
    };
    // hyper's reset-flood limits (`max_pending_accept_reset_streams`,
    // `max_local_error_reset_streams`) stay at their defaults: they are the rapid-reset guard.
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        .max_header_list_size(MAX_HEADER_BYTES as u32)
        // What the h2 long request-target adapter follows the client's frames with.
        .max_frame_size(long_target_h2::MAX_FRAME_SIZE);
    builder
}

/// A connection's byte stream, read through the long request-target adapter of its protocol
/// and written straight to the stream underneath.
enum Targets<T> {
    Http1(Http1Targets<T>),
    Http2(Http2Targets<T>),
}

impl<T> Targets<T> {
    fn inner_mut(&mut self) -> &mut T {
        match self {
            Targets::Http1(io) => io.inner_mut(),
            Targets::Http2(io) => io.inner_mut(),
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for Targets<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Targets::Http1(io) => Pin::new(io).poll_read(cx, buf),
            Targets::Http2(io) => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Targets<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(self.get_mut().inner_mut()).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(self.get_mut().inner_mut()).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(self.get_mut().inner_mut()).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(self.get_mut().inner_mut()).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Targets::Http1(io) => io.inner().is_write_vectored(),
            Targets::Http2(io) => io.inner().is_write_vectored(),
        }
    }
}

fn set_keepalive(tcp: &TcpStream) {
    let params = socket2::TcpKeepalive::new()
        .with_time(TCP_KEEPALIVE)
        .with_interval(TCP_KEEPALIVE);
    if let Err(e) = socket2::SockRef::from(tcp).set_tcp_keepalive(&params) {
        tracing::debug!(error = %e, "setting TCP keep-alive failed");
    }
}

/// Serves `app` on `listener` until `signals.not_accepting_new_requests` fires; then closes the
/// listener (`listener_stopped`), waits up to `drain_timeout` for in-flight requests
/// (`in_flight_drained`) and gives open connections a short grace to close.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<TlsReloader>,
    app: super::App,
    signals: LifecycleSignals,
    drain_timeout: Duration,
    opts: ServingOptions,
) {
    let builder = Arc::new(builder(&opts));
    let in_flight = Counter::default();
    let open = Counter::default();
    let limit = Arc::new(Semaphore::new(match opts.max_open_connections {
        0 => Semaphore::MAX_PERMITS,
        n => n.min(Semaphore::MAX_PERMITS),
    }));
    let evictable = Arc::new(Evictable::default());
    let mut at_limit = false;
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
        // A connection slot: at the bound, the oldest connection whose client has not
        // authenticated makes room; when every open connection's client has, the new one waits
        // (and others behind it in the listen backlog) while the open ones are served.
        let permit = match Arc::clone(&limit).try_acquire_owned() {
            Ok(p) => {
                at_limit = false;
                p
            }
            Err(_) => {
                let evicted = evictable.evict_oldest();
                if !evicted && !at_limit {
                    tracing::warn!(
                        max = opts.max_open_connections,
                        "the open connection limit is reached by connections no other may displace; new connections wait"
                    );
                    at_limit = true;
                }
                tokio::select! {
                    p = Arc::clone(&limit).acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                    () = signals.not_accepting_new_requests.wait() => break,
                }
            }
        };
        let registration = evictable.register();
        let _ = tcp.set_nodelay(true);
        set_keepalive(&tcp);
        let local_ip = tcp.local_addr().ok().map(|a| a.ip());
        let config = match tls.config_for(local_ip) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "building the TLS configuration failed");
                continue;
            }
        };
        let verifier = tls.client_verifier();
        let acceptor = TlsAcceptor::from(config);
        let app = app.clone();
        let builder = Arc::clone(&builder);
        let in_flight = in_flight.clone();
        let open_guard = open.enter();
        let signals = signals.clone();
        let opts = opts.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _open = open_guard;
            let registration = registration;
            let handshake = async {
                if looks_like_http(&tcp).await {
                    refuse_plain_http(tcp).await;
                    return None;
                }
                Some(acceptor.accept(tcp).await)
            };
            let handshake = async {
                tokio::select! {
                    r = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake) => Some(r),
                    () = registration.evicted() => None,
                }
            };
            let Some(handshaken) = handshake.await else {
                tracing::debug!(%peer, "closed a connection in its handshake to make room");
                return;
            };
            let tls = match handshaken {
                Ok(None) => {
                    tracing::debug!(%peer, "refused a plain HTTP request");
                    return;
                }
                Ok(Some(Ok(s))) => s,
                Ok(Some(Err(e))) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let session = tls.get_ref().1;
            let h2 = session.alpn_protocol() == Some(b"h2");
            let chain: Vec<_> = session
                .peer_certificates()
                .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
                .unwrap_or_default();
            let connection = PeerConnection::verified_by(chain, verifier);
            registration.handshaken(&connection);
            let activity = Arc::new(Activity::new(
                h2,
                opts.read_header_timeout,
                opts.idle_timeout,
            ));
            let tracked = Arc::clone(&activity);
            // Request-targets longer than a URI reach the service beside the request (HTTP/1.1)
            // or in the adapter's header (h2).
            let handoff = Arc::new(Handoff::default());
            let targets = Arc::clone(&handoff);
            let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let mut req = req.map(Body::new);
                let long = if h2 {
                    long_target_h2::take(&mut req)
                } else {
                    targets.next_request()
                };
                if let Some(target) = long {
                    req.extensions_mut().insert(target);
                }
                req.extensions_mut().insert(connection.clone());
                req.extensions_mut().insert(crate::audit::PeerAddr(peer));
                // The request keeps the connection busy until its response body is done (a
                // watch stays active while it streams).
                let busy = tracked.enter();
                let guard = in_flight.enter();
                let app = app.clone();
                async move {
                    let resp = app.oneshot(req).await;
                    drop(guard);
                    resp.map(|r| {
                        let mut busy = busy;
                        if let Some(due) = r.extensions().get::<ResponseDeadline>() {
                            busy.due_by(due.0);
                        }
                        r.map(|body| TrackedBody::new(body, busy))
                    })
                }
            });
            let io = ActivityIo::new(tls, Arc::clone(&activity));
            let io = if h2 {
                Targets::Http2(Http2Targets::new(io))
            } else {
                Targets::Http1(Http1Targets::new(io, handoff))
            };
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .into_owned();
            tokio::pin!(conn);
            let mut closing: Option<tokio::time::Instant> = None;
            let result = loop {
                let grace = async {
                    match closing {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    r = conn.as_mut() => break r,
                    // Once in-flight requests are drained, connections close gracefully.
                    () = signals.in_flight_drained.wait(), if closing.is_none() => {
                        conn.as_mut().graceful_shutdown();
                        closing = Some(tokio::time::Instant::now() + CONNECTION_CLOSE_GRACE);
                    }
                    () = activity.expired(), if closing.is_none() => {
                        tracing::debug!(%peer, h2, "closing a connection that timed out (idle, or a response not read in time)");
                        if !h2 {
                            // HTTP/1.1 has nothing to say to a client that is silent or has
                            // sent a partial request head: the connection is closed (as Go's).
                            break Ok(());
                        }
                        // h2 says goodbye with GOAWAY, and closes if the client does not.
                        conn.as_mut().graceful_shutdown();
                        closing = Some(tokio::time::Instant::now() + CONNECTION_CLOSE_GRACE);
                    }
                    () = grace => break Ok(()),
                    () = registration.evicted() => {
                        tracing::debug!(%peer, "closed a connection without an authenticated user to make room");
                        break Ok(());
                    }
                }
            };
            if let Err(e) = result {
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
    if tokio::time::timeout(CONNECTION_CLOSE_GRACE, open.drained())
        .await
        .is_err()
    {
        tracing::info!("closing connections that did not finish within {CONNECTION_CLOSE_GRACE:?}");
    }
}
