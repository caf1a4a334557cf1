//! The schema of a version (or the hoisted one): the one call of the schema check,
//! [`apimachinery::schema::validate_crd_schema`] (per-node checks, structural rules, defaults,
//! CEL rules that compile, within their estimated cost budgets).

use apimachinery::errors::FieldError;
use apimachinery::schema::CrdSchemaOptions;
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

/// The schema of every version of the spec that has one, as JSON.
fn schemas_of(spec: &v1::CustomResourceDefinitionSpec) -> Vec<Value> {
    spec.versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .map(|s| ::serde_json::to_value(s).unwrap_or(Value::Null))
        .collect()
}

/// Whether any schema of the spec has a `default` anywhere.
pub(super) fn spec_has_defaults(spec: &v1::CustomResourceDefinitionSpec) -> bool {
    schemas_of(spec)
        .iter()
        .any(apimachinery::schema::schema_has_defaults)
}

/// The options of the schema checks: everything required on create; on update, relaxed where
/// the old CRD already broke a rule (Kubernetes' ratcheting of `validationOptions`), so that a
/// CRD stored before a rule existed can still be updated.
pub(super) fn schema_options(
    spec: &v1::CustomResourceDefinitionSpec,
    old: Option<&v1::CustomResourceDefinitionSpec>,
) -> CrdSchemaOptions {
    let Some(old) = old else {
        return CrdSchemaOptions::default();
    };
    let new_schemas = schemas_of(spec);
    CrdSchemaOptions::ratcheted_from(
        &schemas_of(old),
        spec.preserve_unknown_fields.unwrap_or(false),
        new_schemas
            .iter()
            .any(apimachinery::schema::schema_has_defaults),
        new_schemas
            .iter()
            .any(apimachinery::schema::schema_has_kubernetes_extensions),
    )
}

/// The schema check of one `CustomResourceValidation` at `path` (`spec.validation` or
/// `spec.versions[i].schema`); `schema_unchanged` when an update leaves it as it was (the
/// per-expression limit of the CEL rules' estimated costs is then lifted).
pub(super) fn validate_schema_of(
    validation: &v1::CustomResourceValidation,
    path: &str,
    status_subresource_enabled: bool,
    options: &CrdSchemaOptions,
    schema_unchanged: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = &validation.open_api_v3_schema else {
        return;
    };
    let schema = ::serde_json::to_value(schema).unwrap_or(Value::Null);
    let options = CrdSchemaOptions {
        status_subresource_enabled,
        suppress_per_expression_cost: schema_unchanged,
        ..options.clone()
    };
    errors.extend(apimachinery::schema::validate_crd_schema(
        &schema,
        &format!("{path}.openAPIV3Schema"),
        &options,
    ));
}
