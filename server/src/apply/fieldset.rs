//! Field sets: the paths of the fields an object sets, encoded as `FieldsV1`
//! (`{"f:spec":{"f:replicas":{}}}`, `k:{"name":"a"}` for map-list items, `v:"x"` for set
//! items, `.` marking a node that is itself a member).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use apimachinery::meta::FieldsV1;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::map::Entry;
use serde_json::{Map, Value};

use crate::patch::SchemaNode;

/// One path: its `FieldsV1` elements, such as `["f:spec", "f:replicas"]`.
pub type Path = Vec<String>;

/// A set of field paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet(pub BTreeSet<Path>);

/// Which top-level parts of an object a field set covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything except identity metadata (a kind without a status subresource).
    All,
    /// Everything except identity metadata and `status` (the main resource of a kind with a
    /// status subresource).
    MainResource,
    /// Only `status` (the `/status` subresource).
    Status,
}

/// Metadata members that are never owned.
const SYSTEM_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
    "generateName",
];

impl FieldSet {
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fields an object sets, within `scope`.
    pub fn from_object(object: &Value, schema: &SchemaNode, scope: Scope) -> Self {
        let mut out = BTreeSet::new();
        if let Some(map) = object.as_object() {
            for (k, v) in map {
                if !is_owned_top_level(k, scope) {
                    continue;
                }
                let mut path = vec![field_element(k)];
                let field_schema = schema.field(k);
                if k == "metadata" {
                    if let Some(meta) = v.as_object() {
                        collect_metadata(meta, &field_schema, &mut path, &mut out);
                    }
                    continue;
                }
                collect(v, &field_schema, &mut path, &mut out);
            }
        }
        Self(out)
    }

    /// Parses a `fieldsV1` value.
    pub fn from_fields_v1(value: &Value) -> Self {
        let mut out = BTreeSet::new();
        fn walk(node: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
            let Some(map) = node.as_object() else { return };
            for (k, child) in map {
                if k == "." {
                    continue;
                }
                prefix.push(k.clone());
                let child_map = child.as_object();
                if child_map.is_none_or(|m| m.is_empty() || m.contains_key(".")) {
                    out.insert(prefix.clone());
                }
                walk(child, prefix, out);
                prefix.pop();
            }
        }
        walk(value, &mut Vec::new(), &mut out);
        Self(out)
    }

    /// Encodes the set as `fieldsV1`: one object per path element, keys in sorted order, and
    /// `"."` first in a node that is itself a member and has members below it.
    pub fn to_fields_v1(&self) -> Value {
        let mut root = Map::new();
        let mut root_member = false;
        // Paths are sorted, so a member comes before the paths below it and the children of
        // every node are inserted in sorted order.
        for path in &self.0 {
            if path.is_empty() {
                root_member = true;
                continue;
            }
            if root_member && root.is_empty() {
                root.insert(".".into(), Value::Object(Map::new()));
            }
            let mut node = &mut root;
            let last = path.len() - 1;
            for (i, el) in path.iter().enumerate() {
                // One lookup: the entry tells whether the node existed.
                let entry = node.entry(el.clone());
                let existed = matches!(entry, Entry::Occupied(_));
                let Value::Object(child) = entry.or_insert_with(|| Value::Object(Map::new()))
                else {
                    break;
                };
                // An existing empty node is a member: it gains `"."` before its first child.
                if existed && i < last && child.is_empty() {
                    child.insert(".".into(), Value::Object(Map::new()));
                }
                node = child;
            }
        }
        Value::Object(root)
    }

    /// The set as a typed `fieldsV1`: the text of [`Self::to_fields_v1`], written straight
    /// from the sorted paths (no tree of maps is built, and the text is not parsed again: on a
    /// ConfigMap create, ≈2k instructions less than writing the text and parsing it).
    pub fn to_typed_fields_v1(&self) -> FieldsV1 {
        let paths: Vec<&Path> = self.0.iter().collect();
        FieldsV1::from_serialize(&FieldsV1Node {
            paths: &paths,
            depth: 0,
        })
        .expect("a field set always serializes")
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// Paths in `self` but not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &Path) -> bool {
        self.0.contains(path)
    }

    /// Whether any member lies at or under `path`. Paths under `path` sort right after it,
    /// so one ordered lookup answers.
    pub fn owns_under(&self, path: &Path) -> bool {
        self.0
            .range::<Path, _>(path..)
            .next()
            .is_some_and(|p| p.starts_with(path))
    }
}

/// One node of a field set's `fieldsV1` tree, serialized from the sorted paths under it: all
/// of `paths` share their first `depth` elements (the node's path), and a path that is the
/// node's own comes first.
struct FieldsV1Node<'s, 'a> {
    paths: &'s [&'a Path],
    depth: usize,
}

impl Serialize for FieldsV1Node<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = self.depth;
        let (member, mut below) = match self.paths.split_first() {
            Some((first, rest)) if first.len() == d => (true, rest),
            _ => (false, self.paths),
        };
        let mut map = serializer.serialize_map(None)?;
        // A node that is itself a member and has members below it is marked by `"."` first.
        if member && !below.is_empty() {
            map.serialize_entry(".", &EMPTY)?;
        }
        // The paths below come grouped by their next element, in sorted order.
        while let Some(first) = below.first() {
            let el = &first[d];
            let n = below.iter().take_while(|p| p[d] == *el).count();
            let (group, rest) = below.split_at(n);
            map.serialize_entry(
                el,
                &FieldsV1Node {
                    paths: group,
                    depth: d + 1,
                },
            )?;
            below = rest;
        }
        map.end()
    }
}

/// The empty node `{}`.
const EMPTY: FieldsV1Node<'static, 'static> = FieldsV1Node {
    paths: &[],
    depth: 0,
};

/// The key of a map-list item: `k:{"a":"x","b":"y"}` with keys in sorted order.
pub fn item_key(item: &Value, keys: &[String]) -> Option<String> {
    let mut m = BTreeMap::new();
    for k in keys {
        m.insert(k.clone(), item.get(k)?.clone());
    }
    Some(format!("k:{}", serde_json::to_string(&m).ok()?))
}

/// Whether a top-level member of an object is owned within `scope` (`apiVersion` and `kind`
/// never are; `metadata` is not itself, its members may be).
pub(super) fn is_owned_top_level(key: &str, scope: Scope) -> bool {
    let in_scope = match scope {
        Scope::All => true,
        Scope::MainResource => key != "status",
        Scope::Status => key == "status",
    };
    in_scope && key != "apiVersion" && key != "kind"
}

/// Whether a member of `metadata` is owned (the system ones never are).
pub(super) fn is_owned_metadata(key: &str) -> bool {
    !SYSTEM_METADATA.contains(&key)
}

/// Adds the fields under the owned members of `metadata` (at `path`, which is restored before
/// returning) to `out`.
pub(super) fn collect_metadata(
    meta: &Map<String, Value>,
    schema: &SchemaNode,
    path: &mut Path,
    out: &mut BTreeSet<Path>,
) {
    for (k, v) in meta {
        if is_owned_metadata(k) {
            path.push(field_element(k));
            collect(v, &schema.field(k), path, out);
            path.pop();
        }
    }
}

/// The path element of a field: `f:<name>` (without `format!`'s machinery).
pub(super) fn field_element(name: &str) -> String {
    let mut el = String::with_capacity(name.len() + 2);
    el.push_str("f:");
    el.push_str(name);
    el
}

/// Adds the fields under `value` (at `path`, which is restored before returning) to `out`.
pub(super) fn collect(
    value: &Value,
    schema: &SchemaNode,
    path: &mut Path,
    out: &mut BTreeSet<Path>,
) {
    match value {
        Value::Object(map) if !schema.map_atomic() && !map.is_empty() => {
            for (k, v) in map {
                path.push(field_element(k));
                collect(v, &schema.field(k), path, out);
                path.pop();
            }
        }
        Value::Array(items) => match schema.list_type().as_str() {
            "map" => {
                let keys = schema.list_map_keys();
                for item in items {
                    match item_key(item, &keys) {
                        Some(k) => {
                            path.push(k);
                            out.insert(path.clone());
                            collect(item, &schema.items(), path, out);
                            path.pop();
                        }
                        None => {
                            out.insert(path.clone());
                        }
                    }
                }
            }
            "set" => {
                for item in items {
                    let mut p = path.clone();
                    p.push(format!(
                        "v:{}",
                        serde_json::to_string(item).unwrap_or_default()
                    ));
                    out.insert(p);
                }
            }
            _ => {
                out.insert(path.clone());
            }
        },
        _ => {
            out.insert(path.clone());
        }
    }
}

/// Renders a path as Kubernetes prints it: `.spec.replicas`, `.spec.items[name="a"]`,
/// `.metadata.finalizers[="x"]`.
pub fn path_string(path: &Path) -> String {
    let mut s = String::new();
    for el in path {
        if let Some(f) = el.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let parts: Vec<String> = serde_json::from_str::<BTreeMap<String, Value>>(k)
                .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                .unwrap_or_default();
            s.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        } else if let Some(i) = el.strip_prefix("i:") {
            s.push_str(&format!("[{i}]"));
        }
    }
    s
}

/// Reads values at paths of one object, finding map-list and set-list items through an index
/// of each list (built on its first lookup) instead of scanning it: looking up every path of an
/// object with long lists costs linear time, where [`value_at`] per path costs quadratic time.
#[derive(Default)]
pub struct Finder<'a> {
    /// Per list (by address) and element kind (`k:` with its key names, or `v:`): the
    /// position of the first item of each canonical element.
    lists: HashMap<(usize, Vec<String>), HashMap<String, usize>>,
    _object: std::marker::PhantomData<&'a Value>,
}

impl<'a> Finder<'a> {
    /// Reads the value at a path of `object` (which must be the same object on every call).
    pub fn value_at(&mut self, object: &'a Value, path: &[String]) -> Option<&'a Value> {
        let mut cur = object;
        for el in path {
            cur = self.step(cur, el)?;
        }
        Some(cur)
    }

    fn step(&mut self, cur: &'a Value, el: &str) -> Option<&'a Value> {
        if let Some(f) = el.strip_prefix("f:") {
            return cur.get(f);
        }
        let items = cur.as_array()?;
        let addr = std::ptr::from_ref(items) as usize;
        let (names, canonical) = if let Some(k) = el.strip_prefix("k:") {
            let keys: BTreeMap<String, Value> = serde_json::from_str(k).ok()?;
            let names: Vec<String> = keys.keys().cloned().collect();
            (names, format!("k:{}", serde_json::to_string(&keys).ok()?))
        } else if let Some(v) = el.strip_prefix("v:") {
            let v: Value = serde_json::from_str(v).ok()?;
            (Vec::new(), format!("v:{}", serde_json::to_string(&v).ok()?))
        } else if let Some(i) = el.strip_prefix("i:") {
            return items.get(i.parse::<usize>().ok()?);
        } else {
            return None;
        };
        let set = canonical.starts_with("v:");
        let index = self.lists.entry((addr, names.clone())).or_insert_with(|| {
            let mut index = HashMap::new();
            for (i, item) in items.iter().enumerate() {
                let key = if set {
                    serde_json::to_string(item).ok().map(|v| format!("v:{v}"))
                } else {
                    item_key(item, &names)
                };
                if let Some(key) = key {
                    index.entry(key).or_insert(i);
                }
            }
            index
        });
        index.get(&canonical).map(|&i| &items[i])
    }
}

/// Reads the value at a path.
pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = object;
    for el in path {
        cur = step(cur, el)?;
    }
    Some(cur)
}

fn step<'a>(cur: &'a Value, el: &str) -> Option<&'a Value> {
    if let Some(f) = el.strip_prefix("f:") {
        return cur.get(f);
    }
    let items = cur.as_array()?;
    if let Some(k) = el.strip_prefix("k:") {
        let keys: BTreeMap<String, Value> = serde_json::from_str(k).ok()?;
        return items
            .iter()
            .find(|i| keys.iter().all(|(kk, kv)| i.get(kk) == Some(kv)));
    }
    if let Some(v) = el.strip_prefix("v:") {
        let v: Value = serde_json::from_str(v).ok()?;
        return items.iter().find(|i| **i == v);
    }
    if let Some(i) = el.strip_prefix("i:") {
        return items.get(i.parse::<usize>().ok()?);
    }
    None
}

/// Removes the value at a path; returns whether something was removed.
pub fn remove_at(object: &mut Value, path: &[String]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let mut cur = object;
    for el in parent_path {
        let next = if let Some(f) = el.strip_prefix("f:") {
            cur.get_mut(f)
        } else if let Some(k) = el.strip_prefix("k:") {
            let Ok(keys) = serde_json::from_str::<BTreeMap<String, Value>>(k) else {
                return false;
            };
            cur.as_array_mut().and_then(|a| {
                a.iter_mut()
                    .find(|i| keys.iter().all(|(kk, kv)| i.get(kk) == Some(kv)))
            })
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        return cur.as_object_mut().is_some_and(|m| m.remove(f).is_some());
    }
    let Some(items) = cur.as_array_mut() else {
        return false;
    };
    let before = items.len();
    if let Some(k) = last.strip_prefix("k:") {
        let Ok(keys) = serde_json::from_str::<BTreeMap<String, Value>>(k) else {
            return false;
        };
        items.retain(|i| !keys.iter().all(|(kk, kv)| i.get(kk) == Some(kv)));
    } else if let Some(v) = last.strip_prefix("v:") {
        let Ok(v) = serde_json::from_str::<Value>(v) else {
            return false;
        };
        items.retain(|i| *i != v);
    }
    items.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> SchemaNode {
        SchemaNode::of(&crate::patch::schema::test_shapes::OBJECT)
    }

    #[test]
    fn builds_and_encodes_fields_v1() {
        let obj = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"app": "x"}},
            "spec": {"replicas": 1, "ports": [{"name": "http", "port": 80}], "tags": ["a"], "args": ["x"]}});
        let set = FieldSet::from_object(&obj, &schema(), Scope::All);
        let v1 = set.to_fields_v1();
        assert_eq!(
            v1,
            json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:args": {}, "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:replicas": {}, "f:tags": {"v:\"a\"": {}}}})
        );
        assert_eq!(FieldSet::from_fields_v1(&v1), set);
    }

    #[test]
    fn fields_v1_marks_members_with_children_first_and_sorts_keys() {
        let p = |els: &[&str]| els.iter().map(|e| e.to_string()).collect::<Path>();
        let set = FieldSet(
            [
                p(&["f:spec", "f:ports", "k:{\"name\":\"b\"}"]),
                p(&["f:spec", "f:ports", "k:{\"name\":\"b\"}", "f:port"]),
                p(&["f:spec", "f:ports", "k:{\"name\":\"a\"}"]),
                p(&["f:spec", "f:ports", "k:{\"name\":\"a\"}", "f:port"]),
                p(&["f:spec", "f:ports", "k:{\"name\":\"a\"}", "f:name"]),
                p(&["f:spec", "f:replicas"]),
                p(&["f:metadata", "f:labels", "f:app"]),
            ]
            .into_iter()
            .collect(),
        );
        let text = serde_json::to_string(&set.to_fields_v1()).unwrap();
        assert_eq!(
            text,
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:port":{}},"k:{\"name\":\"b\"}":{".":{},"f:port":{}}},"f:replicas":{}}}"#
        );
        assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), set);
    }

    /// The typed field set written straight from the paths is the tree's text, for every
    /// subset of paths that covers the root member, members with and without children, shared
    /// prefixes and keys that need escaping.
    #[test]
    fn typed_fields_v1_is_the_trees_text() {
        let p = |els: &[&str]| els.iter().map(|e| e.to_string()).collect::<Path>();
        let paths = [
            p(&[]),
            p(&["f:a"]),
            p(&["f:a", "f:b"]),
            p(&["f:a", "f:b", "f:c"]),
            p(&["f:a", "f:d"]),
            p(&["f:e"]),
            p(&["f:e", "k:{\"name\":\"x\"}"]),
            p(&["f:e", "k:{\"name\":\"x\"}", "f:port"]),
            p(&["f:e", "v:\"tab\there\""]),
            p(&["f:z\u{1}"]),
            p(&["f:z\u{1}", "f:\\"]),
        ];
        for mask in 0u32..(1 << paths.len()) {
            let set = FieldSet(
                paths
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, p)| p.clone())
                    .collect(),
            );
            let tree = serde_json::to_string(&set.to_fields_v1()).unwrap();
            assert_eq!(set.to_typed_fields_v1().as_str(), tree, "{set:?}");
        }
    }

    #[test]
    fn paths_render_and_resolve() {
        let obj = json!({"spec": {"ports": [{"name": "http", "port": 80}], "tags": ["a", "b"]}});
        let p: Path = vec![
            "f:spec".into(),
            "f:ports".into(),
            "k:{\"name\":\"http\"}".into(),
            "f:port".into(),
        ];
        assert_eq!(path_string(&p), ".spec.ports[name=\"http\"].port");
        assert_eq!(value_at(&obj, &p), Some(&json!(80)));
        let mut o = obj.clone();
        assert!(remove_at(
            &mut o,
            &["f:spec".into(), "f:tags".into(), "v:\"a\"".into()]
        ));
        assert_eq!(o["spec"]["tags"], json!(["b"]));
        let mut finder = Finder::default();
        assert_eq!(finder.value_at(&obj, &p), Some(&json!(80)));
        let spaced: Path = vec![
            "f:spec".into(),
            "f:ports".into(),
            "k:{\"name\": \"http\"}".into(),
        ];
        assert_eq!(finder.value_at(&obj, &spaced), value_at(&obj, &spaced));
        let tag: Path = vec!["f:spec".into(), "f:tags".into(), "v:\"b\"".into()];
        assert_eq!(finder.value_at(&obj, &tag), Some(&json!("b")));
        let missing: Path = vec![
            "f:spec".into(),
            "f:ports".into(),
            "k:{\"name\":\"x\"}".into(),
        ];
        assert_eq!(finder.value_at(&obj, &missing), None);
        let set = FieldSet([p.clone()].into_iter().collect());
        assert!(set.owns_under(&p[..2].to_vec()));
        assert!(set.owns_under(&p));
        assert!(!set.owns_under(&vec!["f:spec".to_string(), "f:tags".to_string()]));
    }
}
