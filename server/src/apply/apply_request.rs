//! One server-side apply request: the applied configuration merged into the live object, with
//! conflict detection against the fields other managers own.
//!
//! Without `force`, a field the configuration sets to a value other than the live one, owned by
//! another manager, is a conflict and the request fails with 409; with `force` the applier takes
//! the field. Fields the applier applied before and no longer applies are removed unless
//! another manager owns them. The applier's `Apply` entry is then written to `managedFields`.

use apimachinery::status::{ApiError, StatusCause};
use serde_json::{Value, json};

use super::fieldset::{FieldSet, Finder, Path, Scope, path_string, remove_at};
use super::managed::{
    ManagedEntry, cap_update_managers, entries, now_rfc3339, scope_for, store_entries,
};
use super::merge::merge;
use crate::patch::SchemaNode;

/// One apply request.
#[derive(Clone, Debug)]
pub struct ApplyRequest<'a> {
    /// The applier.
    pub manager: &'a str,
    /// The apiVersion of the applied configuration.
    pub api_version: &'a str,
    /// `force=true`: take conflicting fields.
    pub force: bool,
    /// The subresource applied through, or empty.
    pub subresource: &'a str,
    /// Whether the kind has a status subresource.
    pub status_subresource: bool,
}

/// Applies a configuration to the live object (`None` creates). Returns the merged object
/// with updated managedFields, or 409 with one `FieldManagerConflict` cause per conflict.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    req: &ApplyRequest<'_>,
    schema: &SchemaNode,
) -> Result<Value, ApiError> {
    let scope = scope_for(req.subresource, req.status_subresource);
    let mut list = live.map(entries).unwrap_or_default();
    let applied_set = FieldSet::from_object(applied, schema, scope);
    let mut conflicts: Vec<(Path, String)> = Vec::new();
    if let Some(live) = live {
        let (mut in_live, mut in_applied) = (Finder::default(), Finder::default());
        for e in &list {
            if e.is(req.manager, "Apply", req.subresource) {
                continue;
            }
            for p in applied_set.intersection(&e.fields).0 {
                if in_live.value_at(live, &p) != in_applied.value_at(applied, &p) {
                    conflicts.push((p, e.describe()));
                }
            }
        }
    }
    if !conflicts.is_empty() && !req.force {
        return Err(conflict_error(&conflicts));
    }
    for (p, _) in &conflicts {
        for e in list.iter_mut() {
            if !e.is(req.manager, "Apply", req.subresource) {
                e.fields.0.remove(p);
            }
        }
    }
    let mut scoped = applied.clone();
    if let Some(m) = scoped.as_object_mut() {
        match scope {
            Scope::Status => m.retain(|k, _| k == "status" || k == "apiVersion" || k == "kind"),
            Scope::MainResource => {
                m.remove("status");
            }
            Scope::All => {}
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            meta.remove("resourceVersion");
        }
    }
    let base = live.cloned().unwrap_or_else(|| json!({}));
    let mut merged = merge(Some(&base), &scoped, schema);
    let previous = list
        .iter()
        .find(|e| e.is(req.manager, "Apply", req.subresource))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for p in previous.difference(&applied_set).0 {
        let owned_elsewhere = list
            .iter()
            .any(|e| !e.is(req.manager, "Apply", req.subresource) && e.fields.owns_under(&p));
        if !owned_elsewhere && !applied_set.owns_under(&p) {
            remove_at(&mut merged, &p);
        }
    }
    let pos = list
        .iter()
        .position(|e| e.is(req.manager, "Apply", req.subresource));
    // As in Kubernetes, the applier's timestamp moves only when the apply changed the object,
    // so re-applying the same configuration leaves the object (and its resourceVersion) alone.
    let unchanged =
        live.is_some_and(|l| without_managed_fields(l) == without_managed_fields(&merged));
    let time = match pos {
        Some(i) if unchanged => list[i].time.clone(),
        _ => now_rfc3339(),
    };
    let entry = ManagedEntry {
        manager: req.manager.to_string(),
        operation: "Apply".into(),
        api_version: req.api_version.to_string(),
        time,
        subresource: req.subresource.to_string(),
        fields: applied_set,
    };
    match pos {
        Some(i) => list[i] = entry,
        None => list.push(entry),
    }
    cap_update_managers(&mut list);
    store_entries(&mut merged, list);
    Ok(merged)
}
impl ManagedEntry {
    /// How conflicts name this manager: `"mgr"` for appliers, `"mgr" using v` for updaters.
    fn describe(&self) -> String {
        if self.operation == "Update" {
            format!("{:?} using {}", self.manager, self.api_version)
        } else {
            format!("{:?}", self.manager)
        }
    }
}

/// `object` without `metadata.managedFields`, for comparing what a write changes.
fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    copy
}

fn conflict_error(conflicts: &[(Path, String)]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|(p, m)| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {m}"),
            field: path_string(p),
        })
        .collect();
    let message = if let [(p, m)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {m}: {}",
            path_string(p)
        )
    } else {
        let mut managers: Vec<&String> = conflicts.iter().map(|(_, m)| m).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for (p, _) in conflicts.iter().filter(|(_, mm)| mm == m) {
                lines.push(format!("- {}", path_string(p)));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::apply_conflict(causes, message)
}
