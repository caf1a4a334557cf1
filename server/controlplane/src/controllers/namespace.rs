//! The namespace controller (kube-controller-manager's, run in-process): a namespace whose
//! deletion started is `Terminating` and holds the `kubernetes` finalizer; the controller
//! deletes every namespaced object in it (of every stored kind), waits until they are gone
//! (other finalizers may delay them), then removes the finalizer through the namespace's
//! `finalize` subresource, and the store removes the namespace.
//!
//! It looks at terminating namespaces when they change and every few seconds, so a deletion
//! interrupted by a restart is finished by the next server.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::StreamExt;
use kubernetes_api::core::strategy::KUBERNETES_FINALIZER;
use kubernetes_api::core::v1::Namespace;
use parking_lot::Mutex;
use storage::interface::ListOptions;

use crate::admission::namespace_lifecycle::is_terminating;
use server::registry::{
    DeleteOptions, NoAdmission, Registry, Store, UpdateOptions, UpdatedObjectInfo,
};

/// How often every namespace is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(5);

/// How long to wait between passes over a namespace's contents.
const RETRY: Duration = Duration::from_millis(500);

/// The controller: the stores it reads and the namespaces it is finalizing.
pub struct NamespaceController {
    registry: Arc<Registry>,
    scheme: Arc<apimachinery::Scheme>,
    namespaces: Arc<Store>,
    active: Mutex<HashSet<String>>,
}

impl NamespaceController {
    /// The controller over the namespace store of `registry`.
    pub fn new(
        registry: Arc<Registry>,
        scheme: Arc<apimachinery::Scheme>,
    ) -> Result<Arc<Self>, ApiError> {
        let namespaces = registry.store(&kubernetes_api::core::NAMESPACE_KIND)?;
        Ok(Arc::new(Self {
            registry,
            scheme,
            namespaces,
            active: Mutex::new(HashSet::new()),
        }))
    }

    /// Runs until the process ends: on every namespace change and every `RESYNC`, starts
    /// finalizing each terminating namespace not already being finalized.
    pub async fn run(self: Arc<Self>) {
        loop {
            let watch = self
                .namespaces
                .watch(
                    &self.namespaces.collection_key("").unwrap_or_default(),
                    ListOptions {
                        resource_version: "0".into(),
                        recursive: true,
                        ..ListOptions::default()
                    },
                )
                .await;
            let mut events = match watch {
                Ok(w) => w,
                Err(_) => {
                    tokio::time::sleep(RESYNC).await;
                    continue;
                }
            };
            self.resync().await;
            loop {
                tokio::select! {
                    event = events.next() => match event {
                        Some(_) => self.resync().await,
                        None => break,
                    },
                    _ = tokio::time::sleep(RESYNC) => self.resync().await,
                }
            }
        }
    }

    /// Starts finalizing every terminating namespace.
    async fn resync(self: &Arc<Self>) {
        let Ok((items, _)) = self.namespaces.list("", ListOptions::default()).await else {
            return;
        };
        for item in items {
            let Some(ns) = item.downcast_ref::<Namespace>() else {
                continue;
            };
            let name = ns.metadata.name.clone().unwrap_or_default();
            if !is_terminating(ns) || !self.active.lock().insert(name.clone()) {
                continue;
            }
            let this = self.clone();
            tokio::spawn(async move {
                let _ = this.finalize(&name).await;
                this.active.lock().remove(&name);
            });
        }
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

    /// Deletes everything in `namespace`, then removes its finalizer.
    async fn finalize(&self, namespace: &str) -> Result<(), ApiError> {
        let stores = self.namespaced_stores()?;
        loop {
            let mut remaining = 0usize;
            for store in &stores {
                let Ok(items) = store.list_uncached(namespace).await else {
                    remaining += 1;
                    continue;
                };
                for item in items {
                    remaining += 1;
                    if item.metadata().deletion_timestamp.is_none() {
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
            if remaining == 0 {
                break;
            }
            // The namespace may have been finalized by another replica meanwhile.
            if self.namespaces.try_get("", namespace).await?.is_none() {
                return Ok(());
            }
            tokio::time::sleep(RETRY).await;
        }
        match self
            .namespaces
            .update(
                "",
                namespace,
                &RemoveFinalizer,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions {
                    subresource: "finalize",
                    force_allow_create: false,
                    dry_run: false,
                },
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The `finalize` update that drops the `kubernetes` finalizer.
struct RemoveFinalizer;

#[async_trait]
impl UpdatedObjectInfo for RemoveFinalizer {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let old = old.ok_or_else(|| ApiError::internal("the namespace is gone"))?;
        let mut object = old.clone_object();
        if let Some(ns) = object.downcast_mut::<Namespace>() {
            ns.spec.finalizers.retain(|f| f != KUBERNETES_FINALIZER);
        }
        Ok(object)
    }
}
