//! `KindOps::validate_create_and_encode`: the errors of `validate_create` and, for a valid
//! object of a kind whose validation hook decodes it, the bytes of
//! `encode_protobuf_for_storage`; no encoding otherwise (the caller then encodes as before).

use apimachinery::KindOps;
use serde_json::{Value, json};

fn ops(group: &str, kind: &str) -> std::sync::Arc<dyn KindOps> {
    generated::scheme()
        .by_kind(group, kind)
        .unwrap_or_else(|| panic!("{kind} registered"))
        .clone()
}

fn config_map(data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "managedFields": [{
                "manager": "m",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}}},
            }],
        },
        "data": data,
    })
}

#[test]
fn a_valid_object_is_encoded_as_for_storage() {
    let ops = ops("", "ConfigMap");
    let cm = config_map(json!({"k": "v", "payload": "x".repeat(256)}));
    let (errs, raw) = ops.validate_create_and_encode("v1", &cm).unwrap();
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(errs, ops.validate_create("v1", &cm).unwrap());
    // The stored message never carries the resourceVersion, whichever way it is encoded.
    assert_eq!(
        raw,
        Some(ops.encode_protobuf_for_storage("v1", &cm).unwrap())
    );
}

#[test]
fn an_invalid_object_is_not_encoded() {
    let ops = ops("", "ConfigMap");
    // A key the hook rejects, and a value that does not decode at all.
    for cm in [
        config_map(json!({"bad key!": "v"})),
        config_map(json!({"k": 5})),
    ] {
        let (errs, raw) = ops.validate_create_and_encode("v1", &cm).unwrap();
        assert!(!errs.is_empty());
        assert_eq!(errs, ops.validate_create("v1", &cm).unwrap());
        assert_eq!(raw, None);
    }
}

#[test]
fn a_kind_without_a_validation_hook_is_not_encoded() {
    let ops = ops("", "Namespace");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
    let (errs, raw) = ops.validate_create_and_encode("v1", &ns).unwrap();
    assert_eq!(errs, ops.validate_create("v1", &ns).unwrap());
    assert_eq!(raw, None);
}
