//! The [`storage::interface::ObjectCodec`] of stored objects: storage asks it for the uid,
//! labels and selectable fields of an object in either stored form (protobuf in the `k8s\0`
//! envelope or JSON, see [`super::encoding`]). The metadata's protobuf field number comes
//! from the kind's generated facts.

use std::collections::BTreeMap;

use apimachinery::protobuf::meta::merge_str_nonempty;
use apimachinery::protobuf::{Decoder, ProtoError, ProtoField, WireType};
use apimachinery::runtime::{Kind, Object};
use storage::StorageError;
use storage::interface::{ObjectAttrs, ObjectCodec};

use super::encoding::{self, Envelope, StoredForm};

/// Extracts attributes from the stored objects of one kind.
#[derive(Clone)]
pub struct StoredObjectCodec {
    kind: &'static Kind,
    /// Whether the kind has selectable fields beyond name and namespace.
    extra_fields: bool,
}

impl std::fmt::Debug for StoredObjectCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredObjectCodec")
            .field("kind", &self.kind)
            .field("extra_fields", &self.extra_fields)
            .finish()
    }
}

impl StoredObjectCodec {
    /// The codec of one kind.
    pub fn new(kind: &'static Kind) -> Self {
        Self {
            kind,
            extra_fields: kind.field_labels().len() > 2,
        }
    }

    /// Attributes of a decoded object.
    pub fn attrs_of(&self, object: &dyn Object) -> ObjectAttrs {
        let meta = object.metadata();
        ObjectAttrs {
            uid: meta.uid.clone().unwrap_or_default(),
            labels: meta
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            fields: self
                .kind
                .selectable_fields(object)
                .into_iter()
                .map(|(k, v)| (k, v.into_boxed_str()))
                .collect(),
        }
    }

    /// Attributes of an enveloped protobuf object: from its metadata alone when the kind has
    /// no other selectable fields (the metadata field number of the storage version holds for
    /// every version, as in Kubernetes' types), else from the whole decoded object.
    fn protobuf_attrs(&self, envelope: &Envelope<'_>) -> storage::Result<ObjectAttrs> {
        let version = apimachinery::GroupVersion::parse(envelope.api_version).version;
        let codec = self.kind.codec(&version).unwrap_or(self.kind.storage());
        if !self.extra_fields
            && let Some(field) = codec.metadata_field()
        {
            let meta = object_meta(envelope.raw, field).map_err(StorageError::internal)?;
            let name = meta.name.unwrap_or_default();
            let namespace = meta.namespace.unwrap_or_default();
            return Ok(ObjectAttrs {
                uid: meta.uid.unwrap_or_default(),
                labels: meta.labels.into_iter().collect(),
                fields: [("metadata.name", name), ("metadata.namespace", namespace)]
                    .into_iter()
                    .collect(),
            });
        }
        let object = codec
            .decode_protobuf(envelope.raw)
            .map_err(StorageError::internal)?;
        Ok(self.attrs_of(&*self.storage_form(object)?))
    }

    /// The object in the storage version, whose selectable fields the kind reads.
    fn storage_form(&self, object: Box<dyn Object>) -> storage::Result<Box<dyn Object>> {
        let version = self.kind.storage_info().version;
        self.kind
            .convert(object, version)
            .map_err(StorageError::internal)
    }
}

impl ObjectCodec for StoredObjectCodec {
    fn attrs(&self, data: &[u8]) -> storage::Result<ObjectAttrs> {
        match encoding::recognize(data).map_err(StorageError::internal)? {
            StoredForm::Protobuf(envelope) => self.protobuf_attrs(&envelope),
            StoredForm::Json(json) => {
                let version = apimachinery::GroupVersion::parse(
                    &serde_json::from_slice::<TypeMeta>(json)
                        .map(|t| t.api_version)
                        .unwrap_or_default(),
                )
                .version;
                let codec = self.kind.codec(&version).unwrap_or(self.kind.storage());
                let object = codec
                    .decode_json(json)
                    .map_err(StorageError::internal)?
                    .object;
                Ok(self.attrs_of(&*self.storage_form(object)?))
            }
        }
    }
}

/// The `apiVersion` of a stored JSON object.
#[derive(serde::Deserialize)]
struct TypeMeta {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
}

/// The parts of an `ObjectMeta` that attributes need.
#[derive(Debug, Default, PartialEq)]
struct MetaAttrs {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    labels: BTreeMap<String, String>,
}

/// Decodes the name, namespace, uid and labels of the `ObjectMeta` in field `field` of a
/// message (the last occurrence wins, as protobuf merges repeated message fields; an absent
/// field is empty metadata). They are merged as `ObjectMeta` merges them; the other metadata
/// fields (managedFields above all, whose JSON would be parsed) are skipped.
fn object_meta(raw: &[u8], field: u32) -> Result<MetaAttrs, ProtoError> {
    let mut meta = MetaAttrs::default();
    let mut dec = Decoder::new(raw);
    while let Some((number, wire)) = dec.key()? {
        if number == field && wire == WireType::Len {
            let mut inner = Decoder::new(dec.len_delimited()?);
            while let Some((number, wire)) = inner.key()? {
                match number {
                    1 => merge_str_nonempty(&mut meta.name, number, wire, &mut inner)?,
                    3 => merge_str_nonempty(&mut meta.namespace, number, wire, &mut inner)?,
                    5 => merge_str_nonempty(&mut meta.uid, number, wire, &mut inner)?,
                    11 => meta.labels.merge_field_value(number, wire, &mut inner)?,
                    _ => inner.skip(wire)?,
                }
            }
        } else {
            dec.skip(wire)?;
        }
    }
    Ok(meta)
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
pub(crate) fn top_level_metadata_open_brace(data: &[u8]) -> Option<usize> {
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
    use apimachinery::protobuf::ProtoMessage as _;

    /// The full `ObjectMeta` decode of field `field` (last occurrence merged over earlier).
    fn full_meta(raw: &[u8], field: u32) -> MetaAttrs {
        let mut meta = apimachinery::meta::ObjectMeta::default();
        let mut dec = Decoder::new(raw);
        while let Some((number, wire)) = dec.key().unwrap() {
            if number == field && wire == WireType::Len {
                Decoder::new(dec.len_delimited().unwrap())
                    .merge_all(&mut meta)
                    .unwrap();
            } else {
                dec.skip(wire).unwrap();
            }
        }
        MetaAttrs {
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            labels: meta.labels,
        }
    }

    #[test]
    fn object_meta_reads_what_the_full_decode_reads() {
        let meta = |v: serde_json::Value| {
            serde_json::from_value::<apimachinery::meta::ObjectMeta>(v)
                .unwrap()
                .encode_to_vec()
        };
        let first = meta(serde_json::json!({
            "name": "a", "namespace": "ns", "uid": "u-1",
            "labels": {"app": "x", "tier": "web"},
            "annotations": {"k": "v"},
            "finalizers": ["f/x"],
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}],
        }));
        let second = meta(serde_json::json!({"name": "b", "labels": {"app": "y"}}));
        let mut raw = Vec::new();
        apimachinery::protobuf::put_len_delimited(&mut raw, 1, &first);
        apimachinery::protobuf::put_len_delimited(&mut raw, 2, b"data");
        let once = raw.clone();
        apimachinery::protobuf::put_len_delimited(&mut raw, 1, &second);
        for raw in [&once, &raw, &Vec::new()] {
            assert_eq!(object_meta(raw, 1).unwrap(), full_meta(raw, 1));
        }
        let merged = object_meta(&raw, 1).unwrap();
        assert_eq!(merged.name.as_deref(), Some("b"));
        // The second metadata writes an empty uid, which unsets it; labels merge.
        assert_eq!(merged.uid, None);
        assert_eq!(merged.labels.len(), 2);
        assert_eq!(object_meta(&once, 1).unwrap().uid.as_deref(), Some("u-1"));
    }

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
