//! The aggregator on the real binary: `kubectl get apiservices` lists a local APIService for
//! every group the server serves (Available, reason `Local`), CRD groups come and go with
//! their CRDs, kube-aggregator's validation messages, and an APIService pointing at a Service
//! that cannot be reached is unavailable (`FailedDiscoveryCheck`) and answers 503 until it is
//! deleted (404 again).

mod common;

use std::time::{Duration, Instant};

use common::{Server, kubectls, send_json};
use reqwest::Method;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

async fn get(server: &Server, path: &str) -> (u16, Value) {
    let (code, body, _) = send_json(&server.admin(), Method::GET, server.url(path), None).await;
    (code, body)
}

/// Waits until `check` holds for the answer to GET `path`, failing with the last answer.
async fn wait_for(server: &Server, path: &str, what: &str, check: impl Fn(u16, &Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (code, body) = get(server, path).await;
        if check(code, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{what}: last answer {code} {body}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn available(body: &Value) -> Option<(String, String)> {
    let c = body["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?;
    Some((c["status"].as_str()?.to_string(), c["reason"].as_str().unwrap_or("").to_string()))
}

#[tokio::test]
async fn local_api_services_are_registered_for_every_served_group() {
    let server = Server::start(&[]);
    for name in ["v1.", "v1.apiregistration.k8s.io", "v1.rbac.authorization.k8s.io", "v1.apiextensions.k8s.io", "v1.example.dev"] {
        let body = wait_for(&server, &format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}"), name, |c, b| {
            c == 200 && available(b).is_some()
        })
        .await;
        assert_eq!(available(&body), Some(("True".into(), "Local".into())), "{name}: {body}");
        assert_eq!(body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"], "onstart");
        assert!(body["spec"].get("service").is_none(), "{body}");
    }
    let core = get(&server, "/apis/apiregistration.k8s.io/v1/apiservices/v1.").await.1;
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
    assert_eq!(core["spec"]["versionPriority"], 1);
    let rbac = get(&server, "/apis/apiregistration.k8s.io/v1/apiservices/v1.rbac.authorization.k8s.io").await.1;
    assert_eq!((rbac["spec"]["groupPriorityMinimum"].as_i64(), rbac["spec"]["versionPriority"].as_i64()), (Some(17000), Some(15)));

    for kubectl in kubectls() {
        let out = server.kubectl(&kubectl, &["get", "apiservices"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}: {}", kubectl.display(), String::from_utf8_lossy(&out.stderr));
        let header: Vec<_> = text.lines().next().unwrap_or_default().split_whitespace().collect();
        assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("v1.rbac.authorization.k8s.io "))
            .unwrap_or_else(|| panic!("no rbac row: {text}"));
        let cells: Vec<_> = row.split_whitespace().collect();
        assert_eq!(cells[1..3], ["Local", "True"], "{row}");
    }
}

#[tokio::test]
async fn crd_groups_come_and_go_with_their_crds() {
    let server = Server::start(&[]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.aggr.example.com"},
        "spec": {"group": "aggr.example.com", "scope": "Namespaced",
                 "names": {"plural": "gizmos", "kind": "Gizmo"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    });
    let (code, body, _) = send_json(
        &server.admin(),
        Method::POST,
        server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(crd),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1.aggr.example.com";
    let body = wait_for(&server, path, "the CRD's APIService", |c, b| c == 200 && available(b).is_some()).await;
    assert_eq!(body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"], "true");
    assert_eq!((body["spec"]["groupPriorityMinimum"].as_i64(), body["spec"]["versionPriority"].as_i64()), (Some(1000), Some(100)));
    assert_eq!(available(&body), Some(("True".into(), "Local".into())));
    let (code, body, _) = send_json(
        &server.admin(),
        Method::DELETE,
        server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.aggr.example.com"),
        None,
    )
    .await;
    assert!(code == 200 || code == 202, "{body}");
    wait_for(&server, path, "the APIService of the deleted CRD gone", |c, _| c == 404).await;
}

#[tokio::test]
async fn api_services_are_validated_as_kube_aggregator_validates_them() {
    let server = Server::start(&[]);
    let bad = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.wrong.example.com"},
        "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                 "groupPriorityMinimum": 30000, "versionPriority": 0,
                 "insecureSkipTLSVerify": true, "caBundle": "YWJj",
                 "service": {"namespace": "wardle", "name": "api"}}
    });
    let (code, body, _) = send_json(
        &server.admin(),
        Method::POST,
        server.url("/apis/apiregistration.k8s.io/v1/apiservices"),
        Some(bad),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    for part in [
        "metadata.name: Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\"",
        "spec.groupPriorityMinimum: Invalid value: 30000: must be positive and less than 20000",
        "spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
        "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
    ] {
        assert!(message.contains(part), "{part} not in {message}");
    }
}

#[tokio::test]
async fn an_unreachable_service_is_unavailable_and_answers_503_until_deleted() {
    let server = Server::start(&[]);
    let group_path = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    assert_eq!(get(&server, group_path).await.0, 404);
    let service = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1alpha1.wardle.example.com"},
        "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                 "groupPriorityMinimum": 2000, "versionPriority": 200,
                 "insecureSkipTLSVerify": true,
                 "service": {"namespace": "wardle", "name": "api"}}
    });
    let (code, body, _) = send_json(
        &server.admin(),
        Method::POST,
        server.url("/apis/apiregistration.k8s.io/v1/apiservices"),
        Some(service),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["spec"]["service"]["port"], 443, "the port defaults to 443");
    assert!(body["status"].get("conditions").is_none(), "{body}");
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com";
    let body = wait_for(&server, path, "the APIService checked", |c, b| c == 200 && available(b).is_some()).await;
    assert_eq!(available(&body), Some(("False".into(), "FailedDiscoveryCheck".into())), "{body}");
    let conditions = &body["status"]["conditions"][0];
    let message = conditions["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("failing or missing response from https://api.wardle.svc:443/apis/wardle.example.com/v1alpha1"), "{message}");

    let (code, status) = get(&server, group_path).await;
    assert_eq!(code, 503, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["message"], "service unavailable");

    let out = server.kubectl(&kubectls()[0], &["get", "apiservice", "v1alpha1.wardle.example.com"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wardle/api") && text.contains("False (FailedDiscoveryCheck)"), "{text}");

    // Other groups are untouched.
    assert_eq!(get(&server, "/api/v1/namespaces/default").await.0, 200);

    let (code, body, _) = send_json(&server.admin(), Method::DELETE, server.url(path), None).await;
    assert_eq!(code, 200, "{body}");
    wait_for(&server, group_path, "404 again after the APIService is deleted", |c, _| c == 404).await;
}
