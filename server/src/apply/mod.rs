//! Server-side apply: field sets in the `FieldsV1` encoding, per-manager ownership recorded in
//! `metadata.managedFields`, structured merge by `x-kubernetes-list-type` /
//! `x-kubernetes-map-type`, conflicts, and `Update` entries for every other write.

mod apply_request;
mod created;
pub mod fieldset;
pub mod managed;
pub mod merge;

pub use fieldset::{FieldSet, Path};
pub use managed::{
    ApplyRequest, ManagedEntry, apply, created_entries, manager_from_user_agent, record_update,
    requested_managed_fields, updated_entries,
};

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use serde_json::Value;

use crate::patch::SchemaNode;

/// The object's JSON tree for the field manager.
fn tree(object: &dyn Object) -> Result<Value, ApiError> {
    object.to_value().map_err(ApiError::internal)
}

/// Records a non-apply write by `manager` in the typed object's `managedFields` (Kubernetes'
/// field manager, run by the handler before admission): on create (`old` is `None`) the
/// request's own entries are dropped; on update they count when the request sets them
/// (see [`requested_managed_fields`]), else the stored object's do. Both objects are of the
/// version the request was made in.
pub fn update_managed_fields(
    old: Option<&dyn Object>,
    new: &mut dyn Object,
    manager: &str,
    subresource: &str,
) -> Result<(), ApiError> {
    let info = new.info();
    let schema = SchemaNode::of(new.shape());
    let Some(old) = old else {
        // A create: the manager owns every field the object sets, taken from the typed object.
        let scope = managed::scope_for(subresource, info.status_subresource);
        let fields = FieldSet::created(new, &schema, scope).map_err(ApiError::internal)?;
        new.metadata_mut().managed_fields =
            created_entries(fields, manager, &info.api_version(), subresource);
        return Ok(());
    };
    let mut new_tree = tree(new)?;
    let old_tree = tree(old)?;
    if let Some(meta) = new_tree.get_mut("metadata").and_then(Value::as_object_mut) {
        let managed = requested_managed_fields(meta.get("managedFields"), subresource)
            .unwrap_or_else(|| {
                old_tree
                    .get("metadata")
                    .and_then(|m| m.get("managedFields"))
                    .cloned()
                    .unwrap_or(Value::Array(Vec::new()))
            });
        meta.insert("managedFields".into(), managed);
    }
    let entries = updated_entries(
        Some(&old_tree),
        &new_tree,
        manager,
        &info.api_version(),
        subresource,
        info.status_subresource,
        &schema,
    );
    // Straight to the typed entries: no JSON tree of them is built and decoded again.
    new.metadata_mut().managed_fields = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(ManagedEntry::into_typed)
        .collect();
    Ok(())
}

/// Server-side apply of `applied` (a JSON tree of the requested version) to `live` (typed, of
/// the same version; `None` creates): the merged tree with its managed fields, or 409 on
/// conflicts.
pub fn apply_typed(
    live: Option<&dyn Object>,
    applied: &Value,
    req: &ApplyRequest<'_>,
    shape: &'static apimachinery::structure::StructShape,
) -> Result<Value, ApiError> {
    let live_tree = live.map(tree).transpose()?;
    apply(live_tree.as_ref(), applied, req, &SchemaNode::of(shape))
}
