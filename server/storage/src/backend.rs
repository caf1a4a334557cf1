//! The raw revisioned key-value contract every storage engine implements.
//!
//! The model is etcd v3: one global revision that increases by one with every committed write,
//! each key remembering the revision that created it (`create_revision`) and the one that last
//! changed it (`mod_revision`); reads at a past revision within the retained history; watches
//! that replay history from a revision and then follow live writes; compaction that discards
//! history older than a revision. Both the embedded engine and etcd implement [`Backend`]; the
//! Kubernetes-semantics [`Store`](crate::store::Store) is written once against it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

use crate::errors::{Result, Revision};

/// One key with its value and revision metadata, as stored (values are still transformed, for
/// example encrypted; the backend never interprets them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key.
    pub key: String,
    /// The stored bytes.
    pub value: Bytes,
    /// The revision of the write that created this incarnation of the key.
    pub create_revision: Revision,
    /// The revision of the last write to this key.
    pub mod_revision: Revision,
    /// The TTL in seconds attached to the key when it was written, if any.
    pub ttl: Option<u64>,
}

/// The answer to a point read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetResponse {
    /// The value, if the key existed at the read revision.
    pub kv: Option<KeyValue>,
    /// The revision the read was served at (the current revision for latest reads).
    pub revision: Revision,
}

/// A range read over the keys that start with `prefix`, beginning at `start` (inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeRequest {
    /// Only keys with this prefix are returned.
    pub prefix: String,
    /// The first key to consider (inclusive); must start with `prefix` or be empty (then the
    /// range starts at `prefix`).
    pub start: String,
    /// The maximum number of items returned; 0 means no limit.
    pub limit: usize,
    /// The revision to read at; 0 means the current revision.
    pub revision: Revision,
}

/// The answer to a [`RangeRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeResponse {
    /// The items in key order.
    pub kvs: Vec<KeyValue>,
    /// The revision the read was served at.
    pub revision: Revision,
    /// True when more keys exist after the last returned one within the prefix.
    pub more: bool,
    /// The total number of keys in `[start, end of prefix)` at `revision` (the returned items
    /// included), so that `count - kvs.len()` is the number remaining.
    pub count: i64,
}

/// The condition under which a write applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Applies only when the key does not exist (create).
    Absent,
    /// Applies only when the key exists with exactly this mod revision (compare-and-swap).
    ModRevision(Revision),
    /// Applies unconditionally.
    Always,
}

/// The outcome of a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOutcome {
    /// The write was committed (and synced, for durable engines).
    Committed {
        /// The revision of this write.
        revision: Revision,
        /// The value the key had just before the write (the deleted value for a delete).
        prev: Option<KeyValue>,
    },
    /// The condition did not hold; nothing was written.
    Failed {
        /// The key's current value, so callers can retry without another read.
        current: Option<KeyValue>,
        /// The revision the comparison was evaluated at.
        revision: Revision,
    },
}

/// The kind of a backend watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A key was created or updated.
    Put,
    /// A key was deleted (explicitly or by TTL expiry).
    Delete,
}

/// One change to one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Put or delete.
    pub kind: EventKind,
    /// The full key.
    pub key: String,
    /// The new value (empty for deletes).
    pub value: Bytes,
    /// The value before this change, if the key existed.
    pub prev_value: Option<Bytes>,
    /// The create revision of the key after a put, or of the deleted incarnation for a delete.
    pub create_revision: Revision,
    /// The revision of this change.
    pub mod_revision: Revision,
}

impl Event {
    /// True when this put created the key (rather than updating it).
    pub fn is_create(&self) -> bool {
        self.kind == EventKind::Put && self.create_revision == self.mod_revision
    }
}

/// One item of a backend watch stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchItem {
    /// All events of one revision that match the watched prefix, in key order. A revision's
    /// events are always delivered together. Every write of a backend commits at its own
    /// revision, so an item holds one event; only history written otherwise (an etcd
    /// transaction of several keys by another client or an earlier apiary) holds more.
    Events(Vec<Event>),
    /// No event below or at `revision` is still to come for this watch.
    Progress(Revision),
}

/// Parameters of a backend watch.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// Only keys with this prefix are watched (the empty string watches everything).
    pub prefix: String,
    /// The first revision to deliver (inclusive, as etcd). 0 means "from now": the first event
    /// delivered has a revision greater than the current revision at subscription.
    pub start_revision: Revision,
    /// When set, the stream yields [`WatchItem::Progress`] at roughly this interval while idle.
    pub progress_interval: Option<Duration>,
    /// Requests for a progress report out of turn (see [`ProgressRequester`]); honoured only by
    /// backends whose [`Backend::supports_progress_requests`] is true and on watches with a
    /// `progress_interval`.
    pub progress_requests: Option<ProgressRequests>,
}

/// The sending side of out-of-turn progress requests: [`ProgressRequester::request`] asks
/// every watch opened with one of its [`ProgressRequests`] to report its progress soon. A
/// backend that supports them answers each request with a [`WatchItem::Progress`] (or events)
/// reaching at least the revision that was current when the request was made, ordered after
/// every event up to it, as etcd answers a watch progress request. Requests made while one is
/// being answered may be answered together.
#[derive(Debug, Clone)]
pub struct ProgressRequester(Arc<tokio::sync::watch::Sender<u64>>);

impl Default for ProgressRequester {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(0)))
    }
}

impl ProgressRequester {
    /// A requester with no watch subscribed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handle a watch listens on.
    pub fn subscribe(&self) -> ProgressRequests {
        ProgressRequests(self.0.subscribe())
    }

    /// Asks every subscribed watch for a progress report.
    pub fn request(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// The watch side of [`ProgressRequester`].
#[derive(Debug, Clone)]
pub struct ProgressRequests(tokio::sync::watch::Receiver<u64>);

impl ProgressRequests {
    /// Waits for the next request (requests made since the last call count as one). Never
    /// returns once the requester is gone.
    pub async fn requested(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Waits for the next request on `requests`, or forever when there is none.
pub(crate) async fn next_progress_request(requests: Option<&mut ProgressRequests>) {
    match requests {
        Some(requests) => requests.requested().await,
        None => std::future::pending().await,
    }
}

/// A backend watch: ordered by revision, gap-free, duplicate-free. It ends with
/// `Err(StorageError::Expired)` if `start_revision` is compacted (immediately) or with another
/// error if the backend fails; dropping it cancels the watch.
pub type WatchStream = BoxStream<'static, Result<WatchItem>>;

/// A revisioned key-value engine with etcd v3 semantics.
///
/// Every committed [`Backend::put`] and [`Backend::delete`] (and every TTL expiry) is one
/// change at its own revision, greater than the revision of every change committed before it:
/// no two changes share a revision, so a resourceVersion names exactly one change and a watch
/// resumed from any delivered revision delivers every later change.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Reads one key at `revision` (0 means latest). A revision below the compaction point
    /// fails with `Expired`; a revision above the current one fails with
    /// `TooLargeResourceVersion`.
    async fn get(&self, key: &str, revision: Revision) -> Result<GetResponse>;

    /// Reads keys under a prefix in key order, with the same revision rules as [`Backend::get`].
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse>;

    /// Writes `value` at `key` when `condition` holds. `ttl` (seconds) makes the key expire: it
    /// is then deleted like an ordinary delete, so watchers see the deletion.
    async fn put(
        &self,
        key: &str,
        value: Bytes,
        condition: Condition,
        ttl: Option<u64>,
    ) -> Result<TxnOutcome>;

    /// Deletes `key` when `condition` holds ([`Condition::Absent`] is rejected as `Internal`).
    /// Deleting a missing key yields [`TxnOutcome::Failed`] with `current: None`.
    async fn delete(&self, key: &str, condition: Condition) -> Result<TxnOutcome>;

    /// Counts the keys under `prefix` at the current revision.
    async fn count(&self, prefix: &str) -> Result<i64>;

    /// Opens a watch; see [`WatchStream`] for the guarantees.
    async fn watch(&self, request: WatchRequest) -> Result<WatchStream>;

    /// Discards history older than `revision`; reads and watches below it then fail with
    /// `Expired`. Compacting at or below the current compaction point is a no-op.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The current (latest committed) revision.
    async fn current_revision(&self) -> Result<Revision>;

    /// The oldest revision still readable (the compaction point; 0 or 1 when nothing was
    /// compacted).
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Claims one round of the periodic compactor ([`crate::compactor`]): succeeds when the
    /// round's logical clock still has `seen_version`, advancing it and recording `revision` (the
    /// revision this round will compact to) for other replicas. The default is for a backend
    /// owned by one process: every claim succeeds, at `seen_version + 1`, with the current
    /// revision.
    async fn claim_compaction(
        &self,
        seen_version: i64,
        revision: Revision,
    ) -> Result<crate::compactor::CompactionClaim> {
        let _ = revision;
        Ok(crate::compactor::CompactionClaim {
            claimed: true,
            version: seen_version + 1,
            revision: self.current_revision().await?,
            recorded: 0,
        })
    }

    /// True when watches answer [`WatchRequest::progress_requests`] as [`ProgressRequester`]
    /// describes.
    fn supports_progress_requests(&self) -> bool {
        false
    }
}
