//! The per-node checks of a CRD's schema (Kubernetes' `specStandardValidatorV3.validate` and
//! `ValidateCustomResourceDefinitionOpenAPISchema`, without the CEL compilation), walking every
//! node, the unsupported kinds of children included.

use serde_json::Value;

use super::CrdSchemaOptions;
use super::path::{child, index, key};
use super::props::{Items, Props};
use crate::errors::{FieldError, FieldErrorType};

/// The OpenAPI v3 types a schema may name.
const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
/// The reasons an `x-kubernetes-validations` rule may give.
const RULE_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub(crate) fn not_supported(path: String, value: &Value, supported: &[&str]) -> FieldError {
    let list = supported
        .iter()
        .map(|s| crate::strconv::quote(s))
        .collect::<Vec<_>>()
        .join(", ");
    FieldError::new(
        FieldErrorType::NotSupported,
        path,
        Some(crate::errors::render_value(value)),
        format!("supported values: {list}"),
    )
}

/// The state the walk carries down (Kubernetes' `specStandardValidatorV3`).
#[derive(Clone)]
struct Walk<'o> {
    opts: &'o CrdSchemaOptions,
    allow_defaults: bool,
    disallow_reason: String,
    inside_resource_meta: bool,
}

impl Walk<'_> {
    fn forbid_defaults(&self, reason: &str) -> Self {
        Self {
            allow_defaults: false,
            disallow_reason: reason.to_string(),
            ..self.clone()
        }
    }
}

/// The per-node errors of the whole tree under `s` at `path`.
pub(crate) fn check_tree(s: &Props, path: &str, opts: &CrdSchemaOptions) -> Vec<FieldError> {
    let walk = Walk {
        opts,
        allow_defaults: opts.allow_defaults,
        disallow_reason: String::new(),
        inside_resource_meta: false,
    };
    let mut errs = Vec::new();
    check(s, path, &walk, true, &mut errs);
    errs
}

fn standard(s: &Props, p: &str, w: &Walk<'_>, errs: &mut Vec<FieldError>) {
    if w.opts.require_valid_property_type
        && !s.type_.is_empty()
        && !OPENAPI_TYPES.contains(&s.type_.as_str())
    {
        errs.push(not_supported(
            child(p, "type"),
            &Value::from(s.type_.as_str()),
            &OPENAPI_TYPES,
        ));
    }
    if s.default.is_some() && !w.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !w.disallow_reason.is_empty() {
            detail = format!("{detail} {}", w.disallow_reason);
        }
        errs.push(FieldError::forbidden(child(p, "default"), detail));
    }
    let mut forbid =
        |field: &str, detail: &str| errs.push(FieldError::forbidden(child(p, field), detail));
    if !s.id.is_empty() {
        forbid("id", "id is not supported");
    }
    if s.additional_items.is_some() {
        forbid("additionalItems", "additionalItems is not supported");
    }
    if !s.pattern_properties.is_empty() {
        forbid("patternProperties", "patternProperties is not supported");
    }
    if !s.definitions.is_empty() {
        forbid("definitions", "definitions is not supported");
    }
    if s.dependencies.is_some() {
        forbid("dependencies", "dependencies is not supported");
    }
    if s.ref_.is_some() {
        forbid("$ref", "$ref is not supported");
    }
    if s.type_ == "null" {
        forbid(
            "type",
            "type cannot be set to null, use nullable as an alternative",
        );
    }
    if matches!(&s.items, Some(Items::Array(a)) if !a.is_empty()) {
        forbid("items", "items must be a schema object and not an array");
    }
    if w.inside_resource_meta && s.embedded_resource {
        forbid(
            "x-kubernetes-embedded-resource",
            "must not be used inside of resource meta",
        );
    }
}

fn check(s: &Props, p: &str, w: &Walk<'_>, is_root: bool, errs: &mut Vec<FieldError>) {
    standard(s, p, w, errs);
    if s.unique_items {
        errs.push(FieldError::forbidden(
            child(p, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(a) = &s.additional_properties {
        let disallows = !matches!(a, super::props::SchemaOrBool::Bool(true));
        if !s.properties.is_empty() && disallows {
            errs.push(FieldError::forbidden(
                child(p, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(a) = a.schema() {
            let sub = if w.inside_resource_meta {
                w.forbid_defaults("inside additionalProperties applying to object metadata")
            } else {
                w.clone()
            };
            check(a, &child(p, "additionalProperties"), &sub, false, errs);
        }
    }
    for (name, prop) in &s.properties {
        let mut sub = w.clone();
        if (is_root || s.embedded_resource)
            && ["metadata", "kind", "apiVersion"].contains(&name.as_str())
        {
            sub.inside_resource_meta = true;
            if is_root {
                sub = sub.forbid_defaults(&format!("in top-level {name}"));
            }
        }
        check(prop, &key(&child(p, "properties"), name), &sub, false, errs);
    }
    if let Some(not) = &s.not {
        check(not, &child(p, "not"), w, false, errs);
    }
    for (field, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, x) in list.iter().enumerate() {
            check(x, &index(&child(p, field), i), w, false, errs);
        }
    }
    for (name, d) in &s.definitions {
        check(d, &key(&child(p, "definitions"), name), w, false, errs);
    }
    match &s.items {
        Some(Items::Schema(i)) => check(i, &child(p, "items"), w, false, errs),
        Some(Items::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                check(x, &index(&child(p, "items"), i), w, false, errs);
            }
        }
        None => {}
    }
    for (name, d) in s.dependencies.iter().flatten() {
        if let Some(d) = d {
            check(d, &key(&child(p, "dependencies"), name), w, false, errs);
        }
    }
    extensions(s, p, w.opts, errs);
    if w.opts.require_map_list_keys_map_set_validation {
        errs.extend(map_list_keys_map_set(s, p));
    }
    rules(s, p, errs);
}

fn type_must_be(s: &Props, p: &str, want: &str, detail: &str, errs: &mut Vec<FieldError>) {
    if s.type_ != want {
        errs.push(if s.type_.is_empty() {
            FieldError::required(child(p, "type"), detail)
        } else {
            FieldError::invalid(child(p, "type"), &Value::from(s.type_.as_str()), detail)
        });
    }
}

fn extensions(s: &Props, p: &str, opts: &CrdSchemaOptions, errs: &mut Vec<FieldError>) {
    if s.preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            child(p, "x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    if let Some(mt) = &s.map_type {
        type_must_be(
            s,
            p,
            "object",
            "must be object if x-kubernetes-map-type is specified",
            errs,
        );
        if mt != "atomic" && mt != "granular" {
            errs.push(not_supported(
                child(p, "x-kubernetes-map-type"),
                &Value::from(mt.as_str()),
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = s.list_type.as_deref();
    if list_type.is_some() && s.type_ != "array" {
        type_must_be(
            s,
            p,
            "array",
            "must be array if x-kubernetes-list-type is specified",
            errs,
        );
    } else if opts.require_atomic_set_type
        && list_type == Some("set")
        && let Some(is) = s.item_schema()
    {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let items = child(p, "items");
        // Kubernetes shows the items' list type as the bad value in both cases.
        let shown = is.list_type.as_deref().map_or(Value::Null, Value::from);
        match is.type_.as_str() {
            "array" if is.list_type.as_deref().is_some_and(|t| t != "atomic") => errs.push(
                FieldError::invalid(child(&items, "x-kubernetes-list-type"), &shown, detail),
            ),
            "object" if is.map_type.as_deref() != Some("atomic") => errs.push(FieldError::invalid(
                child(&items, "x-kubernetes-map-type"),
                &shown,
                detail,
            )),
            _ => {}
        }
    }
    if let Some(lt) = list_type
        && !["atomic", "set", "map"].contains(&lt)
    {
        errs.push(not_supported(
            child(p, "x-kubernetes-list-type"),
            &Value::from(lt),
            &["atomic", "set", "map"],
        ));
    }
    let keys = s.list_map_keys.as_deref().unwrap_or_default();
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                child(p, "x-kubernetes-list-type"),
                detail,
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                child(p, "x-kubernetes-list-type"),
                &Value::from(lt),
                detail,
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        map_list(s, p, keys, errs);
    }
}

fn map_list(s: &Props, p: &str, keys: &[String], errs: &mut Vec<FieldError>) {
    if keys.is_empty() {
        errs.push(FieldError::required(
            child(p, "x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let items = child(p, "items");
    let is = match &s.items {
        None => {
            errs.push(FieldError::required(
                items,
                "must have a schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(Items::Array(_)) => {
            errs.push(FieldError::invalid(
                items,
                &Value::from(""),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(Items::Schema(is)) => is,
    };
    if is.type_ != "object" {
        errs.push(FieldError::invalid(
            child(&items, "type"),
            &Value::from(is.type_.as_str()),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys_json = Value::from(keys.to_vec());
    let mut seen: Vec<&str> = Vec::new();
    for k in keys {
        match is.properties.get(k) {
            Some(ks) if ks.type_ == "array" || ks.type_ == "object" => {
                errs.push(FieldError::invalid(
                    child(&key(&child(&items, "properties"), k), "type"),
                    &Value::from(is.type_.as_str()),
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                ))
            }
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                child(p, "x-kubernetes-list-map-keys"),
                &keys_json,
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k.as_str()) {
            errs.push(FieldError::invalid(
                child(p, "x-kubernetes-list-map-keys"),
                &keys_json,
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

/// Kubernetes' `validateMapListKeysMapSet`: set and map list items are not nullable, and map
/// keys are required or defaulted and not nullable.
pub(crate) fn map_list_keys_map_set(s: &Props, p: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (Some(is), Some(lt)) = (s.item_schema(), s.list_type.as_deref()) else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    let items = child(p, "items");
    if is.nullable {
        errs.push(FieldError::forbidden(
            child(&items, "nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = is.required.as_deref().unwrap_or_default();
        for k in s.list_map_keys.iter().flatten() {
            let Some(ks) = is.properties.get(k) else {
                continue;
            };
            let kp = key(&child(&items, "properties"), k);
            if !required.contains(k) && ks.default.is_none() {
                errs.push(FieldError::required(
                    child(&kp, "default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if ks.nullable {
                errs.push(FieldError::forbidden(
                    child(&kp, "nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

/// The static checks of `x-kubernetes-validations` (the rules themselves are compiled by the
/// CEL step).
fn rules(s: &Props, p: &str, errs: &mut Vec<FieldError>) {
    let has_newlines = |t: &str| t.contains(['\n', '\r']);
    for (i, rule) in s.validations.iter().enumerate() {
        let rp = index(&child(p, "x-kubernetes-validations"), i);
        let text = |f: &str| rule.get(f).and_then(Value::as_str).unwrap_or("");
        let (r, msg, msg_expr, field_path) = (
            text("rule"),
            text("message"),
            text("messageExpression"),
            text("fieldPath"),
        );
        let (tr, tm) = (r.trim(), msg.trim());
        if tr.is_empty() {
            errs.push(FieldError::required(
                child(&rp, "rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && tm.is_empty() {
            errs.push(FieldError::invalid(
                child(&rp, "message"),
                &Value::from(msg),
                "must be non-empty if specified",
            ));
        } else if has_newlines(tm) {
            errs.push(FieldError::invalid(
                child(&rp, "message"),
                &Value::from(msg),
                "must not contain line breaks",
            ));
        } else if has_newlines(tr) && tm.is_empty() {
            errs.push(FieldError::required(
                child(&rp, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                child(&rp, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !RULE_REASONS.contains(&reason)
        {
            errs.push(not_supported(
                child(&rp, "reason"),
                &Value::from(reason),
                &RULE_REASONS,
            ));
        }
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                child(&rp, "fieldPath"),
                &Value::from(field_path),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(field_path) {
            errs.push(FieldError::invalid(
                child(&rp, "fieldPath"),
                &Value::from(field_path),
                "must not contain line breaks",
            ));
        }
        if !field_path.is_empty() && !field_path_valid(s, field_path) {
            errs.push(FieldError::invalid(
                child(&rp, "fieldPath"),
                &Value::from(field_path),
                "must be a valid path",
            ));
        }
    }
}

/// Whether `t` is one of the OpenAPI v3 types.
pub(crate) fn is_openapi_type(t: &str) -> bool {
    OPENAPI_TYPES.contains(&t)
}

/// Whether `s` is a `set` list whose items are not atomic (Kubernetes' `hasNonAtomicSetType`).
pub(crate) fn has_non_atomic_set_items(s: &Props) -> bool {
    let Some(is) = s
        .item_schema()
        .filter(|_| s.list_type.as_deref() == Some("set"))
    else {
        return false;
    };
    match is.type_.as_str() {
        "array" => is.list_type.as_deref().is_some_and(|t| t != "atomic"),
        "object" => is.map_type.as_deref() != Some("atomic"),
        _ => false,
    }
}

/// The schema fields in the internal type's declaration order, with their Go names, and
/// whether the root may set them when the status subresource is enabled.
const ROOT_FIELDS: [(&str, &str, bool); 44] = [
    ("id", "ID", false),
    ("$schema", "Schema", false),
    ("$ref", "Ref", false),
    ("description", "Description", true),
    ("type", "Type", true),
    ("nullable", "Nullable", false),
    ("format", "Format", true),
    ("title", "Title", true),
    ("default", "Default", false),
    ("maximum", "Maximum", true),
    ("exclusiveMaximum", "ExclusiveMaximum", true),
    ("minimum", "Minimum", true),
    ("exclusiveMinimum", "ExclusiveMinimum", true),
    ("maxLength", "MaxLength", true),
    ("minLength", "MinLength", true),
    ("pattern", "Pattern", true),
    ("maxItems", "MaxItems", true),
    ("minItems", "MinItems", true),
    ("uniqueItems", "UniqueItems", true),
    ("multipleOf", "MultipleOf", true),
    ("enum", "Enum", false),
    ("maxProperties", "MaxProperties", false),
    ("minProperties", "MinProperties", false),
    ("required", "Required", true),
    ("items", "Items", true),
    ("allOf", "AllOf", false),
    ("oneOf", "OneOf", false),
    ("anyOf", "AnyOf", false),
    ("not", "Not", false),
    ("properties", "Properties", true),
    ("additionalProperties", "AdditionalProperties", false),
    ("patternProperties", "PatternProperties", false),
    ("dependencies", "Dependencies", false),
    ("additionalItems", "AdditionalItems", false),
    ("definitions", "Definitions", false),
    ("externalDocs", "ExternalDocs", true),
    ("example", "Example", true),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
        true,
    ),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource", false),
    ("x-kubernetes-int-or-string", "XIntOrString", false),
    ("x-kubernetes-list-map-keys", "XListMapKeys", false),
    ("x-kubernetes-list-type", "XListType", false),
    ("x-kubernetes-map-type", "XMapType", false),
    ("x-kubernetes-validations", "XValidations", true),
];

/// The root restriction when the status subresource is enabled: the root must be an object
/// and may only use the fields that survive extracting `properties[status]`.
pub(crate) fn status_root(schema: &Value, path: &str) -> Option<FieldError> {
    // Fields Go holds by pointer are set by any value but null (`additionalProperties: false`
    // is set); the others by a value other than their zero.
    const POINTERS: [&str; 20] = [
        "$ref",
        "default",
        "maximum",
        "minimum",
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "multipleOf",
        "maxProperties",
        "minProperties",
        "items",
        "not",
        "additionalProperties",
        "additionalItems",
        "externalDocs",
        "example",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ];
    let set = |json: &str, v: &Value| {
        if POINTERS.contains(&json) {
            !v.is_null()
        } else {
            !matches!(v, Value::Null | Value::Bool(false)) && v.as_str() != Some("")
        }
    };
    for (json, _, allowed) in ROOT_FIELDS {
        let Some(v) = schema.get(json).filter(|v| set(json, v)) else {
            continue;
        };
        if json == "type" {
            if v.as_str() != Some("object") {
                return Some(FieldError::invalid(
                    child(path, "type"),
                    v,
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
            }
            continue;
        }
        if !allowed {
            let names: Vec<&str> = ROOT_FIELDS.iter().filter(|f| f.2).map(|f| f.1).collect();
            return Some(FieldError::invalid(
                path,
                schema,
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    names.join(" ")
                ),
            ));
        }
    }
    None
}

/// The tokens of a rule's `fieldPath` as Kubernetes splits it: `.`, `[` and `]` alone, a
/// single-quoted string whole, and the text between delimiters.
fn field_path_tokens(path: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        let end = if b[0] == b'\'' {
            (1..b.len())
                .find(|&i| b[i] == b'\'' && b[i - 1] != b'\\')
                .map_or(b.len(), |i| i + 1)
        } else if matches!(b[0], b'.' | b'[' | b']') {
            1
        } else {
            b.iter()
                .position(|c| matches!(c, b'.' | b'[' | b']'))
                .unwrap_or(b.len())
        };
        tokens.push(&rest[..end]);
        rest = &rest[end..];
    }
    tokens
}

/// Whether a rule's `fieldPath` names a field of the schema (Kubernetes' `ValidFieldPath`:
/// `.name` and `['name']` steps through properties, or any key of a map). A schema that is
/// not structural accepts any path, as Kubernetes' `pathValid` does.
fn field_path_valid(s: &Props, path: &str) -> bool {
    if super::structural::unsupported(s).is_err() {
        return true;
    }
    let mut node = Some(s);
    let mut tokens = field_path_tokens(path).into_iter();
    while let Some(tok) = tokens.next() {
        let name = match tok {
            "[" => {
                let Some(quoted) = tokens.next() else {
                    return false;
                };
                let Some(inner) = quoted
                    .strip_prefix('\'')
                    .and_then(|q| q.strip_suffix('\''))
                    .filter(|_| quoted.len() >= 2)
                else {
                    return false;
                };
                if tokens.next() != Some("]") {
                    return false;
                }
                inner.replace("\\'", "'").replace("\\\\", "\\")
            }
            "." => match tokens.next() {
                Some(t) => t.to_string(),
                None => return false,
            },
            _ => return false,
        };
        let Some(n) = node else {
            return false;
        };
        node = if !n.properties.is_empty() {
            match n.properties.get(&name) {
                Some(p) => Some(p),
                None => return false,
            }
        } else if n.additional_properties.is_some() {
            n.additional_schema()
        } else {
            return false;
        };
    }
    true
}
