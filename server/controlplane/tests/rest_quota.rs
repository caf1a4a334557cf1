//! ResourceQuota on object counts through the REST handlers: the controller counts a new
//! quota, creates over a limit are refused with Kubernetes' message, 64 concurrent creates
//! never store more than the limit, deletes release usage, and dry runs charge nothing.

mod rest_common;

use std::time::Duration;

use rest_common::{Harness, WIDGETS, widget};
use serde_json::{Value, json};

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";

fn quota(name: &str, hard: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}})
}

/// Waits until the quota's usage of `resource` is counted, and returns the quota.
async fn counted(h: &Harness, name: &str, resource: &str) -> Value {
    for _ in 0..200 {
        let q = h.get(&format!("{QUOTAS}/{name}")).await.json();
        if q["status"]["used"].get(resource).is_some() {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("quota {name} never counted {resource}");
}

fn used(q: &Value, resource: &str) -> String {
    q["status"]["used"][resource]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn widget_count(h: &Harness) -> usize {
    h.get(WIDGETS).await.json()["items"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0)
}

#[tokio::test]
async fn creates_over_the_limit_are_refused_and_deletes_release() {
    let h = Harness::new().await;
    // One Widget exists before the quota: the controller counts it.
    assert_eq!(h.post(WIDGETS, &widget("w0", 1)).await.status, 201);
    let r = h
        .post(
            QUOTAS,
            &quota(
                "widgets",
                json!({"count/widgets.example.dev": "2", "configmaps": "5"}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let q = counted(&h, "widgets", "count/widgets.example.dev").await;
    assert_eq!(used(&q, "count/widgets.example.dev"), "1");
    assert_eq!(q["status"]["hard"], q["spec"]["hard"]);

    assert_eq!(h.post(WIDGETS, &widget("w1", 1)).await.status, 201);
    let r = h.post(WIDGETS, &widget("w2", 1)).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        "widgets.example.dev \"w2\" is forbidden: exceeded quota: widgets, requested: count/widgets.example.dev=1, used: count/widgets.example.dev=2, limited: count/widgets.example.dev=2"
    );
    let q = h.get(&format!("{QUOTAS}/widgets")).await.json();
    assert_eq!(used(&q, "count/widgets.example.dev"), "2");

    // A dry run is checked but charges nothing; a refused one as a real one.
    assert_eq!(
        h.post(&format!("{WIDGETS}?dryRun=All"), &widget("w3", 1))
            .await
            .status,
        403
    );
    assert_eq!(h.delete(&format!("{WIDGETS}/w0")).await.status, 200);
    let q = h.get(&format!("{QUOTAS}/widgets")).await.json();
    assert_eq!(
        used(&q, "count/widgets.example.dev"),
        "1",
        "the delete released"
    );
    assert_eq!(
        h.post(&format!("{WIDGETS}?dryRun=All"), &widget("w3", 1))
            .await
            .status,
        201
    );
    let q = h.get(&format!("{QUOTAS}/widgets")).await.json();
    assert_eq!(
        used(&q, "count/widgets.example.dev"),
        "1",
        "a dry run charges nothing"
    );

    // A create that is not stored gives its charge back.
    assert_eq!(h.post(WIDGETS, &widget("w1", 1)).await.status, 409);
    let q = h.get(&format!("{QUOTAS}/widgets")).await.json();
    assert_eq!(used(&q, "count/widgets.example.dev"), "1");
    assert_eq!(h.post(WIDGETS, &widget("w4", 1)).await.status, 201);
    assert_eq!(widget_count(&h).await, 2);

    // The legacy core name counts ConfigMaps.
    let q = counted(&h, "widgets", "configmaps").await;
    assert_eq!(used(&q, "configmaps"), "0");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert_eq!(
        h.post("/api/v1/namespaces/default/configmaps", &cm)
            .await
            .status,
        201
    );
    let q = h.get(&format!("{QUOTAS}/widgets")).await.json();
    assert_eq!(used(&q, "configmaps"), "1");
}

#[tokio::test]
async fn a_new_quota_is_counted_and_enforced() {
    let h = Harness::new().await;
    // A create before any quota exists: admission finds none (and remembers it).
    assert_eq!(h.post(WIDGETS, &widget("before", 1)).await.status, 201);
    let q = quota("fresh", json!({"count/widgets.example.dev": "1"}));
    let r = h.post(QUOTAS, &q).await;
    assert_eq!(r.status, 201);
    // A create clears the status a client sends; the controller counts the quota.
    assert!(r.json()["status"].get("used").is_none_or(Value::is_null));
    let q = counted(&h, "fresh", "count/widgets.example.dev").await;
    assert_eq!(used(&q, "count/widgets.example.dev"), "1");
    assert_eq!(h.post(WIDGETS, &widget("two", 1)).await.status, 403);
    assert_eq!(h.delete(&format!("{WIDGETS}/before")).await.status, 200);
    assert_eq!(h.post(WIDGETS, &widget("one", 1)).await.status, 201);
    assert_eq!(h.post(WIDGETS, &widget("three", 1)).await.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_never_pass_the_limit() {
    let h = std::sync::Arc::new(Harness::new().await);
    let r = h
        .post(
            QUOTAS,
            &quota("five", json!({"count/widgets.example.dev": "5"})),
        )
        .await;
    assert_eq!(r.status, 201);
    counted(&h, "five", "count/widgets.example.dev").await;
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move { h.post(WIDGETS, &widget(&format!("c{i}"), 1)).await.status })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap() {
            201 => created += 1,
            403 | 409 => {}
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(created, 5);
    assert_eq!(widget_count(&h).await, 5);
    let q = h.get(&format!("{QUOTAS}/five")).await.json();
    assert_eq!(used(&q, "count/widgets.example.dev"), "5");
}
