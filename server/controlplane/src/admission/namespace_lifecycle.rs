//! NamespaceLifecycle (kube-apiserver's plugin of that name): a namespaced object can be
//! created only in a namespace that exists and is not terminating, and the namespaces every
//! cluster has (`default`, `kube-system`, `kube-public`) cannot be deleted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::admission::{Attributes, Operation, Plugin, ValidatingPlugin};
use apimachinery::status::{ApiError, StatusCause};
use apimachinery::{GroupResource, Scheme};
use async_trait::async_trait;
use kubernetes_api::core::v1::Namespace;
use kubernetes_api::core::{NAMESPACE_KIND, strategy::SYSTEM_NAMESPACES};

use server::registry::{Registry, Store};

/// The plugin's name, as the admission flags spell it.
pub const NAME: &str = "NamespaceLifecycle";

/// The plugin, when the scheme serves namespaces.
pub fn plugin(registry: &Arc<Registry>, scheme: &Scheme) -> Option<Plugin> {
    scheme.by_kind("", "Namespace")?;
    Some(Plugin {
        name: NAME,
        default_enabled: true,
        mutating: None,
        validating: Some(Arc::new(NamespaceLifecycle {
            registry: registry.clone(),
            recent: RecentNamespaceDeletions::default(),
        })),
    })
}

/// The plugin's state: where namespaces are read from, and the deletions it saw start.
pub struct NamespaceLifecycle {
    registry: Arc<Registry>,
    recent: RecentNamespaceDeletions,
}

/// Whether a namespace is terminating.
pub fn is_terminating(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_some() || ns.status.phase.as_deref() == Some("Terminating")
}

#[async_trait]
impl ValidatingPlugin for NamespaceLifecycle {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        match attributes.operation {
            Operation::Create => attributes.kind.storage_info().namespaced(),
            Operation::Delete => std::ptr::eq(attributes.kind, &NAMESPACE_KIND),
            _ => false,
        }
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        if attributes.operation == Operation::Delete {
            if SYSTEM_NAMESPACES.contains(&attributes.name) {
                return Err(attributes.forbidden("this namespace may not be deleted"));
            }
            if !attributes.dry_run {
                self.recent.mark(attributes.name);
            }
            return Ok(());
        }
        let namespaces = self.registry.store(&NAMESPACE_KIND)?;
        self.check_create(&namespaces, attributes).await
    }
}

impl NamespaceLifecycle {
    /// A namespaced create needs its namespace to exist and not be terminating.
    ///
    /// As kube-apiserver's plugin answers from its informer, the watch cache answers for a
    /// namespace it holds as active, unless this server started deleting it lately. A
    /// namespace the cache lacks or shows terminating is read consistently from storage, so
    /// one created (or recreated) just before is never refused.
    async fn check_create(
        &self,
        namespaces: &Store,
        attributes: &Attributes<'_>,
    ) -> Result<(), ApiError> {
        let namespace = attributes.namespace;
        if !self.recent.contains(namespace)
            && let Ok(stored) = namespaces.get_stored("", namespace, "0").await
        {
            if self.recent.seen_active(namespace, stored.resource_version) {
                return Ok(());
            }
            if let Ok(cached) = namespaces.decode(&stored)
                && cached
                    .downcast_ref::<Namespace>()
                    .is_some_and(|ns| !is_terminating(ns))
            {
                self.recent
                    .remember_active(namespace, stored.resource_version);
                return Ok(());
            }
        }
        let current = namespaces.try_get("", namespace).await?;
        let ns = current.as_ref().and_then(|o| o.downcast_ref::<Namespace>());
        match ns {
            None => Err(ApiError::not_found(
                &GroupResource::new("", "namespaces"),
                namespace,
            )),
            Some(ns) if is_terminating(ns) => {
                let mut err = attributes.forbidden(&format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ));
                err.details_mut().causes.push(StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {namespace} is being terminated"),
                    field: "metadata.namespace".into(),
                });
                Err(err)
            }
            Some(_) => Ok(()),
        }
    }
}

/// Namespaces whose deletion this server started recently. They are read from storage rather
/// than the watch cache, which may not have seen the deletion yet (as kube-apiserver's plugin
/// keeps a force-live-lookup cache of deleted namespaces).
///
/// It also remembers, per namespace, the resourceVersion at which the watch cache last showed
/// it active, so that a create in a namespace whose cached object has not changed since is
/// admitted without decoding that object again.
#[derive(Debug, Default)]
pub struct RecentNamespaceDeletions {
    started: parking_lot::Mutex<HashMap<String, Instant>>,
    active: parking_lot::RwLock<HashMap<String, i64>>,
}

impl RecentNamespaceDeletions {
    /// How long after a deletion starts the namespace is read from storage (kube: 30 s).
    const TTL: Duration = Duration::from_secs(30);

    /// The most namespaces whose active revision is remembered; beyond it the memo restarts.
    const MAX_ACTIVE: usize = 4096;

    fn seen_active(&self, name: &str, revision: i64) -> bool {
        self.active.read().get(name) == Some(&revision)
    }

    fn remember_active(&self, name: &str, revision: i64) {
        let mut active = self.active.write();
        if active.len() >= Self::MAX_ACTIVE && !active.contains_key(name) {
            active.clear();
        }
        active.insert(name.to_string(), revision);
    }

    /// Records that deletion of `name` is starting.
    pub fn mark(&self, name: &str) {
        let mut started = self.started.lock();
        started.retain(|_, at| at.elapsed() < Self::TTL);
        started.insert(name.to_string(), Instant::now());
        self.active.write().remove(name);
    }

    /// Whether deletion of `name` started within the last `TTL` (its time to live).
    pub fn contains(&self, name: &str) -> bool {
        self.started
            .lock()
            .get(name)
            .is_some_and(|at| at.elapsed() < Self::TTL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_deletions_are_remembered_per_name() {
        let recent = RecentNamespaceDeletions::default();
        assert!(!recent.contains("doomed"));
        recent.remember_active("doomed", 4);
        recent.mark("doomed");
        assert!(recent.contains("doomed"));
        assert!(!recent.contains("doomed2"));
        assert!(!recent.seen_active("doomed", 4));
    }
}
