//! Real CustomResourceDefinitions (cert-manager's Certificate, Gateway API's HTTPRoute,
//! prometheus-operator's ServiceMonitor) survive a JSON decode and encode unchanged, and a
//! protobuf encode and decode; the "either" types of a JSON schema read and write every form
//! Kubernetes' `marshal.go` does.

use apiextensions_api::apiextensions_k8s_io::v1;
use apimachinery::protobuf::ProtoMessage;
use serde_json::{Value, json};

/// The test CRDs, as JSON values.
fn crds() -> Vec<(&'static str, Value)> {
    let files: [(&str, &str); 3] = [
        (
            "cert-manager.io_certificates.yaml",
            include_str!("data/cert-manager.io_certificates.yaml"),
        ),
        (
            "gateway.networking.k8s.io_httproutes.yaml",
            include_str!("data/gateway.networking.k8s.io_httproutes.yaml"),
        ),
        (
            "monitoring.coreos.com_servicemonitors.yaml",
            include_str!("data/monitoring.coreos.com_servicemonitors.yaml"),
        ),
    ];
    files
        .into_iter()
        .map(|(name, text)| {
            let value: Value = serde_yaml_ng::from_str(text).expect(name);
            (name, value)
        })
        .collect()
}

/// The JSON the typed CRD writes, without the `status` it writes for a CRD that had none.
fn encoded(crd: &v1::CustomResourceDefinition, had_status: bool) -> Value {
    let mut out = serde_json::to_value(crd).unwrap();
    if !had_status {
        out.as_object_mut().unwrap().remove("status");
    }
    out
}

#[test]
fn real_crds_round_trip_through_json_unchanged() {
    for (name, value) in crds() {
        let crd: v1::CustomResourceDefinition =
            serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = encoded(&crd, value.get("status").is_some());
        if out != value {
            let (a, b) = (
                serde_json::to_string_pretty(&out).unwrap(),
                serde_json::to_string_pretty(&value).unwrap(),
            );
            let first = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            panic!(
                "{name} changed in a JSON round trip; first difference near line {first}:\nout:  {:?}\nwant: {:?}",
                a.lines().nth(first),
                b.lines().nth(first)
            );
        }
    }
}

#[test]
fn real_crds_round_trip_through_protobuf() {
    for (name, value) in crds() {
        let crd: v1::CustomResourceDefinition = serde_json::from_value(value).unwrap();
        let bytes = crd.encode_to_vec();
        let back = v1::CustomResourceDefinition::decode(&bytes).expect(name);
        assert_eq!(back, crd, "{name} changed in a protobuf round trip");
        assert_eq!(
            back.encode_to_vec(),
            bytes,
            "{name}: the encoding is stable"
        );
    }
}

/// Decodes a schema from JSON and writes it back.
fn schema_round_trip(schema: Value) -> (v1::JSONSchemaProps, Value) {
    let props: v1::JSONSchemaProps = serde_json::from_value(schema).unwrap();
    let out = serde_json::to_value(&props).unwrap();
    (props, out)
}

#[test]
fn additional_properties_is_a_boolean_or_a_schema() {
    let (props, out) = schema_round_trip(json!({"type": "object", "additionalProperties": false}));
    let ap = props.additional_properties.as_ref().unwrap();
    assert!(!ap.allows && ap.schema.is_none());
    assert_eq!(
        out,
        json!({"type": "object", "additionalProperties": false})
    );

    let (props, out) = schema_round_trip(json!({"additionalProperties": {"type": "string"}}));
    let ap = props.additional_properties.as_ref().unwrap();
    assert!(ap.allows);
    assert_eq!(ap.schema.as_ref().unwrap().type_.as_deref(), Some("string"));
    assert_eq!(out, json!({"additionalProperties": {"type": "string"}}));

    let err = serde_json::from_value::<v1::JSONSchemaProps>(json!({"additionalProperties": "x"}))
        .unwrap_err();
    assert!(
        err.to_string().contains("boolean or JSON schema expected"),
        "{err}"
    );
}

#[test]
fn items_is_a_schema_or_an_array_of_schemas() {
    let (props, out) = schema_round_trip(json!({"type": "array", "items": {"type": "integer"}}));
    assert!(props.items.as_ref().unwrap().schema.is_some());
    assert_eq!(out, json!({"type": "array", "items": {"type": "integer"}}));

    let (props, out) =
        schema_round_trip(json!({"items": [{"type": "integer"}, {"type": "string"}]}));
    assert_eq!(props.items.as_ref().unwrap().json_schemas.len(), 2);
    assert_eq!(
        out,
        json!({"items": [{"type": "integer"}, {"type": "string"}]})
    );

    // Anything else reads as empty without an error, as Kubernetes reads it.
    let (props, out) = schema_round_trip(json!({"items": true}));
    assert_eq!(props.items, Some(v1::JSONSchemaPropsOrArray::default()));
    assert_eq!(out, json!({"items": null}));
}

#[test]
fn dependencies_are_schemas_or_property_lists() {
    let (props, out) = schema_round_trip(json!({"dependencies": {
        "a": ["b", "c"],
        "d": {"required": ["e"]},
    }}));
    assert_eq!(props.dependencies["a"].property, ["b", "c"]);
    assert!(props.dependencies["d"].schema.is_some());
    assert_eq!(
        out,
        json!({"dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}})
    );
}

#[test]
fn default_and_enum_hold_any_json() {
    let schema = json!({
        "x-kubernetes-int-or-string": true,
        "default": {"nested": [1, 2.5, "x", null, {"k": false}]},
        "enum": ["a", 1, null, {"b": []}],
        "example": 0.1,
        "minimum": 0,
        "maximum": 1.5,
        "x-kubernetes-validations": [{"rule": "self.x > 0", "message": "x must be positive"}],
        "x-kubernetes-preserve-unknown-fields": false,
    });
    let (props, out) = schema_round_trip(schema.clone());
    assert_eq!(props.x_kubernetes_int_or_string, Some(true));
    assert_eq!(props.enum_.len(), 4);
    assert_eq!(props.enum_[2], v1::JSON::default());
    assert_eq!(out, schema);
    // A `null` default is no default, as Go reads it into a nil pointer.
    let (props, out) = schema_round_trip(json!({"default": null}));
    assert_eq!(props.default, None);
    assert_eq!(out, json!({}));
}

#[test]
fn schemas_round_trip_through_protobuf() {
    let (props, _) = schema_round_trip(json!({
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": [{"type": "string"}]},
            "b": {"additionalProperties": false, "not": {"type": "integer"}},
            "c": {"default": {"x": 1}, "enum": [1, "two"], "minimum": -1},
        },
        "additionalProperties": {"type": "string"},
        "dependencies": {"a": ["b"]},
    }));
    let bytes = props.encode_to_vec();
    let back = v1::JSONSchemaProps::decode(&bytes).unwrap();
    assert_eq!(back, props);
}
