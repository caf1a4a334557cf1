//! `--etcd-compaction-interval`: the real binary with a 2 second interval, on the embedded store
//! and on etcd, compacts its history. After two intervals a list or a watch at an old
//! resourceVersion is 410 `Expired` (a watch as an `ERROR` event, as kube-apiserver's), while
//! current reads and watches keep working. Uses `tools/etcd-test-server` for etcd.

mod common;

use std::time::{Duration, Instant};

use common::{Etcd, Server};
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The status of a list at `rv` with `resourceVersionMatch=Exact`.
async fn list_exact(server: &Server, client: &reqwest::Client, rv: &str) -> (u16, Value) {
    let response = client
        .get(server.url(&format!(
            "{CONFIGMAPS}?resourceVersion={rv}&resourceVersionMatch=Exact"
        )))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let code = response.status().as_u16();
    (code, response.json().await.unwrap_or(Value::Null))
}

/// The first event of a watch from `rv` (its type and object).
async fn first_watch_event(server: &Server, client: &reqwest::Client, rv: &str) -> Value {
    let mut response = client
        .get(server.url(&format!(
            "{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=5"
        )))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status().as_u16(), 200);
    let mut buffer = Vec::new();
    while !buffer.contains(&b'\n') {
        match tokio::time::timeout(Duration::from_secs(10), response.chunk()).await {
            Ok(Ok(Some(chunk))) => buffer.extend_from_slice(&chunk),
            other => panic!("no watch event from {rv}: {other:?}"),
        }
    }
    let line = buffer.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice(line).unwrap_or_else(|e| panic!("{e}"))
}

async fn old_versions_expire(server: Server) {
    let client = server.admin();
    let created = client
        .post(server.url(CONFIGMAPS))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": "0"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);
    let created: Value = created.json().await.unwrap_or(Value::Null);
    let old = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion: {created}"))
        .to_string();
    assert_eq!(list_exact(&server, &client, &old).await.0, 200);

    // Updates keep coming while the compactor runs; the old version expires within two
    // intervals of the first update after it (plus slack for a loaded machine).
    let started = Instant::now();
    let mut n = 0;
    let expired = loop {
        n += 1;
        let updated = client
            .put(server.url(&format!("{CONFIGMAPS}/c")))
            .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": n.to_string()}}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(updated.status().as_u16(), 200, "updates keep working");
        let (code, body) = list_exact(&server, &client, &old).await;
        if code == 410 {
            break body;
        }
        assert_eq!(code, 200, "{body}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "resourceVersion {old} still readable after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "expired before one interval passed"
    );
    assert_eq!(expired["reason"], "Expired", "{expired}");
    assert_eq!(expired["code"], 410, "{expired}");

    let event = first_watch_event(&server, &client, &old).await;
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 410, "{event}");
    assert_eq!(event["object"]["reason"], "Expired", "{event}");

    // Current reads, lists and watches work.
    let got: Value = client
        .get(server.url(&format!("{CONFIGMAPS}/c")))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(got["data"]["n"], n.to_string(), "{got}");
    let list: Value = client
        .get(server.url(CONFIGMAPS))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    let current = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(list_exact(&server, &client, &current).await.0, 200);
    let watch = client
        .get(server.url(&format!(
            "{CONFIGMAPS}?watch=true&resourceVersion={current}&timeoutSeconds=5"
        )))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watch.status().as_u16(), 200);
    let updated = client
        .put(server.url(&format!("{CONFIGMAPS}/c")))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": "last"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(updated.status().as_u16(), 200);
    let event = first_watch_event(&server, &client, &current).await;
    assert_eq!(event["type"], "MODIFIED", "{event}");
    assert_eq!(event["object"]["data"]["n"], "last", "{event}");
    drop(watch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_compacts_every_interval() {
    old_versions_expire(Server::start(&["--etcd-compaction-interval=2s"])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_compacts_every_interval() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    old_versions_expire(Server::start(&[&servers, "--etcd-compaction-interval=2s"])).await;
}

/// `apiary --help` lists the flag with its default.
#[test]
fn help_lists_the_flag() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiary"))
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--etcd-compaction-interval"), "{help}");
    assert!(help.contains("[default: 5m0s]"), "{help}");
}
