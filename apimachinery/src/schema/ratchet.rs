//! Correlation of an update's new and old values node by node (Kubernetes'
//! `common.CorrelatedObject`), for validation ratcheting: object properties and map entries by
//! key, list items only in `x-kubernetes-list-type: map` lists (by their keys).

use serde_json::Value;

use super::props::Props;

/// A new value, the old value it correlates with, and their schema.
#[derive(Clone, Copy)]
pub(crate) struct Correlated<'a> {
    pub new: &'a Value,
    pub old: &'a Value,
    pub schema: &'a Props,
}

/// The composite key of a map-list item: its key fields' scalar values (`None` when one is
/// missing or not a scalar).
fn item_key<'v>(item: &'v Value, keys: &[String]) -> Option<Vec<&'v Value>> {
    let m = item.as_object()?;
    keys.iter()
        .map(|k| {
            m.get(k)
                .filter(|v| !v.is_array() && !v.is_object() && !v.is_null())
        })
        .collect()
}

impl<'a> Correlated<'a> {
    /// The correlation of property or map entry `k`; none for `kind` and `apiVersion` at the
    /// root, for keys missing on either side, and for keys without a schema.
    pub(crate) fn key(&self, k: &str, at_root: bool) -> Option<Correlated<'a>> {
        if at_root && (k == "kind" || k == "apiVersion") {
            return None;
        }
        let (new, old) = (self.new.as_object()?.get(k)?, self.old.as_object()?.get(k)?);
        let schema = self
            .schema
            .properties
            .get(k)
            .or_else(|| self.schema.additional_schema())?;
        Some(Correlated { new, old, schema })
    }

    /// Whether old items are matched to new ones (by key, in a map list).
    fn is_map_list(&self) -> bool {
        self.schema.list_type.as_deref() == Some("map")
    }

    /// The correlation of item `i`: the first old item with the same keys, in a map list.
    pub(crate) fn index(&self, i: usize) -> Option<Correlated<'a>> {
        let new = self.new.as_array()?.get(i)?;
        let old_items = self.old.as_array()?;
        if !self.is_map_list() || self.schema.type_ != "array" {
            return None;
        }
        let keys = self.schema.list_map_keys.as_deref().unwrap_or_default();
        if keys.is_empty() {
            return None;
        }
        let want = item_key(new, keys)?;
        let old = old_items
            .iter()
            .find(|o| item_key(o, keys).is_some_and(|k| k == want))?;
        Some(Correlated {
            new,
            old,
            schema: self.schema.item_schema()?,
        })
    }

    /// Whether the new value equals the old one, comparing map lists by key and objects key
    /// by key through their schemas (Kubernetes' `CachedDeepEqual`).
    pub(crate) fn deep_equal(&self) -> bool {
        match (self.new, self.old) {
            (Value::Null, Value::Null) => true,
            (Value::Null, _) | (_, Value::Null) => false,
            (Value::Array(n), Value::Array(o)) => {
                if n.len() != o.len() {
                    return false;
                }
                (0..n.len()).all(|i| match self.index(i) {
                    Some(c) => c.deep_equal(),
                    None if !self.is_map_list() => n == o,
                    None => false,
                })
            }
            (Value::Object(n), Value::Object(o)) => {
                n.len() == o.len()
                    && n.keys()
                        .all(|k| self.key(k, false).is_some_and(|c| c.deep_equal()))
            }
            (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => {
                false
            }
            (n, o) => n == o,
        }
    }
}
