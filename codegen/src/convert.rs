//! Conversion planning between a served version and its group's hub.
//!
//! A struct of a version converts to the hub's struct of the same name. Fields whose names and
//! types match are converted by generated code (recursing through same-named structs); every
//! other field makes the struct need a pair of hand-written hooks in `hooks.rs`:
//! `<version>_<struct>_to_<hub>(src: &<version>::S, dst: &mut <hub>::S)` and
//! `<hub>_<struct>_to_<version>(src: &<hub>::S, dst: &mut <version>::S)`, called after the
//! matching fields are converted.

use crate::model::{GroupModel, StructModel, TypeRef, VersionModel, conversion_hook_name};

/// How one struct of a version converts to and from the hub.
#[derive(Clone, Debug)]
pub struct StructPlan<'a> {
    /// The struct in the version.
    pub from: &'a StructModel,
    /// The same-named struct in the hub.
    pub to: &'a StructModel,
    /// Field names converted by generated code.
    pub matched: Vec<&'a str>,
    /// Fields of the version without a compatible hub field (version field names).
    pub version_only: Vec<&'a str>,
    /// Fields of the hub without a compatible version field (hub field names).
    pub hub_only: Vec<&'a str>,
}

impl StructPlan<'_> {
    /// Whether the struct needs hand-written hooks.
    pub fn needs_hooks(&self) -> bool {
        !self.version_only.is_empty() || !self.hub_only.is_empty()
    }
}

/// The hub's name as used in hook names: `internal`, or the storage version's name.
pub fn hub_name(group: &GroupModel) -> String {
    group
        .hub()
        .map(|h| h.version.clone())
        .unwrap_or_else(|| "internal".to_string())
}

/// Whether `version` is the group's hub itself (no conversion needed).
pub fn is_hub(group: &GroupModel, version: &VersionModel) -> bool {
    group.internal.is_none() && version.storage
}

/// Whether a value of type `a` in `from` converts to type `b` in `to` by generated code.
pub fn compatible(a: &TypeRef, b: &TypeRef, from: &VersionModel, to: &VersionModel) -> bool {
    match (a, b) {
        (TypeRef::Struct(x), TypeRef::Struct(y)) => {
            x == y && from.struct_named(x).is_some() && to.struct_named(y).is_some()
        }
        (TypeRef::Option(x), TypeRef::Option(y))
        | (TypeRef::Vec(x), TypeRef::Vec(y))
        | (TypeRef::Map(x), TypeRef::Map(y)) => compatible(x, y, from, to),
        _ => a == b,
    }
}

/// Plans every struct of `version` that has a same-named struct in the hub; the others (a kind
/// that is its own hub, [`GroupModel::kind_own_version`], and structs only it uses) convert to
/// nothing.
pub fn plan<'a>(version: &'a VersionModel, hub: &'a VersionModel) -> Vec<StructPlan<'a>> {
    let mut plans = Vec::new();
    for s in &version.structs {
        let Some(h) = hub.struct_named(&s.name) else {
            continue;
        };
        let mut p = StructPlan {
            from: s,
            to: h,
            matched: Vec::new(),
            version_only: Vec::new(),
            hub_only: Vec::new(),
        };
        for f in &s.fields {
            match h.field(&f.name) {
                Some(hf) if compatible(&f.ty, &hf.ty, version, hub) => p.matched.push(&f.name),
                _ => p.version_only.push(&f.name),
            }
        }
        for hf in &h.fields {
            if !p.matched.contains(&hf.name.as_str()) {
                p.hub_only.push(&hf.name);
            }
        }
        plans.push(p);
    }
    plans
}

/// The `(to_hub, from_hub)` hook names of a struct.
pub fn hook_names(version: &str, hub: &str, struct_name: &str) -> (String, String) {
    (
        conversion_hook_name(version, struct_name, hub),
        conversion_hook_name(hub, struct_name, version),
    )
}
