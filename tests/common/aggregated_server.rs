//! An aggregated API server stand-in for the aggregator tests: HTTPS on 127.0.0.1 with a
//! serving certificate for `api.wardle.svc` (from a CA of its own, kept across restarts),
//! requiring a client certificate of the front-proxy CA; it records every request's path and
//! headers, echoes what it was asked, and streams a watch whose second event waits for the
//! test.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::common::tls::TestCa;

/// The serving identity of the stand-in, kept across restarts.
pub struct Identity {
    /// The CA of the serving certificate (PEM): the APIService's `caBundle`.
    pub ca_pem: String,
    cert: String,
    key: String,
}

impl Identity {
    /// A CA and a serving certificate for `api.wardle.svc`.
    pub fn new() -> Identity {
        let ca = TestCa::new("wardle-ca");
        let (cert, key) = ca.leaf("api.wardle.svc", None, &["api.wardle.svc"]);
        Identity {
            ca_pem: ca.pem,
            cert,
            key,
        }
    }
}

/// What the server saw: each request's path (with query) and headers.
pub type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// A running stand-in.
pub struct AggregatedServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The requests it saw.
    pub seen: Seen,
    /// Lets a watch send its second event.
    pub release: Arc<Notify>,
    tasks: JoinSet<()>,
}

impl AggregatedServer {
    /// Starts on `port` (0: any) with `identity`, trusting client certificates of
    /// `client_ca_pem`.
    pub async fn start(port: u16, identity: &Identity, client_ca_pem: &str) -> AggregatedServer {
        let certs = rustls_pemfile::certs(&mut identity.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("{e}"));
        let key = rustls_pemfile::private_key(&mut identity.key.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no key"));
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut client_ca_pem.as_bytes()) {
            roots
                .add(c.unwrap_or_else(|e| panic!("{e}")))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::clone(&provider),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap_or_else(|e| panic!("{e}"))
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .unwrap_or_else(|e| panic!("{e}"));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("bind {port}: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        let seen: Seen = Arc::default();
        let release = Arc::new(Notify::new());
        let mut tasks = JoinSet::new();
        let (s, r) = (Arc::clone(&seen), Arc::clone(&release));
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, seen, release) = (acceptor.clone(), Arc::clone(&s), Arc::clone(&r));
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service =
                        service_fn(move |req| answer(req, Arc::clone(&seen), Arc::clone(&release)));
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        AggregatedServer {
            port,
            seen,
            release,
            tasks,
        }
    }

    /// Stops the server: the listener and every connection close.
    pub fn stop(mut self) -> u16 {
        self.tasks.abort_all();
        self.port
    }

    /// The headers of the last request whose path starts with `prefix`.
    pub fn last(&self, prefix: &str) -> Option<HeaderMap> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .rev()
            .find(|(p, _)| p.starts_with(prefix))
            .map(|(_, h)| h.clone())
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn answer(
    req: Request<Incoming>,
    seen: Seen,
    release: Arc<Notify>,
) -> Result<Response<Body>, Infallible> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    seen.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((path.clone(), req.headers().clone()));
    if path.contains("watch=true") {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        tokio::spawn(async move {
            let _ = tx.send(Bytes::from_static(b"{\"type\":\"ADDED\"}\n")).await;
            release.notified().await;
            let _ = tx
                .send(Bytes::from_static(b"{\"type\":\"MODIFIED\"}\n"))
                .await;
        });
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
        });
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .body(StreamBody::new(stream).boxed())
            .unwrap_or_else(|e| panic!("{e}")));
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = serde_json::json!({"path": path, "body": String::from_utf8_lossy(&body)});
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from(text.to_string())).boxed())
        .unwrap_or_else(|e| panic!("{e}")))
}
