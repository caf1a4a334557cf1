//! Every served kind's watch cache starts with the server (as kube-apiserver starts every
//! resource's cacher at boot), and readiness waits for their initial lists
//! (`poststarthook/apiary-watch-caches`). On a fresh server, while another client keeps writing
//! (so revisions move between any two requests), a list of a kind nobody used yet followed at
//! once by a watch from the list's resourceVersion is not 410 Gone and delivers the next
//! change: a cache started by that first list would begin after the list's revision.

mod common;

use std::time::Duration;

use common::Server;
use serde_json::{Value, json};

/// Kinds no part of the server touches before a client does, with an object of each.
fn unused_kinds() -> Vec<(&'static str, Value)> {
    vec![
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": "fresh"}, "spec": {"holderIdentity": "t"}}),
        ),
        (
            "/apis/example.dev/v1/namespaces/default/widgets",
            json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                   "metadata": {"name": "fresh"}, "spec": {"replicas": 1}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "fresh"},
                   "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "x"},
                   "reason": "Test", "message": "m", "type": "Normal"}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fresh"}}),
        ),
    ]
}

/// The next event line of a watch response.
async fn next_event(response: &mut reqwest::Response, buffer: &mut Vec<u8>) -> Value {
    loop {
        if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            return serde_json::from_slice(&line).unwrap_or_else(|e| panic!("{e}"));
        }
        match tokio::time::timeout(Duration::from_secs(10), response.chunk()).await {
            Ok(Ok(Some(chunk))) => buffer.extend_from_slice(&chunk),
            other => panic!("no watch event: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_the_first_list_of_a_kind_is_not_gone() {
    let server = Server::start(&[]);
    let client = server.admin();

    let verbose = client
        .get(server.url("/readyz?verbose"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = verbose.text().await.unwrap_or_default();
    assert!(
        text.contains("[+]poststarthook/apiary-watch-caches ok"),
        "{text}"
    );

    // Another client writes all along (Secrets, which none of the kinds below is).
    let writer = {
        let client = client.clone();
        let url = server.url("/api/v1/namespaces/default/secrets");
        tokio::spawn(async move {
            for i in 0.. {
                let secret = json!({"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": format!("s{i}")}});
                let r = client.post(&url).json(&secret).send().await;
                assert!(r.is_ok_and(|r| r.status().as_u16() == 201));
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    for (collection, object) in unused_kinds() {
        let list: Value = client
            .get(server.url(collection))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("no resourceVersion: {list}"))
            .to_string();
        let mut watch = client
            .get(server.url(&format!(
                "{collection}?watch=true&resourceVersion={rv}&timeoutSeconds=10"
            )))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(watch.status().as_u16(), 200, "{collection} from {rv}");
        let created = client
            .post(server.url(collection))
            .json(&object)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(created.status().as_u16(), 201, "{collection}");
        let mut buffer = Vec::new();
        let event = next_event(&mut watch, &mut buffer).await;
        assert_eq!(event["type"], "ADDED", "{collection} from {rv}: {event}");
        assert_eq!(event["object"]["metadata"]["name"], "fresh", "{event}");
    }
    writer.abort();
}
