//! Resources served by other servers behind this one (an aggregator's remote APIServices), as
//! the server's own controllers reach them, the way kube-controller-manager reaches them
//! through kube-apiserver:
//!
//! - what those servers serve, from the aggregated discovery entries the aggregator last
//!   fetched ([`discover`]): client-go's `ServerPreferredResources` over aggregated discovery,
//!   one version per group and resource (the first, in the group's order of versions, that
//!   serves it), and every group version whose entry is `Stale` reported failed as client-go
//!   reports it ([`RemoteDiscovery::error`]);
//! - requests to them as a given user ([`RemoteResources::send`]), through the same proxy and
//!   identity headers as a client's, and a metadata client over that ([`RemoteClient`]: list,
//!   delete, deletecollection, with client-go's errors).
//!
//! The bundle that proxies to those servers (the aggregator) implements [`RemoteResources`]
//! and installs it with
//! [`Registry::set_remote_resources`](crate::registry::Registry::set_remote_resources); a
//! controller that must reach every resource (the namespace controller) reads it from the
//! registry when it needs it, so the order in which bundles are installed does not matter.
//!
//! ```
//! use std::collections::BTreeMap;
//! use serde_json::json;
//! use server::genericserver::discovery::{DirectorySnapshot, Freshness, RemoteVersion};
//! use server::genericserver::remote_resources::discover;
//!
//! let snapshot = DirectorySnapshot {
//!     priorities: BTreeMap::new(),
//!     remote: vec![
//!         RemoteVersion {
//!             group: "wardle.example.com".into(),
//!             version: "v1alpha1".into(),
//!             discovery: Some(json!({"version": "v1alpha1", "resources": [{
//!                 "resource": "flunders", "scope": "Namespaced",
//!                 "responseKind": {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"},
//!                 "verbs": ["delete", "deletecollection", "get", "list"],
//!             }]})),
//!             freshness: Freshness::Current,
//!         },
//!         RemoteVersion {
//!             group: "metrics.k8s.io".into(),
//!             version: "v1beta1".into(),
//!             discovery: None,
//!             freshness: Freshness::Stale,
//!         },
//!     ],
//! };
//! let found = discover(&snapshot);
//! assert_eq!(found.resources[0].resource, "flunders");
//! assert_eq!(
//!     found.error().as_deref(),
//!     Some("unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1")
//! );
//! ```

mod client;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use apimachinery::user::UserInfo;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

use super::discovery::{DirectorySnapshot, Freshness};

pub use client::{RemoteClient, RemoteItem};

/// One resource another server serves, as discovery lists it (client-go's `APIResource` with
/// its group version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteResource {
    /// The group.
    pub group: String,
    /// The version (the first of the group's versions that serves the resource).
    pub version: String,
    /// The resource (plural) name.
    pub resource: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// The verbs it supports.
    pub verbs: Vec<String>,
}

impl RemoteResource {
    /// Whether it supports `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// `<group>/<version>, Resource=<resource>`, as Go prints a `GroupVersionResource`.
    pub fn gvr_string(&self) -> String {
        format!(
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }

    /// The path of its collection in `namespace` (all namespaces, or a cluster-scoped
    /// resource, when `namespace` is empty).
    pub fn collection_path(&self, namespace: &str) -> String {
        if namespace.is_empty() || !self.namespaced {
            format!("/apis/{}/{}/{}", self.group, self.version, self.resource)
        } else {
            format!(
                "/apis/{}/{}/namespaces/{namespace}/{}",
                self.group, self.version, self.resource
            )
        }
    }
}

/// What discovery of the remote group versions found: the resources of those whose discovery
/// is current, and those whose discovery failed, with why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteDiscovery {
    /// Every resource (subresources left out), one version per group and resource.
    pub resources: Vec<RemoteResource>,
    /// `"<group>/<version>"` → why its discovery failed (client-go's
    /// `ErrGroupDiscoveryFailed.Groups`).
    pub failed: BTreeMap<String, String>,
}

impl RemoteDiscovery {
    /// The namespaced resources.
    pub fn namespaced(&self) -> impl Iterator<Item = &RemoteResource> {
        self.resources.iter().filter(|r| r.namespaced)
    }

    /// client-go's `ErrGroupDiscoveryFailed` message when some group version failed:
    /// `unable to retrieve the complete list of server APIs: <gv>: <why>, …` (sorted).
    pub fn error(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let mut groups: Vec<String> = self
            .failed
            .iter()
            .map(|(gv, why)| format!("{gv}: {why}"))
            .collect();
        groups.sort();
        Some(format!(
            "unable to retrieve the complete list of server APIs: {}",
            groups.join(", ")
        ))
    }
}

/// client-go's `StaleGroupVersionError` text.
pub fn stale_message(group: &str, version: &str) -> String {
    format!("stale GroupVersion discovery: {group}/{version}")
}

/// The remote resources of `snapshot` (see the [module docs](self)): a `Stale` group version
/// is failed and its resources left out (client-go's `SplitGroupsAndResources`); a resource
/// without a `responseKind` is left out (its `convertAPIResource`); each group and resource is
/// served through the first version, in the group's order ([`DirectorySnapshot::sort_versions`]),
/// that lists it (its `ServerPreferredResources`).
pub fn discover(snapshot: &DirectorySnapshot) -> RemoteDiscovery {
    let mut found = RemoteDiscovery::default();
    let mut by_group: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut entries: BTreeMap<(&str, &str), &Value> = BTreeMap::new();
    for remote in &snapshot.remote {
        if remote.group.is_empty() {
            continue;
        }
        if remote.freshness == Freshness::Stale {
            found.failed.insert(
                format!("{}/{}", remote.group, remote.version),
                stale_message(&remote.group, &remote.version),
            );
            continue;
        }
        by_group
            .entry(&remote.group)
            .or_default()
            .push(remote.version.clone());
        if let Some(entry) = &remote.discovery {
            entries.insert((&remote.group, &remote.version), entry);
        }
    }
    for (group, mut versions) in by_group {
        snapshot.sort_versions(group, &mut versions);
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for version in &versions {
            let Some(entry) = entries.get(&(group, version.as_str())) else {
                continue;
            };
            for resource in entry["resources"].as_array().into_iter().flatten() {
                let Some(name) = resource["resource"].as_str() else {
                    continue;
                };
                if name.contains('/') || !has_response_kind(resource) || !seen.insert(name.into()) {
                    continue;
                }
                found.resources.push(RemoteResource {
                    group: group.to_string(),
                    version: version.clone(),
                    resource: name.to_string(),
                    namespaced: resource["scope"] == "Namespaced",
                    verbs: string_array(&resource["verbs"]),
                });
            }
        }
    }
    found
}

/// Whether an aggregated discovery resource names its kind (client-go leaves out one that
/// does not, or names the empty kind kube-aggregator fills in).
fn has_response_kind(resource: &Value) -> bool {
    let kind = &resource["responseKind"];
    ["group", "version", "kind"]
        .iter()
        .any(|f| kind[f].as_str().is_some_and(|s| !s.is_empty()))
}

/// The resources other servers serve, and a way to send them requests (see the
/// [module docs](self)). The aggregator implements it over its APIServices.
#[async_trait]
pub trait RemoteResources: Send + Sync {
    /// What discovery of the remote group versions says now.
    fn discover(&self) -> RemoteDiscovery;

    /// Sends `request` (a path under `/apis/<group>/<version>` of a remote group version) to
    /// the server that serves it, as `user`, and returns its answer (a failure to reach it as
    /// the `Status` response a client would get, `503` for an unavailable server).
    async fn send(
        &self,
        user: Arc<UserInfo>,
        request: http::Request<Bytes>,
    ) -> http::Response<Bytes>;
}

/// The strings of a JSON array (none when `value` is not an array; non-strings skipped).
fn string_array(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}
