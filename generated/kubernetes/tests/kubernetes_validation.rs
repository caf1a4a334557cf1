//! Validation of the shipped core kinds with kube-apiserver's messages (markers plus the
//! validation hooks of `api-defs/core/hooks.rs`).

use apimachinery::runtime::Object;
use serde_json::{Value, json};

/// The typed object of a JSON value of `group`'s `kind` at v1.
fn object(group: &str, kind: &str, value: &Value) -> Box<dyn Object> {
    let scheme = kubernetes_api::scheme();
    scheme
        .by_kind(group, kind)
        .unwrap_or_else(|| panic!("{kind} registered"))
        .codec("v1")
        .expect("v1 served")
        .decode_value(value)
        .expect("decodes")
        .object
}

/// The create errors of a value: the definition's checks and the kind's strategy.
fn create_errors(group: &str, kind: &str, value: &Value) -> Vec<String> {
    let object = object(group, kind, value);
    let strategy = kubernetes_api::scheme()
        .by_kind(group, kind)
        .unwrap()
        .strategy();
    object
        .validate()
        .into_iter()
        .chain(strategy.validate(&*object))
        .map(|e| e.to_string())
        .collect()
}

/// The update errors of a value replacing `old`.
fn update_errors(group: &str, kind: &str, new: &Value, old: &Value) -> Vec<String> {
    let (new, old) = (object(group, kind, new), object(group, kind, old));
    let strategy = kubernetes_api::scheme()
        .by_kind(group, kind)
        .unwrap()
        .strategy();
    new.validate_update(&*old)
        .into_iter()
        .chain(strategy.validate_update(&*new, &*old))
        .map(|e| e.to_string())
        .collect()
}

fn errors(kind: &str, value: &Value) -> Vec<String> {
    create_errors("", kind, value)
}

#[test]
fn config_map_keys_and_duplicates() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
        "data": {"ok.key": "1", "bad key": "2", "both": "3"}, "binaryData": {"both": "AA==", "..x": "AA=="}});
    let errs = errors("ConfigMap", &cm);
    assert!(errs.contains(&"data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string()), "{errs:?}");
    assert!(
        errs.contains(
            &"data[both]: Invalid value: \"both\": duplicate of key present in binaryData"
                .to_string()
        ),
        "{errs:?}"
    );
    assert!(
        errs.contains(
            &"binaryData[..x]: Invalid value: \"..x\": must not start with '..'".to_string()
        ),
        "{errs:?}"
    );
    assert_eq!(errs.len(), 3, "{errs:?}");

    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
        "data": {"a": "x".repeat(1024 * 1024 + 1)}});
    assert_eq!(
        errors("ConfigMap", &big),
        [": Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn secret_types_require_their_keys() {
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
        "type": "kubernetes.io/tls", "data": {"tls.crt": "AA=="}});
    assert_eq!(errors("Secret", &tls), ["data[tls.key]: Required value"]);
    let opaque = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
        "type": "Opaque", "data": {"good": "AA=="}});
    assert!(errors("Secret", &opaque).is_empty());
    let sa = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
        "type": "kubernetes.io/service-account-token"});
    assert_eq!(
        errors("Secret", &sa),
        ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
    );
}

#[test]
fn secret_type_is_immutable() {
    let old = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "type": "Opaque"});
    let mut new = old.clone();
    new["type"] = json!("example.dev/custom");
    let errs = update_errors("", "Secret", &new, &old);
    assert_eq!(
        errs,
        ["type: Invalid value: \"example.dev/custom\": field is immutable"]
    );
}

fn rbac_errors(kind: &str, value: &Value) -> Vec<String> {
    create_errors("rbac.authorization.k8s.io", kind, value)
}

#[test]
fn rbac_rules_and_bindings() {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "ns"},
        "rules": [{"verbs": [], "apiGroups": [""], "resources": ["pods"]},
                  {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
                  {"verbs": ["get"]}]});
    assert_eq!(
        rbac_errors("Role", &role),
        [
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[2].resources: Required value: resource rules must supply at least one resource",
        ]
    );
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}, {"kind": "Robot", "name": "r2"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}});
    assert_eq!(
        rbac_errors("ClusterRoleBinding", &binding),
        [
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "subjects[0].namespace: Required value",
            "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ]
    );
    let ok = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
    assert!(rbac_errors("RoleBinding", &ok).is_empty());
    // The role a binding refers to never changes, as Kubernetes words it.
    let mut other = ok.clone();
    other["roleRef"]["name"] = json!("edit");
    assert_eq!(
        update_errors("rbac.authorization.k8s.io", "RoleBinding", &other, &ok),
        [
            "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
        ]
    );
}

#[test]
fn webhook_configurations() {
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "v"},
    "webhooks": [
        {"name": "a.example.dev", "clientConfig": {}, "admissionReviewVersions": ["v1"], "timeoutSeconds": 31},
        {"name": "a.example.dev", "clientConfig": {"url": "https://example.dev"}, "sideEffects": "Some",
         "admissionReviewVersions": ["v1"]}
    ]});
    let errs = create_errors(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        &config,
    );
    for expected in [
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
        "webhooks[1]: Duplicate value: {\"name\":\"a.example.dev\"}",
        "webhooks[1].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
    ] {
        assert!(
            errs.iter().any(|e| e == expected),
            "missing {expected:?} in {errs:?}"
        );
    }
    assert_eq!(errs.len(), 5, "{errs:?}");
}
