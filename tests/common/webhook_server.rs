//! An HTTPS server on loopback for the webhook tests (admission and conversion webhooks): a CA
//! of its own and a certificate for `127.0.0.1` and `localhost`, HTTP/2 and HTTP/1.1 offered as
//! Go webhook servers offer them; every request's path and JSON body, and its HTTP version, are
//! recorded, and it is answered by a function of the path and the body.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::common::tls::TestCa;

/// What the server saw: each request's path and JSON body (`null` if it was not JSON), and
/// each request's HTTP version.
#[derive(Default)]
pub struct Seen(Mutex<Vec<(String, Value)>>, Mutex<Vec<hyper::Version>>);

impl Seen {
    /// The bodies of the requests to `path`, in order.
    pub fn on(&self, path: &str) -> Vec<Value> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The number of requests seen.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Every request seen since the last call (path and body), forgetting them.
    pub fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The HTTP versions of the requests.
    pub fn versions(&self) -> Vec<hyper::Version> {
        self.1.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The answer to one request: the response body for its path and JSON body.
pub type Answer =
    Arc<dyn Fn(String, Value) -> Pin<Box<dyn Future<Output = Vec<u8>> + Send>> + Send + Sync>;

/// A running server: its base URL (`https://127.0.0.1:<port>`), its CA (PEM), and what it saw.
pub struct WebhookServer {
    /// The base URL.
    pub url: String,
    /// The CA that signed its certificate (or the certificate itself), PEM.
    pub ca: String,
    /// The requests it received.
    pub seen: Arc<Seen>,
}

/// Starts a server on the current tokio runtime (it runs as long as the runtime does), its
/// certificate signed by a new CA named `ca_name`.
pub async fn start(ca_name: &str, answer: Answer) -> WebhookServer {
    let ca = TestCa::new(ca_name);
    let (cert, key) = ca.leaf("webhook", None, &["127.0.0.1", "localhost"]);
    start_with_certificate(&cert, &key, &ca.pem, answer).await
}

/// Starts a server serving `cert` (a PEM chain) with `key`; `ca` is what clients should trust
/// (the server's [`WebhookServer::ca`]).
pub async fn start_with_certificate(
    cert: &str,
    key: &str,
    ca: &str,
    answer: Answer,
) -> WebhookServer {
    let certs = rustls_pemfile::certs(&mut cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    let key = rustls_pemfile::private_key(&mut key.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no key"));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("{e}"))
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap_or_else(|e| panic!("{e}"));
    // Offers HTTP/2 as Go webhook servers do; apiary, like kube-apiserver, calls with
    // HTTP/1.1 all the same.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let seen = Arc::new(Seen::default());
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let (seen, answer) = (recorded.clone(), answer.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (seen, answer) = (seen.clone(), answer.clone());
                    async move {
                        let path = req.uri().path().to_string();
                        seen.1
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(req.version());
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let review: Value = body
                            .ok()
                            .and_then(|b| serde_json::from_slice(&b).ok())
                            .unwrap_or(Value::Null);
                        seen.0
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((path.clone(), review.clone()));
                        let out = answer(path, review).await;
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from(out),
                        )))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    WebhookServer {
        url: format!("https://127.0.0.1:{}", addr.port()),
        ca: ca.to_string(),
        seen,
    }
}
