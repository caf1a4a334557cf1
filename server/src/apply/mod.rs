//! Server-side apply: field sets in the `FieldsV1` encoding, per-manager ownership recorded in
//! `metadata.managedFields`, structured merge by `x-kubernetes-list-type` /
//! `x-kubernetes-map-type`, conflicts, and `Update` entries for every other write.

pub mod fieldset;
pub mod managed;
pub mod merge;

pub use fieldset::{FieldSet, Path};
pub use managed::{
    ApplyRequest, ManagedEntry, apply, manager_from_user_agent, record_update,
    requested_managed_fields,
};
