//! ResourceQuota against the real binary on etcd: 64 concurrent creates against a quota of 5
//! store exactly 5, through one replica and through two replicas of one etcd together; a
//! delete through either replica releases usage; the quota's limits reach `kubectl get quota`.

mod common;

use std::time::Duration;

use common::{Etcd, Server, copy_dir};
use serde_json::{Value, json};

const NS: &str = "/api/v1/namespaces/default";

async fn post(client: &reqwest::Client, server: &Server, path: &str, body: &Value) -> u16 {
    client
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .status()
        .as_u16()
}

async fn get(client: &reqwest::Client, server: &Server, path: &str) -> Value {
    client
        .get(server.url(path))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null)
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// Creates a quota of `limit` ConfigMaps and waits until it is counted.
async fn quota(client: &reqwest::Client, server: &Server, name: &str, limit: u32) {
    let q = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
        "spec": {"hard": {"count/configmaps": limit.to_string()}}});
    assert_eq!(
        post(client, server, &format!("{NS}/resourcequotas"), &q).await,
        201
    );
    for _ in 0..400 {
        let got = get(client, server, &format!("{NS}/resourcequotas/{name}")).await;
        if got["status"]["used"].get("count/configmaps").is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("quota {name} never counted");
}

async fn count(client: &reqwest::Client, server: &Server) -> usize {
    get(client, server, &format!("{NS}/configmaps")).await["items"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0)
}

/// Sends 64 creates at once, spread over `targets`; returns how many were created.
async fn blast(targets: &[(&reqwest::Client, &Server)], prefix: &str) -> usize {
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let (client, server) = targets[i % targets.len()];
            let (client, url) = (client.clone(), server.url(&format!("{NS}/configmaps")));
            let body = config_map(&format!("{prefix}-{i}"));
            tokio::spawn(async move {
                client
                    .post(url)
                    .json(&body)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0)
            })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap_or(0) {
            201 => created += 1,
            403 => {}
            other => panic!("unexpected status {other}"),
        }
    }
    created
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_on_etcd_never_pass_a_quota() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let (ca, cb) = (a.admin(), b.admin());

    // One replica.
    quota(&ca, &a, "five", 5).await;
    assert_eq!(blast(&[(&ca, &a)], "one").await, 5);
    assert_eq!(count(&ca, &a).await, 5);

    // Both replicas together, against a quota of 5 more.
    let q = get(&ca, &a, &format!("{NS}/resourcequotas/five")).await;
    let mut raised = q.clone();
    raised["spec"]["hard"]["count/configmaps"] = json!("10");
    let r = ca
        .put(a.url(&format!("{NS}/resourcequotas/five")))
        .json(&raised)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(blast(&[(&ca, &a), (&cb, &b)], "two").await, 5);
    assert_eq!(count(&cb, &b).await, 10);
    let q = get(&cb, &b, &format!("{NS}/resourcequotas/five")).await;
    assert_eq!(q["status"]["used"]["count/configmaps"], "10");
    assert_eq!(q["status"]["hard"]["count/configmaps"], "10");

    // A delete through the other replica releases; the next create passes.
    let first = get(&cb, &b, &format!("{NS}/configmaps")).await["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = cb
        .delete(b.url(&format!("{NS}/configmaps/{first}")))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        post(&ca, &a, &format!("{NS}/configmaps"), &config_map("after")).await,
        201
    );
    assert_eq!(
        post(&ca, &a, &format!("{NS}/configmaps"), &config_map("over")).await,
        403
    );
}
