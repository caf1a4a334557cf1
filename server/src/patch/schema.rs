//! Navigation of a kind's OpenAPI v3 schema for the merge facts patches and server-side apply
//! need: `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.
//!
//! A [`SchemaNode`] is a cheap handle (one `Arc`): each node is resolved once, and the nodes
//! reached from it (declared properties, map values, list items) are resolved on first use and
//! remembered, so walking an object's schema on every write copies no schema JSON.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// A position in a kind's schema: the schema node plus the document's `components.schemas`
/// to resolve `$ref`s against. A missing node means "no facts known" (everything atomic or
/// replaced, as for untyped JSON).
#[derive(Clone, Debug, Default)]
pub struct SchemaNode(Option<Arc<Resolved>>);

/// One resolved schema node and the memo of the nodes reached from it.
struct Resolved {
    components: Arc<Value>,
    node: Value,
    /// The declared properties, each resolved on first use of any of them (one level: their
    /// own properties wait for their own first use).
    properties: OnceLock<BTreeMap<String, SchemaNode>>,
    /// The schema of map values (`additionalProperties`).
    values: OnceLock<SchemaNode>,
    /// The schema of list items.
    items: OnceLock<SchemaNode>,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("node", &self.node)
            .finish()
    }
}

impl SchemaNode {
    /// A node that knows nothing: every list is atomic, every map granular.
    pub fn untyped() -> Self {
        Self(None)
    }

    /// Finds the schema of a kind in an OpenAPI v3 document: the component whose
    /// `x-kubernetes-group-version-kind` lists the group, version and kind.
    pub fn for_kind(document: &Value, group: &str, version: &str, kind: &str) -> Self {
        let components = document
            .pointer("/components/schemas")
            .cloned()
            .unwrap_or(Value::Null);
        let node = components.as_object().and_then(|schemas| {
            schemas
                .values()
                .find(|schema| {
                    schema
                        .get("x-kubernetes-group-version-kind")
                        .and_then(Value::as_array)
                        .is_some_and(|gvks| {
                            gvks.iter().any(|gvk| {
                                gvk.get("group").and_then(Value::as_str).unwrap_or("") == group
                                    && gvk.get("version").and_then(Value::as_str) == Some(version)
                                    && gvk.get("kind").and_then(Value::as_str) == Some(kind)
                            })
                        })
                })
                .cloned()
        });
        Self::resolve(&Arc::new(components), node)
    }

    /// Wraps a raw schema node (tests and callers that hold schemas directly).
    pub fn from_parts(components: Value, node: Value) -> Self {
        Self::resolve(&Arc::new(components), Some(node))
    }

    /// Resolves `node` against `components` (see [`resolve_refs`]).
    fn resolve(components: &Arc<Value>, node: Option<Value>) -> Self {
        Self(node.map(|node| {
            Arc::new(Resolved {
                node: resolve_refs(components, node),
                components: components.clone(),
                properties: OnceLock::new(),
                values: OnceLock::new(),
                items: OnceLock::new(),
            })
        }))
    }

    /// Whether anything is known about this position.
    pub fn is_known(&self) -> bool {
        self.0.is_some()
    }

    fn node(&self) -> Option<&Value> {
        self.0.as_ref().map(|r| &r.node)
    }

    fn ext(&self, name: &str) -> Option<&Value> {
        self.node().and_then(|n| apimachinery::json::get(n, name))
    }

    /// The schema of a named property of an object (or of the map values if the object is a
    /// map with `additionalProperties`).
    pub fn field(&self, name: &str) -> Self {
        let Some(r) = &self.0 else {
            return Self::untyped();
        };
        let properties = r.properties.get_or_init(|| {
            r.node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| {
                    p.iter()
                        .map(|(k, v)| (k.clone(), Self::resolve(&r.components, Some(v.clone()))))
                        .collect()
                })
                .unwrap_or_default()
        });
        match properties.get(name) {
            Some(p) => p.clone(),
            None => self.values(),
        }
    }

    /// The schema of the values of a map (`additionalProperties`).
    pub fn values(&self) -> Self {
        let Some(r) = &self.0 else {
            return Self::untyped();
        };
        r.values
            .get_or_init(|| {
                let ap = r
                    .node
                    .get("additionalProperties")
                    .filter(|v| v.is_object())
                    .cloned();
                Self::resolve(&r.components, ap)
            })
            .clone()
    }

    /// Whether this node describes a map (an object with `additionalProperties`).
    pub fn is_map(&self) -> bool {
        self.node().is_some_and(|n| {
            n.get("additionalProperties").is_some_and(Value::is_object)
                && n.get("properties").is_none()
        })
    }

    /// The schema of the items of a list.
    pub fn items(&self) -> Self {
        let Some(r) = &self.0 else {
            return Self::untyped();
        };
        r.items
            .get_or_init(|| Self::resolve(&r.components, r.node.get("items").cloned()))
            .clone()
    }

    /// The `x-kubernetes-patch-strategy` values (comma-separated upstream), such as `merge`
    /// or `retainKeys`.
    pub fn patch_strategies(&self) -> Vec<String> {
        self.ext("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .map(|s| s.split(',').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default()
    }

    /// The `x-kubernetes-patch-merge-key`, if any.
    pub fn merge_key(&self) -> Option<String> {
        self.ext("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// The `x-kubernetes-list-type` (`atomic`, `set`, `map`); lists default to atomic.
    pub fn list_type(&self) -> String {
        if let Some(t) = self.ext("x-kubernetes-list-type").and_then(Value::as_str) {
            return t.to_string();
        }
        // Kubernetes' built-in kinds carry only patch extensions; apply treats a
        // merge-strategy list with a merge key as a map list keyed by it.
        if self.patch_strategies().iter().any(|s| s == "merge") {
            return if self.merge_key().is_some() {
                "map".into()
            } else {
                "set".into()
            };
        }
        "atomic".to_string()
    }

    /// The `x-kubernetes-list-map-keys` (or the patch merge key) of a map list.
    pub fn list_map_keys(&self) -> Vec<String> {
        if let Some(keys) = self
            .ext("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            return keys
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        self.merge_key().into_iter().collect()
    }

    /// Whether `x-kubernetes-map-type` is `atomic` for this object or map.
    pub fn map_atomic(&self) -> bool {
        self.ext("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    }

    /// The names of the declared properties, if this node is a structured object.
    pub fn property_names(&self) -> Option<Vec<String>> {
        self.ext("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
    }
}

/// Follows `$ref` and single-element `allOf` wrappers, keeping extensions set beside them
/// (extensions on the referring node win over the target's).
fn resolve_refs(components: &Value, mut node: Value) -> Value {
    for _ in 0..64 {
        let reference = node.get("$ref").and_then(Value::as_str).or_else(|| {
            node.get("allOf")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|f| f.get("$ref"))
                .and_then(Value::as_str)
        });
        let Some(reference) = reference else {
            return node;
        };
        let name = reference.rsplit('/').next().unwrap_or("");
        let mut merged = components
            .get(name)
            .cloned()
            .unwrap_or(Value::Object(Default::default()));
        if let (Some(m), Some(src)) = (merged.as_object_mut(), node.as_object()) {
            for (k, v) in src {
                if k.starts_with("x-kubernetes-") {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        node = merged;
    }
    node
}
