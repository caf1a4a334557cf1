//! Behaviour specific to the watch cache (over a Store on the embedded backend): slow watchers
//! are closed without affecting others, each event is encoded once per encoding, consistent
//! reads are served from memory once the cache catches up (and from the storage when it cannot),
//! and watches older than the ring get 410 Expired.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use storage::backend::Backend;
use storage::cacher::{Cacher, CacherConfig, EncodingKey};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::interface::{Interface, ListOptions, Predicate, WatchEvent};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_fall_back_to_storage_when_the_cache_cannot_catch_up() {
    let fixture = Fixture::new();
    let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
    // No upstream bookmarks within the test: the cache cannot learn that the revision moved.
    let store = Store::new(
        Arc::clone(&fixture.backend),
        StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
            .with_bookmark_interval(Duration::from_secs(3600)),
    );
    let mut config = CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
    config.consistent_read_timeout = Duration::from_millis(200);
    let cacher = Cacher::new(Arc::new(store), config);
    assert!(cacher.wait_ready(Duration::from_secs(10)).await);
    create(&cacher, &keys, "a").await;
    let (other, other_keys) = fixture.store("gadgets");
    other
        .create(
            &other_keys.object_key(Some("ns"), "g").expect("key"),
            object("ns", "g", &[], "g"),
            None,
        )
        .await
        .expect("create other");
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
        started.elapsed() >= Duration::from_millis(200),
        "waited for the cache first"
    );
    assert!(
        list.resource_version >= current,
        "the fallback read is consistent"
    );
    assert_eq!(list.items.len(), 1);
}
