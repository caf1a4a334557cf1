//! Tests of the schema engine through its public API, asserting Kubernetes' exact messages.

use serde_json::{Value, json};

use super::*;

const P: &str = "spec.validation.openAPIV3Schema";

fn crd_errors(schema: Value) -> Vec<String> {
    crd_errors_with(schema, &CrdSchemaOptions::default())
}

fn crd_errors_with(schema: Value, opts: &CrdSchemaOptions) -> Vec<String> {
    validate_crd_schema(&schema, P, opts)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Asserts that `errs` holds each of the `expected` errors.
fn assert_has_errors(errs: &[String], expected: &[&str]) {
    for e in expected {
        assert!(errs.iter().any(|x| x == e), "missing {e}\nin {errs:#?}");
    }
}

/// Asserts that `errs` holds exactly the `expected` errors, in any order.
pub(super) fn assert_errors(errs: &[String], expected: &[&str]) {
    assert_has_errors(errs, expected);
    assert_eq!(errs.len(), expected.len(), "{errs:#?}");
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

#[test]
fn a_good_schema_has_no_errors() {
    let schema = object(json!({
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "port": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}
        }},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}
    }));
    assert_eq!(crd_errors(schema), Vec::<String>::new());
}

#[test]
fn structural_rules_speak_kubernetes() {
    let schema = json!({
        "properties": {
            "a": {},
            "b": {"type": "array"},
            "c": {"type": "object", "x-kubernetes-embedded-resource": true},
            "d": {"type": "string", "allOf": [{"type": "string", "description": "x"}]},
            "e": {"type": "object"},
            "g": {"type": "string", "pattern": "("},
            "h": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true},
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
        },
        "additionalProperties": {"type": "string"},
        "anyOf": [{"properties": {"f": {}}}]
    });
    let errs = crd_errors(schema);
    let expected = [
        "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
        "spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields",
        "spec.validation.openAPIV3Schema.properties[b].items: Required value: must be specified",
        "spec.validation.openAPIV3Schema.properties[c].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        "spec.validation.openAPIV3Schema.properties[d].allOf[0].description: Forbidden: must be empty to be structural",
        "spec.validation.openAPIV3Schema.properties[d].allOf[0].type: Forbidden: must be empty to be structural",
        "spec.validation.openAPIV3Schema.properties[f]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[f]",
        "spec.validation.openAPIV3Schema.properties[h].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
        "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
    ];
    assert_has_errors(&errs, &expected);
    assert!(
        errs.iter().any(|e| e == "spec.validation.openAPIV3Schema.properties[g].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`"),
        "{errs:#?}"
    );
    // The structural errors come sorted by their text.
    let structural: Vec<&String> = errs
        .iter()
        .filter(|e| !e.contains("mutual exclusive"))
        .collect();
    let mut sorted = structural.clone();
    sorted.sort();
    assert_eq!(structural, sorted);
}

#[test]
fn the_root_must_be_an_object_and_names_strings() {
    let errs = crd_errors(json!({"type": "string"}));
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"
        ]
    );
    let errs = crd_errors(object(json!({
        "kind": {"type": "integer"},
        "metadata": {"type": "string"}
    })));
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema.properties[kind].type: Invalid value: \"integer\": must be string",
            "spec.validation.openAPIV3Schema.properties[metadata].type: Invalid value: \"string\": must be object",
        ]
    );
}

#[test]
fn per_node_checks_speak_kubernetes() {
    let schema = object(json!({
        "a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
        "b": {"type": "object", "properties": {"x": {"type": "string"}},
              "additionalProperties": false},
        "c": {"type": "string", "x-kubernetes-map-type": "weird"},
        "d": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}},
        "e": {"type": "array", "x-kubernetes-list-type": "set",
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "f": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
        "g": {"type": "array", "x-kubernetes-list-map-keys": ["k"],
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "h": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k", "missing", "k"],
              "items": {"type": "object", "properties": {"k": {"type": "string", "nullable": true}}}},
        "i": {"type": "object", "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self.a", "message": " "},
            {"rule": "self.a", "message": "a\nb"},
            {"rule": "self.a\n|| self.b"},
            {"rule": "self.a", "messageExpression": "  ", "reason": "Nope", "fieldPath": "\n"}
        ]}
    }));
    let errs = crd_errors(schema);
    let expected = [
        "spec.validation.openAPIV3Schema.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        "spec.validation.openAPIV3Schema.properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        "spec.validation.openAPIV3Schema.properties[c].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified",
        "spec.validation.openAPIV3Schema.properties[c].x-kubernetes-map-type: Unsupported value: \"weird\": supported values: \"atomic\", \"granular\"",
        "spec.validation.openAPIV3Schema.properties[d].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
        "spec.validation.openAPIV3Schema.properties[d].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map",
        "spec.validation.openAPIV3Schema.properties[e].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
        "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"",
        "spec.validation.openAPIV3Schema.properties[g].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
        "spec.validation.openAPIV3Schema.properties[h].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"missing\",\"k\"]: entries must all be names of item properties",
        "spec.validation.openAPIV3Schema.properties[h].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"missing\",\"k\"]: must not contain duplicate entries",
        "spec.validation.openAPIV3Schema.properties[h].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        "spec.validation.openAPIV3Schema.properties[h].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
        // The key is listed twice, and checked twice (as Kubernetes does).
        "spec.validation.openAPIV3Schema.properties[h].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        "spec.validation.openAPIV3Schema.properties[h].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[0].rule: Required value: rule is not specified",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[1].message: Invalid value: \" \": must be non-empty if specified",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[2].message: Invalid value: \"a\\nb\": must not contain line breaks",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be non-empty if specified",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[4].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[4].fieldPath: Invalid value: \"\\n\": must be non-empty if specified",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[4].fieldPath: Invalid value: \"\\n\": must not contain line breaks",
        "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-validations[4].fieldPath: Invalid value: \"\\n\": must be a valid path",
    ];
    assert_errors(&errs, &expected);
}

#[test]
fn types_and_defaults_at_the_root_are_refused() {
    let errs = crd_errors_with(
        object(json!({
            "a": {"type": "null"},
            "b": {"type": "float"},
            "metadata": {"type": "object", "default": {}},
            "kind": {"type": "string", "default": "X"}
        })),
        &CrdSchemaOptions {
            require_structural_schema: false,
            ..CrdSchemaOptions::default()
        },
    );
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema.properties[a].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "spec.validation.openAPIV3Schema.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative",
            "spec.validation.openAPIV3Schema.properties[b].type: Unsupported value: \"float\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "spec.validation.openAPIV3Schema.properties[kind].default: Forbidden: must not be set in top-level kind",
            "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
        ]
    );
}

#[test]
fn unsupported_keywords_are_reported_and_the_held_back_error_only_alone() {
    let errs = crd_errors(json!({"type": "object", "id": "x"}));
    assert_eq!(
        errs,
        ["spec.validation.openAPIV3Schema.id: Forbidden: id is not supported"]
    );
    let errs = crd_errors(json!({"type": "object", "$schema": "x"}));
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"
        ]
    );
    let errs = crd_errors(json!({"type": "object", "items": [{"type": "string"}],
        "definitions": {"a": {}}, "$ref": "#", "additionalItems": true,
        "patternProperties": {"a": {}}, "dependencies": {"a": ["b"]}}));
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema.additionalItems: Forbidden: additionalItems is not supported",
            "spec.validation.openAPIV3Schema.patternProperties: Forbidden: patternProperties is not supported",
            "spec.validation.openAPIV3Schema.definitions: Forbidden: definitions is not supported",
            "spec.validation.openAPIV3Schema.dependencies: Forbidden: dependencies is not supported",
            "spec.validation.openAPIV3Schema.$ref: Forbidden: $ref is not supported",
            "spec.validation.openAPIV3Schema.items: Forbidden: items must be a schema object and not an array",
        ]
    );
}

#[test]
fn the_root_of_a_status_enabled_schema_and_nullable_are_restricted() {
    let opts = CrdSchemaOptions {
        status_subresource_enabled: true,
        ..CrdSchemaOptions::default()
    };
    let errs = crd_errors_with(json!({"type": "object", "nullable": true}), &opts);
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema: Invalid value: {\"nullable\":true,\"type\":\"object\"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
        ]
        .map(|e| e.replace("{\"nullable\":true,\"type\":\"object\"}", &json!({"type": "object", "nullable": true}).to_string()))
    );
}

#[test]
fn defaults_must_be_pruned_and_valid() {
    let schema = object(json!({
        "spec": {"type": "object", "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "string"}},
                  "default": {"x": "ok", "y": 1}},
            "b": {"type": "integer", "maximum": 3, "default": 5},
            "c": {"type": "string", "default": 1},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"metadata": {"type": "object", "properties": {
                      "name": {"type": "string", "default": "a/b"}}}}}
        }}
    }));
    let errs = crd_errors(schema);
    assert_eq!(
        errs,
        [
            "spec.validation.openAPIV3Schema.properties[spec].properties[a].default: Invalid value: {\"x\":\"ok\",\"y\":1}: must not have unknown fields",
            "spec.validation.openAPIV3Schema.properties[spec].properties[b].default: Invalid value: 5:  in body should be less than or equal to 3",
            "spec.validation.openAPIV3Schema.properties[spec].properties[c].default: Invalid value: \"integer\":  in body must be of type string: \"integer\"",
            "spec.validation.openAPIV3Schema.properties[spec].properties[e].properties[metadata].properties[name].default: Invalid value: \"a/b\": must result in valid metadata: metadata.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
}

#[test]
fn schemas_too_deep_or_malformed_are_errors() {
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let errs = validate_crd_schema(&deep, P, &CrdSchemaOptions::default());
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0]
            .to_string()
            .ends_with("must not be nested more than 64 levels deep"),
        "{}",
        errs[0]
    );
    assert_eq!(
        crd_errors(
            json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": "3"}}})
        ),
        [
            "spec.validation.openAPIV3Schema.properties[a].maxLength: Invalid value: \"3\": must be an integer"
        ]
    );
    assert_eq!(
        crd_errors(json!(true)),
        ["spec.validation.openAPIV3Schema: Invalid value: true: must be an object"]
    );
    assert_eq!(
        crd_errors(json!({"type": "object", "additionalProperties": 3})),
        [
            "spec.validation.openAPIV3Schema.additionalProperties: Invalid value: 3: boolean or JSON schema expected"
        ]
    );
}

#[test]
fn the_nonstructural_condition_is_kubernetes() {
    let good = object(json!({"spec": {"type": "object"}}));
    let bad = object(json!({"spec": {}}));
    let unreadable = json!({"type": "object", "id": "x"});
    assert_eq!(
        nonstructural_condition(false, &[("v1", Some(&good)), ("v2", None)]),
        None
    );
    assert_eq!(
        nonstructural_condition(true, &[("v1", Some(&good)), ("v2", Some(&bad))]),
        Some(NonStructuralCondition {
            status: "True",
            reason: "Violations",
            message: "[spec.preserveUnknownFields: Invalid value: true: must be false, spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields]".into(),
        })
    );
    assert_eq!(
        nonstructural_condition(false, &[("v1", Some(&unreadable))]),
        Some(NonStructuralCondition {
            status: "Unknown",
            reason: "StructuralError",
            message: "failed to check validation schema for version v1: OpenAPIV3Schema 'id' is not supported".into(),
        })
    );
}

#[test]
fn update_options_ratchet_from_the_old_schemas() {
    let old = [object(json!({"a": {"type": "float"},
        "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}))];
    let opts = CrdSchemaOptions::ratcheted_from(old.iter(), false, false, false);
    assert!(!opts.require_valid_property_type);
    assert!(!opts.require_atomic_set_type);
    assert!(opts.require_structural_schema);
    assert!(opts.require_pruned_defaults);
    let old = [json!({"type": "object", "properties": {"a": {}}})];
    let opts = CrdSchemaOptions::ratcheted_from(old.iter(), true, false, false);
    assert!(!opts.require_structural_schema);
    assert!(schema_has_defaults(
        &json!({"properties": {"a": {"default": 1}}})
    ));
    assert!(schema_has_kubernetes_extensions(
        &json!({"items": {"x-kubernetes-list-type": "set"}})
    ));
}

#[test]
fn the_deepest_schema_allowed_is_walked_within_the_stack() {
    // One level below the bound, an object per level; everything the engine does walks it.
    let mut schema = json!({"type": "string", "default": "x"});
    let mut obj = json!("v");
    for _ in 0..MAX_SCHEMA_DEPTH - 2 {
        schema = json!({"type": "object", "properties": {"a": schema}, "default": {}});
        obj = json!({"a": obj, "b": 1});
    }
    let schema = json!({"type": "object", "properties": {"a": schema}});
    let obj = json!({"a": obj});
    assert!(validate_crd_schema(&schema, P, &CrdSchemaOptions::default()).is_empty());
    let s = Structural::new(&schema).unwrap();
    let mut pruned = obj.clone();
    assert_eq!(s.prune(&mut pruned).len(), MAX_SCHEMA_DEPTH - 2);
    s.default(&mut pruned);
    assert!(s.validate(&pruned).is_empty());
    assert!(s.validate_update(&pruned, &obj).is_empty());
}

/// Schema-shaped JSON: objects whose keys are schema keywords, with any values.
fn arb_schema() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let keys = prop_oneof![
        Just("type"),
        Just("properties"),
        Just("items"),
        Just("additionalProperties"),
        Just("default"),
        Just("enum"),
        Just("required"),
        Just("nullable"),
        Just("allOf"),
        Just("anyOf"),
        Just("not"),
        Just("pattern"),
        Just("format"),
        Just("minimum"),
        Just("maxLength"),
        Just("x-kubernetes-preserve-unknown-fields"),
        Just("x-kubernetes-embedded-resource"),
        Just("x-kubernetes-int-or-string"),
        Just("x-kubernetes-list-type"),
        Just("x-kubernetes-list-map-keys"),
        Just("metadata"),
        Just("a"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::from),
        prop_oneof![
            Just("object"),
            Just("array"),
            Just("string"),
            Just("integer"),
            Just("set"),
            Just("map"),
            Just("a"),
            Just("date-time"),
            Just("("),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone(), inner, 0..5).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest::proptest! {
    #[test]
    fn arbitrary_schemas_and_objects_never_panic(schema in arb_schema(), obj in arb_schema()) {
        let _ = validate_crd_schema(&schema, P, &CrdSchemaOptions::default());
        let _ = nonstructural_condition(true, &[("v1", Some(&schema))]);
        let _ = CrdSchemaOptions::ratcheted_from([&schema], true, true, true);
        if let Ok(s) = Structural::new(&schema) {
            let mut o = obj.clone();
            s.prune(&mut o);
            proptest::prop_assert!(s.prune(&mut o.clone()).is_empty());
            let _ = s.coerce_embedded(&mut o.clone(), false);
            let _ = s.coerce_embedded(&mut o, true);
            s.drop_nulls(&mut o);
            s.default(&mut o);
            let _ = s.validate(&o);
            let _ = s.validate_update(&o, &obj);
        }
    }
}

#[test]
fn rule_field_paths_must_name_fields() {
    let rules = json!([
        {"rule": "true", "fieldPath": ".spec.a"},
        {"rule": "true", "fieldPath": ".spec['x.y']"},
        {"rule": "true", "fieldPath": ".labels.anything"},
        {"rule": "true", "fieldPath": ".spec.nope"},
        {"rule": "true", "fieldPath": "spec"},
        {"rule": "true", "fieldPath": ".spec[0]"}
    ]);
    let schema = json!({"type": "object", "x-kubernetes-validations": rules, "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}, "x.y": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
    }});
    assert_eq!(
        crd_errors(schema),
        [
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[3].fieldPath: Invalid value: \".spec.nope\": must be a valid path",
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[4].fieldPath: Invalid value: \"spec\": must be a valid path",
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[5].fieldPath: Invalid value: \".spec[0]\": must be a valid path",
        ]
    );
}
