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
