//! Keeps the RBAC [`Snapshot`] current: per RBAC kind, a list and a watch from its revision on
//! the registry's watch cache (a reflector), each change applied to the [`Sources`] and
//! published as a new snapshot once the events ready at that moment are applied. A watch that
//! ends (or expires) is started again from a new list, which replaces the kind's objects.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::rbac::PolicyRule;
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use futures::{FutureExt, StreamExt};
use kubernetes_api::rbac_authorization_k8s_io::{
    CLUSTER_ROLE_BINDING_KIND, CLUSTER_ROLE_KIND, ROLE_BINDING_KIND, ROLE_KIND, v1,
};
use parking_lot::Mutex;
use storage::interface::{ListOptions, WatchEvent};

use super::RbacAuthorizer;
use super::snapshot::{Binding, Dirty, Snapshot, Sources, Subject};
use server::registry::{Registry, Store};

/// How long to wait before watching again after a watch failed or ended.
const RETRY: Duration = Duration::from_secs(1);

/// The four RBAC kinds the index is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Which {
    const ALL: [Which; 4] = [
        Which::Role,
        Which::ClusterRole,
        Which::RoleBinding,
        Which::ClusterRoleBinding,
    ];

    fn kind(self) -> &'static Kind {
        match self {
            Which::Role => &ROLE_KIND,
            Which::ClusterRole => &CLUSTER_ROLE_KIND,
            Which::RoleBinding => &ROLE_BINDING_KIND,
            Which::ClusterRoleBinding => &CLUSTER_ROLE_BINDING_KIND,
        }
    }

    fn clear(self, sources: &mut Sources) {
        match self {
            Which::Role => sources.roles.clear(),
            Which::ClusterRole => sources.cluster_roles.clear(),
            Which::RoleBinding => sources.bindings.clear(),
            Which::ClusterRoleBinding => sources.cluster_bindings.clear(),
        }
    }
}

/// The rules of a role, in the authorizer's form.
pub fn rules(rules: &[v1::PolicyRule]) -> Vec<PolicyRule> {
    rules.iter().map(PolicyRule::from).collect()
}

fn binding(
    meta: &apimachinery::meta::ObjectMeta,
    role_ref: &v1::RoleRef,
    subjects: &[v1::Subject],
) -> Binding {
    Binding {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        role_kind: role_ref.kind.clone(),
        role_name: role_ref.name.clone(),
        subjects: subjects
            .iter()
            .map(|s| Subject {
                kind: s.kind.clone(),
                name: s.name.clone(),
                namespace: s.namespace.clone().unwrap_or_default(),
            })
            .collect(),
    }
}

/// Adds (or, with `delete`, removes) one object of `which` in `sources`, and records what
/// changed in `dirty`.
fn apply(
    sources: &mut Sources,
    which: Which,
    object: &dyn Object,
    delete: bool,
    dirty: &mut Dirty,
) {
    let ns = object.metadata().namespace.clone().unwrap_or_default();
    let name = object.name().to_string();
    match which {
        Which::Role => dirty.roles = true,
        Which::ClusterRole => dirty.cluster_roles = true,
        Which::RoleBinding => {
            dirty.namespaces.insert(ns.clone());
        }
        Which::ClusterRoleBinding => dirty.cluster_bindings = true,
    }
    match which {
        Which::Role => {
            let key = (ns, name);
            match object.downcast_ref::<v1::Role>() {
                Some(r) if !delete => {
                    sources.roles.insert(key, Arc::new(rules(&r.rules)));
                }
                _ => {
                    sources.roles.remove(&key);
                }
            }
        }
        Which::ClusterRole => match object.downcast_ref::<v1::ClusterRole>() {
            Some(r) if !delete => {
                sources
                    .cluster_roles
                    .insert(name, Arc::new(rules(&r.rules)));
            }
            _ => {
                sources.cluster_roles.remove(&name);
            }
        },
        Which::RoleBinding => {
            let key = (ns, name);
            match object.downcast_ref::<v1::RoleBinding>() {
                Some(b) if !delete => {
                    let b = binding(&b.metadata, &b.role_ref, &b.subjects);
                    sources.bindings.insert(key, Arc::new(b));
                }
                _ => {
                    sources.bindings.remove(&key);
                }
            }
        }
        Which::ClusterRoleBinding => match object.downcast_ref::<v1::ClusterRoleBinding>() {
            Some(b) if !delete => {
                let b = binding(&b.metadata, &b.role_ref, &b.subjects);
                sources.cluster_bindings.insert(name, Arc::new(b));
            }
            _ => {
                sources.cluster_bindings.remove(&name);
            }
        },
    }
}

/// The shared state of the four watches.
struct Informer {
    authorizer: Arc<RbacAuthorizer>,
    sources: Mutex<Sources>,
    synced: Mutex<[bool; 4]>,
}

impl Informer {
    fn publish(&self, sources: &Sources, dirty: &Dirty) {
        if dirty.is_empty() {
            return;
        }
        let previous = self.authorizer.snapshot();
        self.authorizer
            .publish(Snapshot::update(&previous, sources, dirty));
    }

    fn mark_synced(&self, which: Which) {
        let mut synced = self.synced.lock();
        if let Some(i) = Which::ALL.iter().position(|w| *w == which) {
            synced[i] = true;
        }
        if synced.iter().all(|s| *s) {
            self.authorizer.mark_synced();
        }
    }

    async fn run(self: Arc<Self>, which: Which, store: Arc<Store>) {
        loop {
            if let Err(e) = self.watch_once(which, &store).await {
                tracing::warn!(kind = which.kind().storage_info().kind, error = %e, "RBAC watch failed");
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Lists the kind (a consistent read), replaces its objects with the list, then watches
    /// from the list's revision until the stream ends, applying every change as it comes (a
    /// reflector's list and watch).
    async fn watch_once(&self, which: Which, store: &Store) -> Result<(), ApiError> {
        let listed = store.list_stored("", ListOptions::default()).await?;
        let mut fresh = Sources::default();
        let mut ignored = Dirty::default();
        for stored in &listed.items {
            apply(
                &mut fresh,
                which,
                &*store.decode(stored)?,
                false,
                &mut ignored,
            );
        }
        {
            let mut sources = self.sources.lock();
            which.clear(&mut sources);
            sources.roles.extend(fresh.roles);
            sources.cluster_roles.extend(fresh.cluster_roles);
            sources.bindings.extend(fresh.bindings);
            sources.cluster_bindings.extend(fresh.cluster_bindings);
            self.publish(
                &sources,
                &Dirty {
                    all: true,
                    ..Dirty::default()
                },
            );
        }
        self.mark_synced(which);
        let mut events = store
            .watch(
                &store.collection_key("")?,
                ListOptions {
                    resource_version: listed.resource_version.to_string(),
                    recursive: true,
                    allow_bookmarks: true,
                    ..ListOptions::default()
                },
            )
            .await?;
        while let Some(first) = events.next().await {
            let mut batch = vec![first];
            while let Some(Some(more)) = events.next().now_or_never() {
                batch.push(more);
            }
            let mut sources = self.sources.lock();
            let mut dirty = Dirty::default();
            let mut failed = None;
            for event in batch {
                let (stored, delete) = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified { object: o, .. } => (o, false),
                    WatchEvent::Deleted(o) => (o, true),
                    WatchEvent::Bookmark { .. } => continue,
                    WatchEvent::Error(e) => {
                        failed = Some(ApiError::internal(e));
                        break;
                    }
                };
                match store.decode(&stored) {
                    Ok(object) => apply(&mut sources, which, &*object, delete, &mut dirty),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            self.publish(&sources, &dirty);
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Starts the watches that keep `authorizer`'s snapshot current.
pub fn spawn(registry: &Registry, authorizer: Arc<RbacAuthorizer>) -> Result<(), ApiError> {
    let informer = Arc::new(Informer {
        authorizer,
        sources: Mutex::new(Sources::default()),
        synced: Mutex::new([false; 4]),
    });
    for which in Which::ALL {
        let store = registry.store(which.kind())?;
        tokio::spawn(Arc::clone(&informer).run(which, store));
    }
    Ok(())
}
