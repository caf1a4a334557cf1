//! The Kubernetes-semantics storage interface (the model is `storage.Interface` of
//! `k8s.io/apiserver`).
//!
//! Objects are opaque encoded bytes: the storage layer never decodes them. Whatever it needs to
//! know about an object — its uid for preconditions, its labels and fields for filtering — it
//! asks an [`ObjectCodec`] the server supplies. A resourceVersion is the backend revision; at
//! the API it is its decimal string.
//!
//! Keys passed to [`Interface`] methods are full storage keys built with
//! [`ResourceKeys`](crate::keys::ResourceKeys). For recursive operations the key is a collection
//! prefix; a missing trailing `/` is added.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

pub use crate::attr_map::AttrMap;
use crate::errors::{Result, Revision, StorageError};

/// The attributes of an object that filtering and preconditions use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectAttrs {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.labels`.
    pub labels: AttrMap,
    /// The selectable fields (`metadata.name`, `metadata.namespace`, and any the resource
    /// declares), as field selectors see them.
    pub fields: AttrMap,
}

/// Extracts [`ObjectAttrs`] from an encoded object. The server implements it per resource.
pub trait ObjectCodec: Send + Sync {
    /// Decodes just enough of `data` to return its attributes.
    fn attrs(&self, data: &[u8]) -> Result<ObjectAttrs>;
}

/// A filter evaluated on an object's attributes (label and field selectors, compiled by the
/// server).
pub type Matcher = Arc<dyn Fn(&ObjectAttrs) -> bool + Send + Sync>;

/// Selects objects for list and watch; the default matches everything.
#[derive(Clone, Default)]
pub struct Predicate {
    /// The filter; `None` matches every object without decoding it.
    pub matcher: Option<Matcher>,
    /// The label selector as given by the client (for caches that index on it; informational).
    pub label_selector: String,
    /// The field selector as given by the client (for caches that index on it; informational).
    pub field_selector: String,
}

impl Predicate {
    /// A predicate that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A predicate from a matcher closure.
    pub fn new(matcher: impl Fn(&ObjectAttrs) -> bool + Send + Sync + 'static) -> Self {
        Self {
            matcher: Some(Arc::new(matcher)),
            ..Self::default()
        }
    }

    /// True when this predicate matches every object.
    pub fn is_everything(&self) -> bool {
        self.matcher.is_none()
    }

    /// Evaluates the predicate on already extracted attributes.
    pub fn matches(&self, attrs: &ObjectAttrs) -> bool {
        self.matcher.as_ref().is_none_or(|m| m(attrs))
    }
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predicate")
            .field("matcher", &self.matcher.as_ref().map(|_| "<fn>"))
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}

/// An object as read from storage: its plaintext encoded bytes and revision metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    /// The full storage key.
    pub key: String,
    /// The encoded object (after the value transformer, for example decrypted).
    pub data: Bytes,
    /// The object's resourceVersion: the mod revision of its last write (for a deleted object
    /// reported by delete or a DELETED watch event: the deletion revision).
    pub resource_version: Revision,
    /// True when the stored value was encrypted with a key that is no longer the write key, so
    /// the object should be rewritten (re-encrypted).
    pub stale: bool,
}

/// How a list or get interprets its resourceVersion (Kubernetes' `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Serve data at least as new as the resourceVersion.
    NotOlderThan,
    /// Serve data at exactly the resourceVersion (within retained history, else 410).
    Exact,
}

/// Options of [`Interface::get`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// Return `Ok(None)` instead of `KeyNotFound` when the key is absent.
    pub ignore_not_found: bool,
    /// `""`: the latest value (consistent read). `"0"`: any value. Otherwise a minimum revision:
    /// the read fails with `TooLargeResourceVersion` when it is beyond the current revision.
    pub resource_version: String,
}

/// Options of [`Interface::get_list`] and [`Interface::watch`] (Kubernetes'
/// `storage.ListOptions`).
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// The resourceVersion as given by the client (`""`, `"0"` or a decimal revision).
    pub resource_version: String,
    /// How `resource_version` is interpreted by lists; `None` is the legacy behaviour
    /// (`""` consistent, `"0"` any, `N` not older than N).
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// The object filter.
    pub predicate: Predicate,
    /// The page size for lists; 0 means unlimited.
    pub limit: i64,
    /// The continue token of a previous page (lists only).
    pub continue_token: String,
    /// When true the key is a collection prefix; when false a single object.
    pub recursive: bool,
    /// Watch only: emit bookmarks (`allowWatchBookmarks`).
    pub allow_bookmarks: bool,
    /// Watch only: `sendInitialEvents`. `Some(true)` sends the current state as ADDED events
    /// followed (when bookmarks are allowed) by a bookmark with `initial_events_end`. `None`
    /// keeps the legacy behaviour: a watch from `""`/`"0"` starts with the current state.
    pub send_initial_events: Option<bool>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The matching objects in key order.
    pub items: Vec<StoredObject>,
    /// The revision the list was served at (the list's resourceVersion).
    pub resource_version: Revision,
    /// The token for the next page, when more items remain.
    pub continue_token: Option<String>,
    /// The number of items after this page (before filtering), when known (Kubernetes reports
    /// it only for unfiltered paginated lists).
    pub remaining_item_count: Option<i64>,
}

/// The kind of a [`WatchEvent`].
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// An object appeared (created, or started matching the predicate).
    Added(StoredObject),
    /// An object changed and still matches.
    Modified {
        /// The new state.
        object: StoredObject,
        /// The previous encoded state, when known.
        prev: Option<Bytes>,
    },
    /// An object was deleted (or stopped matching the predicate): its last state, with
    /// `resource_version` set to the revision of the deletion (or of the change).
    Deleted(StoredObject),
    /// A progress notification: every event up to `resource_version` was delivered.
    Bookmark {
        /// The revision reached.
        resource_version: Revision,
        /// True for the bookmark that ends the initial events of `sendInitialEvents=true`
        /// (annotated `k8s.io/initial-events-end: "true"` at the API).
        initial_events_end: bool,
    },
    /// A terminal error (for example `Expired` when the start revision was compacted); the
    /// stream ends after it.
    Error(StorageError),
}

impl WatchEvent {
    /// The revision this event carries.
    pub fn resource_version(&self) -> Option<Revision> {
        match self {
            Self::Added(o) | Self::Deleted(o) | Self::Modified { object: o, .. } => {
                Some(o.resource_version)
            }
            Self::Bookmark {
                resource_version, ..
            } => Some(*resource_version),
            Self::Error(_) => None,
        }
    }
}

/// A stream of watch events; dropping it cancels the watch.
pub type WatchEventStream = BoxStream<'static, WatchEvent>;

/// Preconditions of a delete or update (Kubernetes' `storage.Preconditions`). A mismatch fails
/// with `InvalidObj`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object must have this uid.
    pub uid: Option<String>,
    /// The object must have this resourceVersion.
    pub resource_version: Option<String>,
}

/// What an update function decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The new encoded object. If equal to the current bytes the write is skipped and the
    /// current object is returned.
    pub data: Bytes,
    /// The TTL in seconds of the new value, if any.
    pub ttl: Option<u64>,
}

/// The update function of [`Interface::guaranteed_update`]: given the current object (`None`
/// when absent and `ignore_not_found` is set), produce the new one. It may run several times
/// when writes conflict. Errors abort the update and are returned as-is.
pub type UpdateFn<'a> =
    Box<dyn FnMut(Option<StoredObject>) -> BoxFuture<'a, Result<Update>> + Send + 'a>;

/// A deletion check run on the current object before deleting it (admission); it may run
/// several times when writes conflict.
pub type ValidateDeletionFn<'a> =
    Box<dyn FnMut(StoredObject) -> BoxFuture<'a, Result<()>> + Send + 'a>;

/// Kubernetes' storage interface over opaque encoded objects.
#[async_trait]
pub trait Interface: Send + Sync {
    /// Creates `key` with `data`; fails with `KeyExists` if present. `ttl` (seconds) makes the
    /// object expire (it is then deleted and watchers see DELETED). Returns the stored object
    /// with its resourceVersion.
    async fn create(&self, key: &str, data: Bytes, ttl: Option<u64>) -> Result<StoredObject>;

    /// Deletes `key` after checking `preconditions` and `validate_deletion` on the current
    /// object, retrying on conflicting writes. `cached_existing` is a suggestion of the current
    /// state (from a cache); it is verified against storage before being trusted. Returns the
    /// deleted object.
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<Preconditions>,
        validate_deletion: Option<ValidateDeletionFn<'_>>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject>;

    /// Watches `key` (or the collection under it when `opts.recursive`) starting after
    /// `opts.resource_version`.
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream>;

    /// Reads one object.
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<StoredObject>>;

    /// Lists the collection under `key` (when `opts.recursive`) or the single object at `key`.
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult>;

    /// Reads the current object (or verifies `cached_existing`), checks `preconditions`, calls
    /// `try_update` and writes the result with compare-and-swap on the mod revision, retrying
    /// from the fresh state on conflict. With `ignore_not_found` a missing object is passed as
    /// `None`; otherwise a missing object fails with `KeyNotFound`.
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: UpdateFn<'_>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject>;

    /// Counts the objects under the collection `key`.
    async fn count(&self, key: &str) -> Result<i64>;

    /// The current revision of the underlying storage: a linearizable read, at least the
    /// revision of every write acknowledged before the call.
    async fn current_resource_version(&self) -> Result<Revision>;

    /// Asks the watches of this storage that allow bookmarks to report their progress soon (a
    /// bookmark at least at the revision current now, after every event up to it), as
    /// Kubernetes' `RequestWatchProgress`. Returns false when the storage cannot (then
    /// bookmarks come only at their interval).
    fn request_watch_progress(&self) -> bool {
        false
    }
}

/// Parses a resourceVersion string: `""` and `"0"` are 0, otherwise a positive decimal.
pub fn parse_resource_version(value: &str) -> Result<Revision> {
    if value.is_empty() {
        return Ok(0);
    }
    match value.parse::<Revision>() {
        Ok(rv) if rv >= 0 => Ok(rv),
        _ => Err(StorageError::InvalidResourceVersion {
            value: value.to_string(),
            message: "resource version must be a non-negative integer".to_string(),
        }),
    }
}
