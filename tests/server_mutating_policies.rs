//! MutatingAdmissionPolicies (admissionregistration.k8s.io/v1beta1) against the real binary:
//! an apply configuration that adds a label, a JSON patch with `jsonpatch.escapeKey`, the
//! schema checking the mutated object, reinvocation, kubectl's columns and `explain`; and
//! policies written on one replica taking effect on the other.

mod common;

use common::Server;
use common::admission::{BETA, Fixture, GROUP, widget_rules};
use common::send_json as send;
use serde_json::{Value, json};

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
    let f = Fixture::start(&[]);
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
