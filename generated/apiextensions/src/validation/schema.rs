//! The schema of a version (or the hoisted one): the one call of the schema check, and the
//! checks this crate makes around it until apimachinery's schema validation takes its place.

use apimachinery::errors::FieldError;
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

/// Options of the schema check ([`validate_openapi_schema`]), as Kubernetes'
/// `validationOptions` gives them for one schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrdSchemaOptions {
    /// The status subresource applies to the schema: only some fields are allowed at its root.
    pub status_subresource_enabled: bool,
    /// Every schema must be structural (always on create, and whenever
    /// `preserveUnknownFields` is false).
    pub require_structural_schema: bool,
}

/// Whether any schema of the spec has a `default` anywhere.
pub(super) fn spec_has_defaults(spec: &v1::CustomResourceDefinitionSpec) -> bool {
    spec.versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .any(|s| schema_has_default(&::serde_json::to_value(s).unwrap_or(Value::Null)))
}

/// Whether a schema (as JSON) has a `default` at any level.
pub(super) fn schema_has_default(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("default")
                || map
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "enum" | "example"))
                    .any(|(_, v)| schema_has_default(v))
        }
        Value::Array(items) => items.iter().any(schema_has_default),
        _ => false,
    }
}

/// The schema check of one `CustomResourceValidation` at `path` (`spec.validation` or
/// `spec.versions[i].schema`).
pub(super) fn validate_schema_of(
    validation: &v1::CustomResourceValidation,
    path: &str,
    status_subresource_enabled: bool,
    preserve_unknown_fields: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = &validation.open_api_v3_schema else {
        return;
    };
    let schema = ::serde_json::to_value(schema).unwrap_or(Value::Null);
    let options = CrdSchemaOptions {
        status_subresource_enabled,
        require_structural_schema: !preserve_unknown_fields,
    };
    // THE SCHEMA CHECK (the one call site): when apimachinery has
    // `apimachinery::schema::validate_crd_schema`, this call becomes
    // `::apimachinery::schema::validate_crd_schema(&schema, &format!("{path}.openAPIV3Schema"), &options)`
    // and `validate_openapi_schema` below (with this file's `CrdSchemaOptions`) goes away.
    errors.extend(validate_openapi_schema(
        &schema,
        &format!("{path}.openAPIV3Schema"),
        &options,
    ));
}

/// The fields allowed at the root of a schema whose status subresource is enabled, by JSON
/// name, with their Go names for the message, in the internal struct's order.
pub(super) const ROOT_FIELDS: [(&str, &str); 41] = [
    ("id", ""),
    ("$schema", ""),
    ("$ref", ""),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", ""),
    ("format", "Format"),
    ("title", "Title"),
    ("default", ""),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", ""),
    ("maxProperties", ""),
    ("minProperties", ""),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", ""),
    ("oneOf", ""),
    ("anyOf", ""),
    ("not", ""),
    ("properties", "Properties"),
    ("additionalProperties", ""),
    ("patternProperties", ""),
    ("dependencies", ""),
    ("additionalItems", ""),
    ("definitions", ""),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", ""),
    ("x-kubernetes-int-or-string", ""),
    ("x-kubernetes-list-map-keys", ""),
];

/// Fields after `x-kubernetes-list-map-keys` in the internal struct (none allowed at the root
/// but `x-kubernetes-validations`).
pub(super) const ROOT_FIELDS_TAIL: [(&str, &str); 3] = [
    ("x-kubernetes-list-type", ""),
    ("x-kubernetes-map-type", ""),
    ("x-kubernetes-validations", "XValidations"),
];

/// The checks around a schema that this crate makes until apimachinery's schema validation
/// (`apimachinery::schema::validate_crd_schema`, same signature) replaces this function at its
/// one call site in [`validate_schema_of`]: the status subresource's restrictions on the root
/// (`type` object, only some fields), `nullable` at the root, and the root's `type` (set, and
/// `object`) that a structural schema needs. Kubernetes makes these checks first, in this
/// order, and apimachinery's function makes them too.
pub(super) fn validate_openapi_schema(
    schema: &Value,
    path: &str,
    options: &CrdSchemaOptions,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(map) = schema.as_object() else {
        return errors;
    };
    // The schema is written from its typed form, which leaves out Go's zero values of
    // by-value fields: a key that is present (and not null) is a field Go sees as set.
    let set = |key: &str| map.get(key).is_some_and(|v| !v.is_null());
    if options.status_subresource_enabled {
        let allowed: Vec<&str> = ROOT_FIELDS
            .iter()
            .chain(&ROOT_FIELDS_TAIL)
            .filter(|(_, go)| !go.is_empty())
            .map(|(_, go)| *go)
            .collect();
        for (json, go) in ROOT_FIELDS.iter().chain(&ROOT_FIELDS_TAIL) {
            if !set(json) {
                continue;
            }
            if *json == "type" {
                let t = map.get("type").and_then(Value::as_str).unwrap_or_default();
                if t != "object" {
                    errors.push(FieldError::invalid(
                        format!("{path}.type"),
                        &Value::from(t),
                        r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ));
                    break;
                }
                continue;
            }
            if go.is_empty() {
                errors.push(FieldError::invalid(
                    path,
                    schema,
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        allowed.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        errors.push(FieldError::forbidden(
            format!("{path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if options.require_structural_schema {
        match map.get("type").and_then(Value::as_str).unwrap_or_default() {
            "" => errors.push(FieldError::required(
                format!("{path}.type"),
                "must not be empty at the root",
            )),
            "object" => {}
            other => errors.push(FieldError::invalid(
                format!("{path}.type"),
                &Value::from(other),
                "must be object at the root",
            )),
        }
    }
    errors
}
