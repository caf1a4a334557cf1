//! The watch cache: Kubernetes' `Cacher` + `watchCache` in front of any [`Interface`].
//!
//! One [`Cacher`] serves one resource. It lists the resource once, then follows a single
//! upstream watch; it keeps every object in memory (with its labels and fields) plus a bounded
//! ring of recent events.
//!
//! - **Reads.** `get` and unpaginated lists are served from memory. A consistent read
//!   (resourceVersion `""`) first reads the storage's current revision — one linearizable read
//!   shared by all the consistent reads that were waiting when it was sent (`consistent`) — and
//!   is served once the cache has caught up with it; if the cache is behind, the upstream watch
//!   is asked for a progress report (so an idle resource catches up at once), or, on a storage
//!   that cannot be asked, the read is delegated. A read with a minimum resourceVersion waits
//!   for that revision. A cache that does not get there within `consistent_read_timeout`
//!   delegates the read to the storage underneath. `"0"` is served from whatever the cache
//!   holds.
//! - **Delegated lists.** As kube-apiserver does when it cannot serve a list from the cache,
//!   paginated lists (`limit > 0`), continuations and `resourceVersionMatch=Exact` lists go to
//!   the storage, which owns continue tokens and historical reads.
//! - **Writes** pass through; deletes and updates get the cached object as their (verified)
//!   suggestion.
//! - **Watches** start from the ring (410 `Expired` if the revision is older than the ring) or
//!   with synthetic ADDED events for the current state, then follow live events. Each event is
//!   shared by all watchers and carries a memo of its encoded forms
//!   ([`Cacher::watch_memoized`]). Per-watcher buffers are bounded: a watcher that does not
//!   read is closed with an error without affecting the others. Bookmarks are sent every
//!   `bookmark_interval` to watchers that allow them, and `sendInitialEvents=true` ends its
//!   initial events with a bookmark flagged `initial_events_end`.

mod attrs;
mod consistent;
mod memo;
mod reflector;
mod state;
mod watcher;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use parking_lot::{Mutex, RwLock};
use tokio::task::JoinHandle;

pub use memo::{EncodedMemo, EncodingKey};
pub use watcher::{MemoHandle, MemoizedEvent};

use crate::errors::{Result, Revision, StorageError};
use crate::interface::{
    GetOptions, Interface, ListOptions, ListResult, ObjectCodec, Preconditions,
    ResourceVersionMatch, StoredObject, UpdateFn, ValidateDeletionFn, WatchEvent, WatchEventStream,
    parse_resource_version,
};
use crate::keys::collection_prefix;
use consistent::RevisionBatcher;
use state::CacheState;
use watcher::{Item, WatchFilter, WatcherEntry, new_watcher};

/// The configuration of a [`Cacher`].
#[derive(Clone)]
pub struct CacherConfig {
    /// The resource prefix (ending with `/`) the cache covers.
    pub resource_prefix: String,
    /// Extracts labels and fields for filtering.
    pub codec: Arc<dyn ObjectCodec>,
    /// How many recent events the ring keeps (watches from older revisions get 410).
    pub event_capacity: usize,
    /// How many events a watcher may have unread before it is closed.
    pub watcher_buffer: usize,
    /// How often watchers that allow bookmarks receive one.
    pub bookmark_interval: Duration,
    /// How long a read waits for the cache to catch up before it is delegated to the storage.
    pub consistent_read_timeout: Duration,
}

/// The events of history a watch cache keeps by default (its ring).
pub const DEFAULT_EVENT_CAPACITY: usize = 10_000;

impl CacherConfig {
    /// A configuration with defaults: [`DEFAULT_EVENT_CAPACITY`] events of history, 1,000-event watcher buffers,
    /// bookmarks every 5 s, and a 1 s wait for freshness.
    pub fn new(resource_prefix: impl Into<String>, codec: Arc<dyn ObjectCodec>) -> Self {
        Self {
            resource_prefix: collection_prefix(&resource_prefix.into()),
            codec,
            event_capacity: DEFAULT_EVENT_CAPACITY,
            watcher_buffer: 1_000,
            bookmark_interval: Duration::from_secs(5),
            consistent_read_timeout: Duration::from_secs(1),
        }
    }
}

/// While a consistent read waits for the cache to catch up, the upstream watch is asked for a
/// progress report this often (kube-apiserver's progress requester period).
const PROGRESS_REQUEST_PERIOD: Duration = Duration::from_millis(100);

/// State shared by the cacher handle and its reflector task.
pub(crate) struct Shared {
    storage: Arc<dyn Interface>,
    config: CacherConfig,
    state: RwLock<CacheState>,
    watchers: Mutex<Vec<WatcherEntry>>,
    /// The cache revision, `-1` until the initial list is loaded.
    revision: tokio::sync::watch::Sender<Revision>,
    /// Shares the storage revision reads of concurrent consistent reads.
    consistent: Arc<RevisionBatcher>,
    /// Incremented with every change to the cached objects ([`Cacher::changes`]).
    changes: Arc<AtomicU64>,
    /// Set by [`Cacher::stop`]: no watcher is added any more.
    stopped: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// Announces that the cached objects changed; called with `state` still locked for the
    /// change, so a read that finds the change finds the counter moved.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }
}

/// Aborts the reflector when the last [`Cacher`] handle goes away.
struct TaskGuard(JoinHandle<()>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A watch cache in front of an [`Interface`]; it implements [`Interface`] itself. Cheap to
/// clone; the cache stops when the last clone is dropped.
#[derive(Clone)]
pub struct Cacher {
    shared: Arc<Shared>,
    task: Arc<TaskGuard>,
}

impl std::fmt::Debug for Cacher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cacher")
            .field("resource_prefix", &self.shared.config.resource_prefix)
            .finish_non_exhaustive()
    }
}

/// How fresh a read must be.
enum Freshness {
    /// Whatever the cache holds (resourceVersion `"0"`).
    Any,
    /// At least the storage's current revision (resourceVersion `""`).
    Latest,
    /// At least this revision.
    AtLeast(Revision),
}

impl Freshness {
    fn parse(resource_version: &str) -> Result<Self> {
        Ok(match resource_version {
            "" => Self::Latest,
            "0" => Self::Any,
            other => Self::AtLeast(parse_resource_version(other)?),
        })
    }
}

impl Cacher {
    /// Starts a cache over `storage` (a [`Store`](crate::store::Store) for the same resource).
    /// Must be called inside a Tokio runtime; the initial list runs in the background.
    pub fn new(storage: Arc<dyn Interface>, config: CacherConfig) -> Self {
        let (revision, _) = tokio::sync::watch::channel(-1);
        let shared = Arc::new(Shared {
            consistent: RevisionBatcher::new(Arc::clone(&storage)),
            storage,
            config,
            state: RwLock::new(CacheState::default()),
            watchers: Mutex::new(Vec::new()),
            revision,
            changes: Arc::default(),
            stopped: Default::default(),
        });
        let task = tokio::spawn(reflector::run(Arc::clone(&shared)));
        Self {
            shared,
            task: Arc::new(TaskGuard(task)),
        }
    }

    /// Stops the cache before its last clone is dropped: its upstream watch ends and every
    /// open watch it serves ends (the stream closes, so clients watch again), as kube-apiserver
    /// ends the watches of a custom resource whose definition changed or went away.
    pub fn stop(&self) {
        self.task.0.abort();
        let mut watchers = self.shared.watchers.lock();
        self.shared.stopped.store(true, Ordering::Release);
        watchers.clear();
    }

    /// The storage underneath.
    pub fn storage(&self) -> &Arc<dyn Interface> {
        &self.shared.storage
    }

    /// The revision the cache has reached, or `None` before the initial list is loaded.
    pub fn revision(&self) -> Option<Revision> {
        let revision = *self.shared.revision.borrow();
        (revision >= 0).then_some(revision)
    }

    /// A counter incremented with every change to the cached objects (an event applied, a
    /// relist) before a read can find the change, and by nothing else (progress notifications
    /// and writes to other resources leave it alone). Reading it before a read of the cache and
    /// finding it unchanged later proves that a read now would find the same objects.
    pub fn changes(&self) -> &Arc<AtomicU64> {
        &self.shared.changes
    }

    /// The number of open watchers served by the cache (a watcher whose consumer is gone is
    /// not counted, though the cache may not have removed it yet).
    pub fn watcher_count(&self) -> usize {
        let watchers = self.shared.watchers.lock();
        watchers.iter().filter(|w| !w.tx.is_closed()).count()
    }

    /// Discards the cached history at or below `revision`, so watches from older revisions get
    /// 410 `Expired`. The server's compactor calls it with the revision it compacted the backend
    /// at; without it the cache keeps serving watches from its ring (which is also valid).
    pub fn compact(&self, revision: Revision) {
        self.shared.state.write().compact(revision);
    }

    /// Waits until the initial list is loaded; false on timeout.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        self.wait_for(0, timeout).await
    }

    /// Waits until the cache revision is at least `target`; false on timeout.
    async fn wait_for(&self, target: Revision, timeout: Duration) -> bool {
        let mut rx = self.shared.revision.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|r| *r >= 0 && *r >= target))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits until the cache can serve a read of the given freshness; false means "delegate".
    async fn ready_for(&self, freshness: &Freshness) -> Result<bool> {
        let timeout = self.shared.config.consistent_read_timeout;
        match freshness {
            Freshness::Any => Ok(self.wait_for(0, timeout).await),
            Freshness::AtLeast(rv) => Ok(self.wait_for_revision(*rv, timeout).await),
            Freshness::Latest => self.ready_for_consistent_read(timeout).await,
        }
    }

    /// Waits until the cache has reached `target`, asking the upstream watch for a progress
    /// report while it has not (as kube-apiserver's cache does when it waits to be fresh): the
    /// storage sends a watch only the revisions of its own resource, so an idle resource's
    /// cache learns of newer revisions only when it asks or at its next bookmark. False on
    /// timeout.
    async fn wait_for_revision(&self, target: Revision, timeout: Duration) -> bool {
        let cached = self.revision();
        if cached.is_some_and(|cached| cached >= target) {
            return true;
        }
        if cached.is_none() || !self.shared.storage.request_watch_progress() {
            return self.wait_for(target, timeout).await;
        }
        self.wait_with_progress_requests(target, tokio::time::Instant::now() + timeout)
            .await
    }

    /// Waits until the cache has reached `target` or `deadline` passes, asking the upstream
    /// watch for a progress report every [`PROGRESS_REQUEST_PERIOD`] (the caller asked once).
    async fn wait_with_progress_requests(
        &self,
        target: Revision,
        deadline: tokio::time::Instant,
    ) -> bool {
        let mut revision = self.shared.revision.subscribe();
        loop {
            let wake = deadline.min(tokio::time::Instant::now() + PROGRESS_REQUEST_PERIOD);
            match tokio::time::timeout_at(wake, revision.wait_for(|r| *r >= target)).await {
                Ok(reached) => return reached.is_ok(),
                Err(_) if wake >= deadline => return false,
                Err(_) => {
                    self.shared.storage.request_watch_progress();
                }
            }
        }
    }

    /// [`Self::ready_for`] for a watch: a watch from the latest revision waits for the initial
    /// list, and one that the storage cannot confirm at once (no progress requests) still waits
    /// up to the timeout for the cache, since a watch delegated to the storage costs a storage
    /// watch for its lifetime.
    async fn ready_for_watch(&self, freshness: &Freshness) -> Result<bool> {
        let timeout = self.shared.config.consistent_read_timeout;
        if matches!(freshness, Freshness::Latest)
            && self.revision().is_none()
            && !self.wait_for(0, timeout).await
        {
            return Ok(false);
        }
        if self.ready_for(freshness).await? {
            return Ok(true);
        }
        match freshness {
            Freshness::Latest if !self.shared.storage.request_watch_progress() => {
                let target = self.shared.consistent.current().await?;
                Ok(self.wait_for(target, timeout).await)
            }
            _ => Ok(false),
        }
    }

    /// Waits until the cache holds every write acknowledged before this call (see
    /// [`consistent`]): it reads the storage's current revision `R` (one read shared by every
    /// consistent read waiting for it) and is ready once the cache has reached `R`. When it has
    /// not, the cache's upstream watch is asked for a progress report (again every
    /// [`PROGRESS_REQUEST_PERIOD`] while waiting), so an idle resource catches up without
    /// waiting for its next bookmark; a storage that cannot be asked delegates at once, and so
    /// does a cache still behind after `timeout` or still loading its initial list.
    async fn ready_for_consistent_read(&self, timeout: Duration) -> Result<bool> {
        let started = tokio::time::Instant::now();
        if self.revision().is_none() {
            // Still loading: the storage answers (kube-apiserver delegates too).
            return Ok(false);
        }
        let target = self.shared.consistent.current().await?;
        if self.revision().is_some_and(|cached| cached >= target) {
            return Ok(true);
        }
        if !self.shared.storage.request_watch_progress() {
            return Ok(false);
        }
        Ok(self
            .wait_with_progress_requests(target, started + timeout)
            .await)
    }

    /// The object at `key` as the cache holds it now, without waiting for the cache to catch
    /// up (also for checks that read another object, such as a policy binding's of its
    /// policy); `None` when there is none, or before the initial list is loaded.
    pub fn cached_object(&self, key: &str) -> Option<StoredObject> {
        self.shared
            .state
            .read()
            .objects
            .get(key)
            .map(|o| o.object.clone())
    }

    /// The resourceVersion of the object at `key` as the cache holds it now (what
    /// [`Cacher::cached_object`] would return, without copying it).
    pub fn cached_resource_version(&self, key: &str) -> Option<Revision> {
        self.shared
            .state
            .read()
            .objects
            .get(key)
            .map(|o| o.object.resource_version)
    }

    /// Every object whose key starts with `prefix` as the cache holds it now, in key order,
    /// without waiting for the cache to catch up; empty before the initial list is loaded.
    pub fn cached_objects(&self, prefix: &str) -> Vec<StoredObject> {
        self.shared
            .state
            .read()
            .objects
            .range_from(prefix)
            .take_while(|o| o.object.key.starts_with(prefix))
            .map(|o| o.object.clone())
            .collect()
    }

    /// Like [`Interface::watch`], with each event's memo of encoded forms, so the server can
    /// encode an event once per encoding for all its watchers.
    pub async fn watch_memoized(
        &self,
        key: &str,
        opts: ListOptions,
    ) -> Result<BoxStream<'static, MemoizedEvent>> {
        let freshness = Freshness::parse(&opts.resource_version)?;
        if !self.ready_for_watch(&freshness).await? {
            let delegated = self.shared.storage.watch(key, opts).await?;
            return Ok(delegated
                .map(|event| MemoizedEvent { event, memo: None })
                .boxed());
        }
        let requested = parse_resource_version(&opts.resource_version)?;
        let initial = opts.send_initial_events.unwrap_or(requested == 0);
        let filter = WatchFilter {
            key: if opts.recursive {
                collection_prefix(key)
            } else {
                key.to_string()
            },
            recursive: opts.recursive,
            predicate: opts.predicate.clone(),
            allow_bookmarks: opts.allow_bookmarks,
        };
        let state = self.shared.state.read();
        let mut backlog = Vec::new();
        if initial {
            for object in self.scan(&state, &filter) {
                backlog.push(Item::Event(
                    Arc::new(state::CachedEvent {
                        kind: state::ChangeKind::Added,
                        revision: object.object.resource_version,
                        key: object.object.key.clone(),
                        current: object.clone(),
                        prev: None,
                        memos: Default::default(),
                    }),
                    state::Delivery::AsIs,
                ));
            }
            if opts.send_initial_events == Some(true) && opts.allow_bookmarks {
                backlog.push(Item::Bookmark(state.revision, true));
            }
        } else {
            // Without initial events and without a resourceVersion the watch starts from now.
            let from = if requested == 0 {
                state.revision
            } else {
                requested
            };
            let Some(events) = state.events_after(from) else {
                let error = StorageError::Expired {
                    requested,
                    compacted: state.ring_start,
                };
                return Ok(stream::once(async move {
                    MemoizedEvent {
                        event: WatchEvent::Error(error),
                        memo: None,
                    }
                })
                .boxed());
            };
            for event in events {
                if let Some(delivery) = filter.delivery(&event) {
                    backlog.push(Item::Event(event, delivery));
                }
            }
        }
        let (entry, stream) = new_watcher(filter, backlog, self.shared.config.watcher_buffer);
        // A stopped cache drops the watcher at once, which ends its stream after the backlog.
        let mut watchers = self.shared.watchers.lock();
        if !self.shared.stopped.load(Ordering::Acquire) {
            watchers.push(entry);
        }
        drop(watchers);
        drop(state);
        Ok(stream)
    }

    /// The cached objects in scope of `filter` that match its predicate, in key order.
    fn scan<'s>(
        &self,
        state: &'s CacheState,
        filter: &'s WatchFilter,
    ) -> impl Iterator<Item = &'s state::CachedObject> + 's {
        let range: Box<dyn Iterator<Item = &'s state::CachedObject> + 's> = if filter.recursive {
            Box::new(
                state
                    .objects
                    .range_from(&filter.key)
                    .take_while(|o| o.object.key.starts_with(&filter.key)),
            )
        } else {
            Box::new(state.objects.get(&filter.key).into_iter())
        };
        range.filter(|o| o.matches(&filter.predicate))
    }
}

#[async_trait]
impl Interface for Cacher {
    async fn create(&self, key: &str, data: Bytes, ttl: Option<u64>) -> Result<StoredObject> {
        self.shared.storage.create(key, data, ttl).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<Preconditions>,
        validate_deletion: Option<ValidateDeletionFn<'_>>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        let suggestion = cached_existing.or_else(|| self.cached_object(key));
        self.shared
            .storage
            .delete(key, preconditions, validate_deletion, suggestion)
            .await
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream> {
        Ok(self
            .watch_memoized(key, opts)
            .await?
            .map(|memoized| memoized.event)
            .boxed())
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<StoredObject>> {
        let freshness = Freshness::parse(&opts.resource_version)?;
        if !self.ready_for(&freshness).await? {
            return self.shared.storage.get(key, opts).await;
        }
        let state = self.shared.state.read();
        match state.objects.get(key) {
            Some(object) => Ok(Some(object.object.clone())),
            None if opts.ignore_not_found => Ok(None),
            None => Err(StorageError::KeyNotFound {
                key: key.to_string(),
                revision: state.revision,
            }),
        }
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let delegate = opts.limit > 0
            || !opts.continue_token.is_empty()
            || opts.resource_version_match == Some(ResourceVersionMatch::Exact);
        if delegate {
            return self.shared.storage.get_list(key, opts).await;
        }
        let freshness = Freshness::parse(&opts.resource_version)?;
        if !self.ready_for(&freshness).await? {
            return self.shared.storage.get_list(key, opts).await;
        }
        let filter = WatchFilter {
            key: if opts.recursive {
                collection_prefix(key)
            } else {
                key.to_string()
            },
            recursive: opts.recursive,
            predicate: opts.predicate,
            allow_bookmarks: false,
        };
        let state = self.shared.state.read();
        let items = self
            .scan(&state, &filter)
            .map(|o| o.object.clone())
            .collect();
        Ok(ListResult {
            items,
            resource_version: state.revision,
            continue_token: None,
            remaining_item_count: None,
        })
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: UpdateFn<'_>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        let suggestion = cached_existing.or_else(|| self.cached_object(key));
        self.shared
            .storage
            .guaranteed_update(key, ignore_not_found, preconditions, try_update, suggestion)
            .await
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.shared.storage.count(key).await
    }

    async fn current_resource_version(&self) -> Result<Revision> {
        self.shared.storage.current_resource_version().await
    }

    fn request_watch_progress(&self) -> bool {
        self.shared.storage.request_watch_progress()
    }
}
