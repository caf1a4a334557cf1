//! Tests of [`Structural`] on custom resources: pruning, defaulting and validation with
//! kube-apiserver's messages, ratcheting, and round-trip properties.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn widget() -> Structural {
    Structural::new(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
                "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
                "ip": {"type": "string", "format": "ipv4"},
                "when": {"type": "string", "format": "date-time"},
                "count": {"type": "integer", "format": "int32", "multipleOf": 2},
                "port": {"x-kubernetes-int-or-string": true},
                "note": {"type": "string", "nullable": true},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "x-kubernetes-list-type": "set", "items": {"type": "string", "default": "t"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"], "properties": {
                              "name": {"type": "string"},
                              "port": {"type": "integer", "default": 80}}}},
                "labels": {"type": "object", "maxProperties": 1, "minProperties": 1,
                           "additionalProperties": {"type": "string", "default": "v"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "x-kubernetes-preserve-unknown-fields": true},
                "child": {"type": "object", "properties": {"deep": {"type": "string", "default": "d"}}}
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    }))
    .unwrap()
}

fn rendered(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn pruning_removes_unknown_fields_and_reports_their_paths() {
    let s = widget();
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "extra": 1,
        "spec": {"size": "small", "foo": true,
                 "ports": [{"name": "a", "bar": 1}],
                 "raw": {"anything": {"x": 1}, "known": {"a": "1", "b": 2}},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                 "labels": {"k": "v"}},
        "status": {"phase": "Ready", "zzz": [1]}
    });
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        [
            "extra",
            "spec.foo",
            "spec.ports[0].bar",
            "spec.raw.known.b",
            "status.zzz"
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": "small", "ports": [{"name": "a"}],
                     "raw": {"anything": {"x": 1}, "known": {"a": "1"}},
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                     "labels": {"k": "v"}},
            "status": {"phase": "Ready"}
        })
    );
}

#[test]
fn embedded_metadata_is_coerced_to_object_meta() {
    let s = widget();
    let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "bogus": 1, "labels": {"a": "b"}}}}});
    let unknown = s.coerce_embedded(&mut obj, false).unwrap();
    assert_eq!(unknown, ["spec.template.metadata.bogus"]);
    assert_eq!(
        obj["spec"]["template"]["metadata"],
        json!({"name": "p", "labels": {"a": "b"}})
    );
    let mut obj = json!({"spec": {"template": {"apiVersion": 1, "kind": "Pod"}}});
    assert_eq!(
        s.coerce_embedded(&mut obj, false).unwrap_err().to_string(),
        "spec.template.apiVersion: Invalid value: 1: must be a string"
    );
    assert!(s.coerce_embedded(&mut obj, true).is_ok());
    assert_eq!(obj, json!({"spec": {"template": {"kind": "Pod"}}}));
}

#[test]
fn defaulting_fills_present_parents_items_and_map_entries() {
    let s = widget();
    let mut obj = json!({"spec": {"tags": [null, "x"], "labels": {"k": null},
                                  "ports": [{"name": "a"}], "note": null, "replicas": null}});
    s.drop_nulls(&mut obj);
    s.default(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"tags": ["t", "x"], "labels": {"k": "v"},
                        "ports": [{"name": "a", "port": 80}], "note": null,
                        "replicas": 1, "size": "small"}})
    );
    // No parent, no default inside it.
    let mut obj = json!({});
    s.default(&mut obj);
    assert_eq!(obj, json!({}));
}

#[test]
fn validation_messages_are_kube_openapi_s() {
    let s = widget();
    let obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "spec": {
            "size": "medium", "replicas": 11, "ratio": 1.5, "name": "AB",
            "ip": "abc", "when": "yesterday", "count": 3, "port": true,
            "tags": ["a", "b", "a"], "labels": {"a": "1", "b": "2"},
            "ports": [{"name": "x"}, {"name": "x"}, {}],
            "template": {"kind": "Pod", "metadata": {"name": "a/b"}},
            "note": null, "child": "nope"
        },
        "status": {"phase": 7}
    });
    let errs = rendered(s.validate(&obj));
    let expected = [
        "spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"",
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
        "spec.name: Invalid value: \"AB\": spec.name in body should be at least 3 chars long",
        "spec.ip: Invalid value: \"abc\": spec.ip in body must be of type ipv4: \"abc\"",
        "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
        "spec.count: Invalid value: 3: spec.count in body should be a multiple of 2",
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        "spec.tags: Too many: 3: must have at most 2 items",
        "spec.labels: Too many: 2: must have at most 1 item",
        "spec.ports[2].name: Required value",
        "spec.child: Invalid value: \"string\": spec.child in body must be of type object: \"string\"",
        "status.phase: Invalid value: \"integer\": status.phase in body must be of type string: \"integer\"",
        "spec.template.apiVersion: Required value",
        "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
        "spec.tags[2]: Duplicate value: \"a\"",
        "spec.ports[1]: Duplicate value: {\"name\":\"x\"}",
    ];
    super::tests::assert_errors(&errs, &expected);
    // The kube-openapi errors come first, then embedded resources, then list types.
    let dup = errs.iter().position(|e| e.contains("Duplicate")).unwrap();
    let embedded = errs
        .iter()
        .position(|e| e.contains("spec.template"))
        .unwrap();
    assert!(embedded < dup);
}

#[test]
fn more_messages_required_lengths_and_counts() {
    let s = widget();
    let errs = rendered(s.validate(&json!({"spec": {"name": "abcdefg", "tags": [],
        "labels": {}, "count": 4_000_000_000i64, "note": 1}})));
    let expected = [
        "spec.size: Required value",
        "spec.name: Too long: may not be more than 5 bytes",
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
        "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
        "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.count",
        "spec.note: Invalid value: \"integer\": spec.note in body must be of type string: \"integer\"",
    ];
    super::tests::assert_errors(&errs, &expected);
    let errs =
        rendered(s.validate(&json!({"spec": {"size": "small", "name": "abc1", "replicas": null}})));
    assert_eq!(
        errs,
        [
            "spec.name: Invalid value: \"abc1\": spec.name in body should match '^[a-z]+$'",
            "spec.replicas: Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\"",
        ]
    );
}

#[test]
fn composite_schemas_report_as_kube_openapi() {
    let s = Structural::new(&json!({"type": "object", "properties": {
        "v": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^a"}],
              "not": {"enum": ["zz"]}}
    }}))
    .unwrap();
    let errs = rendered(s.validate(&json!({"v": "bb"})));
    assert_eq!(
        errs,
        [
            "<nil>: Invalid value: \"\": \"v\" must validate at least one schema (anyOf)",
            "v: Too long: may not be more than 1 bytes",
        ]
        .map(|e| e.replace("1 bytes", "1 byte"))
    );
    let errs = rendered(s.validate(&json!({"v": "zz"})));
    assert!(
        errs.contains(
            &"<nil>: Invalid value: \"\": \"v\" must not validate the schema (not)".to_string()
        ),
        "{errs:#?}"
    );
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let s = widget();
    let old = json!({"spec": {"size": "medium", "replicas": 20,
        "ports": [{"name": "a", "port": "x"}], "tags": ["a", "a"]}});
    // Unchanged invalid values (even a map-list item moved) are not errors.
    let new = json!({"spec": {"size": "medium", "replicas": 20,
        "ports": [{"name": "b", "port": 1}, {"name": "a", "port": "x"}], "tags": ["a", "a"]}});
    assert_eq!(
        rendered(s.validate_update(&new, &old)),
        Vec::<String>::new()
    );
    // Changed ones are.
    let new =
        json!({"spec": {"size": "medium", "replicas": 30, "ports": [{"name": "a", "port": "y"}]}});
    assert_eq!(
        rendered(s.validate_update(&new, &old)),
        [
            "spec.replicas: Invalid value: 30: spec.replicas in body should be less than or equal to 10",
            "spec.ports[0].port: Invalid value: \"string\": spec.ports[0].port in body must be of type integer: \"string\"",
        ]
    );
    // List uniqueness is checked when the old object was unique.
    let old = json!({"spec": {"size": "small", "tags": ["a"]}});
    let new = json!({"spec": {"size": "small", "tags": ["a", "a"]}});
    assert_eq!(
        rendered(s.validate_update(&new, &old)),
        ["spec.tags[1]: Duplicate value: \"a\""]
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-20i64..20).prop_map(Value::from),
        "[a-z]{0,3}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("size".to_string()),
                    Just("tags".to_string()),
                    Just("labels".to_string()),
                    Just("child".to_string()),
                    Just("ports".to_string()),
                    Just("name".to_string()),
                    "[a-z]{1,2}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn pruning_and_defaulting_are_idempotent(obj in arb_json()) {
        let s = widget();
        let mut once = obj.clone();
        s.prune(&mut once);
        s.drop_nulls(&mut once);
        s.default(&mut once);
        let mut twice = once.clone();
        prop_assert!(s.prune(&mut twice).is_empty());
        s.drop_nulls(&mut twice);
        s.default(&mut twice);
        prop_assert_eq!(&once, &twice);
        // Validation of the result is stable, and an unchanged update reports no more than a
        // create would.
        let created = s.validate(&once);
        prop_assert_eq!(&created, &s.validate(&twice));
        let update = s.validate_update(&once, &once);
        prop_assert!(update.iter().all(|e| created.contains(e)), "{update:?}");
    }
}

#[test]
fn status_updates_validate_the_status_with_its_own_names() {
    let s = widget();
    let old = json!({"spec": {"size": "small"}, "status": {"phase": "A"}});
    let new = json!({"spec": {"size": "nope"}, "status": {"phase": 1}});
    assert_eq!(
        rendered(s.validate_status_update(&new, &old)),
        [
            "status.phase: Invalid value: \"integer\": phase in body must be of type string: \"integer\""
        ]
    );
    assert!(s.validate_status_update(&old, &old).is_empty());
}

#[test]
fn multiples_of_fractions_allow_float_error() {
    let s = Structural::new(&json!({"type": "object", "properties": {
        "n": {"type": "number", "multipleOf": 0.1}}}))
    .unwrap();
    assert!(s.validate(&json!({"n": 0.3})).is_empty());
    assert_eq!(
        rendered(s.validate(&json!({"n": 0.35}))),
        ["n: Invalid value: 0.35: n in body should be a multiple of 0.1"]
    );
}

#[test]
fn patterns_match_as_go_s_regexp() {
    let s = Structural::new(&json!({"type": "object", "properties": {
        "n": {"type": "string", "pattern": "^\\d+$"}}}))
    .unwrap();
    assert!(s.validate(&json!({"n": "42"})).is_empty());
    assert_eq!(
        rendered(s.validate(&json!({"n": "٤٢"}))),
        ["n: Invalid value: \"٤٢\": n in body should match '^\\d+$'"]
    );
}

#[test]
fn served_defaults_are_pruned() {
    let s = Structural::new(&json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"x": {"type": "string"}},
              "default": {"x": "1", "junk": true}}}}))
    .unwrap();
    let mut obj = json!({});
    s.default(&mut obj);
    assert_eq!(obj, json!({"a": {"x": "1"}}));
}
