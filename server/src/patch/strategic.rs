//! Kubernetes' strategic merge patch: JSON merge patch, except that lists whose schema says
//! `x-kubernetes-patch-strategy: merge` are merged element by element (by
//! `x-kubernetes-patch-merge-key` for lists of objects, as a set for primitives), plus the
//! directives kubectl sends: `$patch: replace|delete|merge`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.

use std::collections::{HashMap, HashSet, VecDeque};

use apimachinery::status::ApiError;
use serde_json::{Map, Value};

use super::schema::SchemaNode;

const PATCH_DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies a strategic merge patch to `original` using the kind's schema.
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    schema: &SchemaNode,
) -> Result<Value, ApiError> {
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: a strategic merge patch must be a JSON object",
        ));
    }
    Ok(merge_value(Some(original), patch, schema)?.unwrap_or(Value::Object(Map::new())))
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(msg.into())
}

/// Merges `patch` into `original`; `None` means "delete this value".
fn merge_value(
    original: Option<&Value>,
    patch: &Value,
    schema: &SchemaNode,
) -> Result<Option<Value>, ApiError> {
    match patch {
        Value::Null => Ok(None),
        Value::Object(p) => {
            let orig = original.and_then(Value::as_object);
            merge_map(orig, p, schema).map(|m| m.map(Value::Object))
        }
        other => Ok(Some(other.clone())),
    }
}

fn merge_map(
    original: Option<&Map<String, Value>>,
    patch: &Map<String, Value>,
    schema: &SchemaNode,
) -> Result<Option<Map<String, Value>>, ApiError> {
    match patch.get(PATCH_DIRECTIVE).and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut out = patch.clone();
            out.remove(PATCH_DIRECTIVE);
            return Ok(Some(strip_directives(out)));
        }
        Some("merge") | None => {}
        Some(other) => return Err(bad(format!("Unknown patch type: {other}"))),
    }
    let mut out = original.cloned().unwrap_or_default();
    let mut orders: Vec<(String, Vec<Value>)> = Vec::new();
    for (key, value) in patch {
        if key == PATCH_DIRECTIVE {
            continue;
        }
        if key == RETAIN_KEYS {
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let remove = value
                .as_array()
                .ok_or_else(|| bad(format!("{key} must be a list")))?;
            if let Some(Value::Array(list)) = out.get_mut(field) {
                let remove: HashSet<String> = remove.iter().map(identity_key).collect();
                list.retain(|v| !remove.contains(&identity_key(v)));
            }
            continue;
        }
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            let order = value
                .as_array()
                .ok_or_else(|| bad(format!("{key} must be a list")))?;
            orders.push((field.to_string(), order.clone()));
            continue;
        }
        let field_schema = schema.field(key);
        let current = out.get(key);
        let merged = match value {
            Value::Array(items) => {
                merge_list(current.and_then(Value::as_array), items, &field_schema)?
                    .map(Value::Array)
            }
            _ => merge_value(current, value, &field_schema)?,
        };
        match merged {
            Some(v) => {
                out.insert(key.clone(), v);
            }
            None => {
                out.remove(key);
            }
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let keep: HashSet<&str> = retain
            .as_array()
            .ok_or_else(|| bad("$retainKeys must be a list"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        out.retain(|k, _| keep.contains(k.as_str()));
    }
    for (field, order) in orders {
        let merge_key = schema.field(&field).merge_key();
        if let Some(Value::Array(list)) = out.get_mut(&field) {
            reorder(list, &order, merge_key.as_deref());
        }
    }
    Ok(Some(out))
}

/// Removes directive keys from a value that replaces wholesale.
fn strip_directives(mut map: Map<String, Value>) -> Map<String, Value> {
    map.retain(|k, _| !k.starts_with('$'));
    map
}

fn merge_list(
    original: Option<&Vec<Value>>,
    patch: &[Value],
    schema: &SchemaNode,
) -> Result<Option<Vec<Value>>, ApiError> {
    let strategies = schema.patch_strategies();
    if !strategies.iter().any(|s| s == "merge") {
        // Replace, after dropping directive-only elements.
        let items = patch
            .iter()
            .filter(|v| v.get(PATCH_DIRECTIVE).is_none())
            .cloned()
            .collect();
        return Ok(Some(items));
    }
    // `[{"$patch": "replace"}, ...]` replaces the whole list with the other elements.
    if patch
        .iter()
        .any(|v| v.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    {
        let items = patch
            .iter()
            .filter(|v| v.get(PATCH_DIRECTIVE).is_none())
            .cloned()
            .collect();
        return Ok(Some(items));
    }
    let item_schema = schema.items();
    match schema.merge_key() {
        Some(key) => {
            // Elements are found by their merge key through an index (positions of each key,
            // first first) and removed by leaving a hole, so a patch of n elements into a list
            // of m costs O(n + m), not O(n * m).
            let mut out: Vec<Option<Value>> = original
                .map(|l| l.iter().cloned().map(Some).collect())
                .unwrap_or_default();
            let mut index: HashMap<String, VecDeque<usize>> = HashMap::new();
            for (i, o) in out.iter().enumerate() {
                if let Some(id) = o.as_ref().and_then(|o| o.get(&key)) {
                    index.entry(identity_key(id)).or_default().push_back(i);
                }
            }
            for element in patch {
                let Some(obj) = element.as_object() else {
                    return Err(bad(format!(
                        "merging a list with merge key {key:?}: element is not an object"
                    )));
                };
                let id = obj.get(&key).ok_or_else(|| {
                    bad(format!(
                        "map: {element} does not contain declared merge key: {key}"
                    ))
                })?;
                let id = identity_key(id);
                let pos = index.get(&id).and_then(|p| p.front().copied());
                let delete = obj.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("delete");
                let merged = match (pos, delete) {
                    (_, true) => None,
                    (Some(i), false) => merge_value(out[i].as_ref(), element, &item_schema)?,
                    (None, false) => merge_value(None, element, &item_schema)?,
                };
                match (pos, merged) {
                    (Some(i), Some(v)) => out[i] = Some(v),
                    (Some(i), None) => {
                        out[i] = None;
                        if let Some(p) = index.get_mut(&id) {
                            p.pop_front();
                        }
                    }
                    (None, Some(v)) => {
                        index.entry(id).or_default().push_back(out.len());
                        out.push(Some(v));
                    }
                    (None, None) => {}
                }
            }
            Ok(Some(out.into_iter().flatten().collect()))
        }
        None => {
            let mut out: Vec<Value> = original.cloned().unwrap_or_default();
            let mut seen: HashSet<String> = out.iter().map(identity_key).collect();
            for element in patch {
                if element.is_object() && element.get(PATCH_DIRECTIVE).is_some() {
                    continue;
                }
                if seen.insert(identity_key(element)) {
                    out.push(element.clone());
                }
            }
            Ok(Some(out))
        }
    }
}

/// A string that is equal for equal JSON values (members in sorted order), to index list
/// elements by.
pub(crate) fn identity_key(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut members: Vec<(&String, &Value)> = m.iter().collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in members.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// Orders `list` as `$setElementOrder` says: listed elements first in that order, then the
/// rest in their current order.
fn reorder(list: &mut Vec<Value>, order: &[Value], merge_key: Option<&str>) {
    let identity = |v: &Value| -> Value {
        match merge_key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    // The first position of each wanted identity.
    let mut wanted: HashMap<String, usize> = HashMap::new();
    for (i, w) in order.iter().enumerate() {
        wanted.entry(identity_key(&identity(w))).or_insert(i);
    }
    let mut rest = Vec::new();
    let mut placed: Vec<Option<Value>> = vec![None; order.len()];
    for v in list.drain(..) {
        match wanted.get(&identity_key(&identity(&v))) {
            Some(&i) if placed[i].is_none() => placed[i] = Some(v),
            _ => rest.push(v),
        }
    }
    list.extend(placed.into_iter().flatten());
    list.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::structure::{FieldShape, ListShape, Scalar, Shape, StructShape};
    use serde_json::json;

    static CONTAINER: StructShape = StructShape {
        name: "Container",
        fields: &[FieldShape::plain(
            "args",
            Shape::List(&ListShape {
                items: Shape::Scalar(Scalar::String),
            }),
        )],
        atomic: false,
    };

    /// `containers` merged by `name`, `finalizers` merged as a set, `args` replaced.
    static POD_LIKE: StructShape = StructShape {
        name: "PodLike",
        fields: &[
            FieldShape {
                patch_strategy: "merge",
                patch_merge_key: "name",
                ..FieldShape::plain(
                    "containers",
                    Shape::List(&ListShape {
                        items: Shape::Struct(&CONTAINER),
                    }),
                )
            },
            FieldShape {
                patch_strategy: "merge",
                ..FieldShape::plain(
                    "finalizers",
                    Shape::List(&ListShape {
                        items: Shape::Scalar(Scalar::String),
                    }),
                )
            },
            FieldShape::plain(
                "args",
                Shape::List(&ListShape {
                    items: Shape::Scalar(Scalar::String),
                }),
            ),
        ],
        atomic: false,
    };

    fn pod_like() -> SchemaNode {
        SchemaNode::of(&POD_LIKE)
    }

    #[test]
    fn merges_keyed_lists() {
        let orig =
            json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]});
        let patch =
            json!({"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]});
        let out = strategic_merge(&orig, &patch, &pod_like()).unwrap();
        assert_eq!(
            out,
            json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}, {"name": "c", "image": "w"}]})
        );
    }

    #[test]
    fn deletes_keyed_elements_and_replaces_atomic_lists() {
        let orig = json!({"containers": [{"name": "a"}, {"name": "b"}], "args": ["1", "2"]});
        let patch = json!({"containers": [{"name": "a", "$patch": "delete"}], "args": ["3"]});
        let out = strategic_merge(&orig, &patch, &pod_like()).unwrap();
        assert_eq!(out, json!({"containers": [{"name": "b"}], "args": ["3"]}));
    }

    #[test]
    fn primitive_set_directives() {
        let orig = json!({"finalizers": ["a", "b"]});
        let patch = json!({"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["c", "b"]});
        let out = strategic_merge(&orig, &patch, &pod_like()).unwrap();
        assert_eq!(out, json!({"finalizers": ["c", "b"]}));
    }

    #[test]
    fn replace_and_retain_keys() {
        let orig = json!({"spec": {"a": 1, "b": 2}, "c": {"d": 1}});
        let out = strategic_merge(
            &orig,
            &json!({"spec": {"$patch": "replace", "x": 1}, "c": {"$retainKeys": ["e"], "e": 2}}),
            &SchemaNode::untyped(),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"x": 1}, "c": {"e": 2}}));
    }

    /// Large lists merge in linear time: 100,000 new elements into 100,000 old ones, by merge
    /// key and as a set (a quadratic merge would compare 10^10 pairs).
    #[test]
    fn large_lists_merge_in_linear_time() {
        let n = 100_000;
        let named = |from: usize| -> Vec<Value> {
            (from..from + n)
                .map(|i| json!({"name": format!("c{i}")}))
                .collect()
        };
        let strings = |from: usize| -> Vec<Value> {
            (from..from + n).map(|i| json!(format!("f{i}"))).collect()
        };
        let orig = json!({"containers": named(0), "finalizers": strings(0)});
        let mut deletes: Vec<Value> = named(n / 2);
        for d in deletes.iter_mut().take(10) {
            d["$patch"] = json!("delete");
        }
        let patch = json!({"containers": deletes, "finalizers": strings(n / 2),
            "$deleteFromPrimitiveList/finalizers": strings(0)[..10].to_vec(),
            "$setElementOrder/finalizers": strings(n)});
        let out = strategic_merge(&orig, &patch, &pod_like()).unwrap();
        let containers = out["containers"].as_array().unwrap();
        assert_eq!(containers.len(), n + n / 2 - 10);
        assert_eq!(
            containers[n / 2],
            json!({"name": format!("c{}", n / 2 + 10)})
        );
        let finalizers = out["finalizers"].as_array().unwrap();
        assert_eq!(finalizers.len(), n + n / 2 - 10);
        // `$setElementOrder` put the listed ones (f{n}…) first.
        assert_eq!(finalizers[0], json!(format!("f{n}")));
        assert_eq!(
            identity_key(&json!({"b": [1, {"d": 2, "c": 1}], "a": "x"})),
            r#"{"a":"x","b":[1,{"c":1,"d":2}]}"#
        );
    }

    #[test]
    fn null_deletes() {
        let out = strategic_merge(
            &json!({"a": {"b": 1, "c": 2}}),
            &json!({"a": {"b": null}}),
            &SchemaNode::untyped(),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"c": 2}}));
    }
}
