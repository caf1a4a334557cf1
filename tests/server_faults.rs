//! Faults against the real binary (`server/src/fault.rs`): with the `fault-injection` feature
//! (on under `--all-features`, how `tools/test` builds), a request of `system:masters` with
//! `X-Apiary-Fault: panic` makes its handler panic; the answer is a 500 `Status`, the audit log
//! has the `Panic` event, and the server serves on, on a new connection and on the same one.
//! Without the feature the header is an ordinary one and the request is served.

mod common;

use std::time::{Duration, Instant};

use common::Server;
use common::raw::{Conn, admin_http1, http1_identity};

const FAULT_BUILD: bool = cfg!(feature = "fault-injection");

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n").into_bytes()
}

/// The audit events of `id`, once there are `want` of them.
fn events_of(log: &std::path::Path, id: &str, want: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events: Vec<serde_json::Value> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .filter(|e: &serde_json::Value| e["auditID"] == id)
            .collect();
        if events.len() >= want {
            return events;
        }
        assert!(Instant::now() < deadline, "events of {id}: {events:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_answers_500_and_the_server_serves_on() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let log = dir.path().join("audit.log");
    let server = Server::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    let path = "/api/v1/namespaces/default/configmaps";
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    conn.send(&get(path, "X-Apiary-Fault: panic\r\nAudit-ID: fault-1\r\n"))
        .await;
    let resp = conn.response().await;
    if FAULT_BUILD {
        assert_eq!(resp.status, 500, "{resp:?}");
        let status = resp.json();
        assert_eq!(status["kind"], "Status", "{status}");
        assert_eq!(status["reason"], "InternalError", "{status}");
        assert_eq!(status["code"], 500, "{status}");
        let events = events_of(&log, "fault-1", 2);
        let stages: Vec<&str> = events.iter().filter_map(|e| e["stage"].as_str()).collect();
        assert_eq!(stages, ["RequestReceived", "Panic"], "{events:#?}");
        assert_eq!(events[1]["responseStatus"]["code"], 500, "{events:#?}");
    } else {
        // The default build ignores the header.
        assert_eq!(resp.status, 200, "{resp:?}");
        assert_eq!(resp.json()["kind"], "ConfigMapList");
    }
    // The same connection serves on.
    conn.send(&get(path, "")).await;
    let next = conn.response().await;
    assert_eq!(next.status, 200, "{next:?}");
    assert_eq!(next.json()["kind"], "ConfigMapList");
    // So does a new one.
    let mut other = Conn::open(&server, admin_http1(&server)).await;
    other.send(&get("/readyz", "")).await;
    assert_eq!(other.response().await.status, 200);

    // Only members of system:masters may ask: anyone else is served (or refused) as usual.
    let (cert, key) = server.user_cert("fault-user", "");
    let mut user = Conn::open(&server, http1_identity(cert.as_bytes(), key.as_bytes())).await;
    user.send(&get("/version", "X-Apiary-Fault: panic\r\n"))
        .await;
    let resp = user.response().await;
    assert_eq!(resp.status, 200, "{resp:?}");
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Sets the embedded writer's commit delay (`X-Apiary-Fault: fsync-delay=<delay>`).
async fn set_fsync_delay(server: &Server, client: &reqwest::Client, delay: &str) {
    let r = client
        .get(server.url("/version"))
        .header("X-Apiary-Fault", format!("fsync-delay={delay}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 200);
}

/// Creates ConfigMap `name`; its status, body and how long the answer took.
async fn create_configmap(
    server: &Server,
    client: &reqwest::Client,
    name: &str,
) -> (u16, serde_json::Value, Duration) {
    let started = Instant::now();
    let r = client
        .post(server.url(CONFIGMAPS))
        .json(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": name}, "data": {"k": name}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let code = r.status().as_u16();
    let body = r.json().await.unwrap_or(serde_json::Value::Null);
    (code, body, started.elapsed())
}

/// With `X-Apiary-Fault: fsync-delay=…` every embedded commit waits before its sync, as on a
/// slow disk. Concurrent creates are acknowledged only after the delayed commit, and every
/// acknowledged one survives a kill -9 right after the acknowledgements; reads from the watch
/// cache keep answering well within the delay meanwhile; a write that outlasts
/// `--request-timeout` is a 504 `Timeout` Status, not a hang; clearing the delay makes writes
/// fast again. Without the feature the header changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_fsync_acknowledges_only_durable_writes_and_reads_stay_fast() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tmp.path().join("data");
    let server = Server::start_in(&data, &[]);
    let client = server.admin();
    let (code, _, _) = create_configmap(&server, &client, "existing").await;
    assert_eq!(code, 201);
    const DELAY: Duration = Duration::from_millis(500);
    set_fsync_delay(&server, &client, "500ms").await;
    if !FAULT_BUILD {
        let (code, _, took) = create_configmap(&server, &client, "plain").await;
        assert_eq!(code, 201);
        assert!(
            took < DELAY,
            "the default build has no fault point: {took:?}"
        );
        return;
    }

    // Concurrent creates, and reads from the cache while they wait.
    let writes: Vec<_> = (0..12)
        .map(|i| {
            let client = client.clone();
            let url = server.url(CONFIGMAPS);
            let name = format!("slow-{i}");
            tokio::spawn(async move {
                let started = Instant::now();
                let r = client
                    .post(url)
                    .json(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": name}}))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let code = r.status().as_u16();
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                (name, code, body, started.elapsed())
            })
        })
        .collect();
    let mut slowest_read = Duration::ZERO;
    let mut reads = 0;
    while !writes.iter().all(|w| w.is_finished()) {
        for path in [
            format!("{CONFIGMAPS}/existing"),
            format!("{CONFIGMAPS}?resourceVersion=0"),
            CONFIGMAPS.to_string(),
        ] {
            let started = Instant::now();
            let r = client
                .get(server.url(&path))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 200, "{path}");
            slowest_read = slowest_read.max(started.elapsed());
            reads += 1;
        }
    }
    let mut acknowledged = Vec::new();
    for w in writes {
        let (name, code, body, took) = w.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(code, 201, "{name}: {body}");
        assert!(
            took >= DELAY,
            "{name} was acknowledged after {took:?}, before its commit"
        );
        let rv = body["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string);
        acknowledged.push((
            name,
            rv.unwrap_or_else(|| panic!("no resourceVersion: {body}")),
        ));
    }
    eprintln!("{reads} reads during the slow writes, the slowest {slowest_read:?}");
    assert!(reads >= 3, "reads kept answering: {reads}");
    assert!(
        slowest_read < DELAY / 2,
        "reads wait behind slow commits: {slowest_read:?}"
    );

    // kill -9 right after the acknowledgements; every acknowledged write is there (after a
    // restart with a short --request-timeout for what follows).
    drop(server);
    let server = Server::start_in(&data, &["--request-timeout=1s"]);
    let client = server.admin();
    for (name, rv) in &acknowledged {
        let r = client
            .get(server.url(&format!("{CONFIGMAPS}/{name}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.status().as_u16(),
            200,
            "{name} was acknowledged but is lost"
        );
        let body: serde_json::Value = r.json().await.unwrap_or_default();
        assert_eq!(body["metadata"]["resourceVersion"], rv.as_str(), "{body}");
    }

    // A commit slower than --request-timeout: 504 Timeout, in about the timeout.
    set_fsync_delay(&server, &client, "3s").await;
    let (code, status, took) = create_configmap(&server, &client, "too-slow").await;
    assert_eq!(code, 504, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "Timeout", "{status}");
    assert!(
        took < Duration::from_millis(2500),
        "answered after {took:?}"
    );
    // Reads still answer while that commit sleeps.
    let r = client
        .get(server.url(&format!("{CONFIGMAPS}/existing")))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 200);
    // Cleared, writes are fast again once the sleeping commit is done.
    set_fsync_delay(&server, &client, "0").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (code, body, took) = create_configmap(&server, &client, "fast-again").await;
    assert_eq!(code, 201, "{body}");
    assert!(took < DELAY, "writes stay slow after clearing: {took:?}");
}
