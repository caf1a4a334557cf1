//! Tests of impersonation and audit in the assembled chain (the router of `tests.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use http::StatusCode;
use serde_json::Value;

use super::tests::{ADMIN, app, app_with, call, req, status_json};
use crate::audit::log::{LogCounters, LogOptions};
use crate::audit::policy::Policy;
use crate::audit::{AuditOptions, Auditor};

const PODS: &str = "/api/v1/namespaces/default/pods";
/// A path anyone may read (`system:public-info-viewer` grants it to every user) that answers
/// with the user the handler sees.
const WHOAMI: &str = "/version/";

fn impersonating(user: &str, headers: &[(&str, &str)]) -> http::Request<Body> {
    impersonating_at(PODS, user, headers)
}

fn impersonating_at(path: &str, user: &str, headers: &[(&str, &str)]) -> http::Request<Body> {
    let mut r = req("GET", path, Some(user), Body::empty());
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
            http::HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")),
        );
    }
    r
}

async fn seen(user: &str, headers: &[(&str, &str)]) -> (StatusCode, Value) {
    let (code, body) = call(app(true), impersonating_at(WHOAMI, user, headers)).await;
    (code, status_json(&body))
}

#[tokio::test]
async fn masters_impersonate_users_groups_uids_and_extras() {
    let (code, v) = seen(
        ADMIN,
        &[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-Example.com%2fTeam", "a"),
        ],
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["name"], "jane");
    assert_eq!(v["uid"], "u-1");
    assert_eq!(
        v["groups"],
        serde_json::json!(["devs", "ops", "system:authenticated"])
    );
    assert_eq!(v["extra"]["scopes"], serde_json::json!(["view", "edit"]));
    assert_eq!(v["extra"]["example.com/team"], serde_json::json!(["a"]));
    assert_eq!(v["real"], "admin");
    assert_eq!(v["leaked"], false);

    let (_, v) = seen(
        ADMIN,
        &[("Impersonate-User", "system:serviceaccount:team:builder")],
    )
    .await;
    assert_eq!(v["name"], "system:serviceaccount:team:builder", "{v}");
    assert_eq!(
        v["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let (_, v) = seen(ADMIN, &[("Impersonate-User", "system:anonymous")]).await;
    assert_eq!(v["groups"], serde_json::json!(["system:unauthenticated"]));
    let (_, v) = seen(
        ADMIN,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:unauthenticated"),
        ],
    )
    .await;
    assert_eq!(v["groups"], serde_json::json!(["system:unauthenticated"]));
    let (_, v) = seen(ADMIN, &[]).await;
    assert_eq!(
        (v["name"].as_str(), &v["real"]),
        (Some("admin"), &Value::Null)
    );
}

#[tokio::test]
async fn impersonation_is_authorized_per_attribute() {
    // "jane" may do anything (the test authorizer); "joe" nothing.
    let (code, v) = seen(
        "jane",
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
    )
    .await;
    assert_eq!((code, &v["name"]), (StatusCode::OK, &Value::from("bob")));
    let (code, v) = seen("joe", &[("Impersonate-User", "jane")]).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        v["message"],
        "users \"jane\" is forbidden: User \"joe\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    assert_eq!(v["details"]["kind"], "users");
    let (code, v) = seen(
        "joe",
        &[("Impersonate-User", "system:serviceaccount:team:builder")],
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        v["message"],
        "serviceaccounts \"builder\" is forbidden: User \"joe\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"team\""
    );
    // The impersonated user is authorized for the request itself: "joe" may not list pods.
    let (code, body) = call(
        app(true),
        impersonating(ADMIN, &[("Impersonate-User", "joe")]),
    )
    .await;
    let v = status_json(&body);
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        v["message"],
        "pods is forbidden: User \"joe\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
}

#[tokio::test]
async fn groups_extras_or_uid_without_a_user_are_400() {
    let (code, v) = seen(ADMIN, &[("Impersonate-Group", "devs")]).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(v["reason"], "BadRequest");
    assert_eq!(
        v["message"],
        "requested [{Group  devs    }] without impersonating a user"
    );
    let (code, v) = seen(ADMIN, &[("Impersonate-Uid", "u-1")]).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        v["message"],
        "requested [{UID  u-1  authentication.k8s.io/v1  }] without impersonating a user"
    );
    let (code, _) = seen(ADMIN, &[("Impersonate-Extra-Scopes", "x")]).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
}

/// An auditor writing to a file in a fresh directory.
fn auditor(policy: &str) -> (tempfile::TempDir, std::path::PathBuf, Arc<Auditor>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("audit.log");
    let auditor = Auditor::start(
        AuditOptions {
            policy: Policy::parse(policy).unwrap_or_else(|e| panic!("{e:?}")),
            log: LogOptions {
                path: path.clone(),
                max_size_mb: 0,
                max_backups: 0,
                max_age_days: 0,
            },
        },
        LogCounters::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (dir, path, Arc::new(auditor))
}

/// The events of the log once it holds `n` lines (the writer thread writes asynchronously).
fn events(path: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

const REQUEST_POLICY: &str = r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy",
  "rules":[{"level":"None","nonResourceURLs":["/healthz*"]},{"level":"Request"}]}"#;

#[tokio::test]
async fn audit_records_stages_users_and_bodies() {
    let (_dir, path, auditor) = auditor(REQUEST_POLICY);
    let app = app_with(true, Some(auditor));
    let resp = tower::ServiceExt::oneshot(
        app.clone(),
        impersonating(ADMIN, &[("Impersonate-User", "jane"), ("Audit-ID", "abc")]),
    )
    .await
    .unwrap_or_else(|e| match e {});
    assert_eq!(resp.headers()["audit-id"], "abc");
    drop(resp);
    let mut create = req(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Body::from(r#"{"kind":"ConfigMap","metadata":{"name":"c"}}"#),
    );
    create.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    let resp = tower::ServiceExt::oneshot(app.clone(), create)
        .await
        .unwrap_or_else(|e| match e {});
    let id = resp.headers()["audit-id"]
        .to_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(id.len(), 36, "a generated UUID: {id}");
    let _ = axum::body::to_bytes(resp.into_body(), usize::MAX).await;
    let (code, _) = call(app.clone(), req("GET", "/healthz", None, Body::empty())).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) = call(app.clone(), impersonating("joe", &[])).await;
    assert_eq!(code, StatusCode::FORBIDDEN);

    let lines = events(&path, 6);
    assert_eq!(lines.len(), 6, "{lines:#?}");
    let stages: Vec<(&str, &str)> = lines
        .iter()
        .map(|e| {
            (
                e["auditID"].as_str().unwrap_or(""),
                e["stage"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            ("abc", "RequestReceived"),
            ("abc", "ResponseComplete"),
            (id.as_str(), "RequestReceived"),
            (id.as_str(), "ResponseComplete"),
            (stages[4].0, "RequestReceived"),
            (stages[4].0, "ResponseComplete"),
        ]
    );
    let got = &lines[1];
    assert_eq!(got["kind"], "Event");
    assert_eq!(got["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(got["level"], "Request");
    assert_eq!(got["verb"], "list");
    assert_eq!(got["user"]["username"], "admin");
    assert_eq!(got["impersonatedUser"]["username"], "jane");
    assert!(lines[0].get("impersonatedUser").is_none());
    assert_eq!(
        got["objectRef"],
        serde_json::json!({"resource":"pods","namespace":"default","apiVersion":"v1"})
    );
    assert_eq!(
        got["responseStatus"],
        serde_json::json!({"metadata":{},"code":200})
    );
    assert_eq!(got["annotations"]["authorization.k8s.io/decision"], "allow");
    let created = &lines[3];
    assert_eq!(created["verb"], "create");
    assert_eq!(created["requestObject"]["metadata"]["name"], "c");
    assert!(
        created.get("responseObject").is_none(),
        "Request level: no response"
    );
    let denied = &lines[5];
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(denied["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        denied["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    let stamp = denied["stageTimestamp"].as_str().unwrap_or("");
    assert_eq!(stamp.len(), "2026-01-02T03:04:05.123456Z".len(), "{stamp}");
}

#[tokio::test]
async fn audit_records_panics_and_failed_authentication() {
    let (_dir, path, auditor) = auditor(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["RequestReceived"],
            "rules":[{"level":"Metadata"}]}"#,
    );
    let app = app_with(false, Some(auditor));
    let (code, _) = call(
        app.clone(),
        req("GET", "/api/v1/configmaps", Some(ADMIN), Body::empty()),
    )
    .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    let (code, _) = call(app.clone(), req("GET", PODS, None, Body::empty())).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let lines = events(&path, 2);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[0]["stage"], "Panic");
    assert_eq!(lines[0]["responseStatus"]["code"], 500);
    assert_eq!(
        lines[0]["responseStatus"]["message"],
        "APIServer panic'd: boom"
    );
    assert_eq!(lines[1]["stage"], "ResponseStarted");
    assert_eq!(lines[1]["responseStatus"]["code"], 401);
    assert_eq!(lines[1]["user"], serde_json::json!({}));
}

#[tokio::test]
async fn a_failed_authorization_is_audited_with_kubes_reason_and_no_decision() {
    let (_dir, path, auditor) = auditor(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["RequestReceived"],
            "rules":[{"level":"Metadata"}]}"#,
    );
    let app = app_with(false, Some(auditor));
    let (code, _) = call(app, req("GET", PODS, Some("carol"), Body::empty())).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    let lines = events(&path, 1);
    assert_eq!(lines[0]["responseStatus"]["code"], 500);
    assert_eq!(
        lines[0]["annotations"],
        serde_json::json!({"authorization.k8s.io/reason": "internal error"})
    );
}
