//! The route table: every REST path a server installs for a resource, derived from its
//! `ResourceInfo` ([`routes_of`]).
//!
//! A server may use `ResourceInfo` directly; this table spells out the paths and verbs in one
//! place (for discovery tests, documentation and the OpenAPI path check).

use crate::{ResourceInfo, Scope};

/// One resource or subresource and the paths that serve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteEntry {
    /// The resource this route belongs to.
    pub info: ResourceInfo,
    /// `None` for the resource itself, or `status` / `scale`.
    pub subresource: Option<&'static str>,
    /// The verbs served on this route, in Kubernetes' order.
    pub verbs: Vec<&'static str>,
    /// The collection path (list, create, watch, deletecollection), such as
    /// `/apis/example.dev/v1/namespaces/{namespace}/widgets`; empty for subresources.
    pub collection_path: String,
    /// The path of all namespaces' objects, for namespaced resources (list and watch only).
    pub all_namespaces_path: Option<String>,
    /// The item path (get, update, patch, delete), such as
    /// `/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}[/status]`; empty for
    /// create-only kinds.
    pub item_path: String,
}

/// The path prefix of a group version: `/api/v1` for core, `/apis/<group>/<version>` otherwise.
pub fn group_version_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The routes of one resource: the resource itself and its subresources.
pub fn routes_of(info: &ResourceInfo) -> Vec<RouteEntry> {
    let prefix = group_version_prefix(info.group, info.version);
    let scoped = match info.scope {
        Scope::Namespaced => format!("{prefix}/namespaces/{{namespace}}/{}", info.plural),
        Scope::Cluster => format!("{prefix}/{}", info.plural),
    };
    let all_namespaces = (info.scope == Scope::Namespaced && !info.create_only)
        .then(|| format!("{prefix}/{}", info.plural));
    let item = if info.create_only {
        String::new()
    } else {
        format!("{scoped}/{{name}}")
    };
    let verbs = if info.create_only {
        vec!["create"]
    } else {
        info.verbs.to_vec()
    };
    let mut out = vec![RouteEntry {
        info: info.clone(),
        subresource: None,
        verbs,
        collection_path: scoped.clone(),
        all_namespaces_path: all_namespaces,
        item_path: item.clone(),
    }];
    let sub = |name: &'static str| RouteEntry {
        info: info.clone(),
        subresource: Some(name),
        verbs: vec!["get", "patch", "update"],
        collection_path: String::new(),
        all_namespaces_path: None,
        item_path: format!("{item}/{name}"),
    };
    if info.status_subresource && !info.create_only {
        out.push(sub("status"));
    }
    if info.scale.is_some() && !info.create_only {
        out.push(sub("scale"));
    }
    out
}
