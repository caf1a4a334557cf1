//! The secure port's connections from outside: header read and idle timeouts (HTTP/1.1 and
//! h2), the bound on open connections, long request heads and request-targets over h2 and
//! HTTP/1.1, and a watch with a negative timeout, against the real binary.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::Server;
use common::tls::*;
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Reads until the server closes the connection; returns whether it did within the patience.
async fn closed_by_server(mut s: TlsStream<TcpStream>) -> bool {
    let mut buf = [0u8; 1024];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, read).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_connections_are_closed() {
    let server = Server::start(&["--read-header-timeout=2s", "--idle-connection-timeout=3s"]);
    // A partial request line, then a partial head.
    for partial in [
        "GET /healthz HT",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ",
    ] {
        let mut s = tls_connect(&server, any_version(), "localhost")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        s.write_all(partial.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        s.flush().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(closed_by_server(s).await, "{partial:?} stayed open");
    }
    // Nothing at all.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(closed_by_server(s).await, "a silent connection stayed open");

    // An idle HTTP/1.1 keep-alive connection.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
    assert!(
        tokio::time::timeout(PATIENCE, task).await.is_ok(),
        "an idle keep-alive connection stayed open"
    );

    // An idle h2 connection: GOAWAY, then closed.
    let h2 = client_config(rustls::ALL_VERSIONS, None, &[b"h2"]);
    let s = tls_connect(&server, h2, "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(s))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = http::Request::get("https://127.0.0.1/healthz")
        .body(Empty::<Bytes>::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = send
        .send_request(req)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    drop(resp);
    assert!(
        tokio::time::timeout(PATIENCE, task).await.is_ok(),
        "an idle h2 connection stayed open"
    );

    // A watch is a request in progress: over HTTP/1.1 (where a timed-out connection is closed
    // outright) it outlives the idle and header timeouts and ends at its own timeout, with a
    // clean end of its body.
    let resp = admin_client(&server, true)
        .get(server.url("/api/v1/namespaces?watch=true&timeoutSeconds=10"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.version(), reqwest::Version::HTTP_11);
    assert_eq!(resp.status().as_u16(), 200);
    let body = resp
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("the watch was cut: {e}"));
    assert!(
        String::from_utf8_lossy(&body).contains("\"ADDED\""),
        "{body:?}"
    );
}

/// Opens a connection to `server` with `config` and sends one `/healthz` (authenticated when
/// `config` presents a certificate), keeping the connection.
async fn held_connection(server: &Server, config: Arc<rustls::ClientConfig>) -> Held {
    // The readiness check's connection may still be closing: a slot frees up then.
    let s = tokio::time::timeout(PATIENCE, tls_connect(server, config, "localhost"))
        .await
        .unwrap_or_else(|_| panic!("no connection slot"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
    (send, task)
}

type Held = (
    hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    tokio::task::JoinHandle<()>,
);

/// Starts a TLS handshake with `config` in the background.
fn connect_later(
    server: &Server,
    config: Arc<rustls::ClientConfig>,
) -> tokio::task::JoinHandle<std::io::Result<TlsStream<TcpStream>>> {
    let server_addr = addr(server);
    tokio::spawn(async move {
        let tcp = TcpStream::connect(server_addr).await?;
        tokio_rustls::TlsConnector::from(config)
            .connect(
                ServerName::try_from("localhost").unwrap_or_else(|e| panic!("{e}")),
                tcp,
            )
            .await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_bound_wait_while_authenticated_clients_hold_them() {
    let server = Server::start(&["--max-open-connections=3"]);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(held_connection(&server, common::raw::admin_http1(&server)).await);
    }
    // The fourth is not accepted while three authenticated clients hold theirs...
    let fourth = connect_later(&server, any_version());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !fourth.is_finished(),
        "a connection over the bound was accepted"
    );
    // ...while the open ones are answered.
    for (send, _) in &mut held {
        assert_eq!(get1(send, "/healthz").await.0, 200);
    }
    // Once one closes, the waiting one is served.
    let (send, task) = held.remove(0);
    drop(send);
    let _ = task.await;
    let s = tokio::time::timeout(PATIENCE, fourth)
        .await
        .unwrap_or_else(|_| panic!("the waiting connection was not accepted"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, _task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_connections_at_the_bound_make_room_for_new_ones() {
    let server = Server::start(&["--max-open-connections=4"]);
    // One authenticated client, then anonymous ones up to the bound: one idle after a request,
    // one silent in its TLS handshake... (the readiness check's connection may hold a slot
    // briefly).
    let mut admin = held_connection(&server, common::raw::admin_http1(&server)).await;
    let (_oldest_send, oldest_task) = held_connection(&server, any_version()).await;
    let silent = TcpStream::connect(addr(&server))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let _newest = held_connection(&server, any_version()).await;
    // ...so a new connection closes the oldest anonymous one, and is served at once.
    let started = std::time::Instant::now();
    let (mut send, _task) = held_connection(&server, common::raw::admin_http1(&server)).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    tokio::time::timeout(PATIENCE, oldest_task)
        .await
        .unwrap_or_else(|_| panic!("the oldest anonymous connection stayed open"))
        .unwrap_or_else(|e| panic!("{e}"));
    // The next goes to the silent handshake, and the authenticated ones stay.
    let (_s2, _t2) = held_connection(&server, any_version()).await;
    let mut buf = [0u8; 1];
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut silent = silent;
        silent.read(&mut buf).await
    })
    .await
    .unwrap_or_else(|_| panic!("the silent connection stayed open"));
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    assert_eq!(get1(&mut admin.0, "/healthz").await.0, 200);
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
    // Anonymous clients reopening connections now only displace each other.
    for _ in 0..5 {
        let _ = held_connection(&server, any_version()).await;
    }
    assert_eq!(get1(&mut admin.0, "/healthz").await.0, 200);
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_holding_the_bound_makes_room_for_others() {
    let server = Server::start(&["--max-open-connections=4"]);
    let (cert, key) = server.user_cert("mallory", "");
    let mallory = common::raw::http1_identity(cert.as_bytes(), key.as_bytes());
    // A user without any grant holds every slot with authenticated connections...
    let (_first, first_task) = held_connection(&server, Arc::clone(&mallory)).await;
    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(held_connection(&server, Arc::clone(&mallory)).await);
    }
    // ...yet the admin is served at once: the oldest of the user holding the most goes.
    let started = std::time::Instant::now();
    let (mut admin, _admin_task) =
        held_connection(&server, common::raw::admin_http1(&server)).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    tokio::time::timeout(PATIENCE, first_task)
        .await
        .unwrap_or_else(|_| panic!("mallory's oldest connection stayed open"))
        .unwrap_or_else(|e| panic!("{e}"));
    // Mallory reconnecting displaces only her own connections.
    for _ in 0..4 {
        rest.push(held_connection(&server, Arc::clone(&mallory)).await);
    }
    assert_eq!(get1(&mut admin, "/healthz").await.0, 200);
}

/// A set-based label selector of about `len` bytes once URL-encoded.
fn long_selector(len: usize) -> String {
    let mut values = Vec::new();
    let mut encoded = "app+in+%28%29".len();
    let mut i = 0;
    while encoded < len {
        let v = format!("v{i:05}");
        encoded += v.len() + 3;
        values.push(v);
        i += 1;
    }
    format!("app in ({})", values.join(","))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_label_selectors_over_h2_and_http11() {
    let server = Server::start(&[]);
    for (http1_only, version) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let client = admin_client(&server, http1_only);
        for len in [20_000, 60_000] {
            let selector = long_selector(len);
            let resp = client
                .get(server.url("/api/v1/configmaps"))
                .query(&[("labelSelector", selector.as_str())])
                .send()
                .await
                .unwrap_or_else(|e| panic!("{version:?} {len}: {e}"));
            assert_eq!(resp.version(), version);
            let status = resp.status().as_u16();
            let body: serde_json::Value = resp
                .json()
                .await
                .unwrap_or_else(|e| panic!("{version:?} {len}: {e}"));
            assert_eq!(status, 200, "{version:?} {len}: {body}");
            assert_eq!(body["kind"], "ConfigMapList", "{version:?} {len}");
        }
        // Headers of most of a MiB are read too.
        let resp = client
            .get(server.url("/api/v1/namespaces/default"))
            .header("x-padding", "p".repeat(900 * 1024))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{version:?} padding: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{version:?} padding");
    }
    // kubectl, over h2: selectors beyond what a URI holds select too.
    let created = server
        .admin()
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .json(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "selected", "labels": {"app": "v00007"}},
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);
    for len in [20_000, 112_000] {
        let selector = long_selector(len);
        let out = server.kubectl(
            Path::new("kubectl"),
            &["get", "configmaps", "-A", "-l", &selector, "-o", "name"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{len}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "configmap/selected\n",
            "{len}"
        );
    }
}

async fn write_frame(s: &mut TlsStream<TcpStream>, (kind, flags, stream, payload): H2Frame) {
    let mut out = Vec::with_capacity(9 + payload.len());
    h2_frame(&mut out, kind, flags, stream, &payload);
    s.write_all(&out).await.unwrap_or_else(|e| panic!("{e}"));
}

/// A raw h2 connection (the `http` crate, and so every Rust client, cannot send a `:path` over
/// 64 KiB; Go's can).
struct RawH2 {
    s: TlsStream<TcpStream>,
    encoder: loona_hpack::Encoder<'static>,
    decoder: loona_hpack::Decoder<'static>,
    next: u32,
}

impl RawH2 {
    async fn connect(server: &Server) -> RawH2 {
        let config = client_config(rustls::ALL_VERSIONS, None, &[b"h2"]);
        let mut s = tls_connect(server, config, "localhost")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        write_frame(&mut s, (4, 0, 0, Vec::new())).await;
        RawH2 {
            s,
            encoder: loona_hpack::Encoder::new(),
            decoder: loona_hpack::Decoder::new(),
            next: 1,
        }
    }

    /// GETs `path` with `extra` headers: the status and the body.
    async fn get(&mut self, path: &str, extra: &[(&str, &str)]) -> (String, String) {
        let mut fields = vec![
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "localhost"),
            (":path", path),
            ("accept", "application/json"),
        ];
        fields.extend_from_slice(extra);
        let block = self
            .encoder
            .encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        let stream = self.next;
        self.next += 2;
        let mut pieces = block.chunks(16_384).peekable();
        let mut kind = 1; // HEADERS, then CONTINUATION
        while let Some(piece) = pieces.next() {
            // END_STREAM on HEADERS, END_HEADERS on the last.
            let flags = if kind == 1 { 1 } else { 0 } | if pieces.peek().is_none() { 4 } else { 0 };
            write_frame(&mut self.s, (kind, flags, stream, piece.to_vec())).await;
            kind = 9;
        }
        self.s.flush().await.unwrap_or_else(|e| panic!("{e}"));
        let (mut status, mut body) = (String::new(), Vec::new());
        loop {
            let (kind, flags, on, payload) = read_h2_frame(&mut self.s).await;
            match kind {
                // SETTINGS: acknowledged.
                4 if flags & 1 == 0 => write_frame(&mut self.s, (4, 1, 0, Vec::new())).await,
                1 if on == stream => {
                    assert!(flags & 4 != 0, "response headers in one frame");
                    for (n, v) in self
                        .decoder
                        .decode(&payload)
                        .unwrap_or_else(|e| panic!("{e}"))
                    {
                        if n == b":status" {
                            status = String::from_utf8_lossy(&v).into_owned();
                        }
                    }
                }
                0 if on == stream => body.extend(payload),
                3 | 7 => panic!("stream reset or connection closed: {kind} {payload:?}"),
                _ => {}
            }
            if on == stream && (kind == 0 || kind == 1) && flags & 1 != 0 {
                return (status, String::from_utf8_lossy(&body).into_owned());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_paths_longer_than_a_uri_are_served_and_the_connection_goes_on() {
    let server = Server::start(&[]);
    let mut h2 = RawH2::connect(&server).await;
    let selector = long_selector(100_000).replace(' ', "+");
    for _ in 0..2 {
        // Anonymous: the full target reached authorization.
        let (status, body) = h2
            .get(&format!("/api/v1/configmaps?labelSelector={selector}"), &[])
            .await;
        assert_eq!(status, "403", "{body}");
        assert!(
            body.contains(r#"cannot list resource \"configmaps\""#),
            "{body}"
        );
        let (status, body) = h2.get("/healthz", &[]).await;
        assert_eq!((status.as_str(), body.as_str()), ("200", "ok"));
    }
    // The adapter's internal header means nothing when a client sends it: the request is
    // for the internal path itself (anonymous may not get it).
    let (status, body) = h2
        .get(
            "/.apiary/long-request-target",
            &[("apiary-long-request-target", "/healthz")],
        )
        .await;
    assert_eq!(status, "403", "{body}");
    assert!(
        body.contains(r#"cannot get path \"/.apiary/long-request-target\""#),
        "{body}"
    );
    let (status, _) = h2.get("/healthz", &[]).await;
    assert_eq!(status, "200");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_negative_timeout_ends_at_once() {
    let server = Server::start(&[]);
    let admin = server.admin();
    for path in [
        "/api/v1/namespaces?watch=true&timeoutSeconds=-1",
        "/api/v1/watch/namespaces?timeoutSeconds=-5",
    ] {
        let resp = admin
            .get(server.url(path))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let body = resp
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{path}: the watch did not end: {e}"));
        assert!(body.is_empty(), "{path}: {body:?}");
    }
}

/// The h2 settings the server announces first: (identifier, value) pairs.
async fn h2_server_settings(server: &Server) -> Vec<(u16, u32)> {
    // The client preface and an empty SETTINGS frame.
    let RawH2 { mut s, .. } = RawH2::connect(server).await;
    s.flush().await.unwrap_or_else(|e| panic!("{e}"));
    loop {
        // SETTINGS without ACK.
        if let (4, flags, _, payload) = read_h2_frame(&mut s).await
            && flags & 1 == 0
        {
            return payload
                .chunks_exact(6)
                .map(|c| {
                    (
                        u16::from_be_bytes([c[0], c[1]]),
                        u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
                    )
                })
                .collect();
        }
    }
}

const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_settings_announce_the_limits() {
    for (args, streams) in [
        (vec![], 100),
        (vec!["--http2-max-streams-per-connection=7"], 7),
        (vec!["--http2-max-streams-per-connection=0"], 100),
    ] {
        let server = Server::start(&args);
        let settings = h2_server_settings(&server).await;
        let value = |id| settings.iter().find(|(i, _)| *i == id).map(|(_, v)| *v);
        assert_eq!(
            value(SETTINGS_MAX_CONCURRENT_STREAMS),
            Some(streams),
            "{args:?}: {settings:?}"
        );
        assert_eq!(
            value(SETTINGS_MAX_HEADER_LIST_SIZE),
            Some(1 << 20),
            "{args:?}: {settings:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_request_is_told_to_use_https() {
    let server = Server::start(&[]);
    for request in [
        "GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "POST /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}",
    ] {
        let mut tcp = TcpStream::connect(addr(&server))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        tcp.write_all(request.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("the connection was not closed"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            String::from_utf8_lossy(&answer),
            "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
            "{request:?}"
        );
    }
    // TLS still works on the same port.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, _task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
}
