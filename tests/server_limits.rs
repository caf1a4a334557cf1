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
