//! The structural-schema engine of CustomResourceDefinitions, on the schema's JSON (the
//! `openAPIV3Schema` of a version), with Kubernetes' paths and messages:
//!
//! - [`validate_crd_schema`]: what kube-apiserver checks of a CRD's schema (the per-node
//!   OpenAPI checks, the structural-schema rules, the defaults), every error at once;
//! - [`nonstructural_condition`]: the `NonStructuralSchema` condition of a CRD, if it has one;
//! - [`Structural`]: a schema compiled once, which prunes, defaults and validates custom
//!   resources (with validation ratcheting on update).
//!
//! Not here: the CEL rules (`x-kubernetes-validations`; their static checks are, compilation
//! and kube-apiserver's estimated-cost budgets, and the rules are kept in [`Structural`] for
//! the CEL step), the validation of a custom resource's
//! own `apiVersion`/`kind`/`metadata` (the registry's), and the OpenAPI published for a CRD.
//!
//! Depth: Kubernetes bounds schemas only by its JSON decoder; apiary refuses schemas nested
//! deeper than [`MAX_SCHEMA_DEPTH`] nodes with an error, so that every walk here (all of
//! which follow the schema) is bounded whatever the input.

mod cel_cost;
mod cel_rules;
mod checks;
mod defaults;
mod embedded;
mod formats;
mod listtype;
mod numbers;
mod path;
mod props;
mod prune;
mod ratchet;
pub(crate) mod regex;
mod rules;
mod structural;
mod value;

#[cfg(test)]
mod object_tests;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use cel_cost::{STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT};
pub use props::MAX_SCHEMA_DEPTH;
pub use structural::{SchemaError, Structural};

use crate::errors::FieldError;
use crate::markers::MarkerValue;
use path::child;
use props::Props;

/// What the checks of a CRD's schema depend on besides the schema: Kubernetes'
/// `validationOptions`, which are relaxed on update when the old CRD already had what they
/// forbid (see [`CrdSchemaOptions::ratcheted_from`]), and the CRD around the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdSchemaOptions {
    /// The schema must be structural (Kubernetes requires it unless the CRD sets
    /// `preserveUnknownFields: true`, has no defaults and no `x-kubernetes-*` extensions, and
    /// the old CRD already had a non-structural schema).
    pub require_structural_schema: bool,
    /// `default`s are allowed (they always are for `apiextensions.k8s.io/v1`).
    pub allow_defaults: bool,
    /// `type` must be one of the OpenAPI types (relaxed when the old CRD had another).
    pub require_valid_property_type: bool,
    /// Defaults must not change when pruned (relaxed when the old CRD had unpruned ones).
    pub require_pruned_defaults: bool,
    /// Items of a `set` list must be atomic (relaxed when the old CRD had others).
    pub require_atomic_set_type: bool,
    /// Items of `set`/`map` lists are not nullable, and map keys are required or defaulted
    /// and not nullable (relaxed when the old CRD broke this).
    pub require_map_list_keys_map_set_validation: bool,
    /// The version (or the CRD, for a schema shared by every version) has the status
    /// subresource, which restricts what the root of the schema may say.
    pub status_subresource_enabled: bool,
    /// The per-expression limit of the CEL rules' estimated costs is not applied (Kubernetes
    /// lifts it for a version whose schema an update leaves unchanged); the limit of the
    /// schema's total still is.
    pub suppress_per_expression_cost: bool,
}

impl Default for CrdSchemaOptions {
    /// The options of a CRD being created: everything required.
    fn default() -> Self {
        Self {
            require_structural_schema: true,
            allow_defaults: true,
            require_valid_property_type: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
            status_subresource_enabled: false,
            suppress_per_expression_cost: false,
        }
    }
}

impl CrdSchemaOptions {
    /// The options of an update, relaxed by what the old CRD's schemas (`old_schemas`: every
    /// version's and the shared one) already had. `preserve_unknown_fields`,
    /// `spec_has_defaults` and `spec_has_extensions` describe the *new* CRD (Kubernetes
    /// requires structural schemas again when it prunes, defaults or uses extensions).
    pub fn ratcheted_from<'a>(
        old_schemas: impl IntoIterator<Item = &'a Value>,
        preserve_unknown_fields: bool,
        spec_has_defaults: bool,
        spec_has_extensions: bool,
    ) -> Self {
        let read: Vec<Option<Props>> = old_schemas
            .into_iter()
            .map(|s| Props::read(s, "", 0).ok())
            .collect();
        let any = |pred: &dyn Fn(&Props) -> bool| read.iter().flatten().any(|p| p.any(pred));
        let old_non_structural = read.iter().any(|p| match p {
            None => true,
            Some(p) => {
                structural::unsupported(p).is_err() || !rules::validate_structural("", p).is_empty()
            }
        });
        let unpruned_defaults = read.iter().flatten().any(has_unpruned_defaults);
        Self {
            require_structural_schema: !old_non_structural
                || !preserve_unknown_fields
                || spec_has_defaults
                || spec_has_extensions,
            allow_defaults: true,
            require_valid_property_type: !any(&|s| {
                !s.type_.is_empty() && !checks::is_openapi_type(&s.type_)
            }),
            require_pruned_defaults: !unpruned_defaults,
            require_atomic_set_type: !any(&checks::has_non_atomic_set_items),
            require_map_list_keys_map_set_validation: !any(&|s| {
                !checks::map_list_keys_map_set(s, "").is_empty()
            }),
            status_subresource_enabled: false,
            suppress_per_expression_cost: false,
        }
    }
}

/// Whether a structural schema has a default that pruning would change.
fn has_unpruned_defaults(p: &Props) -> bool {
    if !p.any(&|s| s.default.is_some())
        || structural::unsupported(p).is_err()
        || !rules::validate_structural("", p).is_empty()
    {
        return false;
    }
    defaults::validate_defaults("", p, true)
        .iter()
        .any(|e| e.detail == "must not have unknown fields")
}

/// Whether the schema says `default` anywhere (for the CRD's `preserveUnknownFields` check).
pub fn schema_has_defaults(schema: &Value) -> bool {
    Props::read(schema, "", 0).is_ok_and(|p| p.any(&|s| s.default.is_some()))
}

/// Whether the schema uses a Kubernetes extension anywhere (`x-kubernetes-*`), which makes
/// Kubernetes require structural schemas.
pub fn schema_has_kubernetes_extensions(schema: &Value) -> bool {
    Props::read(schema, "", 0).is_ok_and(|p| {
        p.any(&|s| {
            s.preserve_unknown_fields.is_some()
                || s.embedded_resource
                || s.int_or_string
                || s.list_map_keys.is_some()
                || s.list_type.is_some()
                || s.map_type.is_some()
                || !s.validations.is_empty()
        })
    })
}

/// The formats of a CRD schema that kube-apiserver does not recognize, each as written, once
/// per schema node naming it (kube-apiserver warns `unrecognized format "<format>"` for each
/// on a CRD write): on a string or untyped node a format outside the supported string formats,
/// on an integer one other than `int32`/`int64`, on a number one other than `float`/`double`,
/// and any format on another type. A schema that cannot be read has none.
///
/// ```
/// let schema = serde_json::json!({"type": "object", "properties": {
///     "a": {"type": "string", "format": "date-time"},
///     "b": {"type": "integer", "format": "int32"},
///     "c": {"type": "string", "format": "color"},
///     "d": {"type": "array", "format": "cidr", "items": {"type": "string"}},
/// }});
/// assert_eq!(apimachinery::schema::unrecognized_formats(&schema), ["color", "cidr"]);
/// ```
pub fn unrecognized_formats(schema: &Value) -> Vec<String> {
    fn collect(p: &Props, out: &mut Vec<String>) {
        if !p.format.is_empty() {
            let recognized = match p.type_.as_str() {
                "" | "string" => formats::supported(&p.format),
                "integer" => matches!(p.format.as_str(), "int32" | "int64"),
                "number" => matches!(p.format.as_str(), "float" | "double"),
                _ => false,
            };
            if !recognized {
                out.push(p.format.clone());
            }
        }
        for child in p.children() {
            collect(child, out);
        }
    }
    let mut out = Vec::new();
    if let Ok(props) = Props::read(schema, "", 0) {
        collect(&props, &mut out);
    }
    out
}

/// Validates a CRD's schema at `path` (`spec.validation.openAPIV3Schema` or
/// `spec.versions[i].schema.openAPIV3Schema`), as kube-apiserver does: the status-root
/// restriction, `nullable` at the root, the structural rules and the defaults (when a
/// structural schema is required), and the per-node OpenAPI checks, in Kubernetes' order and
/// with its messages. A schema field of the wrong JSON type, or nesting deeper than
/// [`MAX_SCHEMA_DEPTH`], is one `Invalid value` error at its path.
pub fn validate_crd_schema(
    schema: &Value,
    path: &str,
    options: &CrdSchemaOptions,
) -> Vec<FieldError> {
    let props = match Props::read(schema, "", 0) {
        Ok(p) => p,
        Err(e) => {
            return vec![FieldError::invalid(
                child(path, &e.path),
                &e.value,
                e.detail,
            )];
        }
    };
    let mut errs = Vec::new();
    if options.status_subresource_enabled {
        errs.extend(checks::status_root(schema, path));
    }
    if props.nullable {
        errs.push(FieldError::forbidden(
            child(path, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut held_back = None;
    if options.require_structural_schema {
        match structural::unsupported(&props) {
            Err(e) => held_back = Some(FieldError::invalid(path, &Value::from(""), e.to_string())),
            Ok(()) => {
                let structural_errs = rules::validate_structural(path, &props);
                if structural_errs.is_empty() {
                    errs.extend(defaults::validate_defaults(
                        path,
                        &props,
                        options.require_pruned_defaults,
                    ));
                } else {
                    errs.extend(structural_errs);
                }
            }
        }
    }
    errs.extend(checks::check_tree(&props, path, options));
    // The rules compile against the structural schema, so only a schema without other errors
    // gets that far (as in Kubernetes); their estimated costs are checked with them.
    if errs.is_empty() && held_back.is_none() {
        errs.extend(cel_cost::cel_errors(
            &props,
            path,
            options.suppress_per_expression_cost,
        ));
    }
    if errs.is_empty()
        && let Some(e) = held_back
    {
        errs.push(e);
    }
    errs
}

/// The `NonStructuralSchema` condition of a CRD (Kubernetes' nonstructuralschema controller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonStructuralCondition {
    /// `True` (the schema has violations) or `Unknown` (a schema could not be read).
    pub status: &'static str,
    /// `Violations` or `StructuralError`.
    pub reason: &'static str,
    /// The violations, aggregated as Kubernetes renders them, or the read error.
    pub message: String,
}

/// The `NonStructuralSchema` condition of a v1 CRD with `spec.preserveUnknownFields` =
/// `preserve_unknown_fields` and the schemas of its versions (`(name, schema)`, in order;
/// `None` for a version without one); `None` when the CRD has none (the condition is then
/// removed).
pub fn nonstructural_condition(
    preserve_unknown_fields: bool,
    versions: &[(&str, Option<&Value>)],
) -> Option<NonStructuralCondition> {
    let mut errs = Vec::new();
    if preserve_unknown_fields {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "must be false",
        ));
    }
    for (i, (name, schema)) in versions.iter().enumerate() {
        let Some(schema) = schema else { continue };
        let compiled = Props::read(schema, "", 0)
            .map_err(|e| SchemaError::Malformed {
                path: e.path,
                detail: e.detail,
            })
            .and_then(|p| structural::unsupported(&p).map(|()| p));
        match compiled {
            Err(e) => {
                return Some(NonStructuralCondition {
                    status: "Unknown",
                    reason: "StructuralError",
                    message: format!("failed to check validation schema for version {name}: {e}"),
                });
            }
            Ok(p) => errs.extend(rules::validate_structural(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                &p,
            )),
        }
    }
    (!errs.is_empty()).then(|| NonStructuralCondition {
        status: "True",
        reason: "Violations",
        message: crate::validation::aggregate(&errs),
    })
}

/// A JSON value read by the marker checks: strings as text, numbers as numbers.
pub(crate) struct Json<'a>(pub(crate) &'a Value);

impl MarkerValue for Json<'_> {
    fn as_number(&self) -> Option<f64> {
        self.0.as_f64()
    }
    fn as_text(&self) -> Option<&str> {
        self.0.as_str()
    }
    fn is_missing(&self) -> bool {
        self.0.is_null()
    }
    fn to_json(&self) -> Value {
        self.0.clone()
    }
}
