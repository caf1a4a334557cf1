//! Member lookups in small JSON objects, and compact JSON writing.
//!
//! `serde_json`'s map (an `IndexMap` with SipHash) hashes the key on every lookup, which costs
//! more than comparing the key with each member of the small objects API objects are made of
//! (`metadata` and the top level have a handful of members). These lookups scan objects of up
//! to [`SCAN_LIMIT`] members and hash only in larger ones; members are unique, so both find
//! the same member.

use serde_json::{Map, Value};

/// The largest object searched by comparing keys instead of hashing the key.
pub const SCAN_LIMIT: usize = 12;

/// Returns the member `key` of `map`, as `map.get(key)` does.
#[inline]
pub fn map_get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= SCAN_LIMIT {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// Returns the member `key` of `map` mutably, as `map.get_mut(key)` does.
#[inline]
pub fn map_get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() <= SCAN_LIMIT {
        map.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        map.get_mut(key)
    }
}

/// Sets the member `key` of `map` to `value`, as `map.insert(key, value)` does: a present
/// member is replaced in its place (found by [`map_get_mut`]), an absent one is added last.
pub fn map_set(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map_get_mut(map, key) {
        Some(member) => *member = value,
        None => {
            map.insert(key.to_string(), value);
        }
    }
}

/// Removes the member `key` of `map`, as `map.remove(key)` does; the absent member of a
/// small object is found absent by a scan, without hashing the key.
pub fn map_remove(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    if map.len() > SCAN_LIMIT || map_get(map, key).is_some() {
        map.remove(key)
    } else {
        None
    }
}

/// Returns the member `key` of `value` when it is an object, as `value.get(key)` does.
#[inline]
pub fn get<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map_get(map, key),
        _ => None,
    }
}

/// Returns the member `key` of `value` mutably when it is an object, as
/// `value.get_mut(key)` does.
#[inline]
pub fn get_mut<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match value {
        Value::Object(map) => map_get_mut(map, key),
        _ => None,
    }
}

/// Appends the compact JSON text of `value` to `out`: the same bytes as
/// `serde_json::to_writer(out, value)`, with strings scanned for characters to escape eight
/// bytes at a time instead of one.
pub fn write_compact(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Numbers are rare in API objects; serde_json formats them (itoa, ryu).
            serde_json::to_writer(&mut *out, n).expect("a number serializes into a Vec");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_compact(out, v);
            }
            out.push(b'}');
        }
    }
}

/// Whether serde_json escapes the byte: control characters, `"` and `\`.
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether any of the eight bytes of `x` may need escaping (exact: the per-byte tests of
/// "below 0x20" and "equal to" a byte, evaluated on all eight at once).
#[inline]
fn chunk_needs_escape(x: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let below_space = x.wrapping_sub(LO * 0x20) & !x & HI;
    let q = x ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q & HI;
    let b = x ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b & HI;
    (below_space | quote | backslash) != 0
}

/// Whether any byte of `bytes` needs escaping, tested eight bytes at a time.
#[inline]
fn has_escape(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        if chunk_needs_escape(u64::from_le_bytes(chunk.try_into().expect("eight bytes"))) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| needs_escape(b))
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it. Most strings need no
/// escape and are copied whole.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !has_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    // `start..i` is the pending run of bytes written as they are.
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if needs_escape(b) {
            out.extend_from_slice(&bytes[start..i]);
            write_escape(out, b);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends the escape serde_json writes for `b`.
fn write_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        0x08 => out.extend_from_slice(b"\\b"),
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\n' => out.extend_from_slice(b"\\n"),
        0x0c => out.extend_from_slice(b"\\f"),
        b'\r' => out.extend_from_slice(b"\\r"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Objects on both sides of the limit, so both the scan and the hashed lookup are checked.
    fn objects() -> Vec<Value> {
        (0..=SCAN_LIMIT + 3)
            .map(|n| {
                let mut m = Map::new();
                for i in 0..n {
                    m.insert(format!("k{i}"), json!(i));
                }
                Value::Object(m)
            })
            .collect()
    }

    #[test]
    fn lookups_match_serde_json_on_both_paths() {
        for mut obj in objects() {
            let n = obj.as_object().unwrap().len();
            for key in (0..n + 2)
                .map(|i| format!("k{i}"))
                .chain(["".to_string(), "k".into()])
            {
                assert_eq!(get(&obj, &key), obj.get(&key), "{n} members, key {key}");
                let map = obj.as_object().unwrap();
                assert_eq!(map_get(map, &key), map.get(&key));
                let expected = obj.get(&key).cloned();
                assert_eq!(get_mut(&mut obj, &key).map(|v| v.clone()), expected);
                let map = obj.as_object_mut().unwrap();
                assert_eq!(map_get_mut(map, &key).map(|v| v.clone()), expected);
            }
            if let Some(v) = get_mut(&mut obj, "k0") {
                *v = json!("changed");
                assert_eq!(obj.get("k0"), Some(&json!("changed")));
            }
        }
    }

    #[test]
    fn set_and_remove_match_serde_json_on_both_paths() {
        for obj in objects() {
            let n = obj.as_object().unwrap().len();
            for key in (0..n + 2).map(|i| format!("k{i}")) {
                let mut expected = obj.as_object().unwrap().clone();
                let mut got = expected.clone();
                expected.insert(key.clone(), json!("new"));
                map_set(&mut got, &key, json!("new"));
                assert!(expected.iter().eq(got.iter()), "set {key} in {n}");
                let mut expected = obj.as_object().unwrap().clone();
                let mut got = expected.clone();
                assert_eq!(map_remove(&mut got, &key), expected.remove(&key));
                assert!(expected.iter().eq(got.iter()), "remove {key} from {n}");
            }
        }
    }

    #[test]
    fn non_objects_have_no_members() {
        for v in [json!(null), json!(1), json!("k0"), json!(["k0"])] {
            assert_eq!(get(&v, "k0"), None);
            let mut v = v;
            assert_eq!(get_mut(&mut v, "k0"), None);
        }
    }

    fn same_as_serde_json(v: &Value) {
        let mut out = Vec::new();
        write_compact(&mut out, v);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(v).unwrap()
        );
    }

    #[test]
    fn compact_writing_matches_serde_json() {
        // Every ASCII byte and some multi-byte characters, alone and at every position of
        // strings longer than the eight-byte chunks, so both the chunked and the bytewise
        // scans see them.
        let mut specials: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        specials.extend(["é", "€", "😀", "\u{7f}", "\u{80}", "\u{2028}"].map(String::from));
        for c in &specials {
            same_as_serde_json(&json!(c));
            for len in [7, 8, 9, 15, 16, 17, 40] {
                for pos in 0..len {
                    let s: String = (0..len)
                        .map(|i| if i == pos { c.as_str() } else { "a" })
                        .collect();
                    same_as_serde_json(&json!(s));
                    same_as_serde_json(&json!({ s.clone(): s }));
                }
            }
        }
        let all: String = (0u8..0x80).map(char::from).collect::<String>().repeat(3);
        same_as_serde_json(&json!(all));
        same_as_serde_json(&json!(""));
        same_as_serde_json(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"app": "x"}, "managedFields": [
                {"manager": "m", "fieldsV1": {"f:data": {".": {}, "f:x": {}}}}
            ]},
            "data": {"payload": "x\"y\\z\n\t\u{1}"},
            "empty": {}, "list": [], "nested": [[], [{}], [null, true, false]],
            "numbers": [0, 1, -1, u64::MAX, i64::MIN, 0.5, -0.0, 1e300, 1.5e-7, 123456789.125],
        }));
    }
}
