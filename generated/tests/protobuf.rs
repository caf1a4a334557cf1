//! Protobuf of the generated types: a ConfigMap and a Namespace byte for byte as Kubernetes'
//! gogo-protobuf marshallers write them, the envelope around them, and round trips
//! (JSON → protobuf → JSON) of every shipped kind through the scheme.

mod support;

use apimachinery::protobuf::{ProtoMessage, decode_envelope, encode_envelope};
use serde_json::{Value, json};
use support::{Ops, ops};

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ConfigMap below, derived by hand from `k8s.io/api/core/v1/generated.proto` (ConfigMap:
/// metadata = 1, data = 2, binaryData = 3, immutable = 4) and
/// `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto` (ObjectMeta), writing fields in
/// field-number order and Go's by-value fields even when empty, as gogo does:
///
/// ```text
/// 0a 2b                                  metadata (1), 43 bytes:
///    0a 02 63 6d                           name (1) = "cm"
///    12 00                                 generateName (2) = ""
///    1a 02 6e 73                           namespace (3) = "ns"
///    22 00                                 selfLink (4) = ""
///    2a 02 75 31                           uid (5) = "u1"
///    32 01 35                              resourceVersion (6) = "5"
///    38 00                                 generation (7) = 0
///    42 08 08 80 81 c8 ac 06 10 00         creationTimestamp (8) = {seconds = 1704067200
///                                          (2024-01-01T00:00:00Z, varint), nanos = 0}
///    5a 0a 0a 03 61 70 70 12 03 77 65 62   labels (11) entry {key = "app", value = "web"}
/// 12 06 0a 01 6b 12 01 76                data (2) entry {key = "k", value = "v"}
/// 1a 07 0a 01 62 12 02 01 02             binaryData (3) entry {key = "b", value = 01 02}
/// 20 01                                  immutable (4) = true
/// ```
const CONFIG_MAP_HEX: &str = "0a 2b 0a 02 63 6d 12 00 1a 02 6e 73 22 00 2a 02 75 31 32 01 35 38 00 \
     42 08 08 80 81 c8 ac 06 10 00 5a 0a 0a 03 61 70 70 12 03 77 65 62 12 06 0a 01 6b 12 01 76 \
     1a 07 0a 01 62 12 02 01 02 20 01";

fn config_map_json() -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"app": "web"}},
        "immutable": true,
        "data": {"k": "v"},
        "binaryData": {"b": "AQI="}
    })
}

#[test]
fn config_map_bytes_match_kubernetes() {
    let typed: kubernetes_api::core::v1::ConfigMap =
        serde_json::from_value(config_map_json()).expect("decodes");
    assert_eq!(hex(&typed.encode_to_vec()), CONFIG_MAP_HEX);
    let through_scheme = ops("", "ConfigMap")
        .encode_protobuf("v1", &config_map_json())
        .expect("encodes");
    assert_eq!(hex(&through_scheme), CONFIG_MAP_HEX);
    let back = ops("", "ConfigMap")
        .decode_protobuf("v1", &through_scheme)
        .expect("decodes");
    assert_eq!(back, config_map_json());
}

/// The Namespace below (Namespace: metadata = 1, spec = 2, status = 3; NamespaceSpec:
/// finalizers = 1; NamespaceStatus: phase = 1, conditions = 2):
///
/// ```text
/// 0a 48                                  metadata (1), 72 bytes:
///    0a 06 74 65 61 6d 2d 61               name (1) = "team-a"
///    12 00 1a 00 22 00                     generateName, namespace, selfLink = ""
///    2a 02 75 32                           uid (5) = "u2"
///    32 01 37                              resourceVersion (6) = "7"
///    38 00                                 generation (7) = 0
///    42 08 08 80 81 c8 ac 06 10 00         creationTimestamp (8) = 2024-01-01T00:00:00Z
///    5a 25 0a 1b <27 bytes> 12 06 <6>      labels (11) entry
///                                          {"kubernetes.io/metadata.name": "team-a"}
/// 12 0c 0a 0a 6b 75 62 65 72 6e 65 74 65 73  spec (2) = {finalizers (1) = "kubernetes"}
/// 1a 08 0a 06 41 63 74 69 76 65          status (3) = {phase (1) = "Active"}
/// ```
const NAMESPACE_HEX: &str = "0a 48 0a 06 74 65 61 6d 2d 61 12 00 1a 00 22 00 2a 02 75 32 32 01 37 38 00 \
     42 08 08 80 81 c8 ac 06 10 00 5a 25 0a 1b 6b 75 62 65 72 6e 65 74 65 73 2e 69 6f 2f 6d 65 74 61 \
     64 61 74 61 2e 6e 61 6d 65 12 06 74 65 61 6d 2d 61 12 0c 0a 0a 6b 75 62 65 72 6e 65 74 65 73 1a 08 \
     0a 06 41 63 74 69 76 65";

fn namespace_json() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "uid": "u2", "resourceVersion": "7",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"kubernetes.io/metadata.name": "team-a"}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    })
}

#[test]
fn namespace_bytes_match_kubernetes() {
    let typed: kubernetes_api::core::v1::Namespace =
        serde_json::from_value(namespace_json()).expect("decodes");
    assert_eq!(hex(&typed.encode_to_vec()), NAMESPACE_HEX);
    let back = ops("", "Namespace")
        .decode_protobuf("v1", &typed.encode_to_vec())
        .expect("decodes");
    assert_eq!(back, namespace_json());
}

/// The envelope: `k8s\0`, then `Unknown{typeMeta (1) {apiVersion "v1", kind "Namespace"}, raw (2)
/// = the 98 (0x62) bytes above, contentEncoding (3) = "", contentType (4) = ""}`.
#[test]
fn namespace_in_the_envelope() {
    let raw = ops("", "Namespace")
        .encode_protobuf("v1", &namespace_json())
        .expect("encodes");
    let enveloped = encode_envelope("v1", "Namespace", &raw);
    let expected_prefix = "6b 38 73 00 0a 0f 0a 02 76 31 12 09 4e 61 6d 65 73 70 61 63 65 12 62";
    assert!(
        hex(&enveloped).starts_with(expected_prefix),
        "{}",
        hex(&enveloped)
    );
    assert!(hex(&enveloped).ends_with("1a 00 22 00"));
    let unknown = decode_envelope(&enveloped).expect("unwraps");
    assert_eq!(unknown.raw.as_deref(), Some(&raw[..]));
}

#[test]
fn list_encodes_metadata_then_items() {
    let list = json!({
        "apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "9"},
        "items": [config_map_json()]
    });
    let bytes = serde_json::from_value::<kubernetes_api::core::v1::ConfigMapList>(list)
        .expect("decodes")
        .encode_to_vec();
    // metadata (1) = ListMeta{selfLink "", resourceVersion "9", continue ""}, items (2) = the
    // ConfigMap above (64 = 0x40 bytes).
    let expected = format!("0a 07 0a 00 12 01 39 1a 00 12 40 {CONFIG_MAP_HEX}");
    assert_eq!(hex(&bytes), expected);
    let typed = kubernetes_api::core::v1::ConfigMapList::decode(&bytes).expect("decodes");
    assert_eq!(typed.items.len(), 1);
    assert_eq!(typed.metadata.resource_version.as_deref(), Some("9"));
}

/// Go holds `NamespaceStatus.phase` by value (`#[proto(1, by_value)]`), so Kubernetes writes it
/// even when empty: a Namespace with only a name is
///
/// ```text
/// 0a 11 0a 01 61 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00   metadata (1), 17 bytes = {name (1) = "a", …}
/// 12 00                                                      spec (2) = {} (a Go value)
/// 1a 02 0a 00                                                status (3) = {phase (1) = ""}
/// ```
#[test]
fn by_value_fields_are_written_when_empty() {
    use kubernetes_api::core::v1::{Namespace, NamespaceStatus};
    let ns = Namespace {
        metadata: apimachinery::meta::ObjectMeta {
            name: Some("a".into()),
            ..Default::default()
        },
        status: NamespaceStatus {
            phase: None,
            ..Default::default()
        },
        ..Default::default()
    };
    let bytes = ns.encode_to_vec();
    assert_eq!(
        hex(&bytes),
        "0a 11 0a 01 61 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00 12 00 1a 02 0a 00"
    );
    // Go cannot tell an empty by-value field from an unset one, and defaults it: the empty
    // phase reads back as the marker default, as kube-apiserver defaults it.
    let back = ops("", "Namespace")
        .decode_protobuf("v1", &bytes)
        .expect("decodes");
    assert_eq!(back["status"], json!({"phase": "Active"}));
    // A by-value field without a default reads back absent.
    let event = kubernetes_api::core::v1::Event::default();
    let back = ops("", "Event")
        .decode_protobuf("v1", &event.encode_to_vec())
        .expect("decodes");
    assert!(back.get("reason").is_none(), "{back}");
}

/// A representative object of every shipped kind, in the JSON form of its version.
fn samples() -> Vec<(&'static str, &'static str, Value)> {
    let meta = json!({"name": "x", "namespace": "ns", "uid": "9f1c", "resourceVersion": "12",
        "generation": 2, "creationTimestamp": "2024-03-01T12:00:00Z", "labels": {"a": "b"},
        "annotations": {"note": "n"}, "finalizers": ["example.dev/f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1", "controller": true}]});
    let cluster_meta = json!({"name": "x", "uid": "9f1c", "resourceVersion": "12", "creationTimestamp": "2024-03-01T12:00:00Z"});
    let mut namespace_meta = cluster_meta.clone();
    namespace_meta["labels"] = json!({"kubernetes.io/metadata.name": "x"});
    let webhook = json!({"name": "hook.example.dev",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/v", "port": 8443}, "caBundle": "Y2E="},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}],
        "failurePolicy": "Fail", "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]},
        "objectSelector": {"matchLabels": {"a": "b"}}, "sideEffects": "None", "timeoutSeconds": 10,
        "admissionReviewVersions": ["v1"], "matchConditions": [{"name": "c", "expression": "true"}]});
    let mut mutating = webhook.clone();
    mutating["reinvocationPolicy"] = json!("IfNeeded");
    let subject_review_spec = json!({"resourceAttributes": {"namespace": "ns", "verb": "get", "version": "v1",
            "resource": "configmaps", "name": "cm",
            "fieldSelector": {"requirements": [{"key": "metadata.name", "operator": "In", "values": ["cm"]}]},
            "labelSelector": {"rawSelector": "a=b"}},
        "user": "alice", "groups": ["devs"], "extra": {"scopes": ["a", "b"]}, "uid": "42"});
    let review_status = json!({"allowed": true, "reason": "rbac"});
    vec![
        (
            "",
            "Namespace",
            json!({"metadata": namespace_meta, "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating", "conditions": [{"type": "NamespaceContentRemaining", "status": "True",
                "lastTransitionTime": "2024-03-01T12:00:00Z", "reason": "SomeResourcesRemain", "message": "m"}]}}),
        ),
        (
            "",
            "ConfigMap",
            json!({"metadata": meta, "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false}),
        ),
        (
            "",
            "Secret",
            json!({"metadata": meta, "data": {"password": "c2VjcmV0"}, "type": "Opaque", "immutable": true}),
        ),
        (
            "",
            "ResourceQuota",
            json!({"metadata": meta, "spec": {"hard": {"count/widgets.example.dev": "5", "configmaps": "10"},
                "scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
                "status": {"hard": {"configmaps": "10"}, "used": {"configmaps": "3"}}}),
        ),
        (
            "",
            "ServiceAccount",
            json!({"metadata": meta, "secrets": [{"name": "s", "namespace": "ns"}],
            "imagePullSecrets": [{"name": "pull"}], "automountServiceAccountToken": false}),
        ),
        (
            "",
            "Event",
            json!({"metadata": meta,
            "involvedObject": {"kind": "ConfigMap", "namespace": "ns", "name": "cm", "uid": "1", "apiVersion": "v1",
                "resourceVersion": "3", "fieldPath": "data"},
            "reason": "Updated", "message": "it changed", "source": {"component": "ctl", "host": "h"},
            "firstTimestamp": "2024-03-01T12:00:00Z", "lastTimestamp": "2024-03-01T12:05:00Z", "count": 3,
            "type": "Normal", "eventTime": "2024-03-01T12:00:00.123456Z",
            "series": {"count": 2, "lastObservedTime": "2024-03-01T12:05:00.000001Z"},
            "action": "Update", "related": {"kind": "Pod", "name": "p"},
            "reportingComponent": "ctl", "reportingInstance": "ctl-1"}),
        ),
        (
            "rbac.authorization.k8s.io",
            "Role",
            json!({"metadata": meta,
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm"]}]}),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            json!({"metadata": cluster_meta,
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"metadata": meta,
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "ns"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            json!({"metadata": cluster_meta,
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
        ),
        (
            "authorization.k8s.io",
            "SubjectAccessReview",
            json!({"metadata": {}, "spec": subject_review_spec, "status": review_status}),
        ),
        (
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            json!({"metadata": {"namespace": "ns"}, "spec": subject_review_spec,
            "status": {"allowed": false, "denied": true, "evaluationError": "e"}}),
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            json!({"metadata": {},
            "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}, "status": review_status}),
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            json!({"metadata": {}, "spec": {"namespace": "ns"},
            "status": {"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api"]}], "incomplete": false}}),
        ),
        (
            "authentication.k8s.io",
            "TokenReview",
            json!({"metadata": {}, "spec": {"token": "t", "audiences": ["api"]},
            "status": {"authenticated": true, "user": {"username": "alice", "uid": "1", "groups": ["devs"],
                "extra": {"scopes": ["x"]}}, "audiences": ["api"]}}),
        ),
        (
            "",
            "Service",
            json!({"metadata": meta, "spec": {"ports": [{"name": "http", "protocol": "TCP", "appProtocol": "http", "port": 80, "targetPort": 8080}, {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https"}], "selector": {"app": "web"}, "clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.10"], "type": "ClusterIP", "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}, "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster", "publishNotReadyAddresses": true, "trafficDistribution": "PreferClose"}, "status": {"loadBalancer": {}, "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1, "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "Serving", "message": "ok"}]}}),
        ),
        (
            "",
            "Endpoints",
            json!({"metadata": meta, "subsets": [{"addresses": [{"ip": "10.1.0.5", "hostname": "web-0", "nodeName": "node-1", "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "0b7e8a36-5b7e-4d0c-9c1c-2f0f3f2a1b01"}}], "notReadyAddresses": [{"ip": "10.1.0.6"}], "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}, {"name": "https", "port": 8443, "protocol": "TCP"}]}]}),
        ),
        (
            "discovery.k8s.io",
            "EndpointSlice",
            json!({"metadata": meta, "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true, "terminating": false}, "hostname": "web-0", "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0"}, "nodeName": "node-1", "zone": "zone-a", "hints": {"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-1"}]}}], "ports": [{"name": "http", "protocol": "TCP", "port": 8080, "appProtocol": "http"}]}),
        ),
        (
            "authentication.k8s.io",
            "SelfSubjectReview",
            json!({"metadata": {},
            "status": {"userInfo": {"username": "alice", "groups": ["system:authenticated"]}}}),
        ),
        (
            "coordination.k8s.io",
            "Lease",
            json!({"metadata": meta, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
            "acquireTime": "2024-03-01T12:00:00.000000Z", "renewTime": "2024-03-01T12:00:10.500000Z", "leaseTransitions": 1,
            "strategy": "OldestEmulationVersion", "preferredHolder": "you"}}),
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            json!({"metadata": cluster_meta, "webhooks": [webhook]}),
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            json!({"metadata": cluster_meta, "webhooks": [mutating]}),
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            json!({"metadata": cluster_meta, "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {
                    "namespaceSelector": {"matchLabels": {"a": "b"}},
                    "resourceRules": [{"resourceNames": ["w"], "operations": ["CREATE"],
                        "apiGroups": ["example.dev"], "apiVersions": ["v1"], "resources": ["widgets"], "scope": "*"}],
                    "excludeResourceRules": [{"operations": ["DELETE"], "apiGroups": ["*"],
                        "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}],
                    "matchPolicy": "Exact"},
                "validations": [{"expression": "object.spec.replicas < 5", "message": "m",
                    "reason": "Invalid", "messageExpression": "'too many'"}],
                "failurePolicy": "Ignore",
                "auditAnnotations": [{"key": "k", "valueExpression": "'v'"}],
                "matchConditions": [{"name": "c", "expression": "true"}],
                "variables": [{"name": "v", "expression": "1"}]},
            "status": {"observedGeneration": 2, "typeChecking": {"expressionWarnings": [
                {"fieldRef": "spec.validations[0].expression", "warning": "w"}]}}}),
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            json!({"metadata": cluster_meta, "spec": {"policyName": "p",
                "paramRef": {"name": "n", "namespace": "ns", "parameterNotFoundAction": "Deny"},
                "matchResources": {"objectSelector": {"matchLabels": {"a": "b"}}, "matchPolicy": "Equivalent"},
                "validationActions": ["Deny", "Audit"]}}),
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicy",
            json!({"metadata": cluster_meta, "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {
                    "resourceRules": [{"operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["example.dev"], "apiVersions": ["v1"], "resources": ["widgets"], "scope": "*"}],
                    "matchPolicy": "Equivalent"},
                "variables": [{"name": "v", "expression": "1"}],
                "mutations": [
                    {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}},
                    {"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
                "failurePolicy": "Ignore",
                "matchConditions": [{"name": "c", "expression": "true"}],
                "reinvocationPolicy": "IfNeeded"}}),
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicyBinding",
            json!({"metadata": cluster_meta, "spec": {"policyName": "p",
                "paramRef": {"selector": {"matchLabels": {"a": "b"}}, "parameterNotFoundAction": "Allow"},
                "matchResources": {"namespaceSelector": {"matchLabels": {"a": "b"}}, "matchPolicy": "Exact"}}}),
        ),
        (
            "example.dev",
            "Widget",
            json!({"metadata": meta, "spec": {"replicas": 3, "color": "blue"},
            "status": {"replicas": 2, "selector": "app=w"}}),
        ),
    ]
}

#[test]
fn every_kind_round_trips_through_protobuf() {
    let scheme = generated::scheme();
    let mut seen = std::collections::BTreeSet::new();
    for (group, kind, body) in samples() {
        let ops = ops(group, kind);
        let info = ops.storage_version();
        let mut doc = body.clone();
        doc["apiVersion"] = json!(info.api_version());
        doc["kind"] = json!(kind);
        let canonical = ops
            .decode(info.version, doc.clone())
            .unwrap_or_else(|e| panic!("{kind}: {e}"))
            .object;
        assert_eq!(canonical, doc, "{kind}: the sample is canonical JSON");
        let bytes = ops
            .encode_protobuf(info.version, &canonical)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let back = ops
            .decode_protobuf(info.version, &bytes)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(back, canonical, "{kind}: JSON → protobuf → JSON");
        seen.insert(kind);
    }
    for &table in scheme.kinds() {
        let kind = Ops(table).versions()[0].kind;
        assert!(seen.contains(kind), "no protobuf sample for {kind}");
    }
}

#[test]
fn widget_v1alpha1_round_trips() {
    let ops = ops("example.dev", "Widget");
    let doc = json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"}, "spec": {"size": 4, "color": "red"}});
    let bytes = ops.encode_protobuf("v1alpha1", &doc).expect("encodes");
    // metadata (1) is 19 bytes of empty by-value fields plus the name; spec (2) = {size (1) = 4, color (2) = "red"}.
    assert!(
        hex(&bytes).ends_with("12 07 08 04 12 03 72 65 64"),
        "{}",
        hex(&bytes)
    );
    assert_eq!(
        ops.decode_protobuf("v1alpha1", &bytes).expect("decodes"),
        doc
    );
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let ops = ops("", "ConfigMap");
    for bytes in [
        &b"\xff\xff\xff"[..],
        b"\x0a\x05ab",
        b"\x0b",
        b"\x12\x02\x0a\xff",
    ] {
        assert!(ops.decode_protobuf("v1", bytes).is_err(), "{bytes:?}");
    }
}

/// JSON leaves a by-value field's zero value out, as Go's `omitempty` does.
#[test]
fn by_value_zero_is_left_out_of_json() {
    let ops = ops("", "Event");
    let doc = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "", "name": "cm"}, "reason": "", "count": 0, "type": "Normal",
        "reportingComponent": "", "reportingInstance": ""});
    let out = ops.decode("v1", doc).expect("decodes").object;
    assert!(out.get("reason").is_none() && out.get("count").is_none());
    assert_eq!(out["involvedObject"], json!({"name": "cm"}));
    assert_eq!(out["type"], "Normal");
    assert_eq!(
        out["reportingComponent"], "",
        "a field without omitempty stays"
    );
    assert_eq!(
        out["firstTimestamp"],
        Value::Null,
        "a by-value Time is null when unset"
    );
}
