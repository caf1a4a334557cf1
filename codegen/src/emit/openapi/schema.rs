//! Component schemas (v3) and definitions (v2) of a version's structs and kinds.
//!
//! Field schemas carry the description (the doc comment), `default`, the validation markers
//! as JSON-schema keywords (`minimum`/`maximum` with boolean `exclusiveMinimum`/`Maximum` as
//! in OpenAPI 3.0 and Swagger 2.0, `pattern`, `enum`, lengths, item and property counts,
//! `format`), CEL rules as `x-kubernetes-validations`, and the server-side apply and
//! strategic-merge markers (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`, `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`).

use serde_json::{Map, Value, json};

use super::{Dialect, meta_definition_name};
use crate::model::{CelRule, FieldModel, StructModel, TypeRef, Validation, VersionModel};

/// The definition name prefix of a version's own types: the protobuf package, with
/// Kubernetes' `k8s.io.` spelled as its Go package path is (`io.k8s.api.core.v1`).
pub fn definition_prefix(version: &VersionModel) -> String {
    let package = version.proto_package_or_default();
    match package.strip_prefix("k8s.io.") {
        Some(rest) => format!("io.k8s.{rest}"),
        None => package,
    }
}

/// The definition name of a struct of `version`.
pub fn definition_name(version: &VersionModel, name: &str) -> String {
    format!("{}.{name}", definition_prefix(version))
}

/// An OpenAPI description from a doc comment: lines of a paragraph joined with spaces,
/// paragraphs separated by a blank line, as Kubernetes' descriptions read.
pub fn description(docs: &str) -> String {
    docs.split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A `$ref` schema to a definition.
pub fn reference(dialect: Dialect, name: &str) -> Value {
    json!({ "$ref": format!("{}{name}", dialect.ref_prefix()) })
}

/// The schema of a value of type `ty` (element type for lists, value type for maps).
pub fn type_schema(dialect: Dialect, version: &VersionModel, ty: &TypeRef) -> Value {
    match ty {
        TypeRef::Bool => json!({"type": "boolean"}),
        TypeRef::I32 => json!({"type": "integer", "format": "int32"}),
        TypeRef::I64 => json!({"type": "integer", "format": "int64"}),
        TypeRef::F64 => json!({"type": "number", "format": "double"}),
        TypeRef::String => json!({"type": "string"}),
        TypeRef::Bytes => json!({"type": "string", "format": "byte"}),
        TypeRef::Json => json!({"x-kubernetes-preserve-unknown-fields": true}),
        TypeRef::Time => reference(dialect, &meta_definition_name("Time")),
        TypeRef::MicroTime => reference(dialect, &meta_definition_name("MicroTime")),
        TypeRef::Quantity => reference(dialect, &meta_definition_name("Quantity")),
        TypeRef::IntOrString => reference(dialect, &meta_definition_name("IntOrString")),
        TypeRef::RawExtension => reference(dialect, &meta_definition_name("RawExtension")),
        TypeRef::Duration => reference(dialect, &meta_definition_name("Duration")),
        TypeRef::FieldsV1 => reference(dialect, &meta_definition_name("FieldsV1")),
        TypeRef::Meta(m) => reference(dialect, &meta_definition_name(m)),
        TypeRef::Extern(r) => reference(dialect, &r.openapi_name),
        TypeRef::Struct(name) => reference(dialect, &definition_name(version, name)),
        TypeRef::Option(inner) => type_schema(dialect, version, inner),
        TypeRef::Vec(inner) => {
            json!({"type": "array", "items": type_schema(dialect, version, inner)})
        }
        TypeRef::Map(inner) => {
            json!({"type": "object", "additionalProperties": type_schema(dialect, version, inner)})
        }
    }
}

/// Adds `x-kubernetes-validations` for CEL rules.
fn add_rules(schema: &mut Map<String, Value>, rules: &[CelRule]) {
    if rules.is_empty() {
        return;
    }
    let list: Vec<Value> = rules
        .iter()
        .map(|r| json!({"rule": r.cel, "message": r.message}))
        .collect();
    schema.insert("x-kubernetes-validations".into(), Value::Array(list));
}

/// Adds the validation keywords of a field.
fn add_validation(schema: &mut Map<String, Value>, v: &Validation) {
    if let Some(n) = &v.minimum {
        schema.insert("minimum".into(), Value::Number(n.clone()));
    }
    if let Some(n) = &v.exclusive_minimum {
        schema.insert("minimum".into(), Value::Number(n.clone()));
        schema.insert("exclusiveMinimum".into(), Value::Bool(true));
    }
    if let Some(n) = &v.maximum {
        schema.insert("maximum".into(), Value::Number(n.clone()));
    }
    if let Some(n) = &v.exclusive_maximum {
        schema.insert("maximum".into(), Value::Number(n.clone()));
        schema.insert("exclusiveMaximum".into(), Value::Bool(true));
    }
    if let Some(p) = &v.pattern {
        schema.insert("pattern".into(), Value::String(p.clone()));
    }
    if !v.enum_values.is_empty() {
        schema.insert(
            "enum".into(),
            Value::Array(v.enum_values.iter().cloned().map(Value::String).collect()),
        );
    }
    for (key, value) in [
        ("minLength", v.min_length),
        ("maxLength", v.max_length),
        ("minItems", v.min_items),
        ("maxItems", v.max_items),
        ("minProperties", v.min_properties),
        ("maxProperties", v.max_properties),
    ] {
        if let Some(n) = value {
            schema.insert(key.into(), Value::from(n));
        }
    }
    if let Some(f) = &v.format {
        schema.insert("format".into(), Value::String(f.clone()));
    }
    if v.immutable {
        let rule = json!({"rule": "self == oldSelf", "message": "field is immutable"});
        match schema.get_mut("x-kubernetes-validations") {
            Some(Value::Array(list)) => list.push(rule),
            _ => {
                schema.insert("x-kubernetes-validations".into(), Value::Array(vec![rule]));
            }
        }
    }
}

/// The schema of one field.
pub fn field_schema(dialect: Dialect, version: &VersionModel, f: &FieldModel) -> Value {
    let base = type_schema(dialect, version, &f.ty);
    let mut extra = Map::new();
    if !f.docs.is_empty() {
        extra.insert("description".into(), Value::String(description(&f.docs)));
    }
    if let Some(d) = &f.default {
        extra.insert("default".into(), d.clone());
    }
    add_rules(&mut extra, &f.rules);
    add_validation(&mut extra, &f.validation);
    if let Some(list) = &f.list {
        extra.insert(
            "x-kubernetes-list-type".into(),
            Value::String(list.type_.as_str().into()),
        );
        if !list.map_keys.is_empty() {
            extra.insert(
                "x-kubernetes-list-map-keys".into(),
                Value::Array(list.map_keys.iter().cloned().map(Value::String).collect()),
            );
        }
    }
    if let Some(map) = &f.map {
        extra.insert(
            "x-kubernetes-map-type".into(),
            Value::String(map.type_.as_str().into()),
        );
    }
    if let Some(patch) = &f.patch {
        if let Some(key) = &patch.merge_key {
            extra.insert(
                "x-kubernetes-patch-merge-key".into(),
                Value::String(key.clone()),
            );
        }
        extra.insert(
            "x-kubernetes-patch-strategy".into(),
            Value::String(patch.strategy.clone()),
        );
    }
    merge_into_schema(dialect, base, extra)
}

/// Combines a type schema with field-level keywords. A `$ref` cannot have siblings in
/// OpenAPI v3, so there it is wrapped as `allOf: [{$ref}]` (as Kubernetes does); Swagger 2.0
/// documents of Kubernetes put `description` next to `$ref`, and so does this.
fn merge_into_schema(dialect: Dialect, base: Value, extra: Map<String, Value>) -> Value {
    let Value::Object(mut base) = base else {
        return base;
    };
    if extra.is_empty() {
        return Value::Object(base);
    }
    if base.contains_key("$ref") && dialect == Dialect::V3 {
        let mut out = Map::new();
        out.insert("allOf".into(), Value::Array(vec![Value::Object(base)]));
        out.extend(extra);
        return Value::Object(out);
    }
    base.extend(extra);
    Value::Object(base)
}

/// Adds `apiVersion` and `kind` properties, as every kind and list has.
fn type_meta_properties(properties: &mut Map<String, Value>) {
    properties.insert(
        "apiVersion".into(),
        json!({
            "type": "string",
            "description": "APIVersion is the versioned schema of this representation of an object: the group and version, such as `v1` or `example.dev/v1`. Servers convert recognized schemas to the latest internal value and may reject unrecognized values."
        }),
    );
    properties.insert(
        "kind".into(),
        json!({
            "type": "string",
            "description": "Kind is the REST resource type this object represents, in CamelCase, such as `ConfigMap`. Servers may infer it from the endpoint the client submits requests to; it cannot be updated."
        }),
    );
}

/// Adds the properties (and required names) of a struct's fields, flattening inline fields.
fn add_fields(
    dialect: Dialect,
    version: &VersionModel,
    s: &StructModel,
    properties: &mut Map<String, Value>,
    required: &mut Vec<Value>,
    depth: usize,
) {
    for f in &s.fields {
        if f.json_inline
            && depth < 8
            && let TypeRef::Struct(name) = f.ty.unwrap_option()
            && let Some(inner_struct) = version.struct_named(name)
        {
            add_fields(
                dialect,
                version,
                inner_struct,
                properties,
                required,
                depth + 1,
            );
            continue;
        }
        properties.insert(f.json_name.clone(), field_schema(dialect, version, f));
        if f.required() {
            required.push(Value::String(f.json_name.clone()));
        }
    }
}

/// The group-version-kind extension value of a kind (a one-element list).
pub fn gvk_list(version: &VersionModel, kind: &str) -> Value {
    json!([{ "group": version.group, "kind": kind, "version": version.version }])
}

/// The schema of a struct (a kind when it has `#[kind]`).
pub fn struct_schema(dialect: Dialect, version: &VersionModel, s: &StructModel) -> Value {
    let mut schema = Map::new();
    if !s.docs.is_empty() {
        schema.insert("description".into(), Value::String(description(&s.docs)));
    }
    if s.json_custom {
        // Its JSON is not an object of its fields (a schema or a boolean, an array of schemas,
        // any JSON value): the schema says nothing of its shape, as Kubernetes' documents of
        // `JSONSchemaPropsOrBool` and `JSON` do.
        return Value::Object(schema);
    }
    schema.insert("type".into(), Value::String("object".into()));
    let mut properties = Map::new();
    if s.kind.is_some() {
        type_meta_properties(&mut properties);
    }
    let mut required = Vec::new();
    add_fields(dialect, version, s, &mut properties, &mut required, 0);
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    add_rules(&mut schema, &s.rules);
    if let Some(map) = &s.map {
        schema.insert(
            "x-kubernetes-map-type".into(),
            Value::String(map.type_.as_str().into()),
        );
    }
    if let Some(kind) = &s.kind {
        schema.insert(
            "x-kubernetes-group-version-kind".into(),
            gvk_list(version, &kind.name),
        );
    }
    if let Some(gvk) = &s.gvk {
        schema.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{ "group": gvk.group, "kind": gvk.kind, "version": gvk.version }]),
        );
    }
    Value::Object(schema)
}

/// The schema of a kind's list type.
pub fn list_schema(dialect: Dialect, version: &VersionModel, kind: &str) -> Value {
    let mut properties = Map::new();
    type_meta_properties(&mut properties);
    let items = reference(dialect, &definition_name(version, kind));
    properties.insert(
        "items".into(),
        json!({"type": "array", "description": format!("The {kind} objects of the list."), "items": items}),
    );
    let metadata = merge_into_schema(
        dialect,
        reference(dialect, &meta_definition_name("ListMeta")),
        [(
            "description".to_string(),
            Value::String("Standard list metadata.".into()),
        )]
        .into_iter()
        .collect(),
    );
    properties.insert("metadata".into(), metadata);
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": properties,
        "required": ["items"],
        "x-kubernetes-group-version-kind": gvk_list(version, &format!("{kind}List")),
    })
}

/// Every schema of a version, keyed by definition name: each struct and each kind's list.
pub fn version_schemas(dialect: Dialect, version: &VersionModel) -> Map<String, Value> {
    let mut out = Map::new();
    for s in &version.structs {
        out.insert(
            definition_name(version, &s.name),
            struct_schema(dialect, version, s),
        );
        if let Some(kind) = &s.kind {
            out.insert(
                definition_name(version, &kind.list_name()),
                list_schema(dialect, version, &kind.name),
            );
        }
    }
    out
}
