//! Admission of custom resources against the real binary: a mutating webhook's patch lands on
//! an object of a CRD's kind and its review names the CRD's group, version, kind and resource;
//! a validating webhook with a match condition denies one; a ValidatingAdmissionPolicy over the
//! CRD's schema denies another with kube-apiserver's message. The webhooks are served here on
//! loopback with their own CA.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use common::admission::{Fixture, GROUP, create_cached};
use common::send_json as send;
use common::webhook_server;
use serde_json::{Value, json};

/// Answers an AdmissionReview by path: `/replicas` sets `spec.replicas` to 7 with a JSON patch,
/// `/deny` denies, anything else allows.
fn answer(path: &str, review: &Value) -> Vec<u8> {
    let uid = review["request"]["uid"].as_str().unwrap_or("");
    let response = match path {
        "/replicas" => {
            let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 7}]);
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
                   "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
        }
        "/deny" => json!({"uid": uid, "allowed": false,
                          "status": {"code": 403, "message": "configmaps named deny-* are not allowed"}}),
        _ => json!({"uid": uid, "allowed": true}),
    };
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": response}),
    )
    .unwrap_or_default()
}

/// Creates a webhook configuration (`plural` of admissionregistration.k8s.io/v1) and waits
/// until the watch cache has it.
async fn configure(f: &Fixture, plural: &str, name: &str, hooks: Vec<Value>) {
    let body = json!({"metadata": {"name": name}, "webhooks": hooks});
    create_cached(&f.server, &f.client, &format!("{GROUP}/{plural}"), body).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_and_policies_admit_custom_resources() {
    let f = Fixture::start(&[]);
    let w = webhook_server::start(
        "webhook-ca",
        Arc::new(|path: String, review: Value| Box::pin(async move { answer(&path, &review) })),
    )
    .await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.hooks.example.dev"},
        "spec": {"group": "hooks.example.dev", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "replicas": {"type": "integer"},
                                       "size": {"type": "string"}}}}}}}]}});
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(crd),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let collection = f
        .server
        .url("/apis/hooks.example.dev/v1/namespaces/default/gadgets");
    common::tls::wait_until("the Gadgets are served", || async {
        send(&f.client, reqwest::Method::GET, collection.clone(), None)
            .await
            .0
            == 200
    })
    .await;
    let gadget_rules = json!([{"operations": ["CREATE"], "apiGroups": ["hooks.example.dev"],
                               "apiVersions": ["v1"], "resources": ["gadgets"]}]);
    let ca = base64::engine::general_purpose::STANDARD.encode(&w.ca);
    configure(
        &f,
        "mutatingwebhookconfigurations",
        "gadget-replicas",
        vec![json!({
            "name": "replicas.hooks.example.dev",
            "clientConfig": {"url": format!("{}/replicas", w.url), "caBundle": ca},
            "rules": gadget_rules, "sideEffects": "None", "admissionReviewVersions": ["v1"],
        })],
    )
    .await;
    configure(
        &f,
        "validatingwebhookconfigurations",
        "gadget-deny",
        vec![json!({
            "name": "deny.hooks.example.dev",
            "clientConfig": {"url": format!("{}/deny", w.url), "caBundle": ca},
            "rules": gadget_rules, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "matchConditions": [{"name": "deny-prefix",
                                 "expression": "object.metadata.name.startsWith('deny-')"}],
        })],
    )
    .await;
    create_cached(
        &f.server,
        &f.client,
        &format!("{GROUP}/validatingadmissionpolicies"),
        json!({"metadata": {"name": "no-huge"},
               "spec": {"matchConstraints": {"resourceRules": gadget_rules},
                        "validations": [{"expression": "object.spec.size != 'huge'",
                                         "message": "huge gadgets are not allowed"}]}}),
    )
    .await;
    create_cached(
        &f.server,
        &f.client,
        &format!("{GROUP}/validatingadmissionpolicybindings"),
        json!({"metadata": {"name": "no-huge-binding"},
               "spec": {"policyName": "no-huge", "validationActions": ["Deny"]}}),
    )
    .await;
    let gadget = |name: &str, size: &str| {
        json!({"apiVersion": "hooks.example.dev/v1", "kind": "Gadget",
               "metadata": {"name": name}, "spec": {"replicas": 1, "size": size}})
    };

    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        collection.clone(),
        Some(gadget("g1", "small")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["spec"]["replicas"], 7, "the webhook's patch: {body}");
    let seen = w.seen.on("/replicas");
    let request = &seen.last().expect("the mutating webhook was called")["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "hooks.example.dev", "version": "v1", "kind": "Gadget"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "hooks.example.dev", "version": "v1", "resource": "gadgets"})
    );
    assert_eq!(request["object"]["spec"]["size"], "small");

    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        collection.clone(),
        Some(gadget("deny-1", "small")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"deny.hooks.example.dev\" denied the request: configmaps named deny-* are not allowed"
    );

    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        collection.clone(),
        Some(gadget("g2", "huge")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'no-huge' with binding 'no-huge-binding' denied request: huge gadgets are not allowed"
    );
    let (code, body, _) = send(&f.client, reqwest::Method::GET, collection, None).await;
    assert_eq!(code, 200, "{body}");
    let names: Vec<&str> = body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["g1"], "only the admitted Gadget was stored");
}
