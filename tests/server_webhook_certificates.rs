//! Webhook serving certificates verified as kube-apiserver (Go's crypto/x509) verifies them,
//! against the real binary: a webhook whose certificate is self-signed with `CA:TRUE` (what
//! `openssl req -x509` makes) and given as its own `caBundle` is called and its answer applied;
//! the same webhook registered with another CA fails with crypto/tls' words.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use common::Server;
use common::send_json as send;
use common::webhook_server;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use serde_json::{Value, json};

/// Allows every request, adding the label `mutated: yes` on `/label`.
fn answer(path: String, review: Value) -> Vec<u8> {
    let uid = review["request"]["uid"].as_str().unwrap_or("").to_string();
    let mut response = json!({"uid": uid, "allowed": true});
    if path == "/label" {
        let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]);
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": response}),
    )
    .unwrap_or_default()
}

/// A self-signed serving certificate for 127.0.0.1 that is also a CA (`CA:TRUE`), and its key.
fn self_signed_ca_leaf() -> (String, String) {
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    params
        .distinguished_name
        .push(DnType::CommonName, "webhook");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
    (cert.pem(), key.serialize_pem())
}

fn hook(name: &str, url: &str, ca: &str, ns: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {
            "url": url,
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
        },
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"webhooks": ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    })
}

async fn namespace(server: &Server, client: &reqwest::Client, ns: &str) {
    let (code, body, _) = send(
        client,
        reqwest::Method::POST,
        server.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": ns, "labels": {"webhooks": ns}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

async fn configure(
    server: &Server,
    client: &reqwest::Client,
    plural: &str,
    name: &str,
    hook: Value,
) {
    let body = json!({"metadata": {"name": name}, "webhooks": [hook]});
    let path = format!("{}/{plural}", common::admission::GROUP);
    common::admission::create_cached(server, client, &path, body).await;
}

async fn create_cm(server: &Server, client: &reqwest::Client, ns: &str) -> (u16, Value) {
    let (code, body, _) = send(
        client,
        reqwest::Method::POST,
        server.url(&format!("/api/v1/namespaces/{ns}/configmaps")),
        Some(json!({"metadata": {"name": "c"}, "data": {"k": "v"}})),
    )
    .await;
    (code, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_ca_certificate_is_its_own_ca_bundle() {
    let server = Server::start(&[]);
    let client = server.admin();
    let (cert, key) = self_signed_ca_leaf();
    let webhooks = webhook_server::start_with_certificate(
        &cert,
        &key,
        &cert,
        Arc::new(|path: String, review: Value| Box::pin(async move { answer(path, review) })),
    )
    .await;

    // Trusted as its own bundle: called, and its patch applied.
    namespace(&server, &client, "own").await;
    let url = format!("{}/label", webhooks.url);
    configure(
        &server,
        &client,
        "mutatingwebhookconfigurations",
        "own",
        hook("label.example.dev", &url, &webhooks.ca, "own"),
    )
    .await;
    let (code, body) = create_cm(&server, &client, "own").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes", "{body}");
    assert_eq!(webhooks.seen.on("/label").len(), 1);

    // Registered with another CA: refused as Go refuses it, in the admission failure.
    namespace(&server, &client, "wrong").await;
    let other = common::tls::TestCa::new("another-ca");
    let url = format!("{}/allow", webhooks.url);
    configure(
        &server,
        &client,
        "validatingwebhookconfigurations",
        "wrong",
        hook("wrong-ca.example.dev", &url, &other.pem, "wrong"),
    )
    .await;
    let (code, body) = create_cm(&server, &client, "wrong").await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"wrong-ca.example.dev\": failed to \
             call webhook: Post \"{url}\": tls: failed to verify certificate: x509: certificate \
             signed by unknown authority"
        )
    );
    assert!(webhooks.seen.on("/allow").is_empty(), "never called");
}
