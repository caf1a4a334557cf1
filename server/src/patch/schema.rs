//! Navigation of a kind's OpenAPI v3 schema for the merge facts patches and server-side apply
//! need: `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.

use std::sync::Arc;

use serde_json::Value;

/// A position in a kind's schema: the schema node plus the document's `components.schemas`
/// to resolve `$ref`s against. A missing node means "no facts known" (everything atomic or
/// replaced, as for untyped JSON).
#[derive(Clone, Debug)]
pub struct SchemaNode {
    components: Arc<Value>,
    node: Option<Value>,
}

impl SchemaNode {
    /// A node that knows nothing: every list is atomic, every map granular.
    pub fn untyped() -> Self {
        Self {
            components: Arc::new(Value::Null),
            node: None,
        }
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
        Self {
            components: Arc::new(components),
            node,
        }
        .resolved()
    }

    /// Wraps a raw schema node (tests and callers that hold schemas directly).
    pub fn from_parts(components: Value, node: Value) -> Self {
        Self {
            components: Arc::new(components),
            node: Some(node),
        }
        .resolved()
    }

    fn with(&self, node: Option<Value>) -> Self {
        Self {
            components: self.components.clone(),
            node,
        }
        .resolved()
    }

    /// Follows `$ref` and single-element `allOf` wrappers, keeping extensions set beside them.
    fn resolved(mut self) -> Self {
        for _ in 0..64 {
            let Some(node) = &self.node else { return self };
            let reference = node.get("$ref").and_then(Value::as_str).or_else(|| {
                node.get("allOf")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(|f| f.get("$ref"))
                    .and_then(Value::as_str)
            });
            let Some(reference) = reference else {
                return self;
            };
            let name = reference.rsplit('/').next().unwrap_or("");
            let target = self.components.get(name).cloned();
            let mut merged = target.unwrap_or(Value::Object(Default::default()));
            // Extensions on the referring node win over the target's.
            if let (Some(m), Some(src)) = (merged.as_object_mut(), node.as_object()) {
                for (k, v) in src {
                    if k.starts_with("x-kubernetes-") {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            self.node = Some(merged);
        }
        self
    }

    /// Whether anything is known about this position.
    pub fn is_known(&self) -> bool {
        self.node.is_some()
    }

    fn ext(&self, name: &str) -> Option<&Value> {
        self.node.as_ref().and_then(|n| n.get(name))
    }

    /// The schema of a named property of an object (or of the map values if the object is a
    /// map with `additionalProperties`).
    pub fn field(&self, name: &str) -> Self {
        let Some(node) = &self.node else {
            return Self::untyped();
        };
        if let Some(p) = node.get("properties").and_then(|p| p.get(name)) {
            return self.with(Some(p.clone()));
        }
        self.values()
    }

    /// The schema of the values of a map (`additionalProperties`).
    pub fn values(&self) -> Self {
        let ap = self
            .node
            .as_ref()
            .and_then(|n| n.get("additionalProperties"))
            .filter(|v| v.is_object())
            .cloned();
        self.with(ap)
    }

    /// Whether this node describes a map (an object with `additionalProperties`).
    pub fn is_map(&self) -> bool {
        self.node.as_ref().is_some_and(|n| {
            n.get("additionalProperties").is_some_and(Value::is_object)
                && n.get("properties").is_none()
        })
    }

    /// The schema of the items of a list.
    pub fn items(&self) -> Self {
        self.with(self.ext("items").cloned())
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
