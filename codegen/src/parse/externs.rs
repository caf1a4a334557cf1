//! The definitions of other crates: loading them as extern groups ([`parse_extern`]) and
//! resolving the references of this crate's definitions to their structs ([`link_externs`]).
//!
//! A definition names a struct of another crate's group version by its path in that crate's
//! generated code, `<group module>::<version>::<Type>` (`core::v1::ObjectReference`,
//! `rbac_authorization_k8s_io::v1::Subject`). Linking records the crate's Rust name, the
//! version's protobuf package and the struct's OpenAPI definition name in the reference, or
//! reports an error at the field that names it.

use std::path::Path;

use super::{ReadError, link_shared, parse_groups};
use crate::diagnostics::{Diagnostics, suggestion};
use crate::emit::openapi::definition_name;
use crate::model::{
    ApiModel, ExternCrate, ExternRef, FieldModel, GroupModel, ListType, Loc, TypeRef,
};

/// Reads another crate's definitions directory `dir` as the extern crate `rust_crate`: parses
/// its groups, links their references to the shared version of `model` and checks them. Its
/// mistakes (which the crate's own build reports first) are added to `diags`.
pub fn parse_extern(
    model: &ApiModel,
    rust_crate: &str,
    dir: &Path,
    diags: &mut Diagnostics,
) -> Result<ExternCrate, ReadError> {
    let (mut own, own_diags) = parse_groups(dir)?;
    diags.errors.extend(own_diags.errors);
    let shared: Vec<GroupModel> = model
        .groups
        .iter()
        .filter(|g| g.is_shared())
        .cloned()
        .collect();
    own.groups.extend(shared);
    link_shared(&mut own);
    crate::check::check(&own, diags);
    let groups = own
        .groups
        .into_iter()
        .filter(|g| !g.is_shared())
        .collect::<Vec<_>>();
    Ok(ExternCrate {
        rust_crate: rust_crate.to_string(),
        api_defs: dir.to_path_buf(),
        groups,
    })
}

/// Resolves every [`TypeRef::Extern`] of the model's own groups against
/// [`ApiModel::externs`], and reports a group this crate defines that an extern crate defines
/// too (the two would register the same resources).
pub fn link_externs(model: &mut ApiModel, diags: &mut Diagnostics) {
    for group in model.groups.iter().filter(|g| !g.is_shared()) {
        let owner = model
            .externs
            .iter()
            .find(|c| c.groups.iter().any(|g| g.name == group.name));
        if let (Some(owner), Some(v)) = (owner, group.versions.first()) {
            let shown = if group.name.is_empty() {
                "core"
            } else {
                group.name.as_str()
            };
            diags.push(
                v.loc.clone(),
                format!(
                    "group `{shown}` is defined by the crate `{}` this crate depends on; use its types as `{}::<version>::<Type>` instead of defining the group again",
                    owner.rust_crate,
                    group.module_name()
                ),
            );
        }
    }
    let snapshot = model.clone();
    for group in &mut model.groups {
        for v in group.versions.iter_mut().chain(group.internal.iter_mut()) {
            for s in &mut v.structs {
                for f in &mut s.fields {
                    let loc = f.loc.clone();
                    link_type(&mut f.ty, &loc, &snapshot, diags);
                    check_map_keys(f, &snapshot, diags);
                }
            }
        }
    }
}

/// Checks the keys of a `#[list(type = "map", keys = [...])]` of extern structs against the
/// JSON fields of the struct.
fn check_map_keys(f: &FieldModel, model: &ApiModel, diags: &mut Diagnostics) {
    let (Some(list), Some(r)) = (&f.list, f.ty.extern_ref()) else {
        return;
    };
    if list.type_ != ListType::Map || r.rust_crate.is_empty() {
        return;
    }
    let Some((_, _, version)) = model.extern_version(r) else {
        return;
    };
    let Some(item) = version.struct_named(&r.name) else {
        return;
    };
    let keys: Vec<&str> = version
        .json_fields(item)
        .iter()
        .map(|f| f.json_name.as_str())
        .collect();
    for key in &list.map_keys {
        if !keys.contains(&key.as_str()) {
            diags.push(
                f.loc.clone(),
                format!(
                    "map key `{key}` is not a JSON field of `{}`{}",
                    r.path(),
                    suggestion(key, keys.iter().copied())
                ),
            );
        }
    }
}

/// Resolves the extern references inside one field type.
fn link_type(t: &mut TypeRef, loc: &Loc, model: &ApiModel, diags: &mut Diagnostics) {
    match t {
        TypeRef::Extern(r) => resolve(r, loc, model, diags),
        TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => link_type(i, loc, model, diags),
        _ => {}
    }
}

/// Resolves one reference, or reports why it names nothing.
fn resolve(r: &mut ExternRef, loc: &Loc, model: &ApiModel, diags: &mut Diagnostics) {
    let path = r.path();
    if model
        .groups
        .iter()
        .any(|g| !g.is_shared() && g.module_name() == r.group_module)
    {
        diags.push(
            loc.clone(),
            format!(
                "`{path}` names a group of this crate; a definition refers by path only to the groups of another crate, and to a struct of its own file by name"
            ),
        );
        return;
    }
    let groups: Vec<(&ExternCrate, &GroupModel)> = model
        .externs
        .iter()
        .flat_map(|c| c.groups.iter().map(move |g| (c, g)))
        .collect();
    let Some(&(krate, group)) = groups
        .iter()
        .find(|(_, g)| g.module_name() == r.group_module)
    else {
        let modules: Vec<String> = groups.iter().map(|(_, g)| g.module_name()).collect();
        let known = if modules.is_empty() {
            "no crate this one depends on publishes its definitions (a dependency such as `kubernetes-api` does, through `links` and `codegen::compile` in its build script)".to_string()
        } else {
            format!(
                "the groups of the crates this one depends on are {}",
                modules.join(", ")
            )
        };
        diags.push(
            loc.clone(),
            format!(
                "unknown type `{path}`: no group `{}`{}; {known}",
                r.group_module,
                suggestion(&r.group_module, modules.iter().map(String::as_str))
            ),
        );
        return;
    };
    let Some(version) = group.version(&r.version) else {
        let versions: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
        diags.push(
            loc.clone(),
            format!(
                "unknown type `{path}`: group `{}` of crate `{}` has no version `{}`{}; its versions are {}",
                r.group_module,
                krate.rust_crate,
                r.version,
                suggestion(&r.version, versions.iter().copied()),
                versions.join(", ")
            ),
        );
        return;
    };
    if version.struct_named(&r.name).is_none() {
        let names = version.structs.iter().map(|s| s.name.as_str());
        diags.push(
            loc.clone(),
            format!(
                "unknown type `{path}`: `{}::{}` of crate `{}` has no struct `{}`{}",
                r.group_module,
                r.version,
                krate.rust_crate,
                r.name,
                suggestion(&r.name, names)
            ),
        );
        return;
    }
    r.rust_crate = krate.rust_crate.clone();
    r.proto_package = version.proto_package_or_default();
    r.openapi_name = definition_name(version, &r.name);
}
