//! [`Structural`]: a CRD schema read once and checked to be free of the keywords a structural
//! schema cannot have (Kubernetes' `NewStructural`), ready to prune, default and validate
//! objects.

use serde_json::Value;

use super::props::{Items, Props};
use super::ratchet::Correlated;
use crate::errors::FieldError;

/// Why a schema could not be compiled into a [`Structural`] one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SchemaError {
    /// A keyword a structural schema cannot have; the text is Kubernetes' `NewStructural`
    /// message, such as `OpenAPIV3Schema 'id' is not supported`.
    #[error("{0}")]
    NotStructural(&'static str),
    /// A field of the wrong JSON type (or a schema nested too deep), at `path` below the root.
    #[error("{path}: {detail}")]
    Malformed {
        /// The field's path, relative to the schema's root.
        path: String,
        /// What is wrong with it.
        detail: String,
    },
}

/// A compiled structural schema: the `openAPIV3Schema` of one version of a CRD. Built once
/// (when the CRD is read) and shared by every request of the version.
///
/// The `x-kubernetes-validations` of every node are kept with it (unevaluated): the CEL rules
/// are the next step, and read them from here.
#[derive(Clone, Debug)]
pub struct Structural {
    pub(crate) root: Props,
    /// The compiled CEL rules (`x-kubernetes-validations`), if the schema has any.
    cel: Option<std::sync::Arc<super::cel_rules::RuleTree>>,
}

impl PartialEq for Structural {
    /// Two compiled schemas are equal when their schemas are (the rules compile the same).
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Structural {
    /// Compiles `schema`, refusing what Kubernetes' `NewStructural` refuses (`id`, `$schema`,
    /// `$ref`, `patternProperties`, `dependencies`, `additionalItems`, `definitions`, an array
    /// of `items`, `x-kubernetes-preserve-unknown-fields: false`), malformed fields and schemas
    /// nested deeper than [`super::MAX_SCHEMA_DEPTH`]. It does not check the structural rules
    /// (see [`super::validate_crd_schema`]): a schema a CRD was accepted with has passed them.
    pub fn new(schema: &Value) -> Result<Structural, SchemaError> {
        let root = Props::read(schema, "", 0).map_err(|e| SchemaError::Malformed {
            path: e.path,
            detail: e.detail,
        })?;
        unsupported(&root)?;
        let mut root = root;
        prune_defaults(&mut root, true, false);
        let cel = super::cel_rules::RuleTree::build(&root).map(std::sync::Arc::new);
        Ok(Structural { root, cel })
    }

    /// The rules (`x-kubernetes-validations`) of the root node, as written: the seam the CEL
    /// step reads them through.
    pub fn root_validations(&self) -> &[Value] {
        &self.root.validations
    }

    /// Prunes a custom resource: removes the fields the schema does not specify (keeping
    /// those under `x-kubernetes-preserve-unknown-fields`, and `apiVersion`, `kind` and
    /// `metadata` of the root and of embedded resources). Returns the removed fields' paths,
    /// sorted, as `fieldValidation=Strict|Warn` reports them (`unknown field "spec.foo"`).
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        super::prune::prune(object, &self.root, true)
    }

    /// Coerces the embedded resources (`x-kubernetes-embedded-resource`) of a custom
    /// resource, as Kubernetes does after pruning: their `apiVersion` and `kind` must be
    /// strings and their `metadata` becomes what `ObjectMeta` holds. Returns the paths of the
    /// unknown metadata fields dropped (`spec.template.metadata.foo`). With `drop_invalid`
    /// (reading from storage) malformed fields are dropped instead of refused.
    pub fn coerce_embedded(
        &self,
        object: &mut Value,
        drop_invalid: bool,
    ) -> Result<Vec<String>, FieldError> {
        let mut unknown = Vec::new();
        super::embedded::coerce(object, &self.root, false, drop_invalid, "", &mut unknown)?;
        unknown.sort();
        Ok(unknown)
    }

    /// Removes the `null`s the schema does not allow and has no default for (done after
    /// pruning, before [`Structural::default`]).
    pub fn drop_nulls(&self, object: &mut Value) {
        super::defaults::drop_nulls(object, Some(&self.root));
    }

    /// Applies the schema's defaults: each where its parent exists and the field is absent
    /// (or a `null` the field does not allow), entries of lists and maps included.
    pub fn default(&self, object: &mut Value) {
        super::defaults::apply(object, &self.root);
    }

    /// Validates a custom resource being created: the OpenAPI schema (kube-openapi's
    /// messages), the embedded resources, and the `set`/`map` lists' uniqueness, in
    /// Kubernetes' order. The resource's own `apiVersion`, `kind` and `metadata` are the
    /// registry's to check.
    pub fn validate(&self, object: &Value) -> Vec<FieldError> {
        let mut errs = super::value::validate(&self.root, "", object, None).into_field_errors("");
        super::embedded::validate(object, &self.root, false, "", &mut errs);
        if let Value::Object(m) = object {
            super::listtype::validate_object("", &self.root, m, &mut errs);
        }
        if let Some(cel) = &self.cel {
            cel.validate(&self.root, object, None, &mut errs);
        }
        errs
    }

    /// Validates an update of the status subresource (`/status`) from `old`: the `status`
    /// schema on the new `status` (paths under `status`, messages with the status-relative
    /// names, ratcheted against the old status), then the lists' uniqueness when the old
    /// object was unique, as Kubernetes' status strategy does.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let (Some(status), Some(schema)) =
            (new.get("status"), self.root.properties.get("status"))
        {
            let root = Correlated {
                new,
                old,
                schema: &self.root,
            };
            let corr = root.key("status", false);
            errs = super::value::validate(schema, "", status, corr.as_ref())
                .into_field_errors("status");
        }
        if let Value::Object(n) = new {
            let mut new_errs = Vec::new();
            super::listtype::validate_object("", &self.root, n, &mut new_errs);
            if !new_errs.is_empty() {
                let mut old_errs = Vec::new();
                if let Value::Object(o) = old {
                    super::listtype::validate_object("", &self.root, o, &mut old_errs);
                }
                if old_errs.is_empty() {
                    errs.extend(new_errs);
                }
            }
        }
        errs
    }

    /// Validates a custom resource being updated from `old`, with validation ratcheting: an
    /// error inside a value that did not change (correlated by key, and by item key in
    /// `map` lists) is not reported, and list uniqueness is only checked when the old object
    /// was unique.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let root = Correlated {
            new,
            old,
            schema: &self.root,
        };
        let mut errs =
            super::value::validate(&self.root, "", new, Some(&root)).into_field_errors("");
        super::embedded::validate(new, &self.root, false, "", &mut errs);
        if let (Value::Object(n), Value::Object(o)) = (new, old) {
            let mut old_errs = Vec::new();
            super::listtype::validate_object("", &self.root, o, &mut old_errs);
            if old_errs.is_empty() {
                super::listtype::validate_object("", &self.root, n, &mut errs);
            }
        } else if let Value::Object(n) = new {
            super::listtype::validate_object("", &self.root, n, &mut errs);
        }
        if let Some(cel) = &self.cel {
            cel.validate(&self.root, new, Some(old), &mut errs);
        }
        errs
    }
}

/// Prunes every default against its own schema, as Kubernetes prunes the defaults of a
/// schema it serves (`PruneDefaults`): a CRD accepted before defaults had to be pruned may
/// still have unknown fields in them. Defaults under the `apiVersion`, `kind` or `metadata`
/// of a resource are left as they are.
fn prune_defaults(s: &mut Props, is_root: bool, under_meta: bool) {
    let embedded = is_root || s.embedded_resource;
    if !under_meta && let Some(mut d) = s.default.take() {
        super::prune::prune(&mut d, s, embedded);
        s.default = Some(d);
    }
    if let Some(Items::Schema(i)) = &mut s.items {
        prune_defaults(i, false, under_meta);
    }
    if let Some(super::props::SchemaOrBool::Schema(a)) = &mut s.additional_properties {
        prune_defaults(a, false, under_meta);
    }
    for (k, p) in s.properties.iter_mut() {
        let meta = embedded && ["apiVersion", "kind", "metadata"].contains(&k.as_str());
        prune_defaults(p, false, under_meta || meta);
    }
}

/// `NewStructural`'s refusals, in its order (fields of a node, its `not`, `allOf`, `anyOf`,
/// `oneOf`, extensions, `items`, `properties`, `additionalProperties`).
pub(crate) fn unsupported(s: &Props) -> Result<(), SchemaError> {
    let refuse = |msg| Err(SchemaError::NotStructural(msg));
    if !s.id.is_empty() {
        return refuse("OpenAPIV3Schema 'id' is not supported");
    }
    if !s.schema.is_empty() {
        return refuse("OpenAPIV3Schema 'schema' is not supported");
    }
    if s.ref_.as_deref().is_some_and(|r| !r.is_empty()) {
        return refuse("OpenAPIV3Schema '$ref' is not supported");
    }
    if !s.pattern_properties.is_empty() {
        return refuse("OpenAPIV3Schema 'patternProperties' is not supported");
    }
    if s.dependencies.as_ref().is_some_and(|d| !d.is_empty()) {
        return refuse("OpenAPIV3Schema 'dependencies' is not supported");
    }
    if s.additional_items.is_some() {
        return refuse("OpenAPIV3Schema 'additionalItems' is not supported");
    }
    if !s.definitions.is_empty() {
        return refuse("OpenAPIV3Schema 'definitions' is not supported");
    }
    if let Some(not) = &s.not {
        unsupported(not)?;
    }
    for x in s.all_of.iter().chain(&s.any_of).chain(&s.one_of) {
        unsupported(x)?;
    }
    if s.preserve_unknown_fields == Some(false) {
        return refuse(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined",
        );
    }
    match &s.items {
        Some(Items::Array(a)) if !a.is_empty() => {
            return refuse("OpenAPIV3Schema 'items' must be a schema, but is an array");
        }
        Some(Items::Schema(i)) => unsupported(i)?,
        _ => {}
    }
    for p in s.properties.values() {
        unsupported(p)?;
    }
    if let Some(a) = s.additional_schema() {
        unsupported(a)?;
    }
    Ok(())
}

/// A compiled schema is what a custom resource's codec prunes, defaults and validates its
/// objects with, in kube-apiserver's order (decode → prune → embedded resources' metadata →
/// nulls dropped → defaults → … → validation).
impl crate::runtime::unstructured::UnstructuredSchema for Structural {
    fn prune(&self, fields: &mut Value, pruned: &mut Vec<String>) {
        pruned.extend(Structural::prune(self, fields));
        // Embedded resources' metadata becomes what ObjectMeta holds; a malformed one is
        // dropped (what kube-apiserver does on reads from storage).
        if let Ok(unknown) = self.coerce_embedded(fields, true) {
            pruned.extend(unknown);
        }
        self.drop_nulls(fields);
    }

    fn default(&self, fields: &mut Value) {
        Structural::default(self, fields);
    }

    fn validate(&self, object: &crate::runtime::unstructured::Unstructured) -> Vec<FieldError> {
        Structural::validate(self, object.fields_value())
    }

    fn validate_update(
        &self,
        object: &crate::runtime::unstructured::Unstructured,
        old: &crate::runtime::unstructured::Unstructured,
    ) -> Vec<FieldError> {
        Structural::validate_update(self, object.fields_value(), old.fields_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unsupported_keywords_are_refused_with_kubernetes_messages() {
        let cases = [
            (json!({"id": "x"}), "OpenAPIV3Schema 'id' is not supported"),
            (
                json!({"$schema": "x"}),
                "OpenAPIV3Schema 'schema' is not supported",
            ),
            (
                json!({"$ref": "#/x"}),
                "OpenAPIV3Schema '$ref' is not supported",
            ),
            (
                json!({"patternProperties": {"a": {}}}),
                "OpenAPIV3Schema 'patternProperties' is not supported",
            ),
            (
                json!({"dependencies": {"a": ["b"]}}),
                "OpenAPIV3Schema 'dependencies' is not supported",
            ),
            (
                json!({"additionalItems": false}),
                "OpenAPIV3Schema 'additionalItems' is not supported",
            ),
            (
                json!({"definitions": {"a": {}}}),
                "OpenAPIV3Schema 'definitions' is not supported",
            ),
            (
                json!({"items": [{}]}),
                "OpenAPIV3Schema 'items' must be a schema, but is an array",
            ),
            (
                json!({"properties": {"a": {"x-kubernetes-preserve-unknown-fields": false}}}),
                "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined",
            ),
            (
                json!({"allOf": [{"id": "x"}]}),
                "OpenAPIV3Schema 'id' is not supported",
            ),
        ];
        for (schema, msg) in cases {
            assert_eq!(
                Structural::new(&schema).unwrap_err().to_string(),
                msg,
                "{schema}"
            );
        }
    }

    #[test]
    fn malformed_and_deep_schemas_are_errors_not_crashes() {
        let e = Structural::new(&json!({"properties": {"a": {"type": 1}}})).unwrap_err();
        assert_eq!(e.to_string(), "properties[a].type: must be a string");
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "array", "items": deep});
        }
        let e = Structural::new(&deep).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("must not be nested more than 64 levels deep"),
            "{e}"
        );
    }
}
