//! Group commit on the etcd backend: many concurrent writes to overlapping keys share etcd
//! transactions, yet every write gets exactly the result it would get alone, and watches (the
//! backend's, the Store's and the watch cache's) deliver every event of a shared revision once.
//!
//! Uses `$APIARY_TEST_ETCD` when set (each test under its own key prefix), otherwise starts an
//! etcd.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::backend::{Backend, Condition, KeyValue, TxnOutcome, WatchItem, WatchRequest};
use storage::cacher::{Cacher, CacherConfig};
use storage::etcd::process::{EtcdProcess, TestEtcd, unique_test_prefix};
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::interface::{GetOptions, Interface, ListOptions, WatchEvent};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{JsonTestCodec, object};

const WRITERS: usize = 64;

async fn setup() -> (TestEtcd, Arc<EtcdBackend>, String) {
    let etcd = TestEtcd::get().expect("etcd must be available for the etcd batch tests");
    let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
        .await
        .expect("connect");
    (
        etcd,
        Arc::new(backend),
        format!("{}/", unique_test_prefix()),
    )
}

/// What one compare-and-swap increment observed.
#[derive(Debug)]
struct Increment {
    key: String,
    /// The mod revision the write was conditioned on.
    from: i64,
    /// The revision it committed at.
    to: i64,
}

fn counter(kv: &KeyValue) -> u64 {
    std::str::from_utf8(&kv.value)
        .expect("utf-8")
        .parse()
        .expect("counter")
}

/// Many writers create overlapping keys, then increment them with compare-and-swap and finally
/// delete them, all at once. Exactly one create per key wins and the losers see the winner's
/// value; every conflicting update reports a conflict with the key's newer value; the committed
/// updates of each key form one unbroken chain of revisions (none lost, none applied twice);
/// stale deletes fail and the right one returns the deleted value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_conditional_writes_give_single_write_results() {
    let (_etcd, backend, prefix) = setup().await;
    let keys: Vec<String> = (0..8).map(|i| format!("{prefix}k{i}")).collect();

    // Creates: every writer tries every key.
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let backend = Arc::clone(&backend);
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0..keys.len() {
                let key = &keys[(i + writer) % keys.len()];
                let outcome = backend
                    .put(key, Bytes::from_static(b"0"), Condition::Absent, None)
                    .await
                    .expect("create");
                results.push((key.clone(), outcome));
            }
            results
        }));
    }
    let mut created: BTreeMap<String, i64> = BTreeMap::new();
    let mut losers = Vec::new();
    for task in tasks {
        for (key, outcome) in task.await.expect("writer") {
            match outcome {
                TxnOutcome::Committed { revision, prev } => {
                    assert!(prev.is_none(), "a create has no previous value");
                    assert!(
                        created.insert(key.clone(), revision).is_none(),
                        "two creates of {key} committed"
                    );
                }
                TxnOutcome::Failed { current, .. } => losers.push((key, current)),
            }
        }
    }
    assert_eq!(created.len(), keys.len(), "every key was created once");
    assert_eq!(losers.len(), keys.len() * (WRITERS - 1));
    for (key, current) in losers {
        let current = current.expect("a failed create reports the existing value");
        assert_eq!(current.key, key);
        assert_eq!(current.value, Bytes::from_static(b"0"));
        assert_eq!(current.create_revision, created[&key]);
    }

    // Compare-and-swap increments; a conflict is retried with the value it reported.
    let rounds = 6;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let backend = Arc::clone(&backend);
        let key = keys[writer % keys.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut current = backend.get(&key, 0).await.expect("get").kv.expect("exists");
            let mut done = Vec::new();
            let mut conflicts = 0;
            while done.len() < rounds {
                let next = Bytes::from((counter(&current) + 1).to_string());
                let expected = current.mod_revision;
                match backend
                    .put(&key, next.clone(), Condition::ModRevision(expected), None)
                    .await
                    .expect("update")
                {
                    TxnOutcome::Committed { revision, prev } => {
                        let prev = prev.expect("an update returns the previous value");
                        assert_eq!(prev.mod_revision, expected, "prev is the replaced value");
                        assert_eq!(counter(&prev), counter(&current));
                        assert!(revision > expected);
                        done.push(Increment {
                            key: key.clone(),
                            from: expected,
                            to: revision,
                        });
                        current = KeyValue {
                            value: next,
                            mod_revision: revision,
                            ..prev
                        };
                    }
                    TxnOutcome::Failed {
                        current: now,
                        revision,
                    } => {
                        let now = now.expect("the key still exists");
                        assert_ne!(now.mod_revision, expected, "a conflict is a real conflict");
                        assert!(now.mod_revision > expected);
                        assert!(revision >= now.mod_revision);
                        conflicts += 1;
                        current = now;
                    }
                }
            }
            (done, conflicts)
        }));
    }
    let mut chains: BTreeMap<String, Vec<Increment>> = BTreeMap::new();
    let mut conflicts = 0;
    let mut by_revision: BTreeMap<i64, usize> = BTreeMap::new();
    for task in tasks {
        let (done, c) = task.await.expect("writer");
        conflicts += c;
        for increment in done {
            *by_revision.entry(increment.to).or_default() += 1;
            chains
                .entry(increment.key.clone())
                .or_default()
                .push(increment);
        }
    }
    assert!(conflicts > 0, "writers of one key must have conflicted");
    assert!(
        by_revision.values().any(|&n| n > 1),
        "concurrent writes should have shared a transaction (revision)"
    );
    for (key, mut chain) in chains {
        chain.sort_by_key(|i| i.from);
        let mut at = created[&key];
        for increment in &chain {
            assert_eq!(increment.from, at, "{key}: an update was lost or doubled");
            at = increment.to;
        }
        let stored = backend.get(&key, 0).await.expect("get").kv.expect("exists");
        assert_eq!(stored.mod_revision, at, "{key}: the last update is stored");
        assert_eq!(
            counter(&stored) as usize,
            chain.len(),
            "{key}: every increment"
        );
    }

    // Deletes: for each key, one delete at the right revision and several stale ones.
    let mut tasks = Vec::new();
    for key in &keys {
        let stored = backend.get(key, 0).await.expect("get").kv.expect("exists");
        for stale in [true, false, true, true] {
            let backend = Arc::clone(&backend);
            let key = key.clone();
            let revision = if stale {
                stored.create_revision
            } else {
                stored.mod_revision
            };
            let value = stored.value.clone();
            tasks.push(tokio::spawn(async move {
                let outcome = backend
                    .delete(&key, Condition::ModRevision(revision))
                    .await
                    .expect("delete");
                match (stale, outcome) {
                    (false, TxnOutcome::Committed { prev, .. }) => {
                        let prev = prev.expect("a delete returns the deleted value");
                        assert_eq!(prev.value, value);
                    }
                    (true, TxnOutcome::Failed { current, .. }) => {
                        // Present before the right delete, absent after it.
                        if let Some(current) = current {
                            assert_eq!(current.value, value);
                        }
                    }
                    (stale, outcome) => panic!("stale={stale}: unexpected {outcome:?}"),
                }
            }));
        }
    }
    for task in tasks {
        task.await.expect("delete task");
    }
    for key in &keys {
        assert!(backend.get(key, 0).await.expect("get").kv.is_none());
    }
}

/// Batched creates with a TTL carry their lease like single ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_creates_keep_their_ttl() {
    let (_etcd, backend, prefix) = setup().await;
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let backend = Arc::clone(&backend);
        let key = format!("{prefix}ttl{i}");
        tasks.push(tokio::spawn(async move {
            let ttl = if i % 2 == 0 { Some(300) } else { None };
            let outcome = backend
                .put(&key, Bytes::from_static(b"v"), Condition::Absent, ttl)
                .await
                .expect("create");
            assert!(matches!(outcome, TxnOutcome::Committed { .. }));
            (key, ttl)
        }));
    }
    for task in tasks {
        let (key, ttl) = task.await.expect("task");
        let kv = backend.get(&key, 0).await.expect("get").kv.expect("exists");
        match ttl {
            Some(ttl) => {
                let granted = kv.ttl.expect("a TTL");
                assert!(granted >= ttl && granted <= ttl + 60, "ttl {granted}");
            }
            None => assert_eq!(kv.ttl, None),
        }
    }
}

/// A value of the plain backend tests.
fn plain(_name: &str) -> Bytes {
    Bytes::from_static(b"v")
}

/// Creates the keys `<prefix>w0000` … from [`WRITERS`] concurrent writers, each with the value
/// `value(name)`; returns key -> revision.
async fn create_concurrently(
    backend: &Arc<EtcdBackend>,
    prefix: &str,
    count: usize,
    value: fn(&str) -> Bytes,
) -> BTreeMap<String, i64> {
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let backend = Arc::clone(backend);
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for i in (writer..count).step_by(WRITERS) {
                let name = format!("w{i:04}");
                let key = format!("{prefix}{name}");
                match backend
                    .put(&key, value(&name), Condition::Absent, None)
                    .await
                    .expect("create")
                {
                    TxnOutcome::Committed { revision, .. } => out.push((key, revision)),
                    other => panic!("create of a new key failed: {other:?}"),
                }
            }
            out
        }));
    }
    let mut created = BTreeMap::new();
    for task in tasks {
        created.extend(task.await.expect("writer"));
    }
    created
}

/// Groups key -> revision by revision.
fn by_revision(created: &BTreeMap<String, i64>) -> BTreeMap<i64, BTreeSet<String>> {
    let mut out: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for (key, revision) in created {
        out.entry(*revision).or_default().insert(key.clone());
    }
    out
}

/// Collects backend watch items until `expected` events arrived, then checks nothing follows.
async fn collect_events(
    stream: &mut storage::backend::WatchStream,
    expected: usize,
) -> Vec<Vec<(String, i64)>> {
    let mut items = Vec::new();
    let mut seen = 0;
    while seen < expected {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("watch event in time")
            .expect("watch open")
            .expect("watch item");
        if let WatchItem::Events(events) = item {
            seen += events.len();
            items.push(
                events
                    .into_iter()
                    .map(|e| (e.key, e.mod_revision))
                    .collect(),
            );
        }
    }
    let extra = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(
        !matches!(extra, Ok(Some(Ok(WatchItem::Events(_))))),
        "unexpected extra events: {extra:?}"
    );
    items
}

/// A backend watch delivers each revision shared by several writes as one item holding every
/// event of it, once; a watch starting at a shared revision gets all of it, one starting after
/// it none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_delivers_every_event_of_a_shared_revision_once() {
    let (_etcd, backend, prefix) = setup().await;
    let start = backend.current_revision().await.expect("revision") + 1;
    let mut live = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: start,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let created = create_concurrently(&backend, &prefix, 400, plain).await;
    let revisions = by_revision(&created);
    let shared = revisions
        .iter()
        .find(|(_, keys)| keys.len() > 1)
        .map(|(revision, _)| *revision)
        .expect("concurrent creates should have shared a revision");

    let items = collect_events(&mut live, created.len()).await;
    let mut delivered: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for item in &items {
        let revision = item[0].1;
        assert!(
            item.iter().all(|(_, r)| *r == revision),
            "one item, one revision"
        );
        assert!(
            item.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "a revision's events come in key order, each key once"
        );
        let keys: BTreeSet<String> = item.iter().map(|(k, _)| k.clone()).collect();
        assert!(
            delivered.insert(revision, keys).is_none(),
            "revision {revision} delivered twice"
        );
    }
    assert_eq!(delivered, revisions, "every event of every revision, once");

    // Resuming at a shared revision: all of it, then the rest.
    let mut resumed = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: shared,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let expected: usize = revisions.range(shared..).map(|(_, keys)| keys.len()).sum();
    let items = collect_events(&mut resumed, expected).await;
    let first: BTreeSet<String> = items[0].iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(items[0][0].1, shared);
    assert_eq!(first, revisions[&shared]);

    // Resuming after it: none of it.
    let mut after = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: shared + 1,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let expected: usize = revisions
        .range(shared + 1..)
        .map(|(_, keys)| keys.len())
        .sum();
    if expected > 0 {
        let items = collect_events(&mut after, expected).await;
        assert!(items.iter().flatten().all(|(_, r)| *r > shared));
    }
}

/// Through the Store and the watch cache: a consistent read right after a batched create sees
/// it (the cache applies a shared revision as a whole), and a cache watch gets every created
/// object once, in non-decreasing revision order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_applies_shared_revisions_whole() {
    let (_etcd, backend, prefix) = setup().await;
    let keys = ResourceKeys::new(&prefix, "test.dev", "widgets").expect("keys");
    let store_config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
        .with_bookmark_interval(Duration::from_millis(100));
    let store = Arc::new(Store::new(backend, store_config));
    let cacher = Cacher::new(
        store,
        CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec)),
    );
    assert!(cacher.wait_ready(Duration::from_secs(10)).await);
    let start = cacher.revision().expect("ready");
    let mut watch = cacher
        .watch(
            keys.resource_prefix(),
            ListOptions {
                resource_version: start.to_string(),
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .expect("watch");

    let count = 256;
    let cacher = Arc::new(cacher);
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let cacher = Arc::clone(&cacher);
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in (writer..count).step_by(WRITERS) {
                let name = format!("o{i:04}");
                let key = keys.object_key(Some("ns"), &name).expect("key");
                let created = cacher
                    .create(&key, object("ns", &name, &[], "x"), None)
                    .await
                    .expect("create");
                let read = cacher
                    .get(
                        &key,
                        GetOptions {
                            ignore_not_found: true,
                            resource_version: String::new(),
                        },
                    )
                    .await
                    .expect("consistent get");
                let read = read.unwrap_or_else(|| panic!("{key} not visible after its create"));
                assert_eq!(read.resource_version, created.resource_version);
                revisions.push(created.resource_version);
            }
            revisions
        }));
    }
    let mut revisions = BTreeMap::<i64, usize>::new();
    for task in tasks {
        for revision in task.await.expect("writer") {
            *revisions.entry(revision).or_default() += 1;
        }
    }
    assert!(
        revisions.values().any(|&n| n > 1),
        "concurrent creates should have shared a revision"
    );

    let mut seen = BTreeSet::new();
    let mut last = start;
    while seen.len() < count {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("event in time")
            .expect("watch open");
        match event {
            WatchEvent::Added(object) => {
                assert!(object.resource_version >= last, "revisions never decrease");
                last = object.resource_version;
                assert!(seen.insert(object.key.clone()), "{} twice", object.key);
            }
            WatchEvent::Bookmark { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
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
    assert_eq!(list.items.len(), count);
}

/// A cache watcher that does not keep up is closed before a shared revision that does not fit
/// its buffer, never in the middle of it: every revision it received, it received whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_cache_watcher_is_closed_between_revisions() {
    let (_etcd, backend, prefix) = setup().await;
    let keys = ResourceKeys::new(&prefix, "test.dev", "widgets").expect("keys");
    let store_config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
    let store = Arc::new(Store::new(
        Arc::clone(&backend) as Arc<dyn Backend>,
        store_config,
    ));
    let mut cache_config = CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
    cache_config.watcher_buffer = 7;
    let cacher = Cacher::new(store, cache_config);
    assert!(cacher.wait_ready(Duration::from_secs(10)).await);
    let start = cacher.revision().expect("ready");
    let mut slow = cacher
        .watch(
            keys.resource_prefix(),
            ListOptions {
                resource_version: start.to_string(),
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .expect("watch");
    let prefix = format!("{}ns/", keys.resource_prefix());
    let created =
        create_concurrently(&backend, &prefix, 256, |name| object("ns", name, &[], "x")).await;
    let revisions = by_revision(&created);
    assert!(revisions.values().any(|keys| keys.len() > 1));

    let mut received: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    let mut closed = false;
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(5), slow.next()).await {
        match event {
            WatchEvent::Added(object) => {
                received
                    .entry(object.resource_version)
                    .or_default()
                    .insert(object.key);
            }
            WatchEvent::Error(_) => closed = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(closed, "the slow watcher was closed");
    for (revision, keys) in &received {
        assert_eq!(
            Some(keys),
            revisions.get(revision),
            "revision {revision} delivered partially"
        );
    }
}

/// An etcd with a lower `--max-txn-ops` rejects large batches before applying anything; their
/// writes are then sent one by one (and later batches are smaller), so every write still gets
/// its own result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_rejected_by_lower_limits_fall_back_to_single_writes() {
    let etcd = EtcdProcess::start_with_args(&["--max-txn-ops=4"])
        .expect("etcd must be installed and start");
    let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
        .await
        .expect("connect");
    let backend = Arc::new(backend);
    let created = create_concurrently(&backend, "/limits/", 256, plain).await;
    assert_eq!(created.len(), 256);
    for round in 0..2 {
        let created = create_concurrently(&backend, &format!("/limits{round}/"), 128, plain).await;
        assert_eq!(created.len(), 128);
    }
    let count = backend.count("/limits").await.expect("count");
    assert_eq!(count, 512);
}
