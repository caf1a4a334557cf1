//! [`ApiServiceTable`]: what the aggregator knows of every APIService — its group/version,
//! where it is served (locally, or by a Service), its priorities and whether it is available —
//! shared by the proxy, the availability controller and merged discovery.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use apiregistration_api::apiregistration_k8s_io::v1::APIService;
use apiregistration_api::conditions::{AVAILABLE, condition};
use parking_lot::RwLock;
use tokio::sync::watch;

/// The Service an APIService's requests go to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceTarget {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service's port (443 unless the APIService names another).
    pub port: i32,
    /// The PEM bundle the serving certificate is verified against (empty: the system roots);
    /// shared, as the proxy reads the entry on every request.
    pub ca_bundle: Arc<[u8]>,
    /// Whether the serving certificate is not verified at all.
    pub insecure_skip_tls_verify: bool,
}

/// One APIService as the aggregator uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiServiceEntry {
    /// The APIService's name (`<version>.<group>`).
    pub name: String,
    /// The API group (empty for the legacy core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The Service serving the group/version; `None` when the chain serves it locally.
    pub service: Option<ServiceTarget>,
    /// `spec.groupPriorityMinimum`.
    pub group_priority_minimum: i32,
    /// `spec.versionPriority`.
    pub version_priority: i32,
    /// Whether the `Available` condition is `True`.
    pub available: bool,
    /// The `Available` condition's reason (empty without one).
    pub reason: String,
    /// The `Available` condition's message (empty without one).
    pub message: String,
}

impl ApiServiceEntry {
    /// The entry of an APIService object.
    pub fn of(service: &APIService) -> Self {
        let spec = &service.spec;
        let available = condition(service, AVAILABLE);
        Self {
            name: service.metadata.name.clone().unwrap_or_default(),
            group: spec.group.clone().unwrap_or_default(),
            version: spec.version.clone().unwrap_or_default(),
            service: spec.service.as_ref().map(|s| ServiceTarget {
                namespace: s.namespace.clone().unwrap_or_default(),
                name: s.name.clone().unwrap_or_default(),
                port: s.port.unwrap_or(443),
                ca_bundle: spec
                    .ca_bundle
                    .as_ref()
                    .map(|b| Arc::from(b.0.as_slice()))
                    .unwrap_or_else(|| Arc::from(Vec::new())),
                insecure_skip_tls_verify: spec.insecure_skip_tls_verify.unwrap_or(false),
            }),
            group_priority_minimum: spec.group_priority_minimum,
            version_priority: spec.version_priority,
            available: available.is_some_and(|c| c.status == "True"),
            reason: available.and_then(|c| c.reason.clone()).unwrap_or_default(),
            message: available
                .and_then(|c| c.message.clone())
                .unwrap_or_default(),
        }
    }

    /// Whether the entry's requests are proxied (it names a Service).
    pub fn is_remote(&self) -> bool {
        self.service.is_some()
    }
}

/// The APIServices by name, as one immutable snapshot.
pub type Snapshot = Arc<BTreeMap<String, ApiServiceEntry>>;

/// Every APIService the aggregator knows, kept by the availability controller from the stored
/// objects (each change of an APIService or of its availability replaces its entry).
///
/// Readers take a [`Snapshot`] (one `Arc` clone) and may wait for the next change with
/// [`ApiServiceTable::subscribe`]; merged discovery orders groups and versions from the
/// entries' priorities ([`ApiServiceTable::sorted_by_group_and_version`]).
#[derive(Debug)]
pub struct ApiServiceTable {
    entries: RwLock<Snapshot>,
    changes: watch::Sender<u64>,
    /// Whether some entry names a Service (the proxy looks at nothing else otherwise).
    has_remote: AtomicBool,
}

impl Default for ApiServiceTable {
    fn default() -> Self {
        Self {
            entries: RwLock::new(Arc::default()),
            changes: watch::channel(0).0,
            has_remote: AtomicBool::new(false),
        }
    }
}

impl ApiServiceTable {
    /// Every entry, by APIService name.
    pub fn snapshot(&self) -> Snapshot {
        Arc::clone(&self.entries.read())
    }

    /// The entry of the APIService `name`.
    pub fn get(&self, name: &str) -> Option<ApiServiceEntry> {
        self.entries.read().get(name).cloned()
    }

    /// The entry for `group`/`version`, if an APIService registers it.
    pub fn for_group_version(&self, group: &str, version: &str) -> Option<ApiServiceEntry> {
        let entries = self.entries.read();
        let name = format!("{version}.{group}");
        entries
            .get(&name)
            .filter(|e| e.group == group && e.version == version)
            .cloned()
    }

    /// Whether some APIService names a Service.
    pub fn has_remote(&self) -> bool {
        self.has_remote.load(Ordering::Acquire)
    }

    /// The entry of the APIService with a Service that registers `group`/`version`, if any.
    pub fn remote(&self, group: &str, version: &str) -> Option<ApiServiceEntry> {
        self.for_group_version(group, version)
            .filter(ApiServiceEntry::is_remote)
    }

    /// Replaces (or adds) the entry of `entry.name`; readers are told when it changed.
    pub fn set(&self, entry: ApiServiceEntry) {
        let mut entries = self.entries.write();
        if entries.get(&entry.name) == Some(&entry) {
            return;
        }
        Arc::make_mut(&mut entries).insert(entry.name.clone(), entry);
        self.has_remote.store(
            entries.values().any(ApiServiceEntry::is_remote),
            Ordering::Release,
        );
        drop(entries);
        self.changes.send_modify(|g| *g += 1);
    }

    /// Removes the entry of `name`; readers are told when there was one.
    pub fn remove(&self, name: &str) {
        let mut entries = self.entries.write();
        if !entries.contains_key(name) {
            return;
        }
        Arc::make_mut(&mut entries).remove(name);
        self.has_remote.store(
            entries.values().any(ApiServiceEntry::is_remote),
            Ordering::Release,
        );
        drop(entries);
        self.changes.send_modify(|g| *g += 1);
    }

    /// A receiver that sees a new value after every change of the table.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The entries grouped by API group, as kube-aggregator's `SortedByGroupAndVersion`: groups
    /// by their highest `groupPriorityMinimum` (then by the first APIService's name), each
    /// group's versions by `versionPriority` then by Kubernetes' version order.
    pub fn sorted_by_group_and_version(&self) -> Vec<Vec<ApiServiceEntry>> {
        sorted_by_group_and_version(self.snapshot().values().cloned().collect())
    }
}

/// kube-aggregator's `SortedByGroupAndVersion` over `entries`.
pub fn sorted_by_group_and_version(mut entries: Vec<ApiServiceEntry>) -> Vec<Vec<ApiServiceEntry>> {
    entries.sort_by(|a, b| {
        b.group_priority_minimum
            .cmp(&a.group_priority_minimum)
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut groups: Vec<Vec<ApiServiceEntry>> = Vec::new();
    for entry in entries {
        match groups.iter_mut().find(|g| g[0].group == entry.group) {
            Some(group) => {
                group.push(entry);
                group.sort_by(|a, b| {
                    b.version_priority.cmp(&a.version_priority).then_with(|| {
                        server::genericserver::discovery::compare_kube_versions(
                            &a.version, &b.version,
                        )
                    })
                });
            }
            None => groups.push(vec![entry]),
        }
    }
    groups
}
