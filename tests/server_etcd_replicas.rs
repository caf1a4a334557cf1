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

/// The (resourceVersion, name) of each ADDED event of a watch response, until `expected`
/// arrived (or, for `expected == 0`, until the watch's own timeout ends it).
async fn added_events(response: reqwest::Response, expected: usize) -> Vec<(u64, String)> {
    assert_eq!(response.status().as_u16(), 200);
    let mut stream = response.bytes_stream();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while expected == 0 || events.len() < expected {
            let Some(chunk) = stream.next().await else {
                return;
            };
            buffer.extend_from_slice(&chunk.unwrap_or_else(|e| panic!("{e}")));
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
                assert_eq!(event["type"], "ADDED", "unexpected event {event}");
                let metadata = &event["object"]["metadata"];
                let rv = metadata["resourceVersion"].as_str().unwrap_or("");
                events.push((
                    rv.parse()
                        .unwrap_or_else(|e| panic!("resourceVersion {rv}: {e}")),
                    metadata["name"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    })
    .await;
    assert!(read.is_ok(), "{expected} events in time, got {events:?}");
    events
}

/// Issue 11: concurrent creates through two replicas on one etcd each get their own
/// resourceVersion, a watch delivers them in that order, and a watch resumed from EVERY
/// delivered resourceVersion, on the other replica, delivers exactly the later creates (what
/// client-go's reflector does when its connection drops).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_resume_from_every_resource_version_across_replicas() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let replicas = [(a.admin(), a.url("")), (b.admin(), b.url(""))];
    let collection = "/api/v1/namespaces/default/configmaps";
    let selector = "labelSelector=burst%3Drv";

    // Each replica starts a kind's watch cache when the kind is first used, and a watch from a
    // resourceVersion older than the cache's initial list is 410 (as from kube-apiserver's
    // cacher). A list with resourceVersion=0 is served by the cache once it has its initial
    // list, so after one on each replica both caches hold every change the burst makes.
    let (client, base) = &replicas[0];
    let warm = client
        .get(format!("{base}{collection}?{selector}&resourceVersion=0"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(warm.status().as_u16(), 200);
    let (client, base) = &replicas[1];
    let list: Value = client
        .get(format!("{base}{collection}?{selector}&resourceVersion=0"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    let start = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // The watch resumed from the last resourceVersion must end by itself (nothing follows).
    let watch_url = |base: &str, rv: &str, timeout: u32| {
        format!(
            "{base}{collection}?watch=true&{selector}&resourceVersion={rv}&timeoutSeconds={timeout}"
        )
    };
    let live = client
        .get(watch_url(base, &start, 60))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let (tasks, per_task) = (32, 3);
    let mut writers = Vec::new();
    for t in 0..tasks {
        let (client, base) = replicas[t % 2].clone();
        writers.push(tokio::spawn(async move {
            let mut created = Vec::new();
            for i in 0..per_task {
                let name = format!("cm-{t}-{i}");
                let response = client
                    .post(format!("{base}{collection}"))
                    .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {"burst": "rv"}}}))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(response.status().as_u16(), 201);
                let object: Value = response.json().await.unwrap_or(Value::Null);
                let rv = object["metadata"]["resourceVersion"].as_str().unwrap_or("");
                created.push((rv.parse::<u64>().unwrap_or_else(|e| panic!("{e}")), name));
            }
            created
        }));
    }
    let mut created = Vec::new();
    for writer in writers {
        created.extend(writer.await.unwrap_or_else(|e| panic!("{e}")));
    }
    created.sort();
    let distinct: std::collections::BTreeSet<u64> = created.iter().map(|(rv, _)| *rv).collect();
    assert_eq!(
        distinct.len(),
        created.len(),
        "every create has its own resourceVersion: {created:?}"
    );

    let delivered = added_events(live, created.len()).await;
    assert_eq!(
        delivered, created,
        "every create once, in resourceVersion order"
    );

    for (i, (rv, _)) in delivered.iter().enumerate() {
        let (client, base) = &replicas[i % 2];
        let timeout = if i + 1 == delivered.len() { 2 } else { 60 };
        let resumed = client
            .get(watch_url(base, &rv.to_string(), timeout))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let rest = added_events(resumed, delivered.len() - i - 1).await;
        assert_eq!(
            rest,
            delivered[i + 1..],
            "a watch on replica {} resumed from {rv}",
            ["a", "b"][i % 2]
        );
    }
}
