//! [`AggregatedApis`]: the table an aggregator fills with its APIServices, which the generic
//! server reads as its discovery [`ApiGroupDirectory`] and its [`RemoteOpenApiSource`].
//!
//! For every APIService the aggregator sets its group version's priorities (local APIServices
//! too: they order the server's own groups). For a remote one (`spec.service` set) it fetches
//! the documents of its server (a [`RemoteServer`]) now and then and hands the result to
//! [`AggregatedApis::apply`]; when the APIService goes (or becomes local) it calls
//! [`AggregatedApis::remove`]. The generation moves only when something served changes, so a
//! refresh that finds the same documents costs no rebuild.
//!
//! ```no_run
//! # async fn example(server: &mut server::genericserver::GenericServer, client: reqwest::Client) {
//! use std::sync::Arc;
//! use server::genericserver::aggregated::AggregatedApis;
//! use server::genericserver::discovery::Priority;
//! use server::genericserver::remote_documents::RemoteServer;
//!
//! let apis = Arc::new(AggregatedApis::default());
//! server.set_api_group_directory(apis.clone());
//! server.add_remote_openapi_source(apis.clone());
//!
//! // A local APIService (v1.apps-like): its priorities only.
//! apis.set_priority("example.dev", "v1", Priority { group_priority_minimum: 1000, version_priority: 15 });
//! // A remote one: priorities, then documents on every refresh.
//! let priority = Priority { group_priority_minimum: 2000, version_priority: 200 };
//! apis.set_priority("wardle.example.com", "v1alpha1", priority);
//! let wardle = RemoteServer::new(client, "https://127.0.0.1:8443");
//! let docs = wardle.fetch("wardle.example.com", "v1alpha1").await;
//! apis.apply("wardle.example.com", "v1alpha1", &docs);
//! # }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::RwLock;
use serde_json::Value;

use super::discovery::{ApiGroupDirectory, DirectorySnapshot, Freshness, Priority, RemoteVersion};
use super::openapi::{RemoteOpenApi, RemoteOpenApiSource};
use super::remote_documents::{FetchError, GroupVersionDocuments};

/// What is known of one remote group version.
#[derive(Clone, Debug, Default, PartialEq)]
struct Remote {
    discovery: Option<Value>,
    freshness: Freshness,
    v2: Option<Arc<Value>>,
    v3: Option<Bytes>,
    /// The last discovery error, for logs and conditions.
    error: Option<FetchError>,
}

#[derive(Default)]
struct Table {
    priorities: BTreeMap<(String, String), Priority>,
    remote: BTreeMap<(String, String), Remote>,
}

/// The aggregator's APIServices as discovery and OpenAPI see them (see the
/// [module docs](self)).
#[derive(Default)]
pub struct AggregatedApis {
    table: RwLock<Table>,
    generation: AtomicU64,
}

fn key(group: &str, version: &str) -> (String, String) {
    (group.to_string(), version.to_string())
}

impl AggregatedApis {
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Sets the priorities of a group version (an APIService's `groupPriorityMinimum` and
    /// `versionPriority`), local or remote.
    pub fn set_priority(&self, group: &str, version: &str, priority: Priority) {
        let mut table = self.table.write();
        if table.priorities.insert(key(group, version), priority) != Some(priority) {
            self.changed();
        }
    }

    /// Forgets a group version's priorities.
    pub fn remove_priority(&self, group: &str, version: &str) {
        if self
            .table
            .write()
            .priorities
            .remove(&key(group, version))
            .is_some()
        {
            self.changed();
        }
    }

    /// Records a fetch round of a remote group version: a fetched discovery entry makes it
    /// `Current`; a failed one makes it `Stale` with the last entry fetched (none if none
    /// ever was), as kube-aggregator's discovery manager does. A fetched OpenAPI document
    /// replaces the last one; a failed fetch keeps it (kube-openapi's `LastSuccess`), and a v3
    /// index that no longer lists the group version removes its v3 document.
    pub fn apply(&self, group: &str, version: &str, docs: &GroupVersionDocuments) {
        let mut table = self.table.write();
        let before = table.remote.get(&key(group, version)).cloned();
        let mut entry = before.clone().unwrap_or_default();
        match &docs.discovery {
            Ok(discovery) => {
                entry.discovery = Some(discovery.clone());
                entry.freshness = Freshness::Current;
                entry.error = None;
            }
            Err(e) => {
                entry.freshness = Freshness::Stale;
                entry.error = Some(e.clone());
            }
        }
        if let Ok(v2) = &docs.openapi_v2 {
            entry.v2 = Some(Arc::clone(v2));
        }
        if let Ok(v3) = &docs.openapi_v3 {
            entry.v3 = v3.clone();
        }
        // The error alone does not change what is served.
        let served_changed = before.as_ref().is_none_or(|b| {
            b.discovery != entry.discovery
                || b.freshness != entry.freshness
                || !same_arc(&b.v2, &entry.v2)
                || b.v3 != entry.v3
        });
        table.remote.insert(key(group, version), entry);
        if served_changed {
            self.changed();
        }
    }

    /// Marks a remote group version `Stale` (its server cannot be reached, or its service is
    /// gone), keeping what was last fetched; lists it with no resources if nothing was.
    pub fn mark_stale(&self, group: &str, version: &str, error: FetchError) {
        let mut table = self.table.write();
        let entry = table.remote.entry(key(group, version)).or_default();
        let was = entry.freshness;
        let new = entry.discovery.is_none() && entry.error.is_none();
        entry.freshness = Freshness::Stale;
        entry.error = Some(error);
        if was != Freshness::Stale || new {
            self.changed();
        }
    }

    /// Removes a remote group version from discovery and OpenAPI (its APIService was deleted
    /// or became local). Its priorities stay until [`AggregatedApis::remove_priority`].
    pub fn remove(&self, group: &str, version: &str) {
        if self
            .table
            .write()
            .remote
            .remove(&key(group, version))
            .is_some()
        {
            self.changed();
        }
    }

    /// Why the last discovery fetch of a remote group version failed, if it did.
    pub fn last_error(&self, group: &str, version: &str) -> Option<FetchError> {
        self.table
            .read()
            .remote
            .get(&key(group, version))
            .and_then(|r| r.error.clone())
    }

    /// The freshness of a remote group version, or `None` if it is not remote.
    pub fn freshness(&self, group: &str, version: &str) -> Option<Freshness> {
        self.table
            .read()
            .remote
            .get(&key(group, version))
            .map(|r| r.freshness)
    }
}

/// The same document: one `Arc`, or equal content.
fn same_arc(a: &Option<Arc<Value>>, b: &Option<Arc<Value>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
        (None, None) => true,
        _ => false,
    }
}

impl ApiGroupDirectory for AggregatedApis {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn snapshot(&self) -> DirectorySnapshot {
        let table = self.table.read();
        DirectorySnapshot {
            priorities: table.priorities.clone(),
            remote: table
                .remote
                .iter()
                .map(|((group, version), r)| RemoteVersion {
                    group: group.clone(),
                    version: version.clone(),
                    discovery: r.discovery.clone(),
                    freshness: r.freshness,
                })
                .collect(),
        }
    }
}

impl RemoteOpenApiSource for AggregatedApis {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn documents(&self) -> Vec<RemoteOpenApi> {
        let table = self.table.read();
        table
            .remote
            .iter()
            .map(|((group, version), r)| RemoteOpenApi {
                group: group.clone(),
                version: version.clone(),
                priority: table
                    .priorities
                    .get(&key(group, version))
                    .copied()
                    .unwrap_or(Priority {
                        group_priority_minimum: 0,
                        version_priority: 0,
                    }),
                v2: r.v2.clone(),
                v3: r.v3.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn docs(discovery: Result<Value, FetchError>) -> GroupVersionDocuments {
        GroupVersionDocuments {
            discovery,
            openapi_v2: Ok(Arc::new(json!({"paths": {}}))),
            openapi_v3: Ok(Some(Bytes::from_static(b"{}"))),
        }
    }

    fn failed() -> FetchError {
        FetchError::Request {
            url: "https://127.0.0.1:1/apis".into(),
            message: "connection refused".into(),
        }
    }

    fn generation(apis: &AggregatedApis) -> u64 {
        ApiGroupDirectory::generation(apis)
    }

    #[test]
    fn generation_moves_only_when_something_served_changes() {
        let apis = AggregatedApis::default();
        let g0 = generation(&apis);
        let p = Priority {
            group_priority_minimum: 2000,
            version_priority: 200,
        };
        apis.set_priority("w.example", "v1", p);
        let g1 = generation(&apis);
        assert!(g1 > g0);
        apis.set_priority("w.example", "v1", p);
        assert_eq!(generation(&apis), g1);
        let entry = json!({"version": "v1", "resources": []});
        apis.apply("w.example", "v1", &docs(Ok(entry.clone())));
        let g2 = generation(&apis);
        assert!(g2 > g1);
        // The same documents again (a refresh that found nothing new).
        apis.apply("w.example", "v1", &docs(Ok(entry.clone())));
        assert_eq!(generation(&apis), g2);
        assert_eq!(RemoteOpenApiSource::generation(&apis), g2);
    }

    #[test]
    fn failed_fetches_go_stale_keeping_the_last_documents() {
        let apis = AggregatedApis::default();
        let entry = json!({"version": "v1", "resources": [{"resource": "things"}]});
        apis.apply("w.example", "v1", &docs(Ok(entry.clone())));
        let mut failing = docs(Err(failed()));
        failing.openapi_v2 = Err(failed());
        failing.openapi_v3 = Err(failed());
        apis.apply("w.example", "v1", &failing);
        assert_eq!(apis.freshness("w.example", "v1"), Some(Freshness::Stale));
        assert_eq!(apis.last_error("w.example", "v1"), Some(failed()));
        let snapshot = apis.snapshot();
        assert_eq!(snapshot.remote[0].discovery, Some(entry));
        assert_eq!(snapshot.remote[0].freshness, Freshness::Stale);
        let openapi = apis.documents();
        assert!(openapi[0].v2.is_some() && openapi[0].v3.is_some());

        // Never fetched and failing: listed, stale, with nothing.
        apis.mark_stale("x.example", "v1", failed());
        let snapshot = apis.snapshot();
        let x = snapshot
            .remote
            .iter()
            .find(|r| r.group == "x.example")
            .unwrap();
        assert_eq!((x.discovery.clone(), x.freshness), (None, Freshness::Stale));
        let g = generation(&apis);
        apis.mark_stale("x.example", "v1", failed());
        assert_eq!(generation(&apis), g);
    }

    #[test]
    fn removal_leaves_discovery_and_openapi() {
        let apis = AggregatedApis::default();
        apis.apply("w.example", "v1", &docs(Ok(json!({"version": "v1"}))));
        let g = generation(&apis);
        apis.remove("w.example", "v1");
        assert!(generation(&apis) > g);
        assert!(apis.snapshot().remote.is_empty());
        assert!(apis.documents().is_empty());
        assert_eq!(apis.freshness("w.example", "v1"), None);
    }

    #[test]
    fn a_v3_index_without_the_group_version_drops_its_document() {
        let apis = AggregatedApis::default();
        apis.apply("w.example", "v1", &docs(Ok(json!({"version": "v1"}))));
        let mut without = docs(Ok(json!({"version": "v1"})));
        without.openapi_v3 = Ok(None);
        apis.apply("w.example", "v1", &without);
        assert!(apis.documents()[0].v3.is_none());
    }
}
