//! Storage a user chooses per kind: the REST verbs as small traits over typed objects
//! (Kubernetes' `k8s.io/apiserver/pkg/registry/rest`: `Getter`, `Lister`, `Watcher`,
//! `Creater`, `Updater`, `GracefulDeleter`), bundled per kind in a [`RestStorage`].
//!
//! A kind is served from the generic [`Store`](super::Store) (the default: the watch cache
//! over the embedded store or etcd), or from a `RestStorage` registered for it with
//! [`ApiContextBuilder::rest_storage`](crate::endpoints::ApiContextBuilder::rest_storage): a
//! read-only or computed kind, or one kept in another database. No etcd is needed for it.
//!
//! # What the server does and what the storage does
//!
//! The request runs the same way for both: authentication, authorization, content negotiation
//! (JSON, YAML, protobuf, Tables), decoding, conversion to the storage version, managed
//! fields, patches and server-side apply, mutating admission. Then, for a kind with a
//! `RestStorage`, the server's side of it ([`CustomStore`]) applies what every kind's writes
//! share, as the store does: the kind's [`Strategy`](apimachinery::strategy::Strategy) rules
//! and validation ([`super::rest::before_create`], [`super::rest::before_update`]), the
//! request's resourceVersion check, generated names, finalizers and `deletionTimestamp`,
//! validating admission, and dry runs (which never reach the storage). What reaches the
//! storage is the final object, in the kind's storage version: the storage persists it,
//! assigns resourceVersions, checks them, and answers reads and watches. A strategy's TTL is
//! not applied (it is the store's lease on the object's key).
//!
//! # Verbs
//!
//! The verbs served are derived from the traits given ([`RestStorage::verbs`]), as
//! kube-apiserver's installer derives them from the interfaces a storage implements:
//! `get` ([`Getter`]), `list` ([`Lister`]), `watch` ([`Watcher`]), `create` ([`Creater`]),
//! `update` and `patch` ([`Getter`] + [`Updater`]), `delete` ([`Getter`] + [`Deleter`]),
//! `deletecollection` ([`Lister`] + [`Getter`] + [`Deleter`]). A verb the storage lacks is
//! absent from discovery's `verbs`, left out of the OpenAPI documents (whose paths are
//! generated at build time from the definitions and filtered when the server starts), and
//! answered `405 MethodNotAllowed` (`the server does not allow this method on the requested
//! resource`, as kube-apiserver's router answers a route it did not install). The `status`
//! and `scale` subresources a kind declares are served through the same [`Getter`] and
//! [`Updater`].
//!
//! The server's own components that read a kind through its store (the namespace and quota
//! controllers, admission plugins, the RBAC informer, service-account token checks) see the
//! generic store, not a user's storage: serve those kinds (Namespaces, RBAC, ServiceAccounts,
//! Secrets, quotas, admission configurations) from the store.
//!
//! # resourceVersions
//!
//! A resourceVersion is, to clients, an opaque string. This server reads them as Kubernetes'
//! storage writes them: decimal unsigned integers (`"42"`), because list and watch requests
//! carry them back and the request's `resourceVersion` is checked to be one. Every write
//! (create, update, delete) gets a new resourceVersion, **strictly greater** than every one
//! handed out before, across all objects of the kind; an object's `metadata.resourceVersion`
//! is the version of its last write; a list's is at least that of every write it reflects.
//! `"0"` and `""` are never an object's resourceVersion.
//!
//! # Example
//!
//! A kind served from memory (the [`memory::InMemory`] storage, which implements every
//! verb), and a read-only one (`get`, `list` and `watch` only), on a server built with
//! [`crate::Server`]:
//!
//! ```no_run
//! use std::sync::Arc;
//! use clap::Parser;
//! use server::registry::rest_storage::{RestStorage, memory::InMemory};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     server: server::ServerOptions,
//! }
//!
//! let configmaps = &kubernetes_api::core::CONFIG_MAP_KIND;
//! let secrets = &kubernetes_api::core::SECRET_KIND;
//! server::Server::new(Cli::parse().server)
//!     .install(kubernetes_api::register_all)
//!     .storage(configmaps, RestStorage::read_write(Arc::new(InMemory::new(configmaps))))
//!     .storage(secrets, RestStorage::read_only(Arc::new(InMemory::new(secrets))))
//!     .main();
//! ```

pub mod conformance;
mod custom;
pub mod memory;

use std::sync::Arc;

use apimachinery::runtime::{Kind, Object};
use apimachinery::selectors::{FieldOperator, FieldSelector, LabelSelector};
use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::stream::BoxStream;

pub use custom::CustomStore;
pub use storage::interface::ResourceVersionMatch;

/// What a list or a watch asks for (Kubernetes' `metainternalversion.ListOptions`), already
/// validated by the server: the selectors name only the kind's field labels, the
/// resourceVersion is empty or a decimal integer.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// The namespace whose objects are asked for; empty for every namespace (and for a
    /// cluster-scoped kind).
    pub namespace: String,
    /// `labelSelector`: only objects whose labels it matches.
    pub labels: LabelSelector,
    /// `fieldSelector`: only objects whose selectable fields
    /// ([`Kind::selectable_fields`]) it matches.
    pub fields: FieldSelector,
    /// `resourceVersion`, as the client gave it (`""`, `"0"` or a decimal integer).
    pub resource_version: String,
    /// `resourceVersionMatch`, for lists.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit` (0: none). A storage may ignore it and answer the whole list without a
    /// continue token, as the API allows servers to.
    pub limit: i64,
    /// `continue`: a token the storage returned in [`ObjectList::continue_token`].
    pub continue_token: String,
    /// `allowWatchBookmarks`: the watcher accepts [`Event::Bookmark`]s.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`, for watches.
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Whether the selectors select `object` of `kind` (and it is in the namespace asked
    /// for): the filter every [`Lister`] and [`Watcher`] applies.
    ///
    /// ```
    /// use server::registry::rest_storage::ListOptions;
    /// use apimachinery::selectors::LabelSelector;
    ///
    /// let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
    /// let mut object = kind.storage().new_object();
    /// object.metadata_mut().name = Some("a".into());
    /// object.metadata_mut().namespace = Some("default".into());
    /// object.metadata_mut().labels.insert("app".into(), "web".into());
    /// let options = ListOptions {
    ///     namespace: "default".into(),
    ///     labels: LabelSelector::parse("app=web").unwrap(),
    ///     ..ListOptions::default()
    /// };
    /// assert!(options.matches(kind, &*object));
    /// ```
    pub fn matches(&self, kind: &Kind, object: &dyn Object) -> bool {
        if !self.namespace.is_empty()
            && kind.storage_info().namespaced()
            && object.namespace() != self.namespace
        {
            return false;
        }
        if !self.labels.matches(&object.metadata().labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let fields = kind.selectable_fields(object);
        self.fields.requirements.iter().all(|r| {
            let have = fields
                .iter()
                .find(|(k, _)| *k == r.field)
                .map_or("", |(_, v)| v.as_str());
            match r.operator {
                FieldOperator::Equals => have == r.value,
                FieldOperator::NotEquals => have != r.value,
            }
        })
    }
}

/// The answer to a list.
#[derive(Debug, Default)]
pub struct ObjectList {
    /// The objects, ordered by namespace, then name.
    pub items: Vec<Box<dyn Object>>,
    /// The list's resourceVersion: the state it reflects, at least every item's.
    pub resource_version: String,
    /// The token of the next page, when the storage paginated and more items remain.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when known.
    pub remaining_item_count: Option<i64>,
}

/// One watch event. Objects carry the resourceVersion of the write that made the event.
#[derive(Debug)]
pub enum Event {
    /// An object was created (or, in a filtered watch, started to match).
    Added(Box<dyn Object>),
    /// An object was changed.
    Modified(Box<dyn Object>),
    /// An object was deleted (or, in a filtered watch, stopped matching): its last state,
    /// with the resourceVersion of the deletion.
    Deleted(Box<dyn Object>),
    /// Nothing the watcher selects changed up to `resource_version` (only when the watch
    /// allows bookmarks); `initial_events_end` marks the end of `sendInitialEvents`.
    Bookmark {
        /// The resourceVersion the watcher has seen everything up to.
        resource_version: String,
        /// Whether this bookmark ends the initial events.
        initial_events_end: bool,
    },
    /// The watch cannot go on (410 `Expired` when the watcher fell behind the history the
    /// storage keeps): sent as an `ERROR` event, after which the stream ends.
    Error(ApiError),
}

/// A stream of watch events.
pub type EventStream = BoxStream<'static, Event>;

/// Preconditions of a delete: the object must still have this uid and resourceVersion.
#[derive(Clone, Debug, Default)]
pub struct Preconditions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
}

/// `get`: one object by namespace and name (Kubernetes' `rest.Getter`).
#[async_trait]
pub trait Getter: Send + Sync {
    /// The object's most recent state, with its resourceVersion; `404 NotFound`
    /// ([`ApiError::not_found`]) when there is none. `namespace` is empty for a
    /// cluster-scoped kind.
    async fn get(&self, namespace: &str, name: &str) -> Result<Box<dyn Object>, ApiError>;
}

/// `list`: the objects a [`ListOptions`] selects (Kubernetes' `rest.Lister`).
///
/// Semantics: the items are those in `options.namespace` (every namespace when empty) that
/// [`ListOptions::matches`] selects, ordered by namespace then name, from one consistent
/// state whose resourceVersion is [`ObjectList::resource_version`]. `resourceVersion` `""`
/// asks for the most recent state; `"0"` for any state; `N` (with `resourceVersionMatch`
/// `NotOlderThan` or none) for a state at least as new as `N`, and a storage that has not
/// reached `N` answers `504` ([`ApiError::resource_version_too_large`]); `N` with `Exact` for
/// the state at `N`, which a storage that cannot serve it answers with `410 Expired`
/// ([`ApiError::too_old_resource_version`]). `limit` may be honoured (then a continue token
/// is returned while items remain, and a token the storage cannot resume from is `410
/// Expired`) or ignored (the whole list, no token).
#[async_trait]
pub trait Lister: Send + Sync {
    /// The selected objects.
    async fn list(&self, options: &ListOptions) -> Result<ObjectList, ApiError>;
}

/// `watch`: the changes to the objects a [`ListOptions`] selects (Kubernetes'
/// `rest.Watcher`).
///
/// Semantics, as kube-apiserver's:
/// - `resourceVersion` `N`: every change with a resourceVersion greater than `N`, in
///   resourceVersion order, each once, without gaps. A storage that no longer has every
///   change after `N` (its history was trimmed) answers `410 Expired`
///   ([`ApiError::too_old_resource_version`]), either as the error of `watch` or as an
///   [`Event::Error`] first in the stream; a client then lists again.
/// - `""` or `"0"`: first an [`Event::Added`] for every selected object of the current state
///   (for `"0"`, of any recent state), then every later change. With `sendInitialEvents=true`
///   those initial events end with an [`Event::Bookmark`] whose `initial_events_end` is set;
///   with `sendInitialEvents=false` there are no initial events.
/// - Filtering: a change that makes an object match is an [`Event::Added`], one that makes it
///   stop matching an [`Event::Deleted`] (of its previous state, with the change's
///   resourceVersion).
/// - Bookmarks are optional and sent only when `allow_bookmarks` is set.
/// - The stream may end at any time (the client watches again from the last resourceVersion
///   it saw); the server ends it at the request's timeout by dropping it.
#[async_trait]
pub trait Watcher: Send + Sync {
    /// Starts a watch.
    async fn watch(&self, options: &ListOptions) -> Result<EventStream, ApiError>;
}

/// `create` (Kubernetes' `rest.Creater`).
#[async_trait]
pub trait Creater: Send + Sync {
    /// Stores a new object (prepared and validated by the server, without a
    /// resourceVersion) and returns it as stored, with its new resourceVersion. An object of
    /// that namespace and name that exists already is `409 AlreadyExists`
    /// ([`ApiError::already_exists`]), and nothing is written.
    async fn create(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError>;
}

/// `update` (Kubernetes' `rest.Updater`), with optimistic concurrency.
#[async_trait]
pub trait Updater: Send + Sync {
    /// Replaces the stored object of the namespace and name of `object` (prepared and
    /// validated by the server) if, and only if, its stored resourceVersion is the one
    /// `object` carries, atomically; returns it as stored, with its new resourceVersion.
    /// Another resourceVersion (a stale one: someone wrote since) is `409 Conflict` with
    /// Kubernetes' message ([`ApiError::conflict_stale`]: `Operation cannot be fulfilled on
    /// <resource> "<name>": the object has been modified; please apply your changes to the
    /// latest version and try again`); a missing object is `404 NotFound`. The server retries
    /// a conflict from a fresh [`Getter::get`] unless the client named the resourceVersion.
    async fn update(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError>;
}

/// `delete` (Kubernetes' `rest.GracefulDeleter`).
#[async_trait]
pub trait Deleter: Send + Sync {
    /// Removes an object if the preconditions hold, atomically, and returns its last state.
    /// A uid or resourceVersion other than the preconditions' is `409 Conflict` with
    /// Kubernetes' messages (`Precondition failed: UID in precondition: <uid>, UID in object
    /// meta: <uid>`, `Precondition failed: ResourceVersion in precondition: <rv>,
    /// ResourceVersion in meta: <rv>`); a missing object is `404 NotFound`. The deletion gets
    /// a resourceVersion of its own, which its [`Event::Deleted`] carries.
    async fn delete(
        &self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Box<dyn Object>, ApiError>;
}

/// The verbs one kind's storage implements: the bundle the server is given per kind.
///
/// ```
/// use std::sync::Arc;
/// use server::registry::rest_storage::{RestStorage, memory::InMemory};
///
/// let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
/// let memory = Arc::new(InMemory::new(kind));
/// assert_eq!(
///     RestStorage::read_only(memory.clone()).verbs(),
///     ["get", "list", "watch"]
/// );
/// assert_eq!(
///     RestStorage::read_write(memory).verbs(),
///     ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
/// );
/// ```
#[derive(Clone, Default)]
pub struct RestStorage {
    getter: Option<Arc<dyn Getter>>,
    lister: Option<Arc<dyn Lister>>,
    watcher: Option<Arc<dyn Watcher>>,
    creater: Option<Arc<dyn Creater>>,
    updater: Option<Arc<dyn Updater>>,
    deleter: Option<Arc<dyn Deleter>>,
}

impl std::fmt::Debug for RestStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestStorage")
            .field("verbs", &self.verbs())
            .finish()
    }
}

impl RestStorage {
    /// A storage with no verbs; add them with the `with_*` methods.
    pub fn new() -> Self {
        Self::default()
    }

    /// `get`, `list` and `watch` from one implementation: a read-only kind.
    pub fn read_only<T: Getter + Lister + Watcher + 'static>(storage: Arc<T>) -> Self {
        Self::new()
            .with_getter(storage.clone())
            .with_lister(storage.clone())
            .with_watcher(storage)
    }

    /// Every verb from one implementation.
    pub fn read_write<T>(storage: Arc<T>) -> Self
    where
        T: Getter + Lister + Watcher + Creater + Updater + Deleter + 'static,
    {
        Self::read_only(storage.clone())
            .with_creater(storage.clone())
            .with_updater(storage.clone())
            .with_deleter(storage)
    }

    /// Serves `get` from `getter`.
    pub fn with_getter(mut self, getter: Arc<dyn Getter>) -> Self {
        self.getter = Some(getter);
        self
    }

    /// Serves `list` from `lister`.
    pub fn with_lister(mut self, lister: Arc<dyn Lister>) -> Self {
        self.lister = Some(lister);
        self
    }

    /// Serves `watch` from `watcher`.
    pub fn with_watcher(mut self, watcher: Arc<dyn Watcher>) -> Self {
        self.watcher = Some(watcher);
        self
    }

    /// Serves `create` from `creater`.
    pub fn with_creater(mut self, creater: Arc<dyn Creater>) -> Self {
        self.creater = Some(creater);
        self
    }

    /// Serves `update` and `patch` from `updater` (with the [`Getter`]).
    pub fn with_updater(mut self, updater: Arc<dyn Updater>) -> Self {
        self.updater = Some(updater);
        self
    }

    /// Serves `delete` from `deleter` (with the [`Getter`]).
    pub fn with_deleter(mut self, deleter: Arc<dyn Deleter>) -> Self {
        self.deleter = Some(deleter);
        self
    }

    /// The getter, if any.
    pub fn getter(&self) -> Option<&Arc<dyn Getter>> {
        self.getter.as_ref()
    }

    /// The lister, if any.
    pub fn lister(&self) -> Option<&Arc<dyn Lister>> {
        self.lister.as_ref()
    }

    /// The watcher, if any.
    pub fn watcher(&self) -> Option<&Arc<dyn Watcher>> {
        self.watcher.as_ref()
    }

    /// The creater, if any.
    pub fn creater(&self) -> Option<&Arc<dyn Creater>> {
        self.creater.as_ref()
    }

    /// The updater, if any.
    pub fn updater(&self) -> Option<&Arc<dyn Updater>> {
        self.updater.as_ref()
    }

    /// The deleter, if any.
    pub fn deleter(&self) -> Option<&Arc<dyn Deleter>> {
        self.deleter.as_ref()
    }

    /// Whether `verb` (a Kubernetes verb: `get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete`, `deletecollection`) is served.
    pub fn serves(&self, verb: &str) -> bool {
        let get = self.getter.is_some();
        match verb {
            "get" => get,
            "list" => self.lister.is_some(),
            "watch" => self.watcher.is_some(),
            "create" => self.creater.is_some(),
            "update" | "patch" => get && self.updater.is_some(),
            "delete" => get && self.deleter.is_some(),
            "deletecollection" => get && self.deleter.is_some() && self.lister.is_some(),
            _ => false,
        }
    }

    /// The verbs served, in Kubernetes' (alphabetical) order, as discovery lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        .into_iter()
        .filter(|verb| self.serves(verb))
        .collect()
    }
}
