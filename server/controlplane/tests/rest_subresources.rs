//! Server-side apply, `/status`, `/scale`, namespace lifecycle and review kinds.

mod rest_common;

use std::time::Duration;

use rest_common::*;
use serde_json::json;

const APPLY: &str = "application/apply-patch+yaml";

#[tokio::test]
async fn server_side_apply_create_conflict_force() {
    let h = Harness::new().await;
    let cfg = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"ssa"},"spec":{"replicas":2,"color":"blue"}}"#;
    let r = h
        .patch(
            &format!("{WIDGETS}/ssa?fieldManager=kubectl&force=false"),
            APPLY,
            cfg,
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let obj = r.json();
    assert_eq!(obj["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(obj["metadata"]["managedFields"][0]["operation"], "Apply");
    assert_eq!(
        obj["metadata"]["managedFields"][0]["fieldsType"],
        "FieldsV1"
    );
    assert_eq!(
        obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:color"],
        json!({})
    );

    let r = h
        .patch(
            &format!("{WIDGETS}/ssa?fieldManager=other"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5}}"#,
        )
        .await;
    assert_eq!(r.status, 200);
    let r = h
        .patch(&format!("{WIDGETS}/ssa?fieldManager=kubectl"), APPLY, cfg)
        .await;
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    let s = r.json();
    assert_eq!(s["reason"], "Conflict");
    assert_eq!(
        s["message"],
        "Apply failed with 1 conflict: conflict with \"other\" using example.dev/v1: .spec.replicas"
    );
    assert_eq!(
        s["details"]["causes"][0],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"other\" using example.dev/v1", "field": ".spec.replicas"})
    );
    let r = h
        .patch(
            &format!("{WIDGETS}/ssa?fieldManager=kubectl&force=true"),
            APPLY,
            cfg,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["spec"]["replicas"], 2);

    // Fields no longer applied are removed.
    let r = h.patch(&format!("{WIDGETS}/ssa?fieldManager=kubectl"), APPLY, r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"ssa"},"spec":{"replicas":2}}"#).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["spec"].get("color").is_none(), "{}", r.json());

    let r = h.patch(&format!("{WIDGETS}/ssa"), APPLY, cfg).await;
    assert_eq!(r.status, 422);
    let r = h
        .patch(
            &format!("{WIDGETS}/ssa?force=true"),
            "application/merge-patch+json",
            "{}",
        )
        .await;
    assert_eq!(r.status, 422);
}

#[tokio::test]
async fn status_subresource_split() {
    let h = Harness::new().await;
    let mut w = widget("st", 1);
    w["status"] = json!({"replicas": 9});
    let created = h.post(WIDGETS, &w).await.json();
    assert!(
        created.get("status").is_none() || created["status"].get("replicas").is_none_or(|r| r != 9),
        "status must be dropped on create: {created}"
    );
    let r = h
        .patch(
            &format!("{WIDGETS}/st/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":4,"selector":"app=x"},"spec":{"replicas":100}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let o = r.json();
    assert_eq!(o["status"]["replicas"], 4);
    assert_eq!(o["spec"]["replicas"], 1);
    assert_eq!(o["metadata"]["generation"], 1);
    let r = h
        .patch(
            &format!("{WIDGETS}/st"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":0},"spec":{"replicas":2}}"#,
        )
        .await;
    let o = r.json();
    assert_eq!(o["status"]["replicas"], 4);
    assert_eq!(o["metadata"]["generation"], 2);
    let r = h.get(&format!("{WIDGETS}/st/status")).await;
    assert_eq!(r.json()["status"]["replicas"], 4);
}

#[tokio::test]
async fn scale_subresource() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("sc", 2)).await;
    let r = h.get(&format!("{WIDGETS}/sc/scale")).await;
    assert_eq!(r.status, 200);
    let s = r.json();
    assert_eq!(s["kind"], "Scale");
    assert_eq!(s["apiVersion"], "autoscaling/v1");
    assert_eq!(s["spec"]["replicas"], 2);
    let r = h
        .patch(
            &format!("{WIDGETS}/sc/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":3}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"]["replicas"], 3);
    assert_eq!(
        h.get(&format!("{WIDGETS}/sc")).await.json()["spec"]["replicas"],
        3
    );
    let mut scale = r.json();
    scale["spec"]["replicas"] = json!(5);
    let r = h.put(&format!("{WIDGETS}/sc/scale"), &scale).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["spec"]["replicas"], 5);
    let r = h.put(&format!("{WIDGETS}/sc/scale"), &scale).await;
    assert_eq!(r.status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_deletion_removes_contents() {
    let h = Harness::new().await;
    let r = h
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"]["phase"], "Active");
    let r = h
        .post(
            "/apis/example.dev/v1/namespaces/doomed/widgets",
            &widget("inside", 1),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = h.delete("/api/v1/namespaces/doomed").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"]["phase"], "Terminating");
    let r = h
        .post(
            "/apis/example.dev/v1/namespaces/doomed/widgets",
            &widget("late", 1),
        )
        .await;
    assert!(r.status == 403 || r.status == 404, "{}", r.status);
    for _ in 0..50 {
        if h.get("/api/v1/namespaces/doomed").await.status == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(h.get("/api/v1/namespaces/doomed").await.status, 404);
    assert_eq!(
        h.get("/apis/example.dev/v1/namespaces/doomed/widgets/inside")
            .await
            .status,
        404
    );
    assert_eq!(h.get("/api/v1/namespaces/default").await.status, 200);
}

#[tokio::test]
async fn review_kinds() {
    let h = Harness::new().await;
    let r = h.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": "get", "resource": "widgets", "group": "example.dev"}}})).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"]["allowed"], true);
    let r = h
        .post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"]["userInfo"]["username"], "admin");
    let r = h
        .get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .await;
    assert!(r.status == 405 || r.status == 404, "{}", r.status);
}

#[tokio::test]
async fn events_and_delete_collection() {
    let h = Harness::new().await;
    for i in 0..3 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("dc{i}"), "labels": {"x": "y"}}});
        h.post("/api/v1/namespaces/default/configmaps", &cm).await;
    }
    let r = h
        .delete("/api/v1/namespaces/default/configmaps?labelSelector=x%3Dy")
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        h.get("/api/v1/namespaces/default/configmaps").await.json()["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[tokio::test]
async fn events_are_created_with_field_selectors() {
    let h = Harness::new().await;
    let ev = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "involvedObject": {"kind": "Widget", "name": "w1", "namespace": "default"}, "reason": "Scaled", "message": "scaled", "type": "Normal"});
    let r = h.post("/api/v1/namespaces/default/events", &ev).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = h.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dw1,type%3DNormal").await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 1);
    let r = h
        .get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dother")
        .await;
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn verbs_a_kind_does_not_serve_are_405() {
    let h = Harness::new().await;
    let r = h.delete("/api/v1/namespaces").await;
    assert_eq!(r.status, 405, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "MethodNotAllowed");
}
