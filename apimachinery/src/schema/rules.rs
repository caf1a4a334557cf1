//! The structural-schema rules (Kubernetes' `ValidateStructural`: the invariants of
//! `schema/validation.go` and the completeness of `schema/complete.go`), with Kubernetes'
//! paths and messages, sorted by their rendered text as Kubernetes sorts them.

use serde_json::Value;

use super::path::{child, index, key};
use super::props::Props;
use crate::errors::{FieldError, FieldErrorType};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural rules' errors for the (already compiled) schema `s` at `path`.
pub(crate) fn validate_structural(path: &str, s: &Props) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness_of_value(s, s, path, path, &mut errs);
    errs.sort_by_cached_key(|e| e.to_string());
    errs
}

fn invalid(path: String, value: &str, detail: &str) -> FieldError {
    FieldError::invalid(path, &Value::from(value), detail)
}

fn invariants(s: &Props, lvl: Level, p: &str, errs: &mut Vec<FieldError>) {
    if s.type_ == "array" && s.items.is_none() {
        errs.push(FieldError::required(child(p, "items"), "must be specified"));
    }
    if let Some(items) = s.item_schema() {
        invariants(items, Level::Item, &child(p, "items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(v, Level::Field, &key(&child(p, "properties"), k), errs);
    }
    if let Some(a) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                child(p, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(a) = a.schema() {
            invariants(a, Level::Field, &child(p, "additionalProperties"), errs);
        }
    }
    let preserve = s.preserves_unknown();
    if s.int_or_string && preserve {
        errs.push(FieldError::invalid(
            child(p, "x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        errs.push(FieldError::invalid(
            child(p, "x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_pattern(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|a| is_int_or_string_pattern(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, p, errs);

    let check_metadata = lvl == Level::Root || s.embedded_resource;
    let type_path = child(p, "type");
    if s.embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if s.type_.is_empty() {
            FieldError::required(type_path, detail)
        } else {
            invalid(type_path, &s.type_, detail)
        });
    } else if s.type_.is_empty() && !s.int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(type_path, detail));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            child(p, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(invalid(
            child(p, "type"),
            &s.type_,
            "must be object at the root",
        ));
    }
    let props = child(p, "properties");
    for name in ["kind", "apiVersion"] {
        if let Some(f) = s.properties.get(name).filter(|_| check_metadata)
            && f.type_ != "string"
        {
            errs.push(invalid(
                child(&key(&props, name), "type"),
                &f.type_,
                "must be string",
            ));
        }
    }
    if let Some(m) = s.properties.get("metadata") {
        let mp = key(&props, "metadata");
        if check_metadata && m.type_ != "object" {
            errs.push(invalid(child(&mp, "type"), &m.type_, "must be object"));
        }
        if lvl == Level::Root && !metadata_is_only_name(m) {
            errs.push(FieldError::forbidden(
                mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.embedded_resource && !preserve && s.properties.is_empty() {
        errs.push(FieldError::required(
            props,
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Whether the root `metadata` schema says nothing but its type, a default (checked
/// elsewhere) and properties `name` and/or `generateName` (with anything inside those).
fn metadata_is_only_name(m: &Props) -> bool {
    let only_names = m
        .properties
        .keys()
        .all(|k| k == "name" || k == "generateName");
    let mut rest = m.clone();
    if only_names {
        rest.properties.clear();
    }
    rest.type_.clear();
    rest.default = None;
    rest == Props::default()
}

/// Kubernetes' int-or-string exemption: `anyOf` is exactly `[{type: integer}, {type: string}]`.
fn is_int_or_string_pattern(any_of: &[Props]) -> bool {
    let only_type = |s: &Props, t: &str| {
        *s == Props {
            type_: t.to_string(),
            ..Props::default()
        }
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn value_validation(
    s: &Props,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    p: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, x) in s.any_of.iter().enumerate() {
            nested(x, false, &index(&child(p, "anyOf"), i), errs);
        }
    }
    for (i, x) in s.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(x, skip, &index(&child(p, "allOf"), i), errs);
    }
    for (i, x) in s.one_of.iter().enumerate() {
        nested(x, false, &index(&child(p, "oneOf"), i), errs);
    }
    if let Some(not) = &s.not {
        nested(not, false, &child(p, "not"), errs);
    }
    if let Some(pattern) = &s.pattern
        && let Err(e) = &pattern.regex
    {
        errs.push(invalid(
            child(p, "pattern"),
            &pattern.text,
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// A value validation under `allOf`, `anyOf`, `oneOf` or `not`: only value checks allowed.
fn nested(v: &Props, skip_any_of: bool, p: &str, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, p, errs);
    if let Some(items) = v.item_schema() {
        nested(items, false, &child(p, "items"), errs);
    }
    for (k, f) in &v.properties {
        nested(f, false, &key(&child(p, "properties"), k), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, field: &str, detail: &str| {
        errs.push(FieldError::forbidden(child(p, field), detail));
    };
    if !v.type_.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    // `additionalProperties: false` in a nested context is dropped by `NewStructural`.
    if matches!(
        v.additional_properties,
        Some(super::props::SchemaOrBool::Bool(true)) | Some(super::props::SchemaOrBool::Schema(_))
    ) {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.preserves_unknown() {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.embedded_resource {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.int_or_string {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if v.list_map_keys.as_ref().is_some_and(|k| !k.is_empty()) {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.list_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.map_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !v.validations.is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            key(&child(p, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

fn missing(s_path: &str, v_path: &str) -> FieldError {
    FieldError::new(
        FieldErrorType::Required,
        s_path,
        None,
        format!("because it is defined in {v_path}"),
    )
}

fn nested_completeness(
    v: &Props,
    s: Option<&Props>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(missing(s_path, v_path));
        return;
    };
    completeness_of_value(v, s, s_path, v_path, errs);
    if let Some(vi) = v.item_schema() {
        nested_completeness(
            vi,
            s.item_schema(),
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
        );
    }
    for (k, vf) in &v.properties {
        let sp = key(&child(s_path, "properties"), k);
        let vp = key(&child(v_path, "properties"), k);
        match s.properties.get(k) {
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, errs),
            None => errs.push(missing(&sp, &vp)),
        }
    }
}

/// Every property and `items` the junctors (`not`, `allOf`, `anyOf`, `oneOf`) of the value
/// validation `v` mention must exist in the structural node `s`.
fn completeness_of_value(
    v: &Props,
    s: &Props,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut sub = Vec::new();
    if let Some(n) = &v.not {
        sub.push((&**n, child(v_path, "not")));
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, x) in list.iter().enumerate() {
            sub.push((x, index(&child(v_path, name), i)));
        }
    }
    for (x, vp) in sub {
        nested_completeness(x, Some(s), s_path, &vp, errs);
    }
}
