//! The [`storage::interface::ObjectCodec`] of stored objects: objects are stored as the JSON of
//! their storage version, and storage asks this codec for uid, labels and selectable fields.

use std::collections::BTreeMap;

use serde_json::Value;
use storage::StorageError;
use storage::interface::{ObjectAttrs, ObjectCodec};

/// Extracts attributes from stored JSON objects of one kind.
#[derive(Clone, Debug)]
pub struct JsonObjectCodec {
    /// Extra selectable fields of the kind (dotted paths without the leading dot).
    pub field_selectors: Vec<String>,
}

impl JsonObjectCodec {
    /// Attributes of an already decoded object.
    pub fn attrs_of(&self, object: &Value) -> ObjectAttrs {
        let meta = object.get("metadata");
        let s = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut fields = BTreeMap::new();
        fields.insert("metadata.name".to_string(), s("name"));
        fields.insert("metadata.namespace".to_string(), s("namespace"));
        for f in &self.field_selectors {
            fields.insert(f.clone(), apimachinery::selectors::field_value(object, f));
        }
        ObjectAttrs {
            uid: s("uid"),
            labels: apimachinery::selectors::labels_of(object),
            fields,
        }
    }
}

impl ObjectCodec for JsonObjectCodec {
    fn attrs(&self, data: &[u8]) -> storage::Result<ObjectAttrs> {
        let object: Value = serde_json::from_slice(data).map_err(StorageError::internal)?;
        Ok(self.attrs_of(&object))
    }
}
