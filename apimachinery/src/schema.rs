//! Schema walks over the JSON form of typed objects: unknown fields, defaults, validation.
//!
//! The generated crate implements [`Schema`] for every struct of `api-defs`; this module
//! implements it for scalars, containers and the `meta.k8s.io/v1` types, so that a generated
//! implementation simply recurses into each field's type. Walks run on `serde_json::Value`
//! because that is where Kubernetes' semantics live: a defaulted field is one that is *absent*,
//! a strict-decoding error names a key the type does not have.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::errors::FieldError;
use crate::meta::{
    Bytes, Condition, Duration, IntOrString, LabelSelector, LabelSelectorRequirement, ListMeta,
    ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Quantity, RawExtension, Time,
    TypeMeta,
};

/// The JSON walks of one type.
pub trait Schema {
    /// Appends the paths (such as `spec.foo` or `spec.items[0].bar`) of object keys in `value`
    /// that this type does not have.
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>);

    /// Sets the `#[default]` of every absent field, recursively.
    fn apply_defaults(value: &mut Value);

    /// Checks the `#[validate]` markers and CEL rules, recursively; `path` is this value's path.
    fn validate(value: &Value, path: &str, errors: &mut Vec<FieldError>);

    /// Checks what an update may not do (`#[validate(immutable)]` fields), recursively.
    fn validate_update(value: &Value, old: &Value, path: &str, errors: &mut Vec<FieldError>);
}

/// The path of a child field: `spec` + `replicas` → `spec.replicas` (no dot at the root).
pub fn field_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The path of a list element: `spec.items` + 0 → `spec.items[0]`.
pub fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The path of a map entry: `metadata.labels` + `app` → `metadata.labels[app]`.
pub fn key_path(parent: &str, key: &str) -> String {
    format!("{parent}[{key}]")
}

/// Appends every key of an object that is not in `known`.
pub fn unknown_keys(value: &Value, known: &[&str], path: &str, out: &mut Vec<String>) {
    if let Value::Object(map) = value {
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                out.push(field_path(path, key));
            }
        }
    }
}

macro_rules! leaf_schema {
    ($($t:ty),* $(,)?) => {$(
        impl Schema for $t {
            fn unknown_fields(_: &Value, _: &str, _: &mut Vec<String>) {}
            fn apply_defaults(_: &mut Value) {}
            fn validate(_: &Value, _: &str, _: &mut Vec<FieldError>) {}
            fn validate_update(_: &Value, _: &Value, _: &str, _: &mut Vec<FieldError>) {}
        }
    )*};
}

leaf_schema!(
    bool,
    i32,
    i64,
    f64,
    String,
    Bytes,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    RawExtension,
    Duration,
    Value,
    TypeMeta
);

impl<T: Schema> Schema for Option<T> {
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        if !value.is_null() {
            T::unknown_fields(value, path, out);
        }
    }
    fn apply_defaults(value: &mut Value) {
        if !value.is_null() {
            T::apply_defaults(value);
        }
    }
    fn validate(value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if !value.is_null() {
            T::validate(value, path, errors);
        }
    }
    fn validate_update(value: &Value, old: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if !value.is_null() && !old.is_null() {
            T::validate_update(value, old, path, errors);
        }
    }
}

impl<T: Schema> Schema for Vec<T> {
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                T::unknown_fields(item, &index_path(path, i), out);
            }
        }
    }
    fn apply_defaults(value: &mut Value) {
        if let Value::Array(items) = value {
            items.iter_mut().for_each(T::apply_defaults);
        }
    }
    fn validate(value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                T::validate(item, &index_path(path, i), errors);
            }
        }
    }
    fn validate_update(value: &Value, old: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if let (Value::Array(items), Value::Array(olds)) = (value, old) {
            for (i, (item, old)) in items.iter().zip(olds).enumerate() {
                T::validate_update(item, old, &index_path(path, i), errors);
            }
        }
    }
}

impl<T: Schema> Schema for BTreeMap<String, T> {
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        if let Value::Object(map) = value {
            for (k, v) in map {
                T::unknown_fields(v, &field_path(path, k), out);
            }
        }
    }
    fn apply_defaults(value: &mut Value) {
        if let Value::Object(map) = value {
            map.values_mut().for_each(T::apply_defaults);
        }
    }
    fn validate(value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if let Value::Object(map) = value {
            for (k, v) in map {
                T::validate(v, &key_path(path, k), errors);
            }
        }
    }
    fn validate_update(value: &Value, old: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if let (Value::Object(map), Value::Object(olds)) = (value, old) {
            for (k, v) in map {
                if let Some(o) = olds.get(k) {
                    T::validate_update(v, o, &key_path(path, k), errors);
                }
            }
        }
    }
}

/// Implements [`Schema`] for a meta type with a fixed key set and typed children.
macro_rules! meta_schema {
    ($t:ty, [$($key:literal),*], {$($child:literal => $ct:ty),*}) => {
        impl Schema for $t {
            fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
                unknown_keys(value, &[$($key),*], path, out);
                $(if let Some(v) = crate::json::get(value, $child) { <$ct as Schema>::unknown_fields(v, &field_path(path, $child), out); })*
            }
            fn apply_defaults(_: &mut Value) {}
            fn validate(_: &Value, _: &str, _: &mut Vec<FieldError>) {}
            fn validate_update(_: &Value, _: &Value, _: &str, _: &mut Vec<FieldError>) {}
        }
    };
}

meta_schema!(ObjectMeta, [
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields"
], { "ownerReferences" => Vec<OwnerReference>, "managedFields" => Vec<ManagedFieldsEntry> });
meta_schema!(
    ListMeta,
    [
        "selfLink",
        "resourceVersion",
        "continue",
        "remainingItemCount"
    ],
    {}
);
meta_schema!(
    OwnerReference,
    [
        "apiVersion",
        "kind",
        "name",
        "uid",
        "controller",
        "blockOwnerDeletion"
    ],
    {}
);
meta_schema!(
    ManagedFieldsEntry,
    [
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
        "subresource"
    ],
    {}
);
meta_schema!(LabelSelector, ["matchLabels", "matchExpressions"], { "matchExpressions" => Vec<LabelSelectorRequirement> });
meta_schema!(LabelSelectorRequirement, ["key", "operator", "values"], {});
meta_schema!(
    Condition,
    [
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "reason",
        "message"
    ],
    {}
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_unknown_meta_fields_with_paths() {
        let mut out = Vec::new();
        let v = json!({"name": "a", "nmae": "b", "ownerReferences": [{"kind": "X", "extra": 1}]});
        ObjectMeta::unknown_fields(&v, "metadata", &mut out);
        assert_eq!(out, ["metadata.nmae", "metadata.ownerReferences[0].extra"]);
    }
}
