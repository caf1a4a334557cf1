//! An aggregated API server stand-in for the aggregator's tests: HTTPS on loopback with a
//! serving certificate for `api.wardle.svc` from a CA of its own, requiring a client
//! certificate from a front-proxy CA; it records every request's path and headers, answers
//! discovery, and streams a watch whose second event waits for the test.

#![allow(dead_code)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// A CA for the tests' certificates.
pub struct TestCa {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    /// A new self-signed CA named `cn`.
    pub fn new(cn: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf named `cn` for `sans`: (cert, key), PEM.
    pub fn leaf(&self, cn: &str, sans: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// What the backend saw: each request's path (with query) and headers.
pub type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// A running backend.
pub struct Backend {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The CA of its serving certificate (PEM).
    pub ca_pem: String,
    /// The requests it saw.
    pub seen: Seen,
    /// Lets the watch send its second event.
    pub release: Arc<Notify>,
    tasks: JoinSet<()>,
}

impl Backend {
    /// Starts a backend on `port` (0: any) that trusts client certificates of `client_ca`.
    pub async fn start(port: u16, client_ca: &TestCa) -> Backend {
        let ca = TestCa::new("wardle-ca");
        let (cert, key) = ca.leaf("api.wardle.svc", &["api.wardle.svc"]);
        let certs = rustls_pemfile::certs(&mut cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pemfile::private_key(&mut key.as_bytes())
            .unwrap()
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut client_ca.pem.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Seen = Arc::default();
        let release = Arc::new(Notify::new());
        let mut tasks = JoinSet::new();
        let (s, r) = (seen.clone(), release.clone());
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, seen, release) = (acceptor.clone(), s.clone(), r.clone());
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req| answer(req, seen.clone(), release.clone()));
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Backend {
            port,
            ca_pem: ca.pem,
            seen,
            release,
            tasks,
        }
    }

    /// Stops the backend: the listener and every connection close.
    pub fn stop(mut self) -> u16 {
        self.tasks.abort_all();
        self.port
    }

    /// The headers of the last request to a path starting with `prefix`.
    pub fn last(&self, prefix: &str) -> Option<HeaderMap> {
        self.seen
            .lock()
            .unwrap()
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
        .unwrap()
        .push((path.clone(), req.headers().clone()));
    if path.contains("watch=true") {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
        tokio::spawn(async move {
            let _ = tx
                .send(Ok(Frame::data(Bytes::from_static(
                    b"{\"type\":\"ADDED\"}\n",
                ))))
                .await;
            release.notified().await;
            let _ = tx
                .send(Ok(Frame::data(Bytes::from_static(
                    b"{\"type\":\"MODIFIED\"}\n",
                ))))
                .await;
        });
        let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .body(StreamBody::new(stream).boxed())
            .unwrap());
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = format!(
        "{{\"path\":{path:?},\"body\":{:?}}}",
        String::from_utf8_lossy(&body)
    );
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from(text)).boxed())
        .unwrap())
}
