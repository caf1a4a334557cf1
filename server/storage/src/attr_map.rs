//! [`AttrMap`]: a compact, immutable string-to-string map for per-object attributes.
//!
//! The watch cache keeps the labels and selectable fields of every cached object. A
//! `BTreeMap<String, String>` costs a ~560-byte node even for one entry; this map is one sorted
//! boxed slice (no allocation at all when empty) looked up by binary search.

use std::collections::BTreeMap;
use std::fmt;

/// An immutable map from string keys to string values, sorted by key.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct AttrMap {
    entries: Box<[(Box<str>, Box<str>)]>,
}

impl AttrMap {
    /// The empty map (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| self.entries[i].1.as_ref())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }
}

impl<K: Into<Box<str>>, V: Into<Box<str>>> FromIterator<(K, V)> for AttrMap {
    /// Builds the map; when a key repeats, the last value wins (as with repeated map inserts).
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut entries: Vec<(Box<str>, Box<str>)> = iter
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // Stable: equal keys keep their insertion order, so the last one is the newest.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Box<str>, Box<str>)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Self {
            entries: out.into_boxed_slice(),
        }
    }
}

impl From<BTreeMap<String, String>> for AttrMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        map.into_iter().collect()
    }
}

impl fmt::Debug for AttrMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_sorted_entries_and_last_insert_wins() {
        let m: AttrMap = [("b", "2"), ("a", "1"), ("c", "3"), ("a", "x")]
            .into_iter()
            .collect();
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("a"), Some("x"));
        assert_eq!(m.get("b"), Some("2"));
        assert_eq!(m.get("c"), Some("3"));
        assert_eq!(m.get("d"), None);
        assert!(m.contains_key("c"));
        assert!(!m.contains_key(""));
        let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    #[test]
    fn empty_map_has_no_entries() {
        let m = AttrMap::new();
        assert!(m.is_empty());
        assert_eq!(m.get("a"), None);
        assert_eq!(m, AttrMap::from(BTreeMap::new()));
        assert_eq!(format!("{m:?}"), "{}");
    }

    #[test]
    fn converts_from_btreemap() {
        let b: BTreeMap<String, String> = [("k".to_string(), "v".to_string())].into();
        let m = AttrMap::from(b);
        assert_eq!(m.get("k"), Some("v"));
        assert_eq!(format!("{m:?}"), r#"{"k": "v"}"#);
    }
}
