//! The namespace controller (kube-controller-manager's, run in-process): a namespace whose
//! deletion started is `Terminating` and holds the `kubernetes` finalizer; the controller
//! deletes every namespaced object in it (of every stored kind, and of every resource other
//! servers serve behind this one: `remote`), waits until they are gone (other finalizers may
//! delay them), then removes the finalizer through the namespace's `finalize` subresource, and
//! the store removes the namespace.
//!
//! It runs on the controller runtime ([`server::controller`]): a namespace is reconciled when it
//! changes and every 5 s (its resync), so a deletion interrupted by a restart is finished by
//! the next server. One reconcile is one pass over the namespace's contents (Kubernetes'
//! `deleteAllContent`); while anything is left, the namespace is looked at again after 500 ms,
//! without holding a worker meanwhile. Each pass records what it found in the namespace's
//! status conditions, as Kubernetes' namespace deleter does (`conditions`:
//! `NamespaceDeletionDiscoveryFailure`, `NamespaceContentRemaining`,
//! `NamespaceFinalizersRemaining`, `NamespaceDeletionContentFailure`, and the group-version
//! condition, which never fails here). When the discovery of some remote group version fails
//! (its server is unavailable), the rest is still deleted but the namespace is not finalized:
//! the pass fails and the namespace is retried with backoff (and at every resync) until
//! discovery succeeds again or the group version's APIService is gone, as in Kubernetes.

mod conditions;
mod remote;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::core::NAMESPACE_KIND;
use kubernetes_api::core::strategy::KUBERNETES_FINALIZER;
use kubernetes_api::core::v1::Namespace;

use self::conditions::{Contents, merge_conditions};
use crate::admission::namespace_lifecycle::is_terminating;
use server::controller::{Action, Controller, ExponentialBackoff, Mutate, ObjectKey, Reconciler};
use server::registry::{DeleteOptions, NoAdmission, Registry, Store, UpdateOptions};

/// The controller's name (kube-controller-manager's).
const NAME: &str = "namespace-controller";

/// How often every namespace is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(5);

/// How long to wait between passes over a namespace's contents.
const RETRY: Duration = Duration::from_millis(500);

/// How many namespaces are emptied at once (kube-controller-manager's
/// `--concurrent-namespace-syncs`).
const WORKERS: usize = 10;

/// The backoff of a namespace whose pass failed (Kubernetes' namespace controller: 5 ms
/// doubling up to 60 s).
const BACKOFF: ExponentialBackoff = ExponentialBackoff {
    base: Duration::from_millis(5),
    max: Duration::from_secs(60),
};

/// The reconciler of namespaces: the stores it reads and deletes through.
pub struct NamespaceController {
    registry: Arc<Registry>,
    scheme: Arc<Scheme>,
    namespaces: Arc<Store>,
}

impl NamespaceController {
    /// The controller over the namespace store of `registry`, emptying namespaces of the
    /// namespaced kinds of `scheme`, ready to be started.
    pub fn new(registry: Arc<Registry>, scheme: Arc<Scheme>) -> Result<Controller<Self>, ApiError> {
        let namespaces = registry.store(&NAMESPACE_KIND)?;
        let reconciler = Self {
            registry,
            scheme,
            namespaces: namespaces.clone(),
        };
        Ok(Controller::new(NAME, namespaces, reconciler)
            .workers(WORKERS)
            .backoff(BACKOFF)
            .resync(RESYNC))
    }

    /// The stores of every namespaced, stored kind: the scheme's, and those of kinds defined
    /// at run time (custom resources), whose objects go with their namespace too.
    fn namespaced_stores(&self) -> Result<Vec<Arc<Store>>, ApiError> {
        let mut stores: Vec<Arc<Store>> = self
            .scheme
            .kinds()
            .iter()
            .filter(|k| {
                let info = k.storage_info();
                info.namespaced() && !info.create_only
            })
            .map(|k| self.registry.store(k))
            .collect::<Result<_, _>>()?;
        for store in self.registry.stores() {
            let info = store.info();
            if info.namespaced()
                && !info.create_only
                && self.scheme.by_resource(info.group, info.plural).is_none()
            {
                stores.push(store);
            }
        }
        Ok(stores)
    }

    /// One pass over `namespace`'s contents: deletes every object not being deleted yet, here
    /// and on the servers behind this one, and returns what it found.
    async fn delete_contents(&self, namespace: &str) -> Result<Contents, ApiError> {
        let mut contents = Contents::default();
        if let Some(remote) = self.registry.remote_resources() {
            remote::delete_contents(remote, namespace, &mut contents).await;
        }
        for store in self.namespaced_stores()? {
            let items = match store.list_uncached(namespace).await {
                Ok(items) => items,
                Err(e) => {
                    contents.found += 1;
                    contents.failures.push(e.to_string());
                    continue;
                }
            };
            let info = store.info();
            for item in items {
                contents.found += 1;
                let mut left = item.metadata().deletion_timestamp.is_some();
                if !left {
                    // A failed delete leaves the object, which the next pass finds again.
                    let deleted = store
                        .delete(
                            namespace,
                            item.name(),
                            &NoAdmission,
                            &DeleteOptions::default(),
                        )
                        .await;
                    left = match deleted {
                        Ok(_) => !item.metadata().finalizers.is_empty(),
                        Err(e) if e.code() == 404 => false,
                        Err(e) => {
                            contents.failures.push(e.to_string());
                            true
                        }
                    };
                }
                if left {
                    contents.remain(info.plural, info.group, 1, &item.metadata().finalizers);
                }
            }
        }
        Ok(contents)
    }

    /// Writes the deletion conditions of what `contents` found into the namespace's status
    /// (through `/status`), if they changed.
    async fn record(&self, namespace: &Namespace, contents: &Contents) -> Result<(), ApiError> {
        let conditions = contents.conditions();
        let mut status = namespace.status.clone();
        if !merge_conditions(&mut status.conditions, &conditions) {
            return Ok(());
        }
        let write = Mutate(move |o: &mut dyn Object| {
            if let Some(ns) = o.downcast_mut::<Namespace>() {
                merge_conditions(&mut ns.status.conditions, &conditions);
            }
        });
        let options = UpdateOptions {
            subresource: "status",
            force_allow_create: false,
            dry_run: false,
        };
        let name = namespace.metadata.name.as_deref().unwrap_or_default();
        match self
            .namespaces
            .update("", name, &write, &NoAdmission, &NoAdmission, options)
            .await
        {
            // Gone meanwhile: nothing to record.
            Err(e) if e.code() == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Removes the `kubernetes` finalizer through the `finalize` subresource.
    async fn finalize(&self, namespace: &str) -> Result<(), ApiError> {
        let remove = Mutate(|o: &mut dyn Object| {
            if let Some(ns) = o.downcast_mut::<Namespace>() {
                ns.spec.finalizers.retain(|f| f != KUBERNETES_FINALIZER);
            }
        });
        let options = UpdateOptions {
            subresource: "finalize",
            force_allow_create: false,
            dry_run: false,
        };
        match self
            .namespaces
            .update("", namespace, &remove, &NoAdmission, &NoAdmission, options)
            .await
        {
            Ok(_) => Ok(()),
            // Finalized meanwhile (by another replica, say).
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl Reconciler for NamespaceController {
    type Error = ApiError;

    /// Kubernetes' `namespacedResourcesDeleter.Delete`: nothing for a namespace that is gone,
    /// not terminating, or no longer holds the `kubernetes` finalizer; otherwise one pass over
    /// its contents, then, once nothing is left and every group was discovered, the
    /// finalizer's removal. A failed discovery fails the pass (after its conditions are
    /// recorded), so the namespace is retried with backoff.
    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.namespaces.try_get("", &key.name).await? else {
            return Ok(Action::Done);
        };
        let Some(namespace) = object.downcast_ref::<Namespace>() else {
            return Ok(Action::Done);
        };
        let finalized = !namespace
            .spec
            .finalizers
            .iter()
            .any(|f| f == KUBERNETES_FINALIZER);
        if !is_terminating(namespace) || finalized {
            return Ok(Action::Done);
        }
        let contents = self.delete_contents(&key.name).await?;
        self.record(namespace, &contents).await?;
        if let Some((_, error)) = &contents.discovery {
            return Err(ApiError::internal(error));
        }
        if !contents.done() {
            return Ok(Action::RequeueAfter(RETRY));
        }
        self.finalize(&key.name).await?;
        Ok(Action::Done)
    }
}
