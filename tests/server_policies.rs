//! ValidatingAdmissionPolicies against the real binary: a policy denying Widgets with more
//! than 10 replicas, through kubectl with Kubernetes' message; parameters from a ConfigMap
//! with a message expression; variables; the Warn action; a missing parameter under `Deny`;
//! expressions that do not compile are refused when the policy is written. And
//! MutatingAdmissionPolicies (v1beta1): an apply configuration that adds a label, a JSON
//! patch with `jsonpatch.escapeKey`, the schema checking the mutated object, reinvocation,
//! and kubectl's columns and `explain`.

mod common;

use common::Server;
use common::send_json as send;
use serde_json::{Value, json};

const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";
const BETA: &str = "/apis/admissionregistration.k8s.io/v1beta1";

struct Fixture {
    server: Server,
    client: reqwest::Client,
}

impl Fixture {
    /// Creates `plural/name` and waits until the watch cache has it (policies take effect
    /// once the caches have them, as in Kubernetes once the informers have them).
    async fn create(&self, plural: &str, body: Value) {
        self.create_in(GROUP, plural, body).await
    }

    /// [`Fixture::create`] in another version of the group.
    async fn create_in(&self, group: &str, plural: &str, body: Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
        let (code, resp, _) = send(
            &self.client,
            reqwest::Method::POST,
            self.server.url(&format!("{group}/{plural}")),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{resp}");
        let cached = self
            .server
            .url(&format!("{group}/{plural}/{name}?resourceVersion=0"));
        common::tls::wait_until("the policy object is in the watch cache", || async {
            send(&self.client, reqwest::Method::GET, cached.clone(), None)
                .await
                .0
                == 200
        })
        .await;
    }

    async fn widget(&self, ns: &str, name: &str, replicas: i64) -> (u16, Value, Vec<String>) {
        send(
            &self.client,
            reqwest::Method::POST,
            self.server
                .url(&format!("/apis/example.dev/v1/namespaces/{ns}/widgets")),
            Some(json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                        "metadata": {"name": name}, "spec": {"replicas": replicas}})),
        )
        .await
    }
}

fn widget_rules() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.dev"],
                              "apiVersions": ["*"], "resources": ["widgets"]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_deny_warn_and_read_params() {
    let server = Server::start(&[]);
    let client = server.admin();
    let f = Fixture { server, client };
    for ns in ["vap", "params", "warn", "costly"] {
        let (code, body, _) = send(
            &f.client,
            reqwest::Method::POST,
            f.server.url("/api/v1/namespaces"),
            Some(json!({"metadata": {"name": ns, "labels": {"policy": ns}}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }

    // An expression that does not compile is refused when the policy is written.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url(&format!("{GROUP}/validatingadmissionpolicies")),
        Some(json!({"metadata": {"name": "broken"},
                    "spec": {"matchConstraints": widget_rules(),
                             "validations": [{"expression": "object.spec.replicas <="}]}})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.contains("spec.validations[0].expression")
            && message.contains("compilation failed"),
        "{message}"
    );

    // max-replicas: at most 10, in the namespace labelled policy=vap.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "max-replicas"},
               "spec": {"failurePolicy": "Fail",
                        "matchConstraints": widget_rules(),
                        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
                        "validations": [{"expression": "variables.replicas <= 10",
                                         "message": "replicas must be no more than 10"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "max-replicas-binding"},
               "spec": {"policyName": "max-replicas", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "vap"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("vap", "big", 11).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no more than 10"
    );
    assert_eq!(body["reason"], "Forbidden");
    let (code, body, _) = f.widget("vap", "small", 10).await;
    assert_eq!(code, 201, "{body}");
    // Another namespace is not selected by the binding.
    let (code, body, _) = f.widget("warn", "big", 11).await;
    assert_eq!(code, 201, "{body}");

    // kubectl prints the denial as a Kubernetes user reads it.
    let kubectl = common::kubectls()
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no kubectl"));
    let manifest = f.server.data_dir.join("big-widget.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: kubectl-big\n  namespace: vap\nspec:\n  replicas: 12\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = f
        .server
        .kubectl(&kubectl, &["apply", "-f", &manifest.display().to_string()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no more than 10"),
        "{stderr}"
    );
    // And lists the policy with its columns.
    let out = f
        .server
        .kubectl(&kubectl, &["get", "validatingadmissionpolicies"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("VALIDATIONS") && stdout.contains("PARAMKIND"),
        "{stdout}"
    );
    assert!(
        stdout.contains("max-replicas") && stdout.contains("<unset>"),
        "{stdout}"
    );

    // Parameters from a ConfigMap, with a message expression.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces/params/configmaps"),
        Some(json!({"metadata": {"name": "limits"}, "data": {"max": "3"}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "param-replicas"},
               "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                        "matchConstraints": widget_rules(),
                        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                                         "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed ' + params.data.max",
                                         "reason": "Invalid"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "param-replicas-binding"},
               "spec": {"policyName": "param-replicas", "validationActions": ["Deny"],
                        "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "params"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("params", "four", 4).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'param-replicas' with binding 'param-replicas-binding' denied request: replicas 4 exceed 3"
    );
    let (code, body, _) = f.widget("params", "three", 3).await;
    assert_eq!(code, 201, "{body}");
    // Without its parameter object, Deny: nothing passes.
    let (code, _, _) = send(
        &f.client,
        reqwest::Method::DELETE,
        f.server.url("/api/v1/namespaces/params/configmaps/limits"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    let gone = f
        .server
        .url("/api/v1/namespaces/params/configmaps/limits?resourceVersion=0");
    common::tls::wait_until("the parameter deletion reached the cache", || async {
        send(&f.client, reqwest::Method::GET, gone.clone(), None)
            .await
            .0
            == 404
    })
    .await;
    let (code, body, _) = f.widget("params", "one", 1).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{body}"
    );

    // Warn: the request passes with the failure as a warning.
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "warn-binding"},
               "spec": {"policyName": "max-replicas", "validationActions": ["Warn"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "warn"}}}}}),
    )
    .await;
    let (code, body, warnings) = f.widget("warn", "warned", 20).await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.iter().any(|w| w.contains(
            "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn-binding': replicas must be no more than 10"
        )),
        "{warnings:?}"
    );

    // A policy whose expression names a field Widgets do not have: the type-checking
    // controller reports it in the policy's status.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "typo"},
               "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                            "apiGroups": ["example.dev"], "apiVersions": ["v1"], "resources": ["widgets"]}]},
                        "validations": [{"expression": "object.spec.replicas > 0 && object.spec.replica > 1"},
                                        {"expression": "object.spec.replicas < 100"}]}}),
    )
    .await;
    let url = f
        .server
        .url(&format!("{GROUP}/validatingadmissionpolicies/typo"));
    let mut status = Value::Null;
    for _ in 0..100 {
        let (_, body, _) = send(&f.client, reqwest::Method::GET, url.clone(), None).await;
        if !body["status"]["typeChecking"].is_null() {
            status = body["status"].clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status["observedGeneration"], 1, "{status}");
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    assert_eq!(
        warnings[0]["warning"],
        "example.dev/v1, Kind=Widget: ERROR: <input>:1:40: undefined field 'replica'\n | object.spec.replicas > 0 && object.spec.replica > 1\n | .......................................^"
    );

    // An expression that could cost more than the per-expression limit (a million
    // iterations) is refused before it runs, and the failure policy decides.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "costly"},
               "spec": {"matchConstraints": widget_rules(),
                        "variables": [{"name": "l", "expression": format!("{:?}", (0..100).collect::<Vec<i64>>())}],
                        "validations": [{"expression":
                            "variables.l.all(a, variables.l.all(b, variables.l.all(c, a + b + c >= 0)))"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "costly-binding"},
               "spec": {"policyName": "costly", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "costly"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("costly", "w", 1).await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "ValidatingAdmissionPolicy 'costly' with binding 'costly-binding' denied request: "
        ) && message.contains("cost limit exceeded"),
        "{message}"
    );
}

/// A MutatingAdmissionPolicy with its binding, selecting Widgets in namespaces labelled
/// `policy=<namespace>`.
async fn mutating_policy(f: &Fixture, name: &str, namespace: &str, spec: Value) {
    let mut spec = spec;
    spec["matchConstraints"] = widget_rules();
    f.create_in(
        BETA,
        "mutatingadmissionpolicies",
        json!({"metadata": {"name": name}, "spec": spec}),
    )
    .await;
    f.create_in(
        BETA,
        "mutatingadmissionpolicybindings",
        json!({"metadata": {"name": format!("{name}-binding")},
               "spec": {"policyName": name,
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": namespace}}}}}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_policies_apply_configurations_and_json_patches() {
    let server = Server::start(&[]);
    let client = server.admin();
    let f = Fixture { server, client };
    for ns in ["labels", "patch", "again", "plain", "atomic"] {
        let (code, body, _) = send(
            &f.client,
            reqwest::Method::POST,
            f.server.url("/api/v1/namespaces"),
            Some(json!({"metadata": {"name": ns, "labels": {"policy": ns}}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }

    // A mutation that does not compile is refused when the policy is written.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url(&format!("{BETA}/mutatingadmissionpolicies")),
        Some(json!({"metadata": {"name": "broken"},
                    "spec": {"matchConstraints": widget_rules(), "reinvocationPolicy": "Never",
                             "mutations": [{"patchType": "ApplyConfiguration",
                                            "applyConfiguration": {"expression": "Object{"}}]}})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.contains("spec.mutations[0].applyConfiguration.expression")
            && message.contains("compilation failed"),
        "{message}"
    );

    // An apply configuration adds a label, keeping the others.
    mutating_policy(
        &f,
        "add-team",
        "labels",
        json!({"reinvocationPolicy": "Never",
               "mutations": [{"patchType": "ApplyConfiguration",
                              "applyConfiguration": {"expression":
                                  "Object{metadata: Object.metadata{labels: {\"team\": \"blue\"}}}"}}]}),
    )
    .await;
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url("/apis/example.dev/v1/namespaces/labels/widgets"),
        Some(json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                    "metadata": {"name": "w", "labels": {"own": "yes"}}, "spec": {"replicas": 2}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["metadata"]["labels"],
        json!({"own": "yes", "team": "blue"})
    );
    let (_, stored, _) = send(
        &f.client,
        reqwest::Method::GET,
        f.server
            .url("/apis/example.dev/v1/namespaces/labels/widgets/w"),
        None,
    )
    .await;
    assert_eq!(stored["metadata"]["labels"]["team"], "blue", "{stored}");
    // Another namespace is not selected.
    let (code, body, _) = f.widget("plain", "w", 2).await;
    assert_eq!(code, 201, "{body}");
    assert!(body["metadata"]["labels"].is_null(), "{body}");

    // A JSON patch, with an escaped key and a condition; the schema checks the result.
    mutating_policy(
        &f,
        "paint",
        "patch",
        json!({"reinvocationPolicy": "Never",
               "matchConditions": [{"name": "uncolored", "expression": "!has(object.spec.color)"}],
               "variables": [{"name": "color", "expression": "object.spec.replicas > 5 ? 'Green' : 'green'"}],
               "mutations": [{"patchType": "JSONPatch",
                              "jsonPatch": {"expression":
                                  "[JSONPatch{op: \"add\", path: \"/spec/color\", value: variables.color}, JSONPatch{op: \"add\", path: \"/metadata/annotations\", value: {}}, JSONPatch{op: \"add\", path: \"/metadata/annotations/\" + jsonpatch.escapeKey(\"example.dev/painted\"), value: \"yes\"}]"}}]}),
    )
    .await;
    let (code, body, _) = f.widget("patch", "small", 2).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["spec"]["color"], "green", "{body}");
    assert_eq!(
        body["metadata"]["annotations"]["example.dev/painted"], "yes",
        "{body}"
    );
    // The mutated object is validated: an uppercase color breaks the Widget's pattern.
    let (code, body, _) = f.widget("patch", "large", 6).await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("spec.color"),
        "{body}"
    );

    // Reinvocation: `first` (IfNeeded) runs before `second` and needs what `second` adds.
    mutating_policy(
        &f,
        "a-first",
        "again",
        json!({"reinvocationPolicy": "IfNeeded",
               "matchConditions": [{"name": "after-second",
                                    "expression": "has(object.metadata.labels) && 'second' in object.metadata.labels"}],
               "mutations": [{"patchType": "ApplyConfiguration",
                              "applyConfiguration": {"expression":
                                  "Object{metadata: Object.metadata{labels: {\"first\": \"saw-\" + object.metadata.labels[\"second\"]}}}"}}]}),
    )
    .await;
    mutating_policy(
        &f,
        "b-second",
        "again",
        json!({"reinvocationPolicy": "Never",
               "mutations": [{"patchType": "ApplyConfiguration",
                              "applyConfiguration": {"expression":
                                  "Object{metadata: Object.metadata{labels: {\"second\": \"yes\"}}}"}}]}),
    )
    .await;
    let (code, body, _) = f.widget("again", "w", 1).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["metadata"]["labels"],
        json!({"first": "saw-yes", "second": "yes"}),
        "{body}"
    );

    // An apply configuration may not set an atomic list (it would replace it whole).
    mutating_policy(
        &f,
        "replace-owners",
        "atomic",
        json!({"reinvocationPolicy": "Never",
               "mutations": [{"patchType": "ApplyConfiguration",
                              "applyConfiguration": {"expression":
                                  "Object{metadata: Object.metadata{managedFields: []}}"}}]}),
    )
    .await;
    let (code, body, _) = f.widget("atomic", "w", 1).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "MutatingAdmissionPolicy 'replace-owners' with binding 'replace-owners-binding' denied request: mutation 0: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .metadata.managedFields"
    );

    // kubectl lists the policies with their columns and explains the kind.
    let kubectl = common::kubectls()
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no kubectl"));
    let out = f
        .server
        .kubectl(&kubectl, &["get", "mutatingadmissionpolicies"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("MUTATIONS") && stdout.contains("add-team"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = f.server.kubectl(
        &kubectl,
        &["explain", "mutatingadmissionpolicies.spec.mutations"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("patchType") && stdout.contains("applyConfiguration"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `ResponseComplete` audit events of the requests on the object named `name`, once
/// there is one (the writer thread writes them shortly after the response).
async fn completed_events(log: &std::path::Path, name: &str) -> Vec<Value> {
    for _ in 0..200 {
        let events: Vec<Value> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["name"] == name)
            .collect();
        if !events.is_empty() {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "no ResponseComplete event for {name} in {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_audit_annotations_and_the_audit_action_reach_the_audit_event() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy_file = dir.path().join("audit-policy.yaml");
    std::fs::write(
        &policy_file,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let log = dir.path().join("audit.log");
    let args = [
        format!("--audit-policy-file={}", policy_file.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args);
    let client = server.admin();
    let f = Fixture { server, client };
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "audited", "labels": {"policy": "audited"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "replicas-audit"},
               "spec": {"matchConstraints": widget_rules(),
                        "validations": [{"expression": "object.spec.replicas <= 10",
                                         "message": "replicas must be no more than 10"}],
                        "auditAnnotations": [
                            {"key": "replicas", "valueExpression": "string(object.spec.replicas)"},
                            {"key": "nothing", "valueExpression": "null"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "replicas-audit-binding"},
               "spec": {"policyName": "replicas-audit", "validationActions": ["Audit"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "audited"}}}}}),
    )
    .await;
    // Audit only: the request passes, and its event says why it would not have.
    let (code, body, warnings) = f.widget("audited", "big", 20).await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");
    let events = completed_events(&log, "big").await;
    let annotations = &events[0]["annotations"];
    assert_eq!(
        annotations["replicas-audit/replicas"], "20",
        "{annotations}"
    );
    assert!(
        annotations.get("replicas-audit/nothing").is_none(),
        "{annotations}"
    );
    let failures: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation_failure annotation: {annotations}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        failures,
        json!([{"message": "replicas must be no more than 10", "policy": "replicas-audit",
                "binding": "replicas-audit-binding", "expressionIndex": 0,
                "validationActions": ["Audit"]}])
    );
    // A passing request has the annotations but no failure.
    let (code, body, _) = f.widget("audited", "small", 2).await;
    assert_eq!(code, 201, "{body}");
    let events = completed_events(&log, "small").await;
    let annotations = &events[0]["annotations"];
    assert_eq!(annotations["replicas-audit/replicas"], "2", "{annotations}");
    assert!(
        annotations
            .get("validation.policy.admission.k8s.io/validation_failure")
            .is_none(),
        "{annotations}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_made_on_one_replica_take_effect_on_the_other() {
    let etcd = common::Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(&tmp.path().join("a"), &[&servers]);
    common::copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = Server::start_in(&tmp.path().join("b"), &[&servers]);
    let (ca, cb) = (a.admin(), b.admin());
    let (code, body, _) = send(
        &ca,
        reqwest::Method::POST,
        a.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "rp", "labels": {"policy": "rp"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let widget = |name: String, replicas: i64| {
        let url = b.url("/apis/example.dev/v1/namespaces/rp/widgets");
        let client = cb.clone();
        let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                          "metadata": {"name": name}, "spec": {"replicas": replicas}});
        async move { send(&client, reqwest::Method::POST, url, Some(body)).await }
    };
    // Replica b has admitted a create before the policies exist: its memo is warm.
    let (code, body, _) = widget("before".into(), 50).await;
    assert_eq!(code, 201, "{body}");
    let create = |path: &str, body: Value| {
        let url = a.url(path);
        let client = ca.clone();
        async move {
            let (code, resp, _) = send(&client, reqwest::Method::POST, url, Some(body)).await;
            assert_eq!(code, 201, "{resp}");
        }
    };
    create(
        &format!("{BETA}/mutatingadmissionpolicies"),
        json!({"metadata": {"name": "label"},
               "spec": {"matchConstraints": widget_rules(), "reinvocationPolicy": "Never",
                        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                            "Object{metadata: Object.metadata{labels: {\"replica\": \"a\"}}}"}}]}}),
    )
    .await;
    create(
        &format!("{BETA}/mutatingadmissionpolicybindings"),
        json!({"metadata": {"name": "label-binding"}, "spec": {"policyName": "label"}}),
    )
    .await;
    create(
        &format!("{GROUP}/validatingadmissionpolicies"),
        json!({"metadata": {"name": "max"},
               "spec": {"matchConstraints": widget_rules(),
                        "validations": [{"expression": "object.spec.replicas <= 10", "message": "too many"}]}}),
    )
    .await;
    create(
        &format!("{GROUP}/validatingadmissionpolicybindings"),
        json!({"metadata": {"name": "max-binding"},
               "spec": {"policyName": "max", "validationActions": ["Deny"]}}),
    )
    .await;
    let started = std::time::Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let (code, body, _) = widget(format!("w-{n}"), 50).await;
        if code == 403 {
            assert_eq!(
                body["message"],
                "ValidatingAdmissionPolicy 'max' with binding 'max-binding' denied request: too many"
            );
            break;
        }
        assert_eq!(code, 201, "{body}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "replica b did not pick up the policies within 2 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // And the mutating policy (its own kinds' caches) labels b's creates.
    loop {
        n += 1;
        let (code, body, _) = widget(format!("w-{n}"), 3).await;
        assert_eq!(code, 201, "{body}");
        if body["metadata"]["labels"]["replica"] == "a" {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "replica b did not pick up the mutating policy within 2 s: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    eprintln!(
        "replica b enforced the policies after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_ask_the_authorizer_about_the_requesting_user() {
    let server = Server::start(&[]);
    let client = server.admin();
    let f = Fixture { server, client };
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "authz", "labels": {"policy": "authz"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    // Jane may create widgets in the namespace, but not delete them.
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/authz/roles",
            json!({"metadata": {"name": "widget-creator"},
                   "rules": [{"apiGroups": ["example.dev"], "resources": ["widgets"],
                              "verbs": ["create", "get"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/authz/rolebindings",
            json!({"metadata": {"name": "jane-creates"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-creator"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}),
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
    // Widgets with more than 5 replicas only from users who may also delete them.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "big-needs-delete"},
               "spec": {"matchConstraints": widget_rules(),
                        "validations": [{
                            "expression": "object.spec.replicas <= 5 || authorizer.group('example.dev').resource('widgets').namespace(request.namespace).check('delete').allowed()",
                            "messageExpression": "'only users who may delete widgets may ask for ' + string(object.spec.replicas) + ' replicas'"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "big-needs-delete-binding"},
               "spec": {"policyName": "big-needs-delete", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "authz"}}}}}),
    )
    .await;
    let (cert, key) = f.server.user_cert("jane", "");
    let jane = f.server.with_identity(&cert, &key);
    let widget = |client: &reqwest::Client, name: &str, replicas: i64| {
        let url = f
            .server
            .url("/apis/example.dev/v1/namespaces/authz/widgets");
        let client = client.clone();
        let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                          "metadata": {"name": name}, "spec": {"replicas": replicas}});
        async move { send(&client, reqwest::Method::POST, url, Some(body)).await }
    };
    // RBAC sees the binding shortly after it is written.
    let mut n = 0;
    loop {
        n += 1;
        let (code, body, _) = widget(&jane, &format!("small-{n}"), 5).await;
        if code == 201 {
            break;
        }
        assert!(n < 100 && code == 403, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (code, body, _) = widget(&jane, "big", 6).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'big-needs-delete' with binding 'big-needs-delete-binding' denied request: only users who may delete widgets may ask for 6 replicas"
    );
    // The admin may delete widgets.
    let (code, body, _) = widget(&f.client, "admins-big", 6).await;
    assert_eq!(code, 201, "{body}");
}
