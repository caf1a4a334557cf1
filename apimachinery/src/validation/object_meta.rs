//! `ObjectMeta` validation (`ValidateObjectMeta`, `ValidateObjectMetaUpdate`): what every
//! kind's `metadata` must satisfy, over the name and label rules of [`super`].

use serde_json::Value;

use super::*;
use crate::meta::ObjectMeta;

/// Kubernetes' `ValidateLabels` of `labels` at `path`: every key a qualified name, every value
/// a label value.
///
/// ```
/// let labels = [("app".to_string(), "not a value!".to_string())].into();
/// let errors = apimachinery::validation::validate_labels(&labels, "metadata.labels");
/// assert_eq!(errors.len(), 1);
/// assert_eq!(errors[0].field, "metadata.labels");
/// ```
pub fn validate_labels(
    labels: &std::collections::BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (k, v) in labels {
        for m in is_qualified_name(k) {
            errors.push(FieldError::invalid(path, &Value::from(k.as_str()), m));
        }
        for m in is_valid_label_value(v) {
            errors.push(FieldError::invalid(path, &Value::from(v.as_str()), m));
        }
    }
    errors
}

/// Kubernetes' `ValidateAnnotations` of `annotations` at `path`: every key (lowercased) a
/// qualified name, keys and values together at most 256 KiB.
pub fn validate_annotations(
    annotations: &std::collections::BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        for m in is_qualified_name(&k.to_lowercase()) {
            errors.push(FieldError::invalid(path, &Value::from(k.as_str()), m));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errors.push(FieldError::new(
            FieldErrorType::TooLong,
            path,
            None,
            format!("may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"),
        ));
    }
    errors
}

/// Validates `metadata` of an object being created or updated (`ValidateObjectMeta`): the
/// name (or generateName) in the kind's name format, namespace presence by scope, generation,
/// labels, annotations, finalizers and owner references. `name_format` is one of the
/// definitions' formats (`dns1123-subdomain`, `dns1123-label`, `path-segment`).
pub fn validate_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_format: &str,
    errors: &mut Vec<FieldError>,
) {
    let name = meta.name.as_deref().unwrap_or("");
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    let format = NameFormat::from_name(name_format).unwrap_or_default();
    if !generate_name.is_empty() {
        errors.extend(validate_generate_name(generate_name, format));
    }
    // Kubernetes validates after generating the name; before it, a generateName stands in.
    if name.is_empty() {
        if generate_name.is_empty() {
            errors.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        errors.extend(validate_name(name, format));
    }
    let namespace = meta.namespace.as_deref().unwrap_or("");
    if namespaced {
        if namespace.is_empty() {
            errors.push(FieldError::required("metadata.namespace", ""));
        } else {
            for m in is_dns1123_label(namespace) {
                errors.push(FieldError::invalid(
                    "metadata.namespace",
                    &Value::from(namespace),
                    m,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errors.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.generation
        && g < 0
    {
        errors.push(FieldError::invalid(
            "metadata.generation",
            &Value::from(g),
            "must be greater than or equal to 0",
        ));
    }
    errors.extend(validate_labels(&meta.labels, "metadata.labels"));
    errors.extend(validate_annotations(
        &meta.annotations,
        "metadata.annotations",
    ));
    // As `ValidateFinalizers`: the path is the list's, without an index.
    for f in &meta.finalizers {
        for m in is_qualified_name(f) {
            errors.push(FieldError::invalid(
                "metadata.finalizers",
                &Value::from(f.as_str()),
                m,
            ));
        }
    }
    for (i, o) in meta.owner_references.iter().enumerate() {
        for (key, value) in [
            ("apiVersion", &o.api_version),
            ("kind", &o.kind),
            ("name", &o.name),
            ("uid", &o.uid),
        ] {
            if value.is_empty() {
                errors.push(FieldError::invalid(
                    format!("metadata.ownerReferences[{i}].{key}"),
                    &Value::from(""),
                    format!("{key} must not be empty"),
                ));
            }
        }
    }
}

/// Validates what an update may not change in `metadata` (`ValidateObjectMetaUpdate`): name,
/// namespace, uid and creationTimestamp are immutable, and no finalizer may be added once the
/// object is being deleted.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    errors: &mut Vec<FieldError>,
) {
    let immutable =
        |errors: &mut Vec<FieldError>, key: &str, n: Option<Value>, o: Option<Value>| {
            if o.is_some() && n != o {
                errors.push(FieldError::invalid(
                    format!("metadata.{key}"),
                    &n.unwrap_or_else(|| Value::String(String::new())),
                    "field is immutable",
                ));
            }
        };
    let text = |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(Value::from);
    immutable(errors, "name", text(&new.name), text(&old.name));
    immutable(
        errors,
        "namespace",
        text(&new.namespace),
        text(&old.namespace),
    );
    immutable(errors, "uid", text(&new.uid), text(&old.uid));
    let time = |t: &Option<crate::meta::Time>| {
        t.as_ref()
            .and_then(|t| serde_json::to_value(t).ok())
            .filter(|v| !v.is_null())
    };
    immutable(
        errors,
        "creationTimestamp",
        time(&new.creation_timestamp),
        time(&old.creation_timestamp),
    );
    if old.deletion_timestamp.is_some() {
        let added: Vec<&String> = new
            .finalizers
            .iter()
            .filter(|f| !old.finalizers.contains(f))
            .collect();
        if !added.is_empty() {
            let list = added
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            errors.push(FieldError::forbidden(
                "metadata.finalizers",
                format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::validation::tests::{NAME_PART_REGEX, SUBDOMAIN_REGEX};

    #[test]
    fn object_meta_generate_name_and_finalizers() {
        let meta = |v: Value| serde_json::from_value::<ObjectMeta>(v).unwrap();
        let mut e = Vec::new();
        validate_object_meta(
            &meta(
                json!({"generateName": "ok-", "namespace": "ns", "finalizers": ["a/b/c", "", "ok"]}),
            ),
            true,
            "dns1123-subdomain",
            &mut e,
        );
        let s = strings(&e);
        // The empty finalizer has both of the empty name's problems.
        assert_eq!(s.len(), 3, "{s:?}");
        assert!(
            s[0].starts_with("metadata.finalizers: Invalid value: \"a/b/c\": a qualified name")
        );
        assert_eq!(
            s[1],
            "metadata.finalizers: Invalid value: \"\": name part must be non-empty"
        );
        assert_eq!(
            s[2],
            format!("metadata.finalizers: Invalid value: \"\": {NAME_PART_REGEX}")
        );
        let mut e = Vec::new();
        validate_object_meta(
            &meta(json!({"name": "gen-x1", "generateName": "Gen-", "namespace": "a.b"})),
            true,
            "dns1123-subdomain",
            &mut e,
        );
        assert_eq!(
            strings(&e),
            [
                format!("metadata.generateName: Invalid value: \"Gen-\": {SUBDOMAIN_REGEX}"),
                "metadata.namespace: Invalid value: \"a.b\": must not contain dots".to_string(),
            ]
        );
    }

    fn strings(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn object_meta_names_and_labels() {
        let mut e = Vec::new();
        let meta = |v: Value| serde_json::from_value::<ObjectMeta>(v).unwrap();
        validate_object_meta(
            &meta(json!({"name": "Bad_Name", "labels": {"a/b/c": "ok"}})),
            true,
            "dns1123-subdomain",
            &mut e,
        );
        let s = strings(&e);
        assert_eq!(
            s[0],
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(s[1], "metadata.namespace: Required value");
        assert!(s[2].starts_with(
            "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of"
        ));
        let mut e = Vec::new();
        validate_object_meta(
            &meta(json!({"name": "x", "namespace": "ns"})),
            false,
            "dns1123-label",
            &mut e,
        );
        assert_eq!(
            strings(&e),
            ["metadata.namespace: Forbidden: not allowed on this type"]
        );
        let mut e = Vec::new();
        validate_object_meta_update(
            &meta(json!({"name": "b"})),
            &meta(json!({"name": "a"})),
            &mut e,
        );
        // No finalizer may be added to an object being deleted.
        let mut e = Vec::new();
        validate_object_meta_update(
            &meta(json!({"name": "a", "finalizers": ["x/y", "new/z"]})),
            &meta(
                json!({"name": "a", "finalizers": ["x/y"], "deletionTimestamp": "2024-01-01T00:00:00Z"}),
            ),
            &mut e,
        );
        assert_eq!(
            strings(&e),
            [
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"new/z\"}"
            ]
        );
        let mut e = Vec::new();
        validate_object_meta_update(
            &meta(json!({"name": "b"})),
            &meta(json!({"name": "a"})),
            &mut e,
        );
        assert_eq!(
            strings(&e),
            ["metadata.name: Invalid value: \"b\": field is immutable"]
        );
    }
}
