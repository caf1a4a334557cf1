//! Faster JSON of objects stored as protobuf: `metadata.managedFields` is transcoded straight
//! from its protobuf entries, and only the rest of the object goes through the kind's typed
//! form.
//!
//! The typed path decodes every `fieldsV1` (a JSON document inside the protobuf) into a
//! `serde_json::Value` only to write it out again, which is most of the cost of serving a
//! typical object. Here the message is split: the entries of `managedFields` (`ObjectMeta`
//! field 17) are taken out of the metadata, the rest is transcoded by
//! [`apimachinery::KindOps::protobuf_to_json`], and the entries are written as JSON (with
//! `fieldsV1` copied verbatim after a syntax check) at the end of `metadata`, where
//! `ObjectMeta`'s JSON has them. Anything unexpected makes these functions return `None`, and
//! the caller uses the typed path for the whole object.

use std::io::Write;

use apimachinery::protobuf::wire::{Decoder, WireType, put_len_delimited};

/// `ObjectMeta.managedFields`.
const MANAGED_FIELDS: u32 = 17;

/// An object's message with the managedFields entries taken out of its metadata.
#[derive(Debug)]
pub struct Split<'a> {
    /// The message without the entries.
    pub stripped: Vec<u8>,
    /// Each entry's `ManagedFieldsEntry` message.
    pub entries: Vec<&'a [u8]>,
}

/// One field: its number, wire type and (for length-delimited fields) payload.
struct Field<'a> {
    number: u32,
    wire: WireType,
    payload: &'a [u8],
}

/// Reads the next field of a message that is not yet fully read; `None` when it is malformed.
fn field<'a>(dec: &mut Decoder<'a>) -> Option<Field<'a>> {
    let (number, wire) = dec.key().ok()??;
    let payload = match wire {
        WireType::Len => dec.len_delimited().ok()?,
        other => {
            dec.skip(other).ok()?;
            &[]
        }
    };
    Some(Field {
        number,
        wire,
        payload,
    })
}

/// Takes the managedFields entries out of the metadata (field `metadata_field`) of `raw`.
/// `None` when there are none, or the message is not what this expects.
pub fn split_managed_fields(raw: &[u8], metadata_field: u32) -> Option<Split<'_>> {
    let mut dec = Decoder::new(raw);
    while !dec.is_empty() {
        let start = dec.position();
        let f = field(&mut dec)?;
        if f.number != metadata_field || f.wire != WireType::Len {
            continue;
        }
        let end = dec.position();
        let meta = f.payload;
        let mut entries = Vec::new();
        let mut kept = Vec::with_capacity(meta.len());
        let mut mdec = Decoder::new(meta);
        while !mdec.is_empty() {
            let mstart = mdec.position();
            let m = field(&mut mdec)?;
            if m.number == MANAGED_FIELDS && m.wire == WireType::Len {
                entries.push(m.payload);
            } else {
                kept.extend_from_slice(&meta[mstart..mdec.position()]);
            }
        }
        if entries.is_empty() {
            return None;
        }
        // A second metadata field would be merged into the first: leave that to the typed path.
        while !dec.is_empty() {
            if field(&mut dec)?.number == metadata_field {
                return None;
            }
        }
        let mut stripped = Vec::with_capacity(raw.len());
        stripped.extend_from_slice(&raw[..start]);
        put_len_delimited(&mut stripped, metadata_field, &kept);
        stripped.extend_from_slice(&raw[end..]);
        return Some(Split { stripped, entries });
    }
    None
}

/// The fields of one `ManagedFieldsEntry`, borrowed from its message (the last occurrence of
/// a field wins; empty strings are absent, as the typed decoder reads them).
#[derive(Default)]
struct Entry<'a> {
    manager: Option<&'a str>,
    operation: Option<&'a str>,
    api_version: Option<&'a str>,
    time: Option<i64>,
    fields_type: Option<&'a str>,
    fields_v1: Option<&'a [u8]>,
    subresource: Option<&'a str>,
}

/// A UTF-8 string field: `Some(None)` when empty, `None` when not UTF-8.
fn nonempty(bytes: &[u8]) -> Option<Option<&str>> {
    let s = std::str::from_utf8(bytes).ok()?;
    Some((!s.is_empty()).then_some(s))
}

/// `Timestamp { seconds = 1, nanos = 2 }`: the seconds, `None` for an empty message.
fn timestamp_seconds(bytes: &[u8]) -> Option<Option<i64>> {
    if bytes.is_empty() {
        return Some(None);
    }
    let mut seconds = 0i64;
    let mut dec = Decoder::new(bytes);
    while let Some((number, wire)) = dec.key().ok()? {
        match (number, wire) {
            (1, WireType::Varint) => seconds = dec.varint().ok()? as i64,
            (_, WireType::Varint) => {
                dec.varint().ok()?;
            }
            _ => return None,
        }
    }
    Some(Some(seconds))
}

fn parse_entry(bytes: &[u8]) -> Option<Entry<'_>> {
    let mut e = Entry::default();
    let mut dec = Decoder::new(bytes);
    while !dec.is_empty() {
        let f = field(&mut dec)?;
        if f.wire != WireType::Len {
            continue;
        }
        match f.number {
            1 => e.manager = nonempty(f.payload)?,
            2 => e.operation = nonempty(f.payload)?,
            3 => e.api_version = nonempty(f.payload)?,
            4 => e.time = timestamp_seconds(f.payload)?,
            6 => e.fields_type = nonempty(f.payload)?,
            7 => {
                // `FieldsV1 { raw = 1 }`.
                let mut raw = None;
                let mut inner = Decoder::new(f.payload);
                while !inner.is_empty() {
                    let g = field(&mut inner)?;
                    if g.number == 1 && g.wire == WireType::Len {
                        raw = Some(g.payload);
                    }
                }
                e.fields_v1 = Some(raw?);
            }
            8 => e.subresource = nonempty(f.payload)?,
            _ => {}
        }
    }
    Some(e)
}

/// Writes the entries as the JSON array `ObjectMeta` serializes for them.
pub fn managed_fields_json(entries: &[&[u8]], out: &mut Vec<u8>) -> Option<()> {
    out.push(b'[');
    for (i, bytes) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let e = parse_entry(bytes)?;
        out.push(b'{');
        let mut first = true;
        let mut member = |out: &mut Vec<u8>, name: &str| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        };
        for (name, value) in [
            ("manager", e.manager),
            ("operation", e.operation),
            ("apiVersion", e.api_version),
        ] {
            if let Some(v) = value {
                member(out, name);
                serde_json::to_writer(&mut *out, v).ok()?;
            }
        }
        if let Some(seconds) = e.time {
            member(out, "time");
            let time = apimachinery::meta::Time::from_timestamp(seconds);
            write!(out, "\"{}\"", time.to_rfc3339()).ok()?;
        }
        if let Some(v) = e.fields_type {
            member(out, "fieldsType");
            serde_json::to_writer(&mut *out, v).ok()?;
        }
        if let Some(raw) = e.fields_v1 {
            // The typed path parses it as JSON; invalid JSON is left to it to report.
            serde_json::from_slice::<serde::de::IgnoredAny>(raw).ok()?;
            member(out, "fieldsV1");
            out.extend_from_slice(raw);
        }
        if let Some(v) = e.subresource {
            member(out, "subresource");
            serde_json::to_writer(&mut *out, v).ok()?;
        }
        out.push(b'}');
    }
    out.push(b']');
    Some(())
}

/// Appends `"managedFields":<array>` as the last member of the top-level `metadata` object of
/// `json`.
pub fn append_to_metadata(json: &[u8], array: &[u8]) -> Option<Vec<u8>> {
    let open = super::codec::top_level_metadata_open_brace(json)?;
    let close = matching_close(json, open)?;
    let empty = json[open + 1..close].iter().all(u8::is_ascii_whitespace);
    let mut out = Vec::with_capacity(json.len() + array.len() + 20);
    out.extend_from_slice(&json[..close]);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(b"\"managedFields\":");
    out.extend_from_slice(array);
    out.extend_from_slice(&json[close..]);
    Some(out)
}

/// The index of the `}` closing the object opened at `open`.
fn matching_close(json: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < json.len() {
        match json[i] {
            b'"' => {
                i += 1;
                while i < json.len() && json[i] != b'"' {
                    if json[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (json[i] == b'}').then_some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The typed path and the split path give the same bytes.
    fn check(group: &str, kind: &str, object: Value) {
        let scheme = generated::scheme();
        let ops = scheme
            .by_kind(group, kind)
            .unwrap_or_else(|| panic!("no {kind}"));
        let version = ops.storage_version().version;
        let raw = ops
            .encode_protobuf(version, &object)
            .unwrap_or_else(|e| panic!("{e}"));
        let typed = ops
            .protobuf_to_json(version, &raw, "42")
            .unwrap_or_else(|e| panic!("{e}"));
        let split = split_managed_fields(&raw, 1).unwrap_or_else(|| panic!("no managedFields"));
        let rest = ops
            .protobuf_to_json(version, &split.stripped, "42")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut array = Vec::new();
        managed_fields_json(&split.entries, &mut array).unwrap_or_else(|| panic!("entries"));
        let fast = append_to_metadata(&rest, &array).unwrap_or_else(|| panic!("append"));
        assert_eq!(
            String::from_utf8_lossy(&fast),
            String::from_utf8_lossy(&typed)
        );
    }

    #[test]
    fn same_json_as_the_typed_path() {
        check(
            "",
            "ConfigMap",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a\"b", "namespace": "ns", "uid": "u-1",
                    "creationTimestamp": "2026-11-30T12:00:00Z", "labels": {"app": "x"},
                    "annotations": {"k": "v\n"},
                    "managedFields": [
                        {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                         "time": "2026-11-30T12:00:01Z", "fieldsType": "FieldsV1",
                         "fieldsV1": {"f:data": {".": {}, "f:k\"q": {}}}},
                        {"manager": "ctl", "operation": "Update", "apiVersion": "v1",
                         "fieldsType": "FieldsV1", "fieldsV1": {}, "subresource": "status"},
                        {"manager": "bare"}]},
                "data": {"k": "é\u{1}"}}),
        );
        check(
            "example.dev",
            "Widget",
            json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "ns", "generation": 3,
                    "managedFields": [{"manager": "m", "operation": "Update",
                        "time": "2026-11-30T12:00:01Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
                "spec": {"replicas": 2, "color": "blue"}, "status": {"replicas": 1}}),
        );
    }

    #[test]
    fn objects_without_managed_fields_are_not_split() {
        let scheme = generated::scheme();
        let ops = scheme
            .by_kind("", "ConfigMap")
            .unwrap_or_else(|| panic!("no ConfigMap"));
        let raw = ops
            .encode_protobuf(
                "v1",
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(split_managed_fields(&raw, 1).is_none());
        assert!(split_managed_fields(b"\xff", 1).is_none());
    }

    #[test]
    fn appends_as_the_last_metadata_member() {
        let out = append_to_metadata(br#"{"a":{"metadata":{}},"metadata":{"n":"}"}}"#, b"[]")
            .unwrap_or_else(|| panic!("append"));
        assert_eq!(
            out,
            br#"{"a":{"metadata":{}},"metadata":{"n":"}","managedFields":[]}}"#
        );
        let out =
            append_to_metadata(br#"{"metadata":{}}"#, b"[1]").unwrap_or_else(|| panic!("append"));
        assert_eq!(out, br#"{"metadata":{"managedFields":[1]}}"#);
    }
}
