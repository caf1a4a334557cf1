//! The in-process controller runtime: what the built-in controllers and a user's controllers
//! are built on (client-go's informer and work queue with controller-runtime's `Reconciler`).
//!
//! A controller is a [`Reconciler`] (given the [`ObjectKey`] of an object, make the world
//! agree with it) run by a [`Controller`]:
//! - an [`Informer`] over the watch cache of the primary kind's [`Store`] lists the objects,
//!   watches from the list's resourceVersion, lists again when the watch cannot resume (410
//!   Gone) or ends, and hands every object's key to the queue on every change and on every
//!   periodic resync;
//! - optional informers over secondary kinds map each changed object to the primary keys it
//!   concerns ([`Controller::watches`], or [`Controller::watches_changes`] for a mapping that
//!   looks at what happened and the key without decoding the object);
//! - a [`WorkQueue`] deduplicates keys, never hands one key to two workers at once, processes
//!   a key added while it is being processed once more afterwards, and retries a failed key
//!   with per-key exponential backoff ([`ExponentialBackoff`], 5 ms doubling up to 1000 s);
//! - N workers take keys from the queue and call the reconciler; an error retries the key
//!   with backoff, success forgets its failures, and [`Action::RequeueAfter`] looks again
//!   later.
//!
//! The reconciler reads the objects it needs through the stores (reads at resourceVersion
//! `"0"` are served from the watch cache; a consistent read, `""`, waits for the cache to
//! reach the latest revision), so a key is all a change needs to carry. A deleted object's key
//! is reconciled like any other: the reconciler finds the object gone.
//!
//! The server starts controllers in the background and stops them with itself:
//! [`GenericServer::add_controller`](crate::genericserver::GenericServer::add_controller)
//! starts one once the server serves, and [`ApiContext::spawn_controller`] starts one at once;
//! both stop it when the server's watches end at shutdown.
//!
//! # Example
//!
//! A controller that labels every ConfigMap with `seen: "true"`, started with the server (a
//! failed update is retried with backoff; an update racing another write is applied again to
//! the latest object by [`Mutate`]):
//!
//! ```no_run
//! use std::sync::Arc;
//! use apimachinery::runtime::Object;
//! use apimachinery::status::ApiError;
//! use server::controller::{Action, Controller, Mutate, ObjectKey, Reconciler};
//! use server::registry::{NoAdmission, Store, UpdateOptions};
//!
//! struct Labeler(Arc<Store>);
//!
//! #[async_trait::async_trait]
//! impl Reconciler for Labeler {
//!     type Error = ApiError;
//!     async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
//!         let Some(object) = self.0.try_get(&key.namespace, &key.name).await? else {
//!             return Ok(Action::Done); // deleted: nothing to do
//!         };
//!         if object.metadata().labels.contains_key("seen") {
//!             return Ok(Action::Done);
//!         }
//!         let label = Mutate(|o: &mut dyn Object| {
//!             o.metadata_mut().labels.insert("seen".into(), "true".into());
//!         });
//!         let (namespace, name, opts) = (&key.namespace, &key.name, UpdateOptions::default());
//!         self.0.update(namespace, name, &label, &NoAdmission, &NoAdmission, opts).await?;
//!         Ok(Action::Done)
//!     }
//! }
//!
//! fn start(server: &mut server::genericserver::GenericServer) -> Result<(), ApiError> {
//!     let config_maps = server.api().store(&kubernetes_api::core::CONFIG_MAP_KIND)?;
//!     let labeler = Labeler(config_maps.clone());
//!     server.add_controller(Controller::new("labeler", config_maps, labeler).workers(2));
//!     Ok(())
//! }
//! ```
//!
//! [`Store`]: crate::registry::Store
//! [`ApiContext::spawn_controller`]: crate::endpoints::ApiContext::spawn_controller

mod informer;
mod queue;
mod runner;
mod start;

#[cfg(test)]
mod informer_tests;
#[cfg(test)]
mod queue_tests;
#[cfg(test)]
mod runner_tests;

use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;

pub use informer::{Change, Informer, Notification};
pub use queue::{ExponentialBackoff, WorkQueue};
pub use runner::Controller;

/// The key of one object: its namespace (empty for a cluster-scoped object) and name, written
/// `namespace/name` (or `name`) as client-go's `MetaNamespaceKeyFunc` writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace; empty for a cluster-scoped object.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of the object `name` in `namespace` (empty for a cluster-scoped object).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of the cluster-scoped object `name`.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self::new("", name)
    }

    /// The key of `object`, from its metadata.
    pub fn of(object: &dyn Object) -> Self {
        let meta = object.metadata();
        Self::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// What to do with a key after it was reconciled successfully.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing more: the key is processed again only when something changes (or at resync).
    Done,
    /// Reconcile the key again after this long (its failure count is reset, as on success).
    RequeueAfter(Duration),
}

/// The logic of a controller: brings the world in line with the object a key names.
///
/// `reconcile` must be idempotent and work from what it reads, not from which change led to
/// the call: keys are deduplicated, a burst of changes gives one call, and a resync calls it
/// for every object. The object may be gone (the key of a deleted object is reconciled too).
/// One key is never reconciled by two workers at once; different keys are, concurrently.
#[async_trait]
pub trait Reconciler: Send + Sync + 'static {
    /// The error of a failed reconcile; the key is retried with backoff, and the error logged.
    type Error: std::fmt::Display + Send + 'static;

    /// Reconciles the object `key` names.
    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, Self::Error>;
}

/// An update that applies a change to the object as currently stored (a read-modify-write the
/// store repeats on the latest object if the object changes in between).
pub struct Mutate<F>(pub F)
where
    F: Fn(&mut dyn Object) + Send + Sync;

#[async_trait]
impl<F> crate::registry::UpdatedObjectInfo for Mutate<F>
where
    F: Fn(&mut dyn Object) + Send + Sync,
{
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let old = old.ok_or_else(|| ApiError::internal("the object to update is gone"))?;
        let mut object = old.clone_object();
        (self.0)(&mut *object);
        Ok(object)
    }
}
