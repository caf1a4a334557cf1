//! Create-on-update: a `PUT` of a missing object creates it (201) for kinds marked
//! `create_on_update` (Kubernetes' `AllowCreateOnUpdate`: Event, Lease, the RBAC kinds) and is
//! 404 for the others (ConfigMap, custom kinds such as Widget).

mod rest_common;

use std::sync::Arc;

use http::{Method, Request};
use http_body_util::BodyExt;
use rest_common::*;
use serde_json::{Value, json};
use server::authn::UserInfo;
use server::authz::{Attributes, Authorization, Authorizer, AuthorizerRef};
use server::endpoints::serve;
use server::request_info::RequestInfo;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn lease(name: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "labels": {"a": "b"}},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}
    })
}

fn role(name: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    })
}

fn assert_created_meta(obj: &Value, manager_prefix: &str) {
    let meta = &obj["metadata"];
    assert!(meta["uid"].as_str().is_some_and(|u| u.len() == 36), "{obj}");
    assert!(
        meta["creationTimestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{obj}"
    );
    let rv: u64 = meta["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("resourceVersion: {obj}"));
    assert!(rv > 0);
    assert_eq!(meta["namespace"], "default");
    let mf = meta["managedFields"].as_array().expect("managedFields");
    assert_eq!(mf.len(), 1, "{obj}");
    assert_eq!(mf[0]["operation"], "Update");
    assert_eq!(mf[0]["fieldsType"], "FieldsV1");
    assert!(
        mf[0]["manager"]
            .as_str()
            .is_some_and(|m| m.starts_with(manager_prefix)),
        "{obj}"
    );
}

#[tokio::test]
async fn put_of_a_missing_lease_creates_it() {
    let h = Harness::new().await;
    let r = h
        .put(&format!("{LEASES}/l1?fieldManager=tester"), &lease("l1"))
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_eq!(created["kind"], "Lease");
    assert_eq!(created["spec"]["holderIdentity"], "me");
    assert_eq!(created["metadata"]["labels"]["a"], "b");
    assert!(created["metadata"].get("generation").is_none(), "{created}");
    assert_created_meta(&created, "tester");
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:holderIdentity"],
        json!({})
    );

    let got = h.get(&format!("{LEASES}/l1")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json(), created);

    // The same PUT again updates the object it created: 200, same uid.
    let mut again = created.clone();
    again["spec"]["holderIdentity"] = json!("you");
    let r = h.put(&format!("{LEASES}/l1"), &again).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(r.json()["spec"]["holderIdentity"], "you");
}

#[tokio::test]
async fn put_of_a_missing_role_creates_it() {
    let h = Harness::new().await;
    let r = h.put(&format!("{ROLES}/r1"), &role("r1")).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_eq!(created["rules"][0]["verbs"], json!(["get"]));
    assert_created_meta(&created, "");
    let got = h.get(&format!("{ROLES}/r1")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["metadata"]["uid"], created["metadata"]["uid"]);
}

#[tokio::test]
async fn put_create_ignores_a_resource_version_in_the_body() {
    let h = Harness::new().await;
    let mut body = lease("l2");
    body["metadata"]["resourceVersion"] = json!("12345");
    let r = h.put(&format!("{LEASES}/l2"), &body).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_ne!(r.json()["metadata"]["resourceVersion"], "12345");
    assert_eq!(h.get(&format!("{LEASES}/l2")).await.status, 200);
}

#[tokio::test]
async fn put_create_with_a_uid_is_a_failed_precondition() {
    let h = Harness::new().await;
    let mut body = lease("l3");
    body["metadata"]["uid"] = json!("0b8f1e2a-0000-4000-8000-000000000000");
    let r = h.put(&format!("{LEASES}/l3"), &body).await;
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"l3\": Precondition failed: UID in precondition: 0b8f1e2a-0000-4000-8000-000000000000, UID in object meta: "
    );
    assert_eq!(h.get(&format!("{LEASES}/l3")).await.status, 404);
}

#[tokio::test]
async fn dry_run_put_create_answers_201_and_stores_nothing() {
    let h = Harness::new().await;
    let r = h
        .put(&format!("{LEASES}/l4?dryRun=All"), &lease("l4"))
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["metadata"]["uid"].is_string());
    assert_eq!(h.get(&format!("{LEASES}/l4")).await.status, 404);
}

#[tokio::test]
async fn put_create_is_validated_as_a_create() {
    let h = Harness::new().await;
    let mut body = lease("l5");
    body["spec"]["leaseDurationSeconds"] = json!(0);
    let r = h.put(&format!("{LEASES}/l5"), &body).await;
    assert_eq!(r.status, 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "Invalid");
    assert_eq!(h.get(&format!("{LEASES}/l5")).await.status, 404);
}

#[tokio::test]
async fn put_of_a_missing_event_creates_it() {
    let h = Harness::new().await;
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started",
        "message": "started"
    });
    let r = h.put("/api/v1/namespaces/default/events/e1", &event).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_created_meta(&r.json(), "");
}

#[tokio::test]
async fn put_of_a_missing_configmap_or_widget_is_404() {
    let h = Harness::new().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v"}});
    let r = h.put(&format!("{CONFIGMAPS}/c1"), &cm).await;
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
    let s = r.json();
    assert_eq!(s["reason"], "NotFound");
    assert_eq!(s["message"], "configmaps \"c1\" not found");
    assert_eq!(h.get(&format!("{CONFIGMAPS}/c1")).await.status, 404);

    let r = h.put(&format!("{WIDGETS}/w1"), &widget("w1", 1)).await;
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["message"], "widgets.example.dev \"w1\" not found");
    assert_eq!(h.get(&format!("{WIDGETS}/w1")).await.status, 404);

    // `/status` never creates.
    let r = h
        .put(&format!("{WIDGETS}/w1/status"), &widget("w1", 1))
        .await;
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn put_create_into_a_missing_namespace_is_404_as_for_post() {
    let h = Harness::new().await;
    let uri = "/apis/coordination.k8s.io/v1/namespaces/nope/leases";
    let post = h.post(uri, &lease("l6")).await;
    let put = h.put(&format!("{uri}/l6"), &lease("l6")).await;
    assert_eq!(put.status, 404, "{}", String::from_utf8_lossy(&put.body));
    assert_eq!(post.status, 404);
    let (p, q) = (post.json(), put.json());
    assert_eq!(q["message"], "namespaces \"nope\" not found");
    assert_eq!(q["details"]["kind"], "namespaces");
    assert_eq!(q["message"], p["message"]);
    assert_eq!(q["details"], p["details"]);
}

/// Allows `update` of anything and nothing else.
struct UpdateOnly;

impl Authorizer for UpdateOnly {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        if attributes.verb == "update" {
            Authorization::allow("")
        } else {
            Authorization::no_opinion()
        }
    }
}

#[tokio::test]
async fn put_create_needs_create_permission() {
    let h = Harness::new().await;
    let uri = format!("{LEASES}/l7");
    let method = Method::PUT;
    let info = RequestInfo::parse(&method, &uri, "").expect("request info");
    let mut req = Request::builder()
        .method(method)
        .uri(&uri)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            serde_json::to_vec(&lease("l7")).unwrap(),
        ))
        .expect("request");
    req.extensions_mut().insert(info);
    req.extensions_mut().insert(Arc::new(UserInfo {
        name: "bob".into(),
        uid: String::new(),
        groups: vec!["system:authenticated".into()],
        extra: Default::default(),
    }));
    req.extensions_mut()
        .insert(AuthorizerRef(Arc::new(UpdateOnly)));
    let resp = serve(h.ctx.clone(), req).await;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(
        s["message"],
        "leases.coordination.k8s.io \"l7\" is forbidden: "
    );
    assert_eq!(h.get(&uri).await.status, 404);
}

/// Kubernetes' Lease strategy does not allow unconditional updates: an existing Lease is only
/// replaced by a PUT that names the resourceVersion it read (leader election relies on it).
#[tokio::test]
async fn an_existing_lease_needs_a_resource_version_to_be_replaced() {
    let h = Harness::new().await;
    let r = h.put(&format!("{LEASES}/l7"), &lease("l7")).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = h.put(&format!("{LEASES}/l7"), &lease("l7")).await;
    assert_eq!(r.status, 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "Lease.coordination.k8s.io \"l7\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
}
