//! The uniqueness of `x-kubernetes-list-type: set` and `map` lists (Kubernetes'
//! `listtype.ValidateListSetsAndMaps`): the second appearance of each repeated item (or map
//! key) is a `Duplicate value`.

use serde_json::{Map, Value};

use super::path::{child, index, key};
use super::props::Props;
use crate::errors::{FieldError, FieldErrorType, render_value};

fn duplicate(path: String, value: &Value) -> FieldError {
    FieldError::new(
        FieldErrorType::Duplicate,
        path,
        Some(render_value(value)),
        "",
    )
}

/// The JSON text of a value with object keys sorted, as Go's `json.Marshal` writes a map: two
/// values are the same item exactly when these are equal.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The indices of the second appearance of every value repeated in `items`.
fn second_appearances(items: &[Value]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let mut text = String::new();
        canonical(x, &mut text);
        let times = seen.entry(text).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// The list-type errors of the object `obj` under the (object) schema `s` at `path`.
pub(crate) fn validate_object(
    path: &str,
    s: &Props,
    obj: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(a) = s.additional_schema() {
        for (k, v) in obj {
            node(&key(path, k), a, v, errs);
        }
    }
    for (k, v) in obj {
        if let Some(p) = s.properties.get(k) {
            node(&child(path, k), p, v, errs);
        }
    }
}

fn node(path: &str, s: &Props, v: &Value, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => array(path, s, items, errs),
        Value::Object(m) => validate_object(path, s, m, errs),
        _ => {}
    }
}

fn array(path: &str, s: &Props, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in second_appearances(items) {
                errs.push(duplicate(index(path, i), &items[i]));
            }
        }
        Some("map") => map_list(path, s, items, errs),
        _ => {}
    }
    if let Some(is) = s.item_schema() {
        for (i, x) in items.iter().enumerate() {
            node(&index(path, i), is, x, errs);
        }
    }
}

fn map_list(path: &str, s: &Props, items: &[Value], errs: &mut Vec<FieldError>) {
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        errs.push(FieldError::invalid(
            index(path, i),
            x,
            "must be an object for an array of list-type map",
        ));
        return;
    }
    let names = s.list_map_keys.as_deref().unwrap_or_default();
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let present = names
                .iter()
                .filter_map(|n| Some((n.clone(), x.get(n)?.clone())))
                .collect::<Map<_, _>>();
            Value::Object(present)
        })
        .collect();
    for i in second_appearances(&keys) {
        errs.push(duplicate(index(path, i), &keys[i]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_are_reported_once_at_their_second_appearance() {
        let s = super::super::props::Props::read(
            &json!({"type": "object", "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "bad": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}
            }}),
            "",
            0,
        )
        .unwrap();
        let obj = json!({
            "tags": ["a", "b", "a", "a"],
            "ports": [{"name": "x", "port": 1}, {"name": "x", "port": 2}, {"port": 3}, {}],
            "bad": [{"name": "x"}, 5]
        });
        let mut errs = Vec::new();
        validate_object("", &s, obj.as_object().unwrap(), &mut errs);
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "tags[2]: Duplicate value: \"a\"",
                "ports[1]: Duplicate value: {\"name\":\"x\"}",
                "ports[3]: Duplicate value: {}",
                "bad[1]: Invalid value: 5: must be an object for an array of list-type map",
            ]
        );
    }
}
