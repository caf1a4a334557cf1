//! Admission webhooks against the real binary: a webhook server started here on loopback
//! with its own CA denies, mutates with a JSON patch, answers slowly, answers garbage or is
//! unreachable, under `failurePolicy` Fail and Ignore; selectors, match conditions,
//! `matchPolicy: Equivalent` across Widget versions, reinvocation, dry run, exemptions,
//! and kubectl printing the denial (custom resources: `crd_admission.rs`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use common::Server;
use common::send_json as send;
use common::webhook_server::{self, WebhookServer};
use serde_json::{Value, json};

/// The webhook server of these tests.
type Webhooks = WebhookServer;

fn allow(uid: &str) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "response": {"uid": uid, "allowed": true}})
}

/// Answers by path: `/allow`, `/deny`, `/label` (adds a label with a JSON patch), `/annotate`
/// (adds an annotation), `/slow`
/// (3 s), `/garbage`, `/huge` (4 MiB), `/warn` (allows with a warning), `/replicas` (sets
/// spec.replicas of a Widget to 7), `/audit` (allows with audit annotations).
async fn answer(path: &str, review: &Value) -> Vec<u8> {
    let uid = review["request"]["uid"].as_str().unwrap_or("").to_string();
    let patched = |ops: Value| {
        let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "response": {"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch}})
    };
    let v = match path {
        "/deny" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": false,
                                 "status": {"code": 403, "message": "configmaps named deny-* are not allowed"}}}),
        "/label" => {
            let has_labels = review["request"]["object"]["metadata"]["labels"].is_object();
            if has_labels {
                patched(json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]))
            } else {
                patched(
                    json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]),
                )
            }
        }
        "/annotate" => {
            if review["request"]["object"]["metadata"]["annotations"].is_object() {
                patched(
                    json!([{"op": "add", "path": "/metadata/annotations/annotated", "value": "yes"}]),
                )
            } else {
                patched(
                    json!([{"op": "add", "path": "/metadata/annotations", "value": {"annotated": "yes"}}]),
                )
            }
        }
        "/replicas" => patched(json!([{"op": "replace", "path": "/spec/replicas", "value": 7}])),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            allow(&uid)
        }
        "/garbage" => return b"this is not an admission review".to_vec(),
        "/huge" => return vec![b' '; 4 * 1024 * 1024],
        "/warn" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": true, "warnings": ["watch out"]}}),
        "/audit" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": true,
                                 "auditAnnotations": {"checked-by": "audit-hook", "verdict": "fine"}}}),
        _ => allow(&uid),
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

async fn start_webhooks() -> Webhooks {
    webhook_server::start(
        "webhook-ca",
        Arc::new(|path: String, review: Value| {
            Box::pin(async move { answer(&path, &review).await })
        }),
    )
    .await
}

/// A webhook entry for `path` on ConfigMap creates in namespaces labelled `webhooks=<ns>`.
fn hook(w: &Webhooks, name: &str, path: &str, ns: &str, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": {
            "url": format!("{}{path}", w.url),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&w.ca),
        },
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"webhooks": ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    });
    if let (Some(h), Some(extra)) = (h.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            h.insert(k.clone(), v.clone());
        }
    }
    h
}

struct Fixture {
    server: Server,
    client: reqwest::Client,
    webhooks: Webhooks,
}

impl Fixture {
    async fn new() -> Fixture {
        Self::with_args(&[]).await
    }

    async fn with_args(args: &[&str]) -> Fixture {
        let server = Server::start(args);
        let client = server.admin();
        let webhooks = start_webhooks().await;
        Fixture {
            server,
            client,
            webhooks,
        }
    }

    async fn namespace(&self, ns: &str) {
        let (code, body, _) = send(
            &self.client,
            reqwest::Method::POST,
            self.server.url("/api/v1/namespaces"),
            Some(json!({"metadata": {"name": ns, "labels": {"webhooks": ns}}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }

    async fn configure(&self, kind: &str, name: &str, hooks: Vec<Value>) {
        let plural = if kind == "Validating" {
            "validatingwebhookconfigurations"
        } else {
            "mutatingwebhookconfigurations"
        };
        let body = json!({"metadata": {"name": name}, "webhooks": hooks});
        let path = format!("{}/{plural}", common::admission::GROUP);
        common::admission::create_cached(&self.server, &self.client, &path, body).await;
    }

    async fn create_cm(&self, ns: &str, name: &str, query: &str) -> (u16, Value, Vec<String>) {
        send(
            &self.client,
            reqwest::Method::POST,
            self.server
                .url(&format!("/api/v1/namespaces/{ns}/configmaps{query}")),
            Some(json!({"metadata": {"name": name, "labels": {"app": "x"}}, "data": {"k": "v"}})),
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_webhooks_deny_and_fail_by_policy() {
    let f = Fixture::new().await;
    let w = &f.webhooks;
    f.namespace("vw").await;
    f.configure(
        "Validating",
        "policies",
        vec![
            hook(
                w,
                "deny.example.dev",
                "/deny",
                "vw",
                json!({"objectSelector": {"matchLabels": {"app": "x"}},
                       "matchConditions": [{"name": "deny-prefix",
                                            "expression": "object.metadata.name.startsWith('deny-')"}]}),
            ),
            hook(w, "warn.example.dev", "/warn", "vw", json!({})),
        ],
    )
    .await;

    // The denial, as Kubernetes words it, with the webhook's code.
    let (code, body, _) = f.create_cm("vw", "deny-me", "").await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"deny.example.dev\" denied the request: configmaps named deny-* are not allowed"
    );
    // matchConditions: other names are not sent to the denying webhook; the warning passes.
    let (code, body, warnings) = f.create_cm("vw", "fine", "").await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.iter().any(|w| w.contains("watch out")),
        "{warnings:?}"
    );
    let denied = w.seen.on("/deny");
    assert_eq!(denied.len(), 1, "only deny-me matched the condition");
    let request = &denied[0]["request"];
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "vw");
    assert_eq!(request["name"], "deny-me");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(request["object"]["apiVersion"], "v1");
    assert_eq!(request["object"]["kind"], "ConfigMap");
    assert_eq!(request["object"]["data"]["k"], "v");
    assert_eq!(request["userInfo"]["username"], "admin");
    // Dry run: webhooks without side effects are called with dryRun, and still deny.
    let (code, _, _) = f.create_cm("vw", "deny-dry", "?dryRun=All").await;
    assert_eq!(code, 403);
    assert_eq!(
        w.seen.on("/deny").last().unwrap()["request"]["dryRun"],
        true
    );
    // The namespace selector: another namespace is never sent.
    f.namespace("other").await;
    let before = w.seen.count();
    let (code, _, _) = f.create_cm("other", "deny-me", "").await;
    assert_eq!(code, 201);
    assert_eq!(w.seen.count(), before);

    // Calls and rejections are counted per webhook.
    let metrics = f
        .client
        .get(f.server.url("/metrics"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .text()
        .await
        .unwrap_or_default();
    let rejection = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_admission_webhook_rejection_total{")
                && l.contains("name=\"deny.example.dev\"")
        })
        .unwrap_or_else(|| panic!("no rejection series for deny.example.dev:\n{metrics}"));
    assert!(rejection.contains("rejection_code=\"403\""), "{rejection}");
    assert!(
        rejection.ends_with(" 2"),
        "two denials (one a dry run): {rejection}"
    );
    assert!(
        metrics.contains("apiserver_admission_webhook_admission_duration_seconds_count{name=\"warn.example.dev\",type=\"validating\",operation=\"CREATE\",rejected=\"false\"}"),
        "{metrics}"
    );

    // Unreachable, slow, garbage and huge answers under Fail: a 500 naming the webhook.
    for (ns, path, why) in [
        ("fail-refused", "UNREACHABLE", "failed to call webhook"),
        ("fail-slow", "/slow", "failed to call webhook"),
        (
            "fail-garbage",
            "/garbage",
            "received invalid webhook response",
        ),
        ("fail-huge", "/huge", "received invalid webhook response"),
    ] {
        f.namespace(ns).await;
        let mut h = hook(
            w,
            &format!("{ns}.example.dev"),
            path,
            ns,
            json!({"failurePolicy": "Fail"}),
        );
        if path == "UNREACHABLE" {
            // A port nothing listens on.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            h["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{port}/x"));
        }
        f.configure("Validating", ns, vec![h.clone()]).await;
        let (code, body, _) = f.create_cm(ns, "c", "").await;
        assert_eq!(code, 500, "{ns}: {body}");
        let message = body["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with(&format!(
                "Internal error occurred: failed calling webhook \"{ns}.example.dev\": {why}"
            )),
            "{ns}: {message}"
        );
        // The same webhook failing open lets the request through.
        f.namespace(&format!("{ns}-open")).await;
        let mut open = h.clone();
        open["name"] = json!(format!("{ns}-open.example.dev"));
        open["failurePolicy"] = json!("Ignore");
        open["namespaceSelector"] = json!({"matchLabels": {"webhooks": format!("{ns}-open")}});
        f.configure("Validating", &format!("{ns}-open"), vec![open])
            .await;
        let (code, body, _) = f.create_cm(&format!("{ns}-open"), "c", "").await;
        assert_eq!(code, 201, "{ns}-open: {body}");
    }

    // The configurations themselves are never sent to webhooks: a webhook denying
    // everything cannot keep anyone from deleting it.
    let mut all = hook(w, "deny-all.example.dev", "/deny", "vw", json!({}));
    all["rules"] = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]);
    all["namespaceSelector"] = json!({});
    f.configure("Validating", "deny-all", vec![all]).await;
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::DELETE,
        f.server
            .url("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny-all"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // Its removal takes effect once the watch cache has seen it.
    let cached = f.server.url(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny-all?resourceVersion=0",
    );
    common::tls::wait_until("the deletion reached the watch cache", || async {
        send(&f.client, reqwest::Method::GET, cached.clone(), None)
            .await
            .0
            == 404
    })
    .await;
    let (code, body, _) = f.create_cm("other", "after-delete", "").await;
    assert_eq!(code, 201, "{body}");
    // Every call was HTTP/1.1, though the webhook server offers HTTP/2.
    let versions = w.seen.versions();
    assert!(!versions.is_empty());
    assert!(
        versions.iter().all(|v| *v == hyper::Version::HTTP_11),
        "{versions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhooks_patch_reinvoke_and_match_equivalent_versions() {
    let f = Fixture::new().await;
    let w = &f.webhooks;
    f.namespace("mw").await;
    f.configure(
        "Mutating",
        "a-label",
        vec![hook(
            w,
            "label.example.dev",
            "/label",
            "mw",
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    let (code, body, _) = f.create_cm("mw", "m", "").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes", "{body}");
    assert_eq!(body["metadata"]["labels"]["app"], "x", "{body}");
    assert_eq!(
        w.seen.on("/label").len(),
        1,
        "no later change, no reinvocation"
    );

    // A second webhook, after the first by configuration name, changes the object: the
    // first (IfNeeded) is called once more, and finds nothing left to change.
    f.configure(
        "Mutating",
        "b-annotate",
        vec![hook(
            w,
            "annotate.example.dev",
            "/annotate",
            "mw",
            json!({}),
        )],
    )
    .await;
    let before = w.seen.on("/label").len();
    let (code, body, _) = f.create_cm("mw", "m2", "").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["metadata"]["annotations"]["annotated"], "yes",
        "{body}"
    );
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes", "{body}");
    assert_eq!(
        w.seen.on("/label").len() - before,
        2,
        "label.example.dev is reinvoked once after annotate.example.dev changed the object"
    );

    // matchPolicy Equivalent: a webhook registered for Widgets v1 is called for a v1alpha1
    // request, with the object in v1 and requestKind v1alpha1; its patch lands.
    f.configure(
        "Mutating",
        "widgets",
        vec![json!({
            "name": "replicas.example.dev",
            "clientConfig": {"url": format!("{}/replicas", w.url),
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&w.ca)},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["example.dev"], "apiVersions": ["v1"],
                       "resources": ["widgets"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })],
    )
    .await;
    let alpha = json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget",
                       "metadata": {"name": "w1"}, "spec": {"replicas": 1}});
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url("/apis/example.dev/v1alpha1/namespaces/mw/widgets"),
        Some(alpha),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let seen = w.seen.on("/replicas");
    assert_eq!(seen.len(), 1);
    let request = &seen[0]["request"];
    assert_eq!(request["kind"]["version"], "v1");
    assert_eq!(request["requestKind"]["version"], "v1alpha1");
    assert_eq!(request["object"]["apiVersion"], "example.dev/v1");
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::GET,
        f.server
            .url("/apis/example.dev/v1/namespaces/mw/widgets/w1"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["replicas"], 7, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_the_webhook_denial() {
    let f = Fixture::new().await;
    let w = &f.webhooks;
    f.namespace("kw").await;
    f.configure(
        "Validating",
        "deny",
        vec![hook(w, "deny.example.dev", "/deny", "kw", json!({}))],
    )
    .await;
    let kubectl = common::kubectls()
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no kubectl"));
    let out = f
        .server
        .kubectl(&kubectl, &["create", "configmap", "deny-k", "-n", "kw"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "admission webhook \"deny.example.dev\" denied the request: configmaps named deny-* are not allowed"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_made_on_one_replica_takes_effect_on_the_other() {
    let etcd = common::Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    common::copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let (ca, cb) = (a.admin(), b.admin());
    let w = start_webhooks().await;
    // Replica b has served a create before the configuration exists: its memo of the (empty)
    // configurations is warm and must be noticed stale.
    let (code, body, _) = send(
        &ca,
        reqwest::Method::POST,
        a.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "rw", "labels": {"webhooks": "rw"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let create = |client: &reqwest::Client, server: &Server, name: &str| {
        let url = server.url("/api/v1/namespaces/rw/configmaps");
        let client = client.clone();
        let body = json!({"metadata": {"name": name}});
        async move { send(&client, reqwest::Method::POST, url, Some(body)).await }
    };
    let (code, body, _) = create(&cb, &b, "deny-before").await;
    assert_eq!(code, 201, "{body}");
    let (code, body, _) = send(
        &ca,
        reqwest::Method::POST,
        a.url("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"),
        Some(json!({"metadata": {"name": "deny"},
                    "webhooks": [hook(&w, "deny.example.dev", "/deny", "rw", json!({}))]})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let started = std::time::Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let (code, body, _) = create(&cb, &b, &format!("deny-{n}")).await;
        if code == 403 {
            assert_eq!(
                body["message"],
                "admission webhook \"deny.example.dev\" denied the request: configmaps named deny-* are not allowed"
            );
            break;
        }
        assert_eq!(code, 201, "{body}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "replica b did not pick up the configuration within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("replica b denied after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_audit_annotations_reach_the_audit_event_and_conditions_ask_the_authorizer() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (args, log) = common::admission::audit_args(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let f = Fixture::with_args(&args).await;
    f.namespace("audited").await;
    // Called only for users who may delete configmaps (the admin here); it annotates.
    f.configure(
        "Validating",
        "audit",
        vec![hook(&f.webhooks, "audit.example.dev", "/audit", "audited", json!({
            "matchConditions": [{"name": "deleters",
                "expression": "authorizer.group('').resource('configmaps').namespace(request.namespace).check('delete').allowed()"}]}))],
    )
    .await;
    let (code, body, _) = f.create_cm("audited", "annotated", "").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(f.webhooks.seen.on("/audit").len(), 1);
    let events = common::admission::completed_events(&log, "annotated").await;
    let annotations = &events[0]["annotations"];
    assert_eq!(
        annotations["audit.example.dev/checked-by"], "audit-hook",
        "{annotations}"
    );
    assert_eq!(
        annotations["audit.example.dev/verdict"], "fine",
        "{annotations}"
    );
    // A user who may create but not delete configmaps does not reach the webhook.
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/audited/roles",
            json!({"metadata": {"name": "cm-creator"},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/audited/rolebindings",
            json!({"metadata": {"name": "joe-creates"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-creator"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "joe"}]}),
        ),
    ] {
        let (code, resp, _) = send(
            &f.client,
            reqwest::Method::POST,
            f.server.url(path),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{resp}");
    }
    let (cert, key) = f.server.user_cert("joe", "");
    let joe = f.server.with_identity(&cert, &key);
    let mut n = 0;
    loop {
        n += 1;
        let (code, body, _) = send(
            &joe,
            reqwest::Method::POST,
            f.server.url("/api/v1/namespaces/audited/configmaps"),
            Some(json!({"metadata": {"name": format!("joe-{n}")}})),
        )
        .await;
        if code == 201 {
            break;
        }
        assert!(n < 100 && code == 403, "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(f.webhooks.seen.on("/audit").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_policy_is_reinvoked_after_a_mutating_webhook_changed_the_object() {
    let f = Fixture::new().await;
    f.namespace("again").await;
    // The policy runs before the webhooks; it labels what the webhook labelled, so it needs
    // the second run kube-apiserver gives IfNeeded policies.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url("/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies"),
        Some(json!({"metadata": {"name": "follow"},
                    "spec": {"reinvocationPolicy": "IfNeeded",
                             "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                                 "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                             "matchConditions": [{"name": "mutated",
                                 "expression": "has(object.metadata.labels) && 'mutated' in object.metadata.labels"}],
                             "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                                 "Object{metadata: Object.metadata{labels: {\"followed\": object.metadata.labels[\"mutated\"]}}}"}}]}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url("/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings"),
        Some(json!({"metadata": {"name": "follow-binding"},
                    "spec": {"policyName": "follow",
                             "matchResources": {"namespaceSelector": {"matchLabels": {"webhooks": "again"}}}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let cached = f.server.url(
        "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings/follow-binding?resourceVersion=0",
    );
    common::tls::wait_until("the binding is in the watch cache", || async {
        send(&f.client, reqwest::Method::GET, cached.clone(), None)
            .await
            .0
            == 200
    })
    .await;
    f.configure(
        "Mutating",
        "label",
        vec![hook(
            &f.webhooks,
            "label.example.dev",
            "/label",
            "again",
            json!({}),
        )],
    )
    .await;
    let (code, body, _) = f.create_cm("again", "followed", "").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes", "{body}");
    assert_eq!(body["metadata"]["labels"]["followed"], "yes", "{body}");
}
