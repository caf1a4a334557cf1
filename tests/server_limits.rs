//! The in-flight limits against the real binary: a non-admin user's mutating requests whose
//! bodies arrive slowly hold their slots, so with 401 of them at once the default
//! `--max-mutating-requests-inflight=200` admits 200 and answers the other 201 with 429, while
//! a watch, reads (a separate pool) and `system:masters` are still served.

mod common;

use std::time::{Duration, Instant};

use common::Server;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_mutating_requests_beyond_the_limit_get_429_while_watches_work() {
    let server = Server::start(&[]);
    let (cert, key) = server.user_cert("joe", "developers");
    // HTTP/1.1, a connection per request: over h2 the server admits at most 100 concurrent
    // streams per connection (`--http2-max-streams-per-connection`), which would hold back the
    // requests this test needs in flight together.
    let joe = server
        .builder()
        .identity(
            reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes())
                .unwrap_or_else(|e| panic!("identity: {e}")),
        )
        .http1_only()
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"));
    let url = server.url("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");

    // 401 creates whose bodies never finish: each holds a mutating slot once admitted.
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut bodies = Vec::new();
    for _ in 0..401 {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
        let _ = tx.send(Ok(b"{\"apiVersion\":".to_vec())).await;
        bodies.push(tx);
        let request = joe
            .post(&url)
            .header("Content-Type", "application/json")
            .body(reqwest::Body::wrap_stream(futures::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|chunk| (chunk, rx)) },
            )));
        let done = done_tx.clone();
        tokio::spawn(async move {
            let outcome = match request.send().await {
                Ok(resp) => {
                    let code = resp.status().as_u16();
                    let retry = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
                    Ok((code, retry, body))
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = done.send(outcome);
        });
    }

    // The 201 requests beyond the limit are answered at once; the others wait for their bodies.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut refused = Vec::new();
    while refused.len() < 201 {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, done_rx.recv()).await {
            Ok(Some(outcome)) => refused.push(outcome),
            _ => panic!(
                "only {} requests were answered before the deadline: {refused:?}",
                refused.len()
            ),
        }
    }
    for outcome in &refused {
        let (code, retry, body) = outcome.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(*code, 429, "{body}");
        assert_eq!(retry.as_deref(), Some("1"));
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(
            body["message"],
            "Too many requests, please try again later."
        );
        assert_eq!(body["details"]["retryAfterSeconds"], 1);
    }

    // Reads use their own pool; a watch and system:masters are exempt.
    let version = joe
        .get(server.url("/version"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(version.status().as_u16(), 200);
    let admin = server.admin();
    let watch = admin
        .get(server.url("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watch.status().as_u16(), 200);
    let _ = watch.bytes().await;
    let created = admin
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .json(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "during-saturation"}
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);
    // Still saturated: one more slow create by joe is refused.
    let one_more = joe
        .post(&url)
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(one_more.status().as_u16(), 429);

    // Once the bodies end, the slots are released and joe is served again.
    drop(bodies);
    let mut answered = 0;
    while answered < 200 {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, done_rx.recv()).await {
            Ok(Some(Ok((code, _, body)))) => {
                assert_eq!(code, 400, "an unfinished JSON body: {body}");
                answered += 1;
            }
            other => panic!("after {answered} answers: {other:?}"),
        }
    }
    let review = joe
        .post(&url)
        .json(&serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "create", "resource": "configmaps"}}
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(review.status().as_u16(), 201);
    let review: Value = review.json().await.unwrap_or(Value::Null);
    assert_eq!(review["status"]["allowed"], false);
}

/// An HPACK literal without indexing of the static table's name `index` (below 15).
fn literal(out: &mut Vec<u8>, index: u8, value: &str) {
    if index < 15 {
        out.push(index);
    } else {
        out.extend_from_slice(&[0x0f, index - 15]);
    }
    out.push(u8::try_from(value.len()).unwrap_or_else(|e| panic!("{e}")));
    out.extend_from_slice(value.as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_the_client_does_not_read_holds_its_slot_only_until_its_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "tok-bob,bob,uid-bob,\"devs\"\n").unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start(&[
        "--max-requests-inflight=1",
        &format!("--token-auth-file={}", tokens.display()),
    ]);
    let admin = server.admin();
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            serde_json::json!({"metadata": {"name": "bob-view"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            serde_json::json!({"metadata": {"name": "big"}, "data": {"a": "x".repeat(1 << 20)}}),
        ),
    ] {
        let (code, out, _) =
            common::send_json(&admin, reqwest::Method::POST, server.url(path), Some(body)).await;
        assert_eq!(code, 201, "{path}: {out}");
    }
    let bob = server
        .builder()
        .http1_only()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let get = |client: &reqwest::Client| {
        client
            .get(server.url("/api/v1/namespaces/default/configmaps/big"))
            .bearer_auth("tok-bob")
            .send()
    };
    let mut code = 0;
    for _ in 0..100 {
        code = get(&bob).await.map(|r| r.status().as_u16()).unwrap_or(0);
        if code == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(code, 200, "bob can read the ConfigMap");

    // An h2 client that gives the server no window to send in asks for it, with a 2 s timeout.
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    common::tls::h2_frame(&mut out, 0x4, 0, 0, &[0, 4, 0, 0, 0, 0]); // SETTINGS_INITIAL_WINDOW_SIZE = 0
    let mut block = vec![0x82, 0x87]; // :method GET, :scheme https
    literal(
        &mut block,
        4,
        "/api/v1/namespaces/default/configmaps/big?timeout=2s",
    );
    literal(&mut block, 1, "localhost");
    literal(&mut block, 23, "Bearer tok-bob");
    common::tls::h2_frame(&mut out, 0x1, 0x5, 1, &block); // HEADERS, END_STREAM | END_HEADERS
    let config = common::tls::client_config(rustls::ALL_VERSIONS, None, &[b"h2"]);
    let mut stalled = common::tls::tls_connect(&server, config, "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stalled
        .write_all(&out)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    // The server answers with HEADERS at once (flow control holds only DATA): from then on the
    // request has been admitted and holds its slot.
    tokio::time::timeout(Duration::from_secs(20), async {
        while !matches!(
            common::tls::read_h2_frame(&mut stalled).await,
            (0x1, _, 1, _)
        ) {}
    })
    .await
    .unwrap_or_else(|_| panic!("no response headers after {:?}", started.elapsed()));

    // Its response is not sent, and it holds the one read slot.
    let resp = get(&bob).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        resp.status().as_u16(),
        429,
        "the stalled response holds the slot"
    );

    // Past its deadline the connection is closed, and the slot is free again.
    let mut buf = vec![0; 65_536];
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stalled.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the connection was still open after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "closed before the deadline"
    );
    // The stream's task drops its slot a moment after the connection's task closes the socket.
    let closed_at = Instant::now();
    loop {
        let code = get(&bob)
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or_else(|e| panic!("{e}"));
        if code == 200 {
            break;
        }
        assert_eq!(code, 429);
        assert!(
            closed_at.elapsed() < Duration::from_secs(5),
            "the slot was still held 5 s after the connection closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Large list responses are bounded per user: while one of bob's large lists is held by a
/// client that does not read it, his next large list gets 429 with `Retry-After`, while another
/// user's and the admin's lists are served; once the first response is gone, bob's lists are
/// served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_lists_beyond_a_users_share_get_429() {
    let server = Server::start(&["--list-memory-per-user=1048576"]);
    let admin = server.admin();
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "listers-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "listers"}]});
    let r = admin
        .post(server.url("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"))
        .json(&binding)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 201);
    let list = server.url("/api/v1/namespaces/default/configmaps");
    for i in 0..3 {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("big-{i}")}, "data": {"v": "x".repeat(300_000)}});
        let r = admin
            .post(&list)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 201);
    }
    let identity = |name: &str| {
        let (cert, key) = server.user_cert(name, "listers");
        reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes())
            .unwrap_or_else(|e| panic!("identity: {e}"))
    };
    // A client that reads nothing of the body: h2 flow control holds the response.
    let stalled = server
        .builder()
        .identity(identity("bob"))
        .http2_initial_stream_window_size(65_535)
        .http2_initial_connection_window_size(65_535)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut held = None;
    for _ in 0..100 {
        let r = stalled
            .get(&list)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if r.status().as_u16() == 200 {
            held = Some(r);
            break;
        }
        // The binding reaches the authorizer a moment after it is written.
        assert_eq!(r.status().as_u16(), 403);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held = held.unwrap_or_else(|| panic!("bob's list was never allowed"));
    let (cert, key) = server.user_cert("bob", "listers");
    let bob = server.with_identity(&cert, &key);
    let r = bob
        .get(&list)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(
        r.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let (cert, key) = server.user_cert("eve", "listers");
    let eve = server.with_identity(&cert, &key);
    for client in [&eve, &admin] {
        let r = client
            .get(&list)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(body["items"].as_array().map(Vec::len), Some(3));
    }
    drop(held);
    let started = Instant::now();
    loop {
        let r = bob
            .get(&list)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if r.status().as_u16() == 200 {
            break;
        }
        assert_eq!(r.status().as_u16(), 429);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "bob's share was not released"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
