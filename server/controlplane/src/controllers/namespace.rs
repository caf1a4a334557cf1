//! The namespace controller (kube-controller-manager's, run in-process): a namespace whose
//! deletion started is `Terminating` and holds the `kubernetes` finalizer; the controller
//! deletes every namespaced object in it (of every stored kind), waits until they are gone
//! (other finalizers may delay them), then removes the finalizer through the namespace's
//! `finalize` subresource, and the store removes the namespace.
//!
//! It runs on the controller runtime ([`server::controller`]): a namespace is reconciled when it
//! changes and every 5 s (its resync), so a deletion interrupted by a restart is finished by
//! the next server. One reconcile is one pass over the namespace's contents (Kubernetes'
//! `deleteAllContent`); while anything is left, the namespace is looked at again after 500 ms,
//! without holding a worker meanwhile.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::core::NAMESPACE_KIND;
use kubernetes_api::core::strategy::KUBERNETES_FINALIZER;
use kubernetes_api::core::v1::Namespace;

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

    /// The stores of every namespaced, stored kind.
    fn namespaced_stores(&self) -> Result<Vec<Arc<Store>>, ApiError> {
        self.scheme
            .kinds()
            .iter()
            .filter(|k| {
                let info = k.storage_info();
                info.namespaced() && !info.create_only
            })
            .map(|k| self.registry.store(k))
            .collect()
    }

    /// One pass over `namespace`'s contents: deletes every object not being deleted yet, and
    /// returns how many objects were found (a kind that could not be listed counts as one).
    async fn delete_contents(&self, namespace: &str) -> Result<usize, ApiError> {
        let mut remaining = 0usize;
        for store in self.namespaced_stores()? {
            let Ok(items) = store.list_uncached(namespace).await else {
                remaining += 1;
                continue;
            };
            for item in items {
                remaining += 1;
                if item.metadata().deletion_timestamp.is_none() {
                    // A failed delete leaves the object, which the next pass finds again.
                    let _ = store
                        .delete(
                            namespace,
                            item.name(),
                            &NoAdmission,
                            &DeleteOptions::default(),
                        )
                        .await;
                }
            }
        }
        Ok(remaining)
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
    /// its contents, then, once nothing is left, the finalizer's removal.
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
        if self.delete_contents(&key.name).await? > 0 {
            return Ok(Action::RequeueAfter(RETRY));
        }
        self.finalize(&key.name).await?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::meta::ObjectMeta;
    use kubernetes_api::core::CONFIG_MAP_KIND;
    use kubernetes_api::core::v1::ConfigMap;

    use super::*;

    /// A hold on a ConfigMap that only this test removes.
    const HOLD: &str = "example.com/hold";

    fn config_map(name: &str, finalizers: &[&str]) -> Box<dyn Object> {
        Box::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("doomed".into()),
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    /// Waits until `check` holds; panics with `what` after 5 s.
    async fn eventually<F, Fut>(what: &str, check: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        super::super::test_support::eventually(|| async {
            if check().await {
                Ok(())
            } else {
                Err(what.to_string())
            }
        })
        .await
    }

    #[tokio::test]
    async fn a_terminating_namespace_is_emptied_then_finalized_once_its_contents_are_gone() {
        let (_dir, registry) = super::super::test_support::registry();
        let scheme = Arc::new(kubernetes_api::scheme());
        let namespaces = registry
            .store(&NAMESPACE_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let config_maps = registry
            .store(&CONFIG_MAP_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        for name in ["doomed", "kept"] {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            namespaces
                .create(Box::new(ns), &NoAdmission, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        for (name, finalizers) in [("plain", &[][..]), ("held", &[HOLD][..])] {
            config_maps
                .create(config_map(name, finalizers), &NoAdmission, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let controller =
            NamespaceController::new(registry.clone(), scheme).unwrap_or_else(|e| panic!("{e}"));
        let running = tokio::spawn(controller.run(std::future::pending()));

        // A namespace that is not terminating is left alone.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let left = config_maps.list_uncached("doomed").await.map(|l| l.len());
        assert_eq!(left.ok(), Some(2));

        namespaces
            .delete("", "doomed", &NoAdmission, &DeleteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // Its contents are deleted; the held ConfigMap stays, being deleted, and so does the
        // namespace, terminating with its finalizer.
        eventually("the plain ConfigMap was not deleted", || async {
            matches!(config_maps.try_get("doomed", "plain").await, Ok(None))
        })
        .await;
        eventually("the held ConfigMap was not marked deleted", || async {
            matches!(config_maps.try_get("doomed", "held").await,
                Ok(Some(o)) if o.metadata().deletion_timestamp.is_some())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let ns = namespaces
            .get("", "doomed", "")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let ns = ns.downcast_ref::<Namespace>().cloned().unwrap_or_default();
        assert_eq!(ns.status.phase.as_deref(), Some("Terminating"));
        assert_eq!(ns.spec.finalizers, [KUBERNETES_FINALIZER]);

        // Once the held ConfigMap is gone, the namespace is finalized and removed.
        let release = Mutate(|o: &mut dyn Object| o.metadata_mut().finalizers.clear());
        config_maps
            .update(
                "doomed",
                "held",
                &release,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the emptied namespace was not removed", || async {
            matches!(namespaces.try_get("", "doomed").await, Ok(None))
        })
        .await;
        // Another namespace is untouched.
        assert!(matches!(namespaces.try_get("", "kept").await, Ok(Some(_))));
        running.abort();
    }
}
