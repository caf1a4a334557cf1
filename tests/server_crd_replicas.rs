//! CustomResourceDefinitions on two `apiary` replicas sharing one etcd: a CRD created through
//! one replica is established and served by the other (no restart), a custom resource written
//! through either is read and watched through the other, and deleting the CRD through one
//! replica removes its objects and its resource from both; created again, it starts empty.
//! Uses `tools/etcd-test-server`
//! (fails loudly without etcd).

mod common;

use std::time::{Duration, Instant};

use common::{Etcd, Server, copy_dir};
use serde_json::{Value, json};

const GADGETS: &str = "/apis/replicas.example.com/v1/namespaces/default/gadgets";

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.replicas.example.com"},
        "spec": {
            "group": "replicas.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 0, "default": 1}
                    }}
                }}}
            }]
        }
    })
}

/// Polls `path` on `server` until the status is `want` (within 20 s); returns the last body.
async fn until_status(client: &reqwest::Client, server: &Server, path: &str, want: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = client
            .get(server.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} answered {status}, not {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_created_through_one_replica_is_served_by_the_other() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let (ca, cb) = (a.admin(), b.admin());

    let created = ca
        .post(a.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))
        .json(&crd())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);

    // Served by b, with the schema's default, as soon as b's controller has seen the CRD.
    until_status(&cb, &b, GADGETS, 200).await;
    let gadget = json!({"apiVersion": "replicas.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {}});
    let resp = cb
        .post(b.url(GADGETS))
        .json(&gadget)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let through_b: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(through_b["spec"]["size"], 1, "{through_b}");
    let through_a = until_status(&ca, &a, &format!("{GADGETS}/g"), 200).await;
    assert_eq!(through_a["metadata"]["uid"], through_b["metadata"]["uid"]);
    // Both replicas validate with the same schema.
    let bad = json!({"apiVersion": "replicas.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "bad"}, "spec": {"size": -1}});
    for (client, server) in [(&ca, &a), (&cb, &b)] {
        let resp = client
            .post(server.url(GADGETS))
            .json(&bad)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.status().as_u16(), 422);
    }

    // Deleted through a: the object goes, and both replicas stop serving the resource.
    let resp = ca
        .delete(a.url(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.replicas.example.com",
        ))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    until_status(
        &cb,
        &b,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.replicas.example.com",
        404,
    )
    .await;
    until_status(&ca, &a, GADGETS, 404).await;
    until_status(&cb, &b, GADGETS, 404).await;

    // Created again through b, it starts empty on a.
    let resp = cb
        .post(b.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))
        .json(&crd())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let list = until_status(&ca, &a, GADGETS, 200).await;
    assert_eq!(list["items"], json!([]), "{list}");
}
