//! Audit against the real binary: `--audit-policy-file` levels, events for each stage with one
//! `auditID` equal to the `Audit-Id` header, `ResponseStarted` for a watch, and rotation by
//! `--audit-log-maxsize`/`--audit-log-maxbackup`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Server;
use serde_json::Value;

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
  - level: None
    resources:
      - group: ""
        resources: ["secrets"]
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
"#;

/// Starts a server with `policy` and a log in a fresh directory; returns it with the log path.
fn start(policy: &str, extra: &[&str]) -> (Server, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy_file = dir.path().join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap_or_else(|e| panic!("{e}"));
    let log = dir.path().join("logs").join("audit.log");
    let mut args = vec![
        format!("--audit-policy-file={}", policy_file.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (Server::start(&args), dir, log)
}

/// The events in the log.
fn read_events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The events of one audit id, once `pred` holds for them (the writer thread writes them
/// shortly after the response); panics with what was written if it never does.
fn events_of(log: &Path, id: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events: Vec<Value> = read_events(log)
            .into_iter()
            .filter(|e| e["auditID"] == id)
            .collect();
        if pred(&events) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "events of {id} never matched: {events:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap_or(""))
        .collect()
}

fn audit_id(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no Audit-Id header: {:?}", resp.headers()))
        .to_string()
}

#[tokio::test]
async fn policy_levels_stages_and_audit_ids() {
    let (server, _dir, log) = start(POLICY, &[]);
    let admin = server.admin();

    // RequestResponse: both bodies, managedFields omitted.
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "audited", "namespace": "default"},
        "data": {"k": "v"}
    });
    let resp = admin
        .post(server.url("/api/v1/namespaces/default/configmaps?fieldManager=audit-test"))
        .header("User-Agent", "audit-test/1.0")
        .json(&cm)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let id = audit_id(&resp);
    let events = events_of(&log, &id, |e| e.len() >= 2);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    let done = &events[1];
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["verb"], "create");
    assert_eq!(
        done["requestURI"],
        "/api/v1/namespaces/default/configmaps?fieldManager=audit-test"
    );
    assert_eq!(done["user"]["username"], "admin");
    assert_eq!(done["userAgent"], "audit-test/1.0");
    assert_eq!(done["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    assert_eq!(
        done["objectRef"],
        serde_json::json!({
            "resource": "configmaps", "namespace": "default", "name": "audited", "apiVersion": "v1"
        })
    );
    assert_eq!(
        done["responseStatus"],
        serde_json::json!({"metadata": {}, "code": 201})
    );
    assert_eq!(done["requestObject"]["data"], serde_json::json!({"k": "v"}));
    assert_eq!(done["responseObject"]["metadata"]["name"], "audited");
    assert!(
        done["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "omitManagedFields: {done}"
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(events[0].get("responseStatus").is_none());
    assert!(events[0].get("requestObject").is_none());

    // An update's objectRef gets the uid and resourceVersion of the object sent.
    let mut updated = done["responseObject"].clone();
    updated["data"]["k"] = Value::from("w");
    let resp = admin
        .put(server.url("/api/v1/namespaces/default/configmaps/audited"))
        .json(&updated)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let id = audit_id(&resp);
    let events = events_of(&log, &id, |e| e.len() >= 2);
    assert_eq!(events[1]["verb"], "update");
    assert_eq!(
        events[1]["objectRef"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
    assert_eq!(events[1]["objectRef"]["uid"], updated["metadata"]["uid"]);

    // A client's Audit-ID is kept; a failure records its Status.
    let resp = admin
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .header("Audit-ID", "client-chosen-id")
        .json(&cm)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 409);
    assert_eq!(audit_id(&resp), "client-chosen-id");
    let events = events_of(&log, "client-chosen-id", |e| e.len() >= 2);
    let status = &events[1]["responseStatus"];
    assert_eq!(status["code"], 409);
    assert_eq!(status["reason"], "AlreadyExists");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["message"], "configmaps \"audited\" already exists");

    // Metadata: no bodies.
    let widget = serde_json::json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"replicas": 1}
    });
    let resp = admin
        .post(server.url("/apis/example.dev/v1/namespaces/default/widgets"))
        .json(&widget)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let id = audit_id(&resp);
    let events = events_of(&log, &id, |e| e.len() >= 2);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(events[1]["level"], "Metadata");
    assert_eq!(events[1]["objectRef"]["apiGroup"], "example.dev");
    assert_eq!(
        events[1]["objectRef"]["name"], "w1",
        "the name of a created object comes from its body"
    );
    assert!(
        events[0]["objectRef"].get("name").is_none(),
        "not known when the request is received"
    );
    assert!(events[1].get("requestObject").is_none(), "{}", events[1]);
    assert!(events[1].get("responseObject").is_none(), "{}", events[1]);

    // None: nothing, though the response still has an audit id.
    let resp = admin
        .post(server.url("/api/v1/namespaces/default/secrets"))
        .json(&serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s1", "namespace": "default"}
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let secret_id = audit_id(&resp);

    // A watch: RequestReceived, ResponseStarted, then ResponseComplete when it ends.
    let resp = admin
        .get(
            server
                .url("/apis/example.dev/v1/namespaces/default/widgets?watch=true&timeoutSeconds=1"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let watch_id = audit_id(&resp);
    let _ = resp.bytes().await;
    let events = events_of(&log, &watch_id, |e| e.len() >= 3);
    assert_eq!(
        stages(&events),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(events[0]["verb"], "watch");
    assert_eq!(events[1]["responseStatus"]["code"], 200);

    // Health probes and the secret were never recorded; every event has a known stage.
    let all = read_events(&log);
    assert!(all.iter().all(|e| e["auditID"] != secret_id.as_str()));
    assert!(
        all.iter().all(|e| !e["requestURI"]
            .as_str()
            .unwrap_or("")
            .starts_with("/readyz")),
        "readyz is at level None"
    );
    for e in &all {
        let stamp = e["stageTimestamp"].as_str().unwrap_or("");
        assert_eq!(stamp.len(), "2026-01-02T03:04:05.123456Z".len(), "{e}");
    }
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(field: u64, data: &[u8], out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

/// `k8s\0` + `runtime.Unknown{typeMeta{v1, ConfigMap}, ConfigMap{metadata{name}, data{k: v}}}`.
fn configmap_protobuf(name: &str) -> Vec<u8> {
    let mut meta = Vec::new();
    bytes_field(1, name.as_bytes(), &mut meta);
    let mut entry = Vec::new();
    bytes_field(1, b"k", &mut entry);
    bytes_field(2, b"v", &mut entry);
    let mut cm = Vec::new();
    bytes_field(1, &meta, &mut cm);
    bytes_field(2, &entry, &mut cm);
    let mut type_meta = Vec::new();
    bytes_field(1, b"v1", &mut type_meta);
    bytes_field(2, b"ConfigMap", &mut type_meta);
    let mut out = b"k8s\0".to_vec();
    bytes_field(1, &type_meta, &mut out);
    bytes_field(2, &cm, &mut out);
    out
}

#[tokio::test]
async fn protobuf_bodies_are_recorded_as_their_json() {
    let (server, _dir, log) = start(POLICY, &[]);
    let resp = server
        .admin()
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .header("Accept", "application/vnd.kubernetes.protobuf")
        .body(configmap_protobuf("from-protobuf"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let id = audit_id(&resp);
    let events = events_of(&log, &id, |e| e.len() >= 2);
    let done = &events[1];
    assert_eq!(done["objectRef"]["name"], "from-protobuf");
    assert_eq!(done["requestObject"]["kind"], "ConfigMap");
    assert_eq!(done["requestObject"]["metadata"]["name"], "from-protobuf");
    assert_eq!(done["requestObject"]["data"], serde_json::json!({"k": "v"}));
    assert_eq!(
        done["responseObject"]["metadata"]["name"], "from-protobuf",
        "a protobuf response is recorded as its object's JSON"
    );
    assert!(done["responseObject"]["metadata"]["uid"].is_string());

    // A gzip-compressed response (over 128 KiB) is recorded decompressed.
    let admin = server.admin();
    let resp = admin
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .json(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big"},
            "data": {"v": "x".repeat(200 * 1024)}
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201);
    let resp = admin
        .get(server.url("/api/v1/namespaces/default/configmaps"))
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()
            .get("content-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("gzip")
    );
    let id = audit_id(&resp);
    let _ = resp.bytes().await;
    let events = events_of(&log, &id, |e| e.len() >= 2);
    let listed = &events[1]["responseObject"];
    assert_eq!(listed["kind"], "ConfigMapList", "{}", events[1]);
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn failed_authentication_is_recorded() {
    let (server, _dir, log) = start(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}"#,
        &["--anonymous-auth=false"],
    );
    let resp = server
        .anonymous()
        .get(server.url("/api/v1/namespaces"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 401);
    let id = audit_id(&resp);
    let events = events_of(&log, &id, |e| !e.is_empty());
    assert_eq!(stages(&events), ["ResponseStarted"]);
    assert_eq!(events[0]["responseStatus"]["code"], 401);
    assert_eq!(events[0]["user"], serde_json::json!({}));

    // The events of the last requests are in the log once the server has stopped.
    let resp = server
        .anonymous()
        .get(server.url("/api/v1/namespaces/default/configmaps"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let last = audit_id(&resp);
    let mut server = server;
    assert!(server.terminate(Duration::from_secs(30)).success());
    assert!(
        read_events(&log)
            .iter()
            .any(|e| e["auditID"] == last.as_str()),
        "the last event was not flushed"
    );
}

#[tokio::test]
async fn the_log_rotates_by_size_and_keeps_maxbackup_files() {
    let (server, dir, log) = start(
        POLICY,
        &["--audit-log-maxsize=1", "--audit-log-maxbackup=1"],
    );
    let admin = server.admin();
    // Each create records the 200 KB value twice (request and response): about 400 KB.
    let big = "x".repeat(200 * 1024);
    let mut last = String::new();
    for i in 0..8 {
        let resp = admin
            .post(server.url("/api/v1/namespaces/default/configmaps"))
            .json(&serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("big-{i}"), "namespace": "default"},
                "data": {"v": big}
            }))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.status().as_u16(), 201);
        last = audit_id(&resp);
    }
    events_of(&log, &last, |e| e.len() >= 2);
    let logs = dir.path().join("logs");
    let deadline = Instant::now() + Duration::from_secs(20);
    let names = loop {
        let mut names: Vec<String> = std::fs::read_dir(&logs)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if names.len() == 2 || Instant::now() > deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(names.len(), 2, "{names:?}");
    let backup = &names[0];
    assert!(
        backup.starts_with("audit-") && backup.ends_with(".log") && backup.len() > 20,
        "{backup}"
    );
    for name in &names {
        let len = std::fs::metadata(logs.join(name))
            .map(|m| m.len())
            .unwrap_or_default();
        assert!(len <= 1024 * 1024, "{name} is {len} bytes");
        assert!(len > 0, "{name} is empty");
    }
}
