//! What discovery learns from the aggregator: the priority of every group version (the
//! `groupPriorityMinimum` and `versionPriority` of its APIService, local or remote) and the
//! group versions other servers serve, with the aggregated discovery entries last fetched from
//! them.
//!
//! The order follows kube-aggregator:
//!
//! - aggregated discovery (`apidiscovery.k8s.io` v2/v2beta1 on `/apis`) lists groups by the
//!   highest `groupPriorityMinimum` among their versions (descending), then by group name
//!   (k8s.io/apiserver's `resourceDiscoveryManager.calculateAPIGroupsLocked`);
//! - the legacy `APIGroupList` of `/apis` lists them as `SortedByGroupAndVersion` sorts their
//!   APIServices: by `groupPriorityMinimum` (descending), then by the APIService's name
//!   (`<version>.<group>`), a group taking the place of its first APIService;
//! - within a group, versions go by `versionPriority` (descending), then by Kubernetes' version
//!   order ([`compare_kube_versions`]); the preferred version is the first.
//!
//! The table may name every group (the aggregator registers a local APIService for each group
//! the chain serves, as kube-aggregator's autoregistration does). A group with no entry at all
//! comes after every group with one, in the order a server without a directory lists it (the
//! scheme's groups in registration order, then the run-time groups by name); within a group, a
//! version with no entry comes after the versions with one, in Kubernetes' version order. A
//! server without a directory lists exactly what it listed before.
//!
//! kube-aggregator gives `apiregistration.k8s.io` the priority 20001 in aggregated discovery
//! (`APIRegistrationGroupPriority`, above the 20000 an APIService may have) and lists it first
//! in the legacy list; a directory that gives it 20001 gets both.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use super::compare_kube_versions;

/// The priorities an APIService gives its group version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priority {
    /// `spec.groupPriorityMinimum`: the group's place among groups (higher first); a group
    /// takes the highest among its versions.
    pub group_priority_minimum: i32,
    /// `spec.versionPriority`: the version's place within its group (higher first).
    pub version_priority: i32,
}

/// How current a remote group version's discovery is: aggregated discovery's `freshness`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Freshness {
    /// The last fetch succeeded (`Current`).
    #[default]
    Current,
    /// The last fetch failed; the entry is the last one fetched, or has no resources if none
    /// ever was (`Stale`). client-go leaves the version out and reports it failed, so
    /// `kubectl api-resources` prints "unable to retrieve the complete list of server APIs:
    /// <group>/<version>: stale GroupVersion discovery: <group>/<version>".
    Stale,
}

impl Freshness {
    /// The value of the `freshness` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Current => "Current",
            Freshness::Stale => "Stale",
        }
    }
}

/// One group version served by another server, as discovery lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteVersion {
    /// The group (never empty: the legacy core group is always served locally, and an entry
    /// with an empty group is ignored).
    pub group: String,
    /// The version.
    pub version: String,
    /// The `APIVersionDiscovery` object (aggregated discovery v2, the same in v2beta1) the
    /// remote server published for this group version, as fetched: `{"version": …,
    /// "resources": […]}`; its `freshness` is replaced by [`RemoteVersion::freshness`]. `None`
    /// when nothing was ever fetched: the version is then listed with no resources.
    pub discovery: Option<Value>,
    /// Whether the last fetch succeeded.
    pub freshness: Freshness,
}

/// What discovery lists beside the local kinds: the priorities of every group version and the
/// group versions served elsewhere (an aggregator's APIServices). The documents are built again
/// on the first discovery request after the generation moves.
///
/// `/apis` (both forms) and `/apis/<group>` include the remote versions (as kube-aggregator
/// serves `/apis/<group>` from its APIServices); `/apis/<group>/<version>` of a remote version
/// is not answered by discovery (`Discovery::serve` returns `None`), since kube-aggregator
/// proxies it to the server that serves it. A remote version that the server also serves
/// locally replaces the local one in discovery.
///
/// ```
/// use std::collections::BTreeMap;
/// use server::genericserver::discovery::{
///     ApiGroupDirectory, DirectorySnapshot, Freshness, Priority, RemoteVersion,
/// };
///
/// struct Fixed;
///
/// impl ApiGroupDirectory for Fixed {
///     fn generation(&self) -> u64 {
///         1
///     }
///
///     fn snapshot(&self) -> DirectorySnapshot {
///         let mut priorities = BTreeMap::new();
///         priorities.insert(
///             ("wardle.example.com".to_string(), "v1alpha1".to_string()),
///             Priority { group_priority_minimum: 2000, version_priority: 200 },
///         );
///         DirectorySnapshot {
///             priorities,
///             remote: vec![RemoteVersion {
///                 group: "wardle.example.com".into(),
///                 version: "v1alpha1".into(),
///                 discovery: None,
///                 freshness: Freshness::Stale,
///             }],
///         }
///     }
/// }
/// ```
pub trait ApiGroupDirectory: Send + Sync + 'static {
    /// A number that increases whenever the snapshot changes.
    fn generation(&self) -> u64;

    /// The priorities and remote group versions now.
    fn snapshot(&self) -> DirectorySnapshot;
}

/// A directory's contents at one generation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectorySnapshot {
    /// `(group, version)` → its priorities, for local and remote group versions alike.
    pub priorities: BTreeMap<(String, String), Priority>,
    /// The group versions served elsewhere.
    pub remote: Vec<RemoteVersion>,
}

impl DirectorySnapshot {
    fn priority(&self, group: &str, version: &str) -> Option<Priority> {
        // One allocation-free lookup would need a borrowed tuple key; the table is small and
        // this runs only when the documents are built.
        self.priorities
            .get(&(group.to_string(), version.to_string()))
            .copied()
    }

    /// Sorts a group's versions: those with a priority by `versionPriority` (descending), then
    /// Kubernetes' version order; those without after them, in Kubernetes' version order.
    pub fn sort_versions(&self, group: &str, versions: &mut [String]) {
        versions.sort_by(|a, b| {
            match (self.priority(group, a), self.priority(group, b)) {
                (Some(pa), Some(pb)) => pb.version_priority.cmp(&pa.version_priority),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
            .then_with(|| compare_kube_versions(a, b))
        });
    }

    /// The highest `groupPriorityMinimum` among `versions` of `group`, if any has one.
    fn group_priority(&self, group: &str, versions: &[String]) -> Option<i32> {
        versions
            .iter()
            .filter_map(|v| self.priority(group, v))
            .map(|p| p.group_priority_minimum)
            .max()
    }

    /// The order of groups in aggregated discovery: `groups` (name, versions) in their current
    /// order; returns the indices sorted. Groups with a priority come first, by the highest
    /// `groupPriorityMinimum` (descending), then by name; the others keep their order.
    pub fn aggregated_order(&self, groups: &[(&str, &[String])]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by(|&i, &j| {
            let (gi, vi) = groups[i];
            let (gj, vj) = groups[j];
            match (self.group_priority(gi, vi), self.group_priority(gj, vj)) {
                (Some(pi), Some(pj)) => pj.cmp(&pi).then_with(|| gi.cmp(gj)),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => i.cmp(&j),
            }
        });
        order
    }

    /// The order of groups in the legacy `APIGroupList`, as kube-aggregator's
    /// `SortedByGroupAndVersion`: a group goes where its first APIService by
    /// (`groupPriorityMinimum` descending, APIService name `<version>.<group>`) goes. Groups
    /// without a priority keep their order after the others.
    pub fn legacy_order(&self, groups: &[(&str, &[String])]) -> Vec<usize> {
        let key = |group: &str, versions: &[String]| -> Option<(i32, String)> {
            versions
                .iter()
                .filter_map(|v| {
                    self.priority(group, v)
                        .map(|p| (-p.group_priority_minimum, format!("{v}.{group}")))
                })
                .min()
        };
        let keys: Vec<Option<(i32, String)>> = groups.iter().map(|(g, v)| key(g, v)).collect();
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by(|&i, &j| match (&keys[i], &keys[j]) {
            (Some(ki), Some(kj)) => ki.cmp(kj),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => i.cmp(&j),
        });
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(entries: &[(&str, &str, i32, i32)]) -> DirectorySnapshot {
        DirectorySnapshot {
            priorities: entries
                .iter()
                .map(|(g, v, gp, vp)| {
                    (
                        (g.to_string(), v.to_string()),
                        Priority {
                            group_priority_minimum: *gp,
                            version_priority: *vp,
                        },
                    )
                })
                .collect(),
            remote: Vec::new(),
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions_by_priority_then_kube_order_then_unlisted() {
        let s = snapshot(&[
            ("g", "v1", 1000, 15),
            ("g", "v1beta1", 1000, 20),
            ("g", "v2", 1000, 15),
        ]);
        let mut versions = strings(&["v1alpha1", "v1", "v3", "v1beta1", "v2"]);
        s.sort_versions("g", &mut versions);
        assert_eq!(
            versions,
            strings(&["v1beta1", "v2", "v1", "v3", "v1alpha1"])
        );
    }

    #[test]
    fn aggregated_groups_by_highest_priority_then_name() {
        let s = snapshot(&[
            ("b.example", "v1", 100, 15),
            ("b.example", "v2", 3000, 15),
            ("a.example", "v1", 3000, 15),
            ("c.example", "v1", 2000, 15),
        ]);
        let v1 = strings(&["v1"]);
        let v12 = strings(&["v1", "v2"]);
        let groups: Vec<(&str, &[String])> = vec![
            ("unlisted.z", &v1),
            ("c.example", &v1),
            ("b.example", &v12),
            ("unlisted.a", &v1),
            ("a.example", &v1),
        ];
        let order: Vec<&str> = s
            .aggregated_order(&groups)
            .into_iter()
            .map(|i| groups[i].0)
            .collect();
        assert_eq!(
            order,
            vec![
                "a.example",
                "b.example",
                "c.example",
                "unlisted.z",
                "unlisted.a"
            ]
        );
    }

    #[test]
    fn legacy_groups_by_priority_then_apiservice_name() {
        // Same priority: "v1.b.example" sorts before "v1alpha1.a.example" ('.' < 'a'), so the
        // legacy list differs from the aggregated one, as in kube-aggregator.
        let s = snapshot(&[
            ("a.example", "v1alpha1", 1000, 15),
            ("b.example", "v1", 1000, 15),
            ("apiregistration.k8s.io", "v1", 20001, 0),
        ]);
        let va = strings(&["v1alpha1"]);
        let vb = strings(&["v1"]);
        let groups: Vec<(&str, &[String])> = vec![
            ("a.example", &va),
            ("b.example", &vb),
            ("apiregistration.k8s.io", &vb),
        ];
        let legacy: Vec<&str> = s
            .legacy_order(&groups)
            .into_iter()
            .map(|i| groups[i].0)
            .collect();
        assert_eq!(
            legacy,
            vec!["apiregistration.k8s.io", "b.example", "a.example"]
        );
        let aggregated: Vec<&str> = s
            .aggregated_order(&groups)
            .into_iter()
            .map(|i| groups[i].0)
            .collect();
        assert_eq!(
            aggregated,
            vec!["apiregistration.k8s.io", "a.example", "b.example"]
        );
    }
}
