//! An aggregated API server stand-in for the aggregator tests: HTTPS on 127.0.0.1 with a
//! serving certificate for `api.wardle.svc` (from a CA of its own, kept across restarts),
//! requiring a client certificate of the front-proxy CA; it records every request's path and
//! headers, echoes what it was asked, streams a watch whose second event waits for the test,
//! and accepts protocol upgrades on paths ending in `/exec` (answering `101` and echoing every
//! byte) while refusing them with `403` on paths ending in `/denied`. A query with
//! `stall=headers` is answered after [`STALL`]; one with `stall=body` gets part of its answer at
//! once and the rest after [`STALL`].

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

    /// Serves `cert` (PEM, the leaf first) with `key`; `ca_pem` is the `caBundle` given to the
    /// APIService.
    pub fn from_pem(ca_pem: &str, cert: &str, key: &str) -> Identity {
        Identity {
            ca_pem: ca_pem.to_string(),
            cert: cert.to_string(),
            key: key.to_string(),
        }
    }
}

/// How long a `stall=` request waits (see the module).
pub const STALL: std::time::Duration = std::time::Duration::from_secs(8);

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
                        .serve_connection_with_upgrades(TokioIo::new(tls), service)
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

/// Whether a request asks for a protocol upgrade.
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(http::header::UPGRADE)
        && headers
            .get_all(http::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// Accepts an upgrade: `101` with the asked protocol, then every byte read is written back
/// until the other side closes.
fn accept_upgrade(req: &mut Request<Incoming>) -> Response<Body> {
    let protocol = req
        .headers()
        .get(http::header::UPGRADE)
        .cloned()
        .unwrap_or_else(|| http::HeaderValue::from_static("SPDY/3.1"));
    let upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else {
            return;
        };
        let (mut read, mut write) = tokio::io::split(TokioIo::new(upgraded));
        let _ = tokio::io::copy(&mut read, &mut write).await;
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut write).await;
    });
    Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", protocol)
        .header("x-stream-protocol-version", "v4.channel.k8s.io")
        .body(http_body_util::Empty::new().boxed())
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn answer(
    mut req: Request<Incoming>,
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
    let bare = req.uri().path().to_string();
    if is_upgrade(req.headers()) && bare.ends_with("/exec") {
        return Ok(accept_upgrade(&mut req));
    }
    if is_upgrade(req.headers()) && bare.ends_with("/denied") {
        return Ok(Response::builder()
            .status(403)
            .header("content-type", "text/plain")
            .body(
                http_body_util::Full::new(Bytes::from_static(b"upgrade denied by the backend"))
                    .boxed(),
            )
            .unwrap_or_else(|e| panic!("{e}")));
    }
    if path.contains("stall=headers") {
        tokio::time::sleep(STALL).await;
    }
    if path.contains("stall=body") {
        let stream = futures::stream::unfold(0, |step| async move {
            let chunk: &'static [u8] = match step {
                0 => b"{\"kind\":",
                1 => {
                    tokio::time::sleep(STALL).await;
                    b"\"APIResourceList\"}"
                }
                _ => return None,
            };
            Some((
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(chunk))),
                step + 1,
            ))
        });
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .body(StreamBody::new(stream).boxed())
            .unwrap_or_else(|e| panic!("{e}")));
    }
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

/// Registers a stand-in on `port` with the server: the namespace (when new), an `ExternalName`
/// Service `service` reaching `localhost` (Endpoints refuse loopback), and the APIService
/// `<version>.<group>` for that Service and port with `ca_pem` as its `caBundle`.
pub async fn register(
    server: &crate::common::Server,
    namespace: &str,
    service: &str,
    group: &str,
    version: &str,
    port: u16,
    ca_pem: &str,
) {
    use base64::Engine as _;
    use serde_json::json;
    let admin = server.admin();
    let post = |path: &str, body: serde_json::Value, conflict_ok: bool| {
        let (admin, url) = (admin.clone(), server.url(path));
        async move {
            let (code, answer, _) =
                crate::common::send_json(&admin, reqwest::Method::POST, url.clone(), Some(body))
                    .await;
            assert!(
                code == 201 || code == 200 || conflict_ok && code == 409,
                "POST {url}: {code} {answer}"
            );
        }
    };
    post(
        "/api/v1/namespaces",
        json!({"metadata": {"name": namespace}}),
        true,
    )
    .await;
    post(
        &format!("/api/v1/namespaces/{namespace}/services"),
        json!({"metadata": {"name": service},
               "spec": {"type": "ExternalName", "externalName": "localhost"}}),
        false,
    )
    .await;
    post(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({"metadata": {"name": format!("{version}.{group}")},
               "spec": {"group": group, "version": version,
                        "groupPriorityMinimum": 2000, "versionPriority": 200,
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
                        "service": {"namespace": namespace, "name": service, "port": port}}}),
        false,
    )
    .await;
}

/// The `Available` condition of the APIService `name`: (status, reason, message), once the
/// availability controller set it.
pub async fn available(
    server: &crate::common::Server,
    name: &str,
) -> Option<(String, String, String)> {
    let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}");
    let (code, body, _) = crate::common::send_json(
        &server.admin(),
        reqwest::Method::GET,
        server.url(&path),
        None,
    )
    .await;
    if code != 200 {
        return None;
    }
    let c = body["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?;
    let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
    Some((text("status"), text("reason"), text("message")))
}
