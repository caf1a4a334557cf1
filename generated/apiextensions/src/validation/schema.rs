//! The schema of a version (or the hoisted one): the one call of the schema check,
//! [`apimachinery::schema::validate_crd_schema`] (per-node checks, structural rules, defaults,
//! CEL rules that compile, within their estimated cost budgets).

use apimachinery::errors::FieldError;
use apimachinery::schema::CrdSchemaOptions;
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

/// Whether any schema of the spec has a `default` anywhere.
pub(super) fn spec_has_defaults(spec: &v1::CustomResourceDefinitionSpec) -> bool {
    spec.versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .any(|s| {
            apimachinery::schema::schema_has_defaults(
                &::serde_json::to_value(s).unwrap_or(Value::Null),
            )
        })
}

/// The schema check of one `CustomResourceValidation` at `path` (`spec.validation` or
/// `spec.versions[i].schema`); `schema_unchanged` when an update leaves it as it was (the
/// per-expression limit of the CEL rules' estimated costs is then lifted).
pub(super) fn validate_schema_of(
    validation: &v1::CustomResourceValidation,
    path: &str,
    status_subresource_enabled: bool,
    preserve_unknown_fields: bool,
    schema_unchanged: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = &validation.open_api_v3_schema else {
        return;
    };
    let schema = ::serde_json::to_value(schema).unwrap_or(Value::Null);
    let options = CrdSchemaOptions {
        status_subresource_enabled,
        require_structural_schema: !preserve_unknown_fields,
        suppress_per_expression_cost: schema_unchanged,
        ..CrdSchemaOptions::default()
    };
    errors.extend(apimachinery::schema::validate_crd_schema(
        &schema,
        &format!("{path}.openAPIV3Schema"),
        &options,
    ));
}
