//! Defaulting of the shipped Kubernetes kinds, as kube-apiserver defaults them (markers plus
//! the hand-written hooks of `api-defs/<group>/hooks.rs`).

mod support;

use serde_json::{Value, json};

fn default(group: &str, kind: &str, value: Value) -> Value {
    support::ops(group, kind)
        .default("v1", value)
        .unwrap_or_else(|e| panic!("{kind}: {e}"))
}

#[test]
fn webhook_defaults() {
    let out = default(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "m"},
            "webhooks": [{"name": "a.example.dev", "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
    );
    let hook = &out["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);

    let validating = default(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "v"},
            "webhooks": [{"name": "b.example.dev", "clientConfig": {"url": "https://example.dev/v"},
                "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Ignore"}]}),
    );
    let hook = &validating["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Ignore", "an explicit value is kept");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert!(
        hook.get("reinvocationPolicy").is_none(),
        "validating webhooks have no reinvocation"
    );
}

#[test]
fn namespace_and_secret_defaults() {
    let ns = default(
        "",
        "Namespace",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    );
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(ns["status"]["phase"], "Active");

    let secret = default(
        "",
        "Secret",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
            "data": {"a": "b2xk", "keep": "aw=="}, "stringData": {"a": "new", "b": "two"}}),
    );
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["data"],
        json!({"a": "bmV3", "b": "dHdv", "keep": "aw=="})
    );
    assert!(
        secret.get("stringData").is_none(),
        "stringData is write-only"
    );
}

#[test]
fn rbac_defaults() {
    let binding = default(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "ns"}],
            "roleRef": {"kind": "Role", "name": "r"}}),
    );
    assert_eq!(
        binding["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    assert_eq!(
        binding["subjects"][1]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    assert!(binding["subjects"][2].get("apiGroup").is_none());
    assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
}

#[test]
fn a_by_value_zero_is_unset_so_json_round_trips() {
    // Event.count is Go's `int32 omitempty`: `0` is left out when encoding, so it decodes as
    // unset and the object is the same after a JSON round trip (found by tools/fuzz,
    // fuzz/regressions/decode_json/event-count-zero-round-trip).
    let event: kubernetes_api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"name": "p"},
        "count": 0,
        "series": {"count": 0}
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(event.count, None);
    let encoded = serde_json::to_value(&event).unwrap_or_else(|e| panic!("{e}"));
    assert!(encoded.get("count").is_none(), "{encoded}");
    let again: kubernetes_api::core::v1::Event =
        serde_json::from_value(encoded).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, event);
    let counted: kubernetes_api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "e"}, "involvedObject": {}, "count": 3
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted.count, Some(3));
}
