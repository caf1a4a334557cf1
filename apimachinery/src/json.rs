//! Member lookups in small JSON objects.
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
    fn non_objects_have_no_members() {
        for v in [json!(null), json!(1), json!("k0"), json!(["k0"])] {
            assert_eq!(get(&v, "k0"), None);
            let mut v = v;
            assert_eq!(get_mut(&mut v, "k0"), None);
        }
    }
}
