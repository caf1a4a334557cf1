//! Journey 5: two `apiary` replicas on one etcd share state, and a watch on one replica sees a
//! write made through the other. Uses `tools/etcd-test-server` (fails loudly without etcd).

mod common;

use std::time::Duration;

use common::{Etcd, Server, copy_dir};
use futures::StreamExt;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_state_and_watches() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    // The second replica shares the first one's CA and credentials.
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let (ca, cb) = (a.admin(), b.admin());

    let list: Value = cb
        .get(b.url("/api/v1/namespaces/default/configmaps"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let watch = cb
        .get(b.url(&format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
        )))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watch.status().as_u16(), 200);

    let created = ca
        .post(a.url("/api/v1/namespaces/default/configmaps"))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"k": "v"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);

    let got: Value = cb
        .get(b.url("/api/v1/namespaces/default/configmaps/shared"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(got["data"]["k"], "v", "replica b reads what a wrote: {got}");

    let mut stream = watch.bytes_stream();
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen
                .lines()
                .any(|l| l.contains("\"ADDED\"") && l.contains("\"shared\""))
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "watch on replica b did not see the write on a: {seen}"
    );
}
