//! Embedded resources (`x-kubernetes-embedded-resource`, and the root of every custom
//! resource): the coercion of their `apiVersion`, `kind` and `metadata` (Kubernetes'
//! `objectmeta.Coerce`: metadata becomes what `ObjectMeta` holds, unknown metadata fields are
//! dropped) and their validation (`objectmeta.Validate`).

use serde_json::{Map, Value};

use super::path::{child, index, key};
use super::props::Props;
use crate::errors::FieldError;
use crate::meta::ObjectMeta;

/// `metadata` decoded as `ObjectMeta`, with the paths of its unknown fields (relative to
/// `metadata`), or the decoder's message.
fn object_meta(v: &Value, drop_invalid: bool) -> Result<(ObjectMeta, Vec<String>), String> {
    match crate::runtime::decode::decode_value::<ObjectMeta>(v) {
        Ok(d) => {
            let unknown = d
                .tracker
                .unknown_fields()
                .iter()
                .map(|p| p.to_string())
                .collect();
            Ok((d.object, unknown))
        }
        Err(e) if !drop_invalid => Err(e.to_string()),
        Err(e) => {
            // Field by field: keep those that decode.
            let Value::Object(m) = v else {
                return Err(e.to_string());
            };
            let mut kept = Map::new();
            for (k, x) in m {
                let one = Value::Object(Map::from_iter([(k.clone(), x.clone())]));
                if crate::runtime::decode::decode_value::<ObjectMeta>(&one).is_ok() {
                    kept.insert(k.clone(), x.clone());
                }
            }
            object_meta(&Value::Object(kept), false)
        }
    }
}

/// Coerces the embedded resources of `x` under `s` (the root is one when `root`): `apiVersion`
/// and `kind` must be strings (dropped when not and `drop_invalid`), `metadata` is rewritten
/// as `ObjectMeta`. Returns the paths of the unknown metadata fields it dropped, or the first
/// error.
pub(crate) fn coerce(
    x: &mut Value,
    s: &Props,
    root: bool,
    drop_invalid: bool,
    path: &str,
    unknown: &mut Vec<String>,
) -> Result<(), FieldError> {
    match x {
        Value::Object(m) => {
            if s.embedded_resource || root {
                for k in ["apiVersion", "kind"] {
                    match m.get(k) {
                        Some(Value::String(_)) | None => {}
                        Some(_) if drop_invalid => {
                            m.remove(k);
                        }
                        Some(v) => {
                            return Err(FieldError::invalid(child(path, k), v, "must be a string"));
                        }
                    }
                }
                if let Some(meta) = m.get("metadata") {
                    match object_meta(meta, drop_invalid) {
                        Ok((om, paths)) => {
                            let prefix = child(path, "metadata");
                            unknown.extend(paths.into_iter().map(|p| format!("{prefix}.{p}")));
                            let v = serde_json::to_value(&om).unwrap_or(Value::Null);
                            m.insert("metadata".to_string(), v);
                        }
                        Err(_) if drop_invalid => {}
                        Err(e) => {
                            return Err(FieldError::invalid(child(path, "metadata"), meta, e));
                        }
                    }
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.properties.get(k) {
                    coerce(v, p, false, drop_invalid, &child(path, k), unknown)?;
                } else if let Some(a) = s.additional_schema() {
                    coerce(v, a, false, drop_invalid, &key(path, k), unknown)?;
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.item_schema() {
                for (i, v) in items.iter_mut().enumerate() {
                    coerce(v, is, false, drop_invalid, &index(path, i), unknown)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The errors of the embedded resources of `x` under `s` (the root is one when `root`).
pub(crate) fn validate(x: &Value, s: &Props, root: bool, path: &str, errs: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            if s.embedded_resource || root {
                resource(m, path, errs);
            }
            for (k, v) in m {
                if let Some(p) = s.properties.get(k) {
                    validate(v, p, false, &child(path, k), errs);
                } else if let Some(a) = s.additional_schema() {
                    validate(v, a, false, &key(path, k), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.item_schema() {
                for (i, v) in items.iter().enumerate() {
                    validate(v, is, false, &index(path, i), errs);
                }
            }
        }
        _ => {}
    }
}

fn resource(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    for k in ["apiVersion", "kind"] {
        if !m.contains_key(k) {
            errs.push(FieldError::required(child(path, k), ""));
        }
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" => match v {
                Value::String(a) if a.is_empty() => {
                    errs.push(FieldError::invalid(child(path, k), v, "must not be empty"))
                }
                Value::String(a) if a.matches('/').count() > 1 => errs.push(FieldError::invalid(
                    child(path, k),
                    v,
                    format!("unexpected GroupVersion string: {a}"),
                )),
                Value::String(_) => {}
                _ => errs.push(FieldError::invalid(child(path, k), v, "must be a string")),
            },
            "kind" => match v {
                Value::String(a) if a.is_empty() => {
                    errs.push(FieldError::invalid(child(path, k), v, "must not be empty"))
                }
                Value::String(a) => {
                    let problems = crate::validation::is_dns1035_label(&a.to_lowercase());
                    if !problems.is_empty() {
                        errs.push(FieldError::invalid(
                            child(path, k),
                            v,
                            format!(
                                "may have mixed case, but should otherwise match: {}",
                                problems.join(",")
                            ),
                        ));
                    }
                }
                _ => errs.push(FieldError::invalid(child(path, k), v, "must be a string")),
            },
            "metadata" => match object_meta(v, false) {
                Err(e) => errs.push(FieldError::invalid(child(path, k), v, e)),
                Ok((mut meta, _)) => {
                    if meta.name.as_deref().is_none_or(str::is_empty) {
                        meta.name = Some("fakename".to_string());
                    }
                    let namespaced = meta.namespace.as_deref().is_some_and(|n| !n.is_empty());
                    let mut meta_errs = Vec::new();
                    crate::validation::validate_object_meta(
                        &meta,
                        namespaced,
                        "path-segment",
                        &mut meta_errs,
                    );
                    for mut e in meta_errs {
                        if !path.is_empty() {
                            e.field = format!("{path}.{}", e.field);
                        }
                        errs.push(e);
                    }
                }
            },
            _ => {}
        }
    }
}
