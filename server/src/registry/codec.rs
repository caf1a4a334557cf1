//! The [`storage::interface::ObjectCodec`] of stored objects: objects are stored as the JSON of
//! their storage version, and storage asks this codec for uid, labels and selectable fields.

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
        };
        let fields = [
            ("metadata.name", s("name").into()),
            ("metadata.namespace", s("namespace").into()),
        ]
        .into_iter()
        .chain(self.field_selectors.iter().map(|f| {
            (
                f.as_str(),
                apimachinery::selectors::field_value(object, f).into_boxed_str(),
            )
        }))
        .collect();
        // Labels with non-string values are skipped, as `selectors::labels_of` does.
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                    .collect()
            })
            .unwrap_or_default();
        ObjectAttrs {
            uid: s("uid").to_string(),
            labels,
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

/// Inserts `"resourceVersion":"<rv>"` into the top-level `metadata` of a stored JSON object
/// without parsing it (stored objects never carry a resourceVersion). Returns `None` when the
/// bytes have no top-level `metadata` object, so callers can fall back to decoding.
pub fn splice_resource_version(data: &[u8], resource_version: i64) -> Option<Vec<u8>> {
    let pos = top_level_metadata_open_brace(data)?;
    let insert = format!("\"resourceVersion\":\"{resource_version}\"");
    let empty = data[pos + 1..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
    let mut out = Vec::with_capacity(data.len() + insert.len() + 1);
    out.extend_from_slice(&data[..=pos]);
    out.extend_from_slice(insert.as_bytes());
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&data[pos + 1..]);
    Some(out)
}

/// Finds the `{` that opens the value of the top-level `"metadata"` key.
fn top_level_metadata_open_brace(data: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut key_start: Option<usize> = None;
    let mut last_key: Option<(usize, usize)> = None;
    while i < data.len() {
        match data[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < data.len() && data[i] != b'"' {
                    if data[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if depth == 1 {
                    key_start = Some(start);
                    last_key = Some((start, i));
                }
            }
            b':' if depth == 1 => {
                if let (Some(_), Some((s, e))) = (key_start.take(), last_key)
                    && &data[s..e] == b"metadata"
                {
                    let mut j = i + 1;
                    while j < data.len() && data[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    return (data.get(j) == Some(&b'{')).then_some(j);
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => key_start = None,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_into_top_level_metadata() {
        let data = br#"{"apiVersion":"v1","kind":"X","spec":{"metadata":{}},"metadata":{"name":"a\"metadata"}}"#;
        let out = splice_resource_version(data, 42).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["metadata"]["name"], "a\"metadata");
        assert!(v["spec"]["metadata"].as_object().unwrap().is_empty());
        let out = splice_resource_version(br#"{"metadata":{}}"#, 7).unwrap();
        assert_eq!(out, br#"{"metadata":{"resourceVersion":"7"}}"#);
        assert!(splice_resource_version(br#"{"a":1}"#, 1).is_none());
    }
}
