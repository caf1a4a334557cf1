//! The model of other crates' definitions: [`ExternCrate`] (their groups, parsed and checked,
//! never emitted) and [`ExternRef`] (a definition's reference to one of their structs).

use std::path::PathBuf;

use super::{ApiModel, GroupModel, VersionModel};

/// The definitions of another API crate (such as `kubernetes-api`), whose types this crate's
/// definitions refer to as `<group module>::<version>::<Type>`.
#[derive(Clone, Debug, Default)]
pub struct ExternCrate {
    /// The Rust name of the crate, as the generated code names it (`kubernetes_api`).
    pub rust_crate: String,
    /// The crate's definitions directory.
    pub api_defs: PathBuf,
    /// The crate's groups.
    pub groups: Vec<GroupModel>,
}

/// A struct of another crate's group version, as a definition names it
/// (`core::v1::ObjectReference`): the written path, and what linking
/// ([`crate::parse::link_externs`]) found for it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ExternRef {
    /// The group's Rust module name, as written (`core`, `rbac_authorization_k8s_io`).
    pub group_module: String,
    /// The version, as written (`v1`).
    pub version: String,
    /// The struct, as written (`ObjectReference`).
    pub name: String,
    /// The Rust name of the crate that defines it (`kubernetes_api`); empty until linked.
    pub rust_crate: String,
    /// The protobuf package of its version (`k8s.io.api.core.v1`); empty until linked.
    pub proto_package: String,
    /// Its OpenAPI definition name (`io.k8s.api.core.v1.ObjectReference`); empty until linked.
    pub openapi_name: String,
}

impl ExternRef {
    /// The path as written in a definition: `core::v1::ObjectReference`.
    pub fn path(&self) -> String {
        format!("{}::{}::{}", self.group_module, self.version, self.name)
    }
}

impl ApiModel {
    /// The extern crate, group and version an [`ExternRef`] names (by group module name and
    /// version), if one of [`ApiModel::externs`] has it.
    pub fn extern_version(
        &self,
        r: &ExternRef,
    ) -> Option<(&ExternCrate, &GroupModel, &VersionModel)> {
        self.externs.iter().find_map(|c| {
            let g = c
                .groups
                .iter()
                .find(|g| g.module_name() == r.group_module)?;
            let v = g.version(&r.version)?;
            Some((c, g, v))
        })
    }
}
