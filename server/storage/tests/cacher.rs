//! Behaviour specific to the watch cache (over a Store on the embedded backend): slow watchers
//! are closed without affecting others, each event is encoded once per encoding, consistent
//! reads are served from memory once the cache catches up (by a progress request when the
//! resource is idle; from the storage when it cannot), concurrent consistent reads share their
//! storage revision reads, and watches older than the ring get 410 Expired.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use storage::Result;
use storage::backend::Backend;
use storage::cacher::{Cacher, CacherConfig, EncodingKey};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::errors::Revision;
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, Preconditions, Predicate, StoredObject,
    UpdateFn, ValidateDeletionFn, WatchEvent, WatchEventStream,
};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{JsonTestCodec, object};

struct Fixture {
    _dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend: Arc<dyn Backend> = Arc::new(
            EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).expect("open backend"),
        );
        Self { _dir: dir, backend }
    }

    fn store(&self, resource: &str) -> (Store, ResourceKeys) {
        let keys = ResourceKeys::new("/registry", "test.dev", resource).expect("keys");
        let config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
            .with_bookmark_interval(Duration::from_millis(50));
        (Store::new(Arc::clone(&self.backend), config), keys)
    }

    async fn cacher(
        &self,
        resource: &str,
        tune: impl FnOnce(&mut CacherConfig),
    ) -> (Cacher, ResourceKeys) {
        let (store, keys) = self.store(resource);
        let mut config = CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
        tune(&mut config);
        let cacher = Cacher::new(Arc::new(store), config);
        assert!(cacher.wait_ready(Duration::from_secs(10)).await);
        (cacher, keys)
    }
}

fn watch_from(rv: i64) -> ListOptions {
    ListOptions {
        resource_version: rv.to_string(),
        recursive: true,
        send_initial_events: Some(false),
        ..ListOptions::default()
    }
}

async fn create(cacher: &Cacher, keys: &ResourceKeys, name: &str) -> i64 {
    cacher
        .create(
            &keys.object_key(Some("ns"), name).expect("key"),
            object("ns", name, &[], name),
            None,
        )
        .await
        .expect("create")
        .resource_version
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_does_not_read_is_closed_and_others_are_unaffected() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |c| c.watcher_buffer = 4).await;
    let start = cacher.current_resource_version().await.expect("rv");
    let mut slow = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    let mut fast = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    let mut received = 0;
    for i in 0..20 {
        create(&cacher, &keys, &format!("o{i:02}")).await;
        // The fast watcher keeps up.
        match tokio::time::timeout(Duration::from_secs(5), fast.next()).await {
            Ok(Some(WatchEvent::Added(_))) => received += 1,
            other => panic!("fast watcher: unexpected {other:?}"),
        }
    }
    assert_eq!(received, 20);
    // The slow one got at most its buffer, then an error, then the end.
    let mut events = 0;
    let mut error = None;
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(5), slow.next()).await {
        match event {
            WatchEvent::Added(_) => events += 1,
            WatchEvent::Error(e) => error = Some(e),
            other => panic!("slow watcher: unexpected {other:?}"),
        }
    }
    assert!(events <= 4, "slow watcher got {events} events");
    assert!(error.is_some(), "slow watcher was closed with an error");
    assert_eq!(cacher.watcher_count(), 1);
}

/// A watcher whose consumer is gone stops counting at once, and leaves the registry at the next
/// bookmark round, on a resource that sees no event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watcher_of_an_idle_resource_is_not_counted() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture
        .cacher("widgets", |c| {
            c.bookmark_interval = Duration::from_millis(50)
        })
        .await;
    let start = cacher.current_resource_version().await.expect("rv");
    let kept = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    let dropped = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    assert_eq!(cacher.watcher_count(), 2);
    drop(dropped);
    assert_eq!(cacher.watcher_count(), 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(cacher.watcher_count(), 1);
    drop(kept);
    assert_eq!(cacher.watcher_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_cache_ends_its_watches_and_takes_no_new_ones() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |_| {}).await;
    let start = cacher.current_resource_version().await.expect("rv");
    let mut open = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    create(&cacher, &keys, "a").await;
    assert!(matches!(
        tokio::time::timeout(Duration::from_secs(5), open.next()).await,
        Ok(Some(WatchEvent::Added(_)))
    ));
    cacher.stop();
    let end = tokio::time::timeout(Duration::from_secs(5), open.next()).await;
    assert!(matches!(end, Ok(None)), "the open watch ends: {end:?}");
    assert_eq!(cacher.watcher_count(), 0);
    let mut late = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    // The late watch replays what the cache holds, then ends instead of waiting.
    let mut events = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), late.next()).await {
            Ok(Some(_)) => events += 1,
            Ok(None) => break,
            Err(_) => panic!("a watch of a stopped cache must end"),
        }
    }
    assert!(events <= 1);
    assert_eq!(cacher.watcher_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_is_encoded_once_per_encoding() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |_| {}).await;
    let start = cacher.current_resource_version().await.expect("rv");
    let mut watchers = Vec::new();
    for _ in 0..5 {
        watchers.push(
            cacher
                .watch_memoized(keys.resource_prefix(), watch_from(start))
                .await
                .expect("watch"),
        );
    }
    create(&cacher, &keys, "a").await;
    let encodes = AtomicUsize::new(0);
    let json = EncodingKey::new("json;v1");
    let proto = EncodingKey::new("protobuf;v1");
    for watcher in &mut watchers {
        let event = tokio::time::timeout(Duration::from_secs(5), watcher.next())
            .await
            .expect("event")
            .expect("open");
        let memo = event.memo.expect("cached events carry a memo");
        for key in [&json, &proto] {
            let bytes = memo.encoded(key, || {
                encodes.fetch_add(1, Ordering::SeqCst);
                Bytes::from(key.0.clone())
            });
            assert_eq!(bytes, Bytes::from(key.0.clone()));
        }
    }
    assert_eq!(encodes.load(Ordering::SeqCst), 2, "one encode per encoding");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_are_served_from_the_cache_once_fresh() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture
        .cacher("widgets", |c| {
            c.consistent_read_timeout = Duration::from_secs(3);
        })
        .await;
    let (other, other_keys) = fixture.store("gadgets");
    create(&cacher, &keys, "a").await;
    // Writes to another resource advance the backend revision; the cache learns that nothing
    // changed for its resource from upstream bookmarks, well before the 3 s fallback.
    for i in 0..5 {
        other
            .create(
                &other_keys
                    .object_key(Some("ns"), &format!("g{i}"))
                    .expect("key"),
                object("ns", &format!("g{i}"), &[], "g"),
                None,
            )
            .await
            .expect("create other");
    }
    let current = cacher.current_resource_version().await.expect("rv");
    let started = Instant::now();
    let list = cacher
        .get_list(
            keys.resource_prefix(),
            ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .expect("list");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "served without the fallback"
    );
    assert!(list.resource_version >= current);
    assert_eq!(list.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_older_than_the_ring_expire_and_newer_ones_replay() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |c| c.event_capacity = 5).await;
    let mut revisions = Vec::new();
    for i in 0..20 {
        revisions.push(create(&cacher, &keys, &format!("o{i:02}")).await);
    }
    // Wait until the cache saw the last write.
    let list = cacher
        .get_list(keys.resource_prefix(), watch_from(revisions[19]))
        .await
        .expect("list");
    assert_eq!(list.items.len(), 20);
    let mut old = cacher
        .watch(keys.resource_prefix(), watch_from(revisions[0]))
        .await
        .expect("watch");
    match tokio::time::timeout(Duration::from_secs(5), old.next()).await {
        Ok(Some(WatchEvent::Error(error))) => assert!(error.is_expired(), "{error:?}"),
        other => panic!("expected Expired, got {other:?}"),
    }
    let mut recent = cacher
        .watch(keys.resource_prefix(), watch_from(revisions[16]))
        .await
        .expect("watch");
    for expected in &revisions[17..] {
        match tokio::time::timeout(Duration::from_secs(5), recent.next()).await {
            Ok(Some(WatchEvent::Added(o))) => assert_eq!(o.resource_version, *expected),
            other => panic!("expected ADDED at {expected}, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_lists_and_watches_use_cached_attributes() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |_| {}).await;
    for (name, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        cacher
            .create(
                &keys.object_key(Some("ns"), name).expect("key"),
                object("ns", name, &[("color", color)], name),
                None,
            )
            .await
            .expect("create");
    }
    let red = Predicate::new(|attrs| attrs.labels.get("color") == Some("red"));
    let list = cacher
        .get_list(
            keys.resource_prefix(),
            ListOptions {
                recursive: true,
                predicate: red.clone(),
                ..ListOptions::default()
            },
        )
        .await
        .expect("list");
    let names: Vec<_> = list
        .items
        .iter()
        .map(|o| o.key.rsplit('/').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(names, ["a", "c"]);
}

/// A storage in front of a [`Store`] that counts the reads the cache sends it, can slow down
/// revision reads, and can refuse (or swallow) progress requests.
struct Counting {
    inner: Store,
    gets: AtomicUsize,
    lists: AtomicUsize,
    revision_reads: AtomicUsize,
    revision_delay: Duration,
    /// When false, `request_watch_progress` says the storage cannot be asked.
    progress_supported: bool,
    /// When true, progress requests are accepted but never passed on.
    swallow_progress: AtomicBool,
}

impl Counting {
    fn new(inner: Store) -> Self {
        Self {
            inner,
            gets: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
            revision_reads: AtomicUsize::new(0),
            revision_delay: Duration::ZERO,
            progress_supported: true,
            swallow_progress: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl Interface for Counting {
    async fn create(&self, key: &str, data: Bytes, ttl: Option<u64>) -> Result<StoredObject> {
        self.inner.create(key, data, ttl).await
    }
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<Preconditions>,
        validate: Option<ValidateDeletionFn<'_>>,
        cached: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.inner
            .delete(key, preconditions, validate, cached)
            .await
    }
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream> {
        self.inner.watch(key, opts).await
    }
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<StoredObject>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key, opts).await
    }
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.get_list(key, opts).await
    }
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: UpdateFn<'_>,
        cached: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.inner
            .guaranteed_update(key, ignore_not_found, preconditions, try_update, cached)
            .await
    }
    async fn count(&self, key: &str) -> Result<i64> {
        self.inner.count(key).await
    }
    async fn current_resource_version(&self) -> Result<Revision> {
        self.revision_reads.fetch_add(1, Ordering::SeqCst);
        let revision = self.inner.current_resource_version().await;
        tokio::time::sleep(self.revision_delay).await;
        revision
    }
    fn request_watch_progress(&self) -> bool {
        if !self.progress_supported {
            return false;
        }
        if !self.swallow_progress.load(Ordering::SeqCst) {
            self.inner.request_watch_progress();
        }
        true
    }
}

impl Fixture {
    /// A cache over a [`Counting`] storage whose upstream gets no periodic bookmarks within a
    /// test, so only events and progress requests advance the cache.
    async fn counted(
        &self,
        tune: impl FnOnce(&mut Counting),
        timeout: Duration,
    ) -> (Cacher, Arc<Counting>, ResourceKeys) {
        let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
        let store = Store::new(
            Arc::clone(&self.backend),
            StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
                .with_bookmark_interval(Duration::from_secs(3600)),
        );
        let mut counting = Counting::new(store);
        tune(&mut counting);
        let counting = Arc::new(counting);
        let mut config = CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
        config.consistent_read_timeout = timeout;
        let cacher = Cacher::new(counting.clone(), config);
        assert!(cacher.wait_ready(Duration::from_secs(10)).await);
        (cacher, counting, keys)
    }

    /// Writes to another resource, so the storage revision moves past the cache's.
    async fn write_elsewhere(&self, name: &str) -> Revision {
        let (other, other_keys) = self.store("gadgets");
        other
            .create(
                &other_keys.object_key(Some("ns"), name).expect("key"),
                object("ns", name, &[], "g"),
                None,
            )
            .await
            .expect("create other")
            .resource_version
    }
}

fn consistent_list() -> ListOptions {
    ListOptions {
        recursive: true,
        ..ListOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_resource_catches_up_by_a_progress_request() {
    let fixture = Fixture::new();
    let (cacher, counting, keys) = fixture.counted(|_| {}, Duration::from_secs(5)).await;
    let lists_at_start = counting.lists.load(Ordering::SeqCst);
    create(&cacher, &keys, "a").await;
    let current = fixture.write_elsewhere("g").await;
    let started = Instant::now();
    let list = cacher
        .get_list(keys.resource_prefix(), consistent_list())
        .await
        .expect("list");
    let got = cacher
        .get(
            &keys.object_key(Some("ns"), "a").expect("key"),
            GetOptions::default(),
        )
        .await
        .expect("get")
        .expect("present");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered after {:?}, not at the 5 s timeout",
        started.elapsed()
    );
    assert!(list.resource_version >= current, "the list is consistent");
    assert_eq!(list.items.len(), 1);
    assert_eq!(got.key, list.items[0].key);
    assert_eq!(
        counting.lists.load(Ordering::SeqCst),
        lists_at_start,
        "served from the cache"
    );
    assert_eq!(
        counting.gets.load(Ordering::SeqCst),
        0,
        "served from the cache"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_progress_requests_a_behind_cache_delegates_at_once() {
    let fixture = Fixture::new();
    let (cacher, counting, keys) = fixture
        .counted(|c| c.progress_supported = false, Duration::from_secs(5))
        .await;
    create(&cacher, &keys, "a").await;
    let current = fixture.write_elsewhere("g").await;
    let started = Instant::now();
    let got = cacher
        .get(
            &keys.object_key(Some("ns"), "a").expect("key"),
            GetOptions::default(),
        )
        .await
        .expect("get")
        .expect("present");
    let list = cacher
        .get_list(keys.resource_prefix(), consistent_list())
        .await
        .expect("list");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "delegated without waiting ({:?})",
        started.elapsed()
    );
    assert_eq!(
        counting.gets.load(Ordering::SeqCst),
        1,
        "the get was delegated"
    );
    assert!(
        list.resource_version >= current,
        "the delegated list is consistent"
    );
    assert_eq!(got.key, list.items[0].key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_fall_back_to_storage_when_the_cache_cannot_catch_up() {
    let fixture = Fixture::new();
    let (cacher, counting, keys) = fixture.counted(|_| {}, Duration::from_millis(300)).await;
    // The upstream watch never hears of the requests: the cache cannot learn that the revision
    // moved.
    counting.swallow_progress.store(true, Ordering::SeqCst);
    create(&cacher, &keys, "a").await;
    let current = fixture.write_elsewhere("g").await;
    let lists_before = counting.lists.load(Ordering::SeqCst);
    let started = Instant::now();
    let list = cacher
        .get_list(keys.resource_prefix(), consistent_list())
        .await
        .expect("list");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited for the cache first"
    );
    assert_eq!(
        counting.lists.load(Ordering::SeqCst),
        lists_before + 1,
        "delegated"
    );
    assert!(
        list.resource_version >= current,
        "the fallback read is consistent"
    );
    assert_eq!(list.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_consistent_reads_share_storage_revision_reads() {
    let fixture = Fixture::new();
    let (cacher, counting, keys) = fixture
        .counted(
            |c| c.revision_delay = Duration::from_millis(5),
            Duration::from_secs(5),
        )
        .await;
    let written = create(&cacher, &keys, "a").await;
    let key = keys.object_key(Some("ns"), "a").expect("key");
    let reads_before = counting.revision_reads.load(Ordering::SeqCst);
    let (tasks, per_task) = (32, 10);
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (cacher, key) = (cacher.clone(), key.clone());
        handles.push(tokio::spawn(async move {
            for _ in 0..per_task {
                let got = cacher
                    .get(&key, GetOptions::default())
                    .await
                    .expect("get")
                    .expect("present");
                assert!(got.resource_version >= written);
            }
        }));
    }
    for handle in handles {
        handle.await.expect("reader");
    }
    let reads = counting.revision_reads.load(Ordering::SeqCst) - reads_before;
    let requests = tasks * per_task;
    assert!(
        reads * 4 <= requests,
        "{reads} storage revision reads for {requests} consistent gets"
    );
    assert_eq!(
        counting.gets.load(Ordering::SeqCst),
        0,
        "all served from the cache"
    );
}

/// Waits until the cache's change counter differs from `seen`; its new value.
async fn next_change(cacher: &Cacher, seen: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = cacher.changes().load(Ordering::Acquire);
        if now != seen {
            return now;
        }
        assert!(Instant::now() < deadline, "the change counter did not move");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_counter_moves_with_the_resource_only() {
    let fixture = Fixture::new();
    let (cacher, keys) = fixture.cacher("widgets", |_| {}).await;
    let (other, other_keys) = fixture.store("gadgets");
    let start = cacher.changes().load(Ordering::Acquire);
    create(&cacher, &keys, "a").await;
    let created = next_change(&cacher, start).await;
    // Once the counter moved, a read of the cache finds the change.
    let key = keys.object_key(Some("ns"), "a").expect("key");
    let any = GetOptions {
        ignore_not_found: true,
        resource_version: "0".to_string(),
    };
    assert!(cacher.get(&key, any.clone()).await.expect("get").is_some());

    // Writes to another resource, and the progress notifications they cause, leave it alone.
    for i in 0..5 {
        other
            .create(
                &other_keys
                    .object_key(Some("ns"), &format!("g{i}"))
                    .expect("key"),
                object("ns", &format!("g{i}"), &[], "g"),
                None,
            )
            .await
            .expect("create other");
    }
    let current = cacher.current_resource_version().await.expect("rv");
    let consistent = ListOptions {
        recursive: true,
        ..ListOptions::default()
    };
    let list = cacher
        .get_list(keys.resource_prefix(), consistent)
        .await
        .expect("list");
    assert!(list.resource_version >= current);
    assert_eq!(cacher.changes().load(Ordering::Acquire), created);

    cacher.delete(&key, None, None, None).await.expect("delete");
    next_change(&cacher, created).await;
    assert!(cacher.get(&key, any).await.expect("get").is_none());
}
