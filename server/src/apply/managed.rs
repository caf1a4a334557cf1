//! `metadata.managedFields`: who owns which fields, updated on every write.
//!
//! This file reads and writes the entries, names the manager of a write, and records the
//! fields a non-apply write changes as its manager's `Update` entry (capping the number of
//! updaters as Kubernetes does). The apply operation, with its conflict detection, is in
//! `apply_request`; its items are re-exported here.

use apimachinery::meta::{ManagedFieldsEntry, Time};
use serde_json::{Map, Value};

use super::fieldset::{FieldSet, Finder, Path, Scope};
use crate::patch::SchemaNode;

pub use super::apply_request::{ApplyRequest, apply};

/// The current time as `metadata` timestamps are written (RFC 3339, seconds, UTC).
pub(super) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A member of an object tree's `metadata`.
fn meta_get<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    object.get("metadata").and_then(|m| m.get(key))
}

/// An object tree's `metadata`, created when missing.
fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let map = object.as_object_mut().expect("object was just ensured");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("metadata was just ensured")
}

/// The longest accepted `fieldManager`.
pub const MAX_MANAGER_LEN: usize = 128;

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ManagedEntry {
    /// The manager's name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// The apiVersion the manager wrote with.
    pub api_version: String,
    /// When the entry last changed.
    pub time: String,
    /// The subresource written through (`status`, `scale`), or empty.
    pub subresource: String,
    /// The fields owned.
    pub fields: FieldSet,
}

impl ManagedEntry {
    fn from_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Self {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            time: s("time"),
            subresource: s("subresource"),
            fields: v
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }

    fn into_json(self) -> Value {
        // At most seven members: no regrowth.
        let mut m = Map::with_capacity(7);
        m.insert("manager".into(), Value::from(self.manager));
        m.insert("operation".into(), Value::from(self.operation));
        m.insert("apiVersion".into(), Value::from(self.api_version));
        if !self.time.is_empty() {
            m.insert("time".into(), Value::from(self.time));
        }
        m.insert("fieldsType".into(), Value::from("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::from(self.subresource));
        }
        Value::Object(m)
    }

    /// The typed entry (`fieldsType` `FieldsV1`; an empty time or subresource is absent).
    pub fn into_typed(self) -> ManagedFieldsEntry {
        let time = chrono::DateTime::parse_from_rfc3339(&self.time)
            .ok()
            .map(|t| Time(t.with_timezone(&chrono::Utc)));
        ManagedFieldsEntry {
            manager: Some(self.manager),
            operation: Some(self.operation),
            api_version: Some(self.api_version),
            time,
            fields_type: Some("FieldsV1".to_string()),
            fields_v1: Some(self.fields.to_typed_fields_v1()),
            subresource: Some(self.subresource).filter(|s| !s.is_empty()),
        }
    }

    pub(super) fn is(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// Reads the entries of an object.
pub fn entries(object: &Value) -> Vec<ManagedEntry> {
    meta_get(object, "managedFields")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(ManagedEntry::from_json).collect())
        .unwrap_or_default()
}

pub(super) fn store_entries(object: &mut Value, entries: Vec<ManagedEntry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(ManagedEntry::into_json)
        .collect();
    let meta = meta_mut(object);
    if list.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

/// The default manager for non-apply writes: the User-Agent up to its first `/`.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let m = user_agent.split('/').next().unwrap_or("").trim();
    // A printable ASCII name within the limit is kept as it is, as the filter below keeps it.
    if !m.is_empty() && m.len() <= MAX_MANAGER_LEN && m.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return m.to_string();
    }
    filtered_manager(m)
}

/// The manager name `m` without control characters, cut to the length limit; `unknown` when
/// nothing is left.
fn filtered_manager(m: &str) -> String {
    let m: String = m
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_MANAGER_LEN)
        .collect();
    if m.is_empty() {
        "unknown".to_string()
    } else {
        m
    }
}

/// The parts of an object a write through `subresource` covers.
pub(super) fn scope_for(subresource: &str, status_subresource: bool) -> Scope {
    match (subresource, status_subresource) {
        ("status", _) => Scope::Status,
        (_, true) => Scope::MainResource,
        _ => Scope::All,
    }
}

/// The `managedFields` an update request sets itself, taken as Kubernetes takes them: never
/// through a subresource; `[{}]` resets them to an empty list; an absent, empty or malformed
/// list keeps the live object's (`None`), so clients unaware of managedFields cannot drop them.
/// kubectl relies on this when it moves client-side-apply ownership to its server-side-apply
/// manager with a JSON patch of `/metadata/managedFields`.
pub fn requested_managed_fields(requested: Option<&Value>, subresource: &str) -> Option<Value> {
    if !subresource.is_empty() {
        return None;
    }
    let list = requested?.as_array()?;
    if let [only] = list.as_slice()
        && only.as_object().is_some_and(Map::is_empty)
    {
        return Some(Value::Array(Vec::new()));
    }
    let valid = |e: &Value| {
        e.get("manager").is_some_and(Value::is_string)
            && matches!(
                e.get("operation").and_then(Value::as_str),
                Some("Apply" | "Update")
            )
            && e.get("fieldsType").is_none_or(|t| t == "FieldsV1")
            && e.get("fieldsV1").is_none_or(Value::is_object)
    };
    if list.is_empty() || !list.iter().all(valid) {
        return None;
    }
    Some(Value::Array(list.clone()))
}

/// Records a non-apply write by `manager`: the fields it changed become its own (taken from
/// other managers), fields it removed leave every manager. `old` is `None` on create.
/// Ownership starts from `new`'s `managedFields` when it has them (the caller decides, with
/// [`requested_managed_fields`], whether the request's own list counts), else from `old`'s.
/// Objects are in the JSON of `api_version`.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    subresource: &str,
    status_subresource: bool,
    schema: &SchemaNode,
) {
    let list = updated_entries(
        old,
        new,
        manager,
        api_version,
        subresource,
        status_subresource,
        schema,
    );
    store_entries(new, list);
}

/// The managedFields entries after a non-apply write by `manager`, as [`record_update`]
/// computes them (entries left without fields are still in the list).
pub fn updated_entries(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    api_version: &str,
    subresource: &str,
    status_subresource: bool,
    schema: &SchemaNode,
) -> Vec<ManagedEntry> {
    let mut list = if meta_get(new, "managedFields").is_some() {
        entries(new)
    } else {
        old.map(entries).unwrap_or_default()
    };
    let scope = scope_for(subresource, status_subresource);
    let new_set = FieldSet::from_object(new, schema, scope);
    let old_set = old
        .map(|o| FieldSet::from_object(o, schema, scope))
        .unwrap_or_default();
    let removed: Vec<Path> = old_set.difference(&new_set).0.into_iter().collect();
    let mut in_new = Finder::default();
    let changed: Vec<Path> = match old {
        // Without an old object every path that has a value changed; the set is not needed
        // again, so its paths are moved instead of copied.
        None => new_set
            .0
            .into_iter()
            .filter(|p| in_new.value_at(new, p).is_some())
            .collect(),
        Some(o) => {
            let mut in_old = Finder::default();
            new_set
                .0
                .iter()
                .filter(|p| in_old.value_at(o, p) != in_new.value_at(new, p))
                .cloned()
                .collect()
        }
    };
    for e in list.iter_mut() {
        for p in changed.iter().chain(removed.iter()) {
            e.fields.0.remove(p);
        }
    }
    if !changed.is_empty() {
        let pos = list
            .iter()
            .position(|e| e.is(manager, "Update", subresource) && e.api_version == api_version);
        let idx = match pos {
            Some(i) => i,
            None => {
                list.push(update_entry(manager, api_version, subresource));
                list.len() - 1
            }
        };
        list[idx].fields.0.extend(changed);
        list[idx].time = now_rfc3339();
    }
    cap_update_managers(&mut list);
    list
}

/// The most `Update` entries an object keeps: Kubernetes' `DefaultMaxUpdateManagers`.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager older updates are merged into past [`MAX_UPDATE_MANAGERS`].
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Keeps at most [`MAX_UPDATE_MANAGERS`] `Update` entries, as Kubernetes' field manager does:
/// the oldest updaters beyond the cap are merged, per apiVersion, into one `ancient-changes`
/// entry of that apiVersion (created from the first such updater when missing), which takes
/// the time of the newest one merged.
pub(super) fn cap_update_managers(list: &mut Vec<ManagedEntry>) {
    let mut updaters: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].operation == "Update" && !list[i].fields.is_empty())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| list[a].time.cmp(&list[b].time));
    let mut remaining = updaters.len();
    let mut first_of_version: std::collections::HashMap<String, usize> =
        std::collections::HashMap::new();
    let mut merged = vec![false; list.len()];
    for &i in &updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = list[i].api_version.clone();
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        let bucket = (0..list.len()).find(|&b| {
            !merged[b]
                && list[b].is(ANCIENT_CHANGES, "Update", "")
                && list[b].api_version == version
        });
        let bucket = match bucket {
            Some(b) if b == i => continue,
            Some(b) => b,
            None => {
                list[first].manager = ANCIENT_CHANGES.to_string();
                list[first].subresource.clear();
                first
            }
        };
        let fields = std::mem::take(&mut list[i].fields);
        let time = std::mem::take(&mut list[i].time);
        list[bucket].fields.0.extend(fields.0);
        list[bucket].time = time;
        merged[i] = true;
        remaining -= 1;
    }
    let mut index = 0;
    list.retain(|_| {
        index += 1;
        !merged[index - 1]
    });
}

/// The typed managedFields entries after a create by `manager` that sets `fields` (as
/// [`FieldSet::created`] finds them): what [`updated_entries`] computes without an old object
/// or requested entries, typed by [`ManagedEntry::into_typed`], without the object's tree.
pub fn created_entries(
    fields: FieldSet,
    manager: &str,
    api_version: &str,
    subresource: &str,
) -> Vec<ManagedFieldsEntry> {
    if fields.is_empty() {
        return Vec::new();
    }
    let entry = ManagedEntry {
        fields,
        ..update_entry(manager, api_version, subresource)
    };
    // The time goes in typed, not written as text to be parsed again (on a ConfigMap create,
    // ≈0.9k instructions less).
    vec![ManagedFieldsEntry {
        time: Some(Time::now()),
        ..entry.into_typed()
    }]
}

/// A new `Update` entry of `manager`, without fields or time.
fn update_entry(manager: &str, api_version: &str, subresource: &str) -> ManagedEntry {
    ManagedEntry {
        manager: manager.to_string(),
        operation: "Update".into(),
        api_version: api_version.to_string(),
        time: String::new(),
        subresource: subresource.to_string(),
        fields: FieldSet::default(),
    }
}
#[cfg(test)]
#[path = "managed_tests.rs"]
mod tests;

#[cfg(test)]
mod long_lists {
    use super::*;
    use serde_json::json;

    /// Recording an update of an object with a 20,000-item map list looks each item up through
    /// an index: linear time (looking each path up by scanning the list took seconds at 8,000
    /// items in a release build and grew with the square of the length).
    #[test]
    fn record_update_is_linear_in_list_length() {
        // ServiceAccount's `secrets` is a map list keyed by `name`.
        let schema = SchemaNode::of(&kubernetes_api::core::v1::SHAPE_SERVICE_ACCOUNT);
        let n = 20_000;
        let items: Vec<Value> = (0..n).map(|i| json!({"name": format!("s{i}")})).collect();
        let mut new = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "a"}, "secrets": items});
        record_update(None, &mut new, "m", "v1", "", false, &schema);
        let old = new.clone();
        new["secrets"][n - 1]["x"] = json!(1);
        record_update(Some(&old), &mut new, "m2", "v1", "", false, &schema);
        let list = entries(&new);
        assert_eq!(list.len(), 2);
        let changed = list.iter().find(|e| e.manager == "m2").unwrap();
        // The changed item: ObjectReference is an atomic struct, so the item is one leaf.
        let item = format!("k:{{\"name\":\"s{}\"}}", n - 1);
        assert_eq!(
            changed.fields,
            FieldSet([vec!["f:secrets".to_string(), item]].into_iter().collect())
        );
    }
}
