//! Traits of typed API objects and lists, implemented by `#[derive(Object)]`.
//!
//! The derive shares the trait's name (as serde's derives do): `use apimachinery::object::Object`
//! brings both. The generated code derives it for every kind and list.

/// Implements [`Object`](trait@Object) for a kind, or [`ListObject`] with `list`:
/// `#[derive(Object)] #[object(group = "…", version = "…", kind = "…")]` (the `macros` crate).
pub use macros::Object;

use crate::gvk::GroupVersionKind;
use crate::meta::{ListMeta, ObjectMeta};

/// A top-level API object of one group, version and kind.
pub trait Object {
    /// The API group (empty for core).
    const GROUP: &'static str;
    /// The version.
    const VERSION: &'static str;
    /// The kind.
    const KIND: &'static str;
    /// The `apiVersion` string: `v1` for core, `group/version` otherwise.
    const API_VERSION: &'static str;

    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// The object's metadata, mutably.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;

    /// The group, version and kind.
    fn gvk() -> GroupVersionKind {
        GroupVersionKind::new(Self::GROUP, Self::VERSION, Self::KIND)
    }

    /// A deep copy (Kubernetes' `DeepCopyObject`).
    fn deep_copy(&self) -> Self
    where
        Self: Clone,
    {
        self.clone()
    }
}

/// A list of API objects (`<Kind>List`).
pub trait ListObject {
    /// The item type.
    type Item;
    /// The API group (empty for core).
    const GROUP: &'static str;
    /// The version.
    const VERSION: &'static str;
    /// The list kind, such as `WidgetList`.
    const KIND: &'static str;
    /// The `apiVersion` string.
    const API_VERSION: &'static str;

    /// The list metadata.
    fn list_metadata(&self) -> &ListMeta;

    /// The items.
    fn items(&self) -> &[Self::Item];
}
