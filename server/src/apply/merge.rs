//! Structured merge of an applied configuration into a live object.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::fieldset::item_key;
use crate::patch::SchemaNode;
use crate::patch::strategic::identity_key;

/// Merges `applied` into `live`: objects member by member (unless `x-kubernetes-map-type:
/// atomic`), map lists item by item by their keys, set lists as unions, atomic lists and
/// scalars replaced.
pub fn merge(live: Option<&Value>, applied: &Value, schema: &SchemaNode) -> Value {
    match (live, applied) {
        (Some(Value::Object(l)), Value::Object(a)) if !schema.map_atomic() => {
            let mut out = l.clone();
            for (k, v) in a {
                let merged = merge(l.get(k), v, &schema.field(k));
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Some(Value::Array(l)), Value::Array(a)) => match schema.list_type().as_str() {
            // Items are found through an index of their keys, so merging n items into m costs
            // O(n + m).
            "map" => {
                let keys = schema.list_map_keys();
                let mut out = l.clone();
                let mut index: HashMap<String, usize> = HashMap::new();
                for (i, o) in out.iter().enumerate() {
                    if let Some(k) = item_key(o, &keys) {
                        index.entry(k).or_insert(i);
                    }
                }
                for item in a {
                    let id = item_key(item, &keys);
                    match id.as_ref().and_then(|id| index.get(id)) {
                        Some(&i) => out[i] = merge(Some(&out[i]), item, &schema.items()),
                        None => {
                            if let Some(id) = id {
                                index.insert(id, out.len());
                            }
                            out.push(item.clone());
                        }
                    }
                }
                Value::Array(out)
            }
            "set" => {
                let mut out = l.clone();
                let mut seen: HashSet<String> = out.iter().map(identity_key).collect();
                for item in a {
                    if seen.insert(identity_key(item)) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            _ => applied.clone(),
        },
        _ => applied.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::structure::{FieldShape, ListShape, Scalar, Shape, StructShape};
    use serde_json::json;

    static ITEM: StructShape = StructShape {
        name: "Item",
        fields: &[],
        atomic: false,
    };

    /// A map list `m` (key `name`), a set `s` and an atomic list `a`.
    static SHAPE: StructShape = StructShape {
        name: "Object",
        fields: &[
            FieldShape {
                list_type: "map",
                list_map_keys: &["name"],
                ..FieldShape::plain(
                    "m",
                    Shape::List(&ListShape {
                        items: Shape::Struct(&ITEM),
                    }),
                )
            },
            FieldShape {
                list_type: "set",
                ..FieldShape::plain(
                    "s",
                    Shape::List(&ListShape {
                        items: Shape::Scalar(Scalar::String),
                    }),
                )
            },
            FieldShape::plain(
                "a",
                Shape::List(&ListShape {
                    items: Shape::Scalar(Scalar::String),
                }),
            ),
        ],
        atomic: false,
    };

    #[test]
    fn merges_by_list_type() {
        let schema = SchemaNode::of(&SHAPE);
        let live = json!({"m": [{"name": "x", "v": 1}], "s": ["a"], "a": [1], "keep": true});
        let applied = json!({"m": [{"name": "x", "w": 2}, {"name": "y"}], "s": ["b"], "a": [2]});
        assert_eq!(
            merge(Some(&live), &applied, &schema),
            json!({"m": [{"name": "x", "v": 1, "w": 2}, {"name": "y"}], "s": ["a", "b"], "a": [2], "keep": true})
        );
    }
}
