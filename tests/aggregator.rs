//! The aggregator on the real binary: `kubectl get apiservices` lists a local APIService for
//! every group the server serves (Available, reason `Local`), CRD groups come and go with
//! their CRDs, kube-aggregator's validation messages, an APIService naming a missing Service
//! is unavailable (`ServiceNotFound`) and answers 503 until it is deleted (404 again), and
//! one whose Service reaches a server on loopback (an `ExternalName` Service) is proxied with
//! the caller's identity and address (`X-Forwarded-*`), streams watches, and follows its
//! server down and up again.

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
async fn wait_for(
    server: &Server,
    path: &str,
    what: &str,
    check: impl Fn(u16, &Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (code, body) = get(server, path).await;
        if check(code, &body) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: last answer {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn available(body: &Value) -> Option<(String, String)> {
    let c = body["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?;
    Some((
        c["status"].as_str()?.to_string(),
        c["reason"].as_str().unwrap_or("").to_string(),
    ))
}

#[tokio::test]
async fn local_api_services_are_registered_for_every_served_group() {
    let server = Server::start(&[]);
    for name in [
        "v1.",
        "v1.apiregistration.k8s.io",
        "v1.rbac.authorization.k8s.io",
        "v1.apiextensions.k8s.io",
        "v1.example.dev",
    ] {
        let body = wait_for(
            &server,
            &format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}"),
            name,
            |c, b| c == 200 && available(b).is_some(),
        )
        .await;
        assert_eq!(
            available(&body),
            Some(("True".into(), "Local".into())),
            "{name}: {body}"
        );
        assert_eq!(
            body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
            "onstart"
        );
        assert!(body["spec"].get("service").is_none(), "{body}");
    }
    let core = get(&server, "/apis/apiregistration.k8s.io/v1/apiservices/v1.")
        .await
        .1;
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
    assert_eq!(core["spec"]["versionPriority"], 1);
    let rbac = get(
        &server,
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.rbac.authorization.k8s.io",
    )
    .await
    .1;
    assert_eq!(
        (
            rbac["spec"]["groupPriorityMinimum"].as_i64(),
            rbac["spec"]["versionPriority"].as_i64()
        ),
        (Some(17000), Some(15))
    );

    for kubectl in kubectls() {
        let out = server.kubectl(&kubectl, &["get", "apiservices"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}",
            kubectl.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let header: Vec<_> = text
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
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
    let body = wait_for(&server, path, "the CRD's APIService", |c, b| {
        c == 200 && available(b).is_some()
    })
    .await;
    assert_eq!(
        body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(
        (
            body["spec"]["groupPriorityMinimum"].as_i64(),
            body["spec"]["versionPriority"].as_i64()
        ),
        (Some(1000), Some(100))
    );
    assert_eq!(available(&body), Some(("True".into(), "Local".into())));
    let (code, body, _) = send_json(
        &server.admin(),
        Method::DELETE,
        server
            .url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.aggr.example.com"),
        None,
    )
    .await;
    assert!(code == 200 || code == 202, "{body}");
    wait_for(
        &server,
        path,
        "the APIService of the deleted CRD gone",
        |c, _| c == 404,
    )
    .await;
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
async fn a_missing_service_is_unavailable_and_answers_503_until_deleted() {
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
    assert_eq!(
        body["spec"]["service"]["port"], 443,
        "the port defaults to 443"
    );
    assert!(body["status"].get("conditions").is_none(), "{body}");
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com";
    let body = wait_for(&server, path, "the APIService checked", |c, b| {
        c == 200 && available(b).is_some()
    })
    .await;
    assert_eq!(
        available(&body),
        Some(("False".into(), "ServiceNotFound".into())),
        "{body}"
    );
    assert_eq!(
        body["status"]["conditions"][0]["message"],
        "service/api in \"wardle\" is not present"
    );

    let (code, status) = get(&server, group_path).await;
    assert_eq!(code, 503, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["message"], "service unavailable");

    let out = server.kubectl(
        &kubectls()[0],
        &["get", "apiservice", "v1alpha1.wardle.example.com"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("wardle/api") && text.contains("False (ServiceNotFound)"),
        "{text}"
    );

    // Other groups are untouched.
    assert_eq!(get(&server, "/api/v1/namespaces/default").await.0, 200);

    let (code, body, _) = send_json(&server.admin(), Method::DELETE, server.url(path), None).await;
    assert_eq!(code, 200, "{body}");
    wait_for(
        &server,
        group_path,
        "404 again after the APIService is deleted",
        |c, _| c == 404,
    )
    .await;
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn post(server: &Server, path: &str, body: Value) -> Value {
    let (code, answer, _) =
        send_json(&server.admin(), Method::POST, server.url(path), Some(body)).await;
    assert!(code == 201 || code == 200, "POST {path}: {code} {answer}");
    answer
}

#[tokio::test]
async fn a_remote_api_service_proxies_with_the_callers_identity_and_follows_its_server() {
    use common::aggregated_server::{AggregatedServer, Identity, STALL};

    let server = Server::start(&[]);
    let front_proxy_ca = String::from_utf8_lossy(&server.pem("front-proxy-ca.crt")).into_owned();
    let identity = Identity::new();
    let backend = AggregatedServer::start(0, &identity, &front_proxy_ca).await;
    let port = backend.port;
    post(
        &server,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "wardle"}}),
    )
    .await;
    // An ExternalName Service reaches a server on this machine (Endpoints refuse loopback).
    post(
        &server,
        "/api/v1/namespaces/wardle/services",
        json!({"metadata": {"name": "api"},
               "spec": {"type": "ExternalName", "externalName": "localhost"}}),
    )
    .await;
    post(
        &server,
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({"metadata": {"name": "v1alpha1.wardle.example.com"},
               "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                        "groupPriorityMinimum": 2000, "versionPriority": 200,
                        "caBundle": base64(identity.ca_pem.as_bytes()),
                        "service": {"namespace": "wardle", "name": "api", "port": port}}}),
    )
    .await;
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com";
    let is = |status: &'static str, reason: &'static str| {
        move |c: u16, b: &Value| c == 200 && available(b) == Some((status.into(), reason.into()))
    };
    wait_for(&server, path, "available", is("True", "Passed")).await;

    // The caller's identity reaches the aggregated server; forged identity headers do not.
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let resp = server
        .admin()
        .get(server.url(flunders))
        .header("X-Remote-User", "mallory")
        .header("X-Remote-Group", "forged")
        .header("X-Remote-Extra-Scopes", "all")
        .header("Audit-ID", "aggregated-audit-1")
        .header("X-Forwarded-For", "203.0.113.7")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let echoed: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(echoed["path"], flunders);
    let seen = backend
        .last(flunders)
        .unwrap_or_else(|| panic!("not proxied"));
    assert_eq!(
        seen.get("x-remote-user").map(|v| v.to_str().unwrap_or("")),
        Some("admin")
    );
    let groups: Vec<_> = seen
        .get_all("x-remote-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        groups.contains(&"system:masters") && !groups.contains(&"forged"),
        "{groups:?}"
    );
    assert!(seen.get("x-remote-extra-scopes").is_none());
    assert!(seen.get("authorization").is_none());
    assert_eq!(
        seen.get("audit-id").map(|v| v.to_str().unwrap_or("")),
        Some("aggregated-audit-1")
    );
    // The client's address is appended to X-Forwarded-For, and the X-Forwarded-* headers of
    // apimachinery's proxy transport say where the request went.
    let header = |name: &str| seen.get(name).map(|v| v.to_str().unwrap_or("").to_string());
    assert_eq!(
        header("x-forwarded-for").as_deref(),
        Some("203.0.113.7, 127.0.0.1")
    );
    assert_eq!(header("x-forwarded-uri").as_deref(), Some(flunders));
    assert_eq!(
        header("x-forwarded-host"),
        Some(format!("localhost:{port}"))
    );
    assert_eq!(header("x-forwarded-proto").as_deref(), Some("https"));

    // A watch is streamed: the first event arrives while the server holds the second back.
    let mut watch = server
        .admin()
        .get(server.url(&format!("{flunders}?watch=true")))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = tokio::time::timeout(Duration::from_secs(20), watch.chunk())
        .await
        .unwrap_or_else(|_| panic!("the first event was not streamed"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.as_deref(), Some(&b"{\"type\":\"ADDED\"}\n"[..]));
    backend.release.notify_one();
    let second = tokio::time::timeout(Duration::from_secs(20), watch.chunk())
        .await
        .unwrap_or_else(|_| panic!("no second event"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(second.as_deref(), Some(&b"{\"type\":\"MODIFIED\"}\n"[..]));

    // Discovery of the group/version has 5 s for its whole answer, as kube-aggregator gives
    // it; a resource request waits for its server as long as it takes.
    let gv = "/apis/wardle.example.com/v1alpha1";
    let started = Instant::now();
    let late_headers = async {
        let answer = get(&server, &format!("{gv}?stall=headers")).await;
        (answer, started.elapsed())
    };
    let late_body = async {
        let resp = server
            .admin()
            .get(server.url(&format!("{gv}?stall=body")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let code = resp.status().as_u16();
        (code, resp.bytes().await.is_err(), started.elapsed())
    };
    let slow_path = format!("{flunders}?stall=headers");
    let slow_resource = get(&server, &slow_path);
    let (((code, status), took), (body_code, cut, cut_after), (resource_code, resource)) =
        tokio::join!(late_headers, late_body, slow_resource);
    assert_eq!(
        (code, status["message"].as_str()),
        (
            503,
            Some("error trying to reach service: context deadline exceeded")
        ),
        "{status}"
    );
    // (The stand-in answers neither 503 nor a body that ends early: both are the deadline's.)
    let deadline = Duration::from_secs(5);
    assert!(took >= deadline, "the discovery answer came after {took:?}");
    assert_eq!(body_code, 200);
    assert!(cut, "a discovery body past the deadline was not cut");
    assert!(cut_after >= deadline, "cut after {cut_after:?}");
    assert_eq!(resource_code, 200, "{resource}");
    assert!(started.elapsed() >= STALL);

    // Stopped: 503, then Available=False with the discovery check's reason.
    backend.stop();
    let (code, _) = get(&server, flunders).await;
    assert_eq!(code, 503);
    let body = wait_for(
        &server,
        path,
        "unavailable",
        is("False", "FailedDiscoveryCheck"),
    )
    .await;
    let message = body["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(&format!(
            "https://localhost:{port}/apis/wardle.example.com/v1alpha1"
        )),
        "{message}"
    );
    let (code, status) = get(&server, flunders).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (503, Some("service unavailable")),
        "{status}"
    );
    assert_eq!(
        get(&server, "/api/v1/namespaces/wardle").await.0,
        200,
        "other groups stay whole"
    );

    // Started again: available again, and proxied.
    let _back = AggregatedServer::start(port, &identity, &front_proxy_ca).await;
    wait_for(&server, path, "available again", is("True", "Passed")).await;
    wait_for(&server, flunders, "proxied again", |c, _| c == 200).await;

    // Deleted: the group is no longer served.
    let (code, body, _) = send_json(&server.admin(), Method::DELETE, server.url(path), None).await;
    assert_eq!(code, 200, "{body}");
    wait_for(
        &server,
        flunders,
        "404 after the APIService is deleted",
        |c, _| c == 404,
    )
    .await;
}
