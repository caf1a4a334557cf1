//! Names (`spec.names`, `status.acceptedNames`), `status.storedVersions`, the API approval of
//! protected groups and `spec.preserveUnknownFields`.

use apimachinery::errors::FieldError;
use apimachinery::validation::is_dns1035_label;
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

/// `ValidateCustomResourceDefinitionNames` (for `spec.names` and `status.acceptedNames`).
pub fn validate_names(
    names: &v1::CustomResourceDefinitionNames,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let label = |value: &str, field: String, prefix: &str, errors: &mut Vec<FieldError>| {
        if value.is_empty() {
            return;
        }
        let problems = is_dns1035_label(&value.to_lowercase());
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                field,
                &Value::from(value),
                format!("{prefix}{}", problems.join(",")),
            ));
        }
    };
    const MIXED: &str = "may have mixed case, but should otherwise match: ";
    // Plural and singular are checked as written (no lowercasing): lowercase them only
    // for kinds.
    for (value, field) in [
        (names.plural.as_str(), "plural"),
        (names.singular.as_deref().unwrap_or_default(), "singular"),
    ] {
        if !value.is_empty() {
            let problems = is_dns1035_label(value);
            if !problems.is_empty() {
                errors.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    &Value::from(value),
                    problems.join(","),
                ));
            }
        }
    }
    label(&names.kind, format!("{path}.kind"), MIXED, errors);
    let list_kind = names.list_kind.as_deref().unwrap_or_default();
    label(list_kind, format!("{path}.listKind"), MIXED, errors);
    for (i, short) in names.short_names.iter().enumerate() {
        let problems = is_dns1035_label(short);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.shortNames[{i}]"),
                &Value::from(short.as_str()),
                problems.join(","),
            ));
        }
    }
    if !names.kind.is_empty() && names.kind == list_kind {
        errors.push(FieldError::invalid(
            format!("{path}.listKind"),
            &Value::from(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in names.categories.iter().enumerate() {
        let problems = is_dns1035_label(category);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.categories[{i}]"),
                &Value::from(category.as_str()),
                problems.join(","),
            ));
        }
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
pub(super) fn validate_stored_versions(
    crd: &v1::CustomResourceDefinition,
    errors: &mut Vec<FieldError>,
) {
    const PATH: &str = "status.storedVersions";
    let stored = crd.status.stored_versions.as_deref().unwrap_or_default();
    let value = Value::from(stored.to_vec());
    if stored.is_empty() {
        errors.push(FieldError::invalid(
            PATH,
            &value,
            "must have at least one stored version",
        ));
        return;
    }
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in &crd.spec.versions {
        let present = stored.contains(&v.name);
        if v.storage && !present {
            errors.push(FieldError::invalid(
                PATH,
                &value,
                format!("must have the storage version {}", v.name),
            ));
        }
        remaining.retain(|(_, s)| **s != v.name);
    }
    for (i, v) in remaining {
        errors.push(FieldError::invalid(
            format!("{PATH}[{i}]"),
            &Value::from(v.as_str()),
            format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
}

/// The approval annotation of protected groups.
pub(super) const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Kubernetes' API approval state of a CRD's annotation (`GetAPIApprovalState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Approval {
    /// Not a protected group.
    Unprotected,
    /// No annotation (or empty).
    Missing,
    /// A URL with a scheme and a host.
    Approved,
    /// A reason starting with `unapproved`.
    Bypassed,
    /// Anything else.
    Invalid,
}

/// The approval state of a CRD.
pub(super) fn approval_of(crd: &v1::CustomResourceDefinition) -> Approval {
    let group = crd.spec.group.as_str();
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")));
    if !protected {
        return Approval::Unprotected;
    }
    let value = crd
        .metadata
        .annotations
        .get(APPROVAL_ANNOTATION)
        .map(String::as_str)
        .unwrap_or_default();
    if value.is_empty() {
        return Approval::Missing;
    }
    if value.starts_with("unapproved") {
        return Approval::Bypassed;
    }
    match value.split_once("://") {
        Some((scheme, rest))
            if !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/') =>
        {
            Approval::Approved
        }
        _ => Approval::Invalid,
    }
}

/// Kubernetes' `validateAPIApproval` (skipped on update when the state is unchanged).
pub(super) fn validate_api_approval(
    crd: &v1::CustomResourceDefinition,
    old: Option<&v1::CustomResourceDefinition>,
    errors: &mut Vec<FieldError>,
) {
    let state = approval_of(crd);
    if old.is_some_and(|o| approval_of(o) == state) {
        return;
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    match state {
        Approval::Missing => errors.push(FieldError::required(
            path,
            format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Approval::Invalid => {
            let value = crd.metadata.annotations.get(APPROVAL_ANNOTATION).cloned().unwrap_or_default();
            errors.push(FieldError::invalid(
                path,
                &Value::from(value),
                format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            ));
        }
        Approval::Unprotected | Approval::Approved | Approval::Bypassed => {}
    }
}

/// Kubernetes' `validatePreserveUnknownFields`: v1 refuses `true` (unless the old CRD had it).
pub(super) fn validate_preserve_unknown_fields(
    crd: &v1::CustomResourceDefinition,
    old: Option<&v1::CustomResourceDefinition>,
    errors: &mut Vec<FieldError>,
) {
    if old.is_some_and(|o| o.spec.preserve_unknown_fields == Some(true)) {
        return;
    }
    if crd.spec.preserve_unknown_fields == Some(true) {
        errors.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}
