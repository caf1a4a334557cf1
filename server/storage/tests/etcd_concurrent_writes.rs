//! Concurrent writes on the etcd backend: every write gets exactly the result it would get
//! alone and its own revision (no two changes share one, so a resourceVersion names one change),
//! and watches (the backend's and the watch cache's) resumed from any delivered revision deliver
//! every later change.
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
use storage::etcd::process::{TestEtcd, unique_test_prefix};
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::interface::{GetOptions, Interface, ListOptions, WatchEvent};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{JsonTestCodec, object};

const WRITERS: usize = 64;

async fn setup() -> (TestEtcd, Arc<EtcdBackend>, String) {
    let etcd = TestEtcd::get().expect("etcd must be available for the etcd concurrent write tests");
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
        by_revision.values().all(|&n| n == 1),
        "every committed update has its own revision"
    );
    let create_revisions: BTreeSet<i64> = created.values().copied().collect();
    assert_eq!(create_revisions.len(), created.len(), "every create too");
    assert!(by_revision.keys().all(|r| !create_revisions.contains(r)));
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

/// Concurrent creates with a TTL carry their lease like single ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_keep_their_ttl() {
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

/// The revisions of `created`, which must all differ, in commit order with their keys.
fn in_commit_order(created: &BTreeMap<String, i64>) -> Vec<(i64, String)> {
    let mut order: Vec<(i64, String)> = created.iter().map(|(k, r)| (*r, k.clone())).collect();
    order.sort();
    let distinct: BTreeSet<i64> = order.iter().map(|(r, _)| *r).collect();
    assert_eq!(
        distinct.len(),
        order.len(),
        "{} concurrent creates of different keys got only {} distinct revisions",
        order.len(),
        distinct.len()
    );
    order
}

/// Collects `expected` backend watch events (each item holding exactly one), then checks that
/// nothing follows within `quiet` (when given).
async fn collect_events(
    stream: &mut storage::backend::WatchStream,
    expected: usize,
    quiet: Option<Duration>,
) -> Vec<(i64, String)> {
    let mut events = Vec::new();
    while events.len() < expected {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("watch event in time")
            .expect("watch open")
            .expect("watch item");
        if let WatchItem::Events(item) = item {
            assert_eq!(item.len(), 1, "one event per revision: {item:?}");
            events.extend(item.into_iter().map(|e| (e.mod_revision, e.key)));
        }
    }
    if let Some(quiet) = quiet {
        let extra = tokio::time::timeout(quiet, stream.next()).await;
        assert!(
            !matches!(extra, Ok(Some(Ok(WatchItem::Events(_))))),
            "unexpected extra events: {extra:?}"
        );
    }
    events
}

/// N concurrent creates of different keys get N distinct revisions; a watch delivers them in
/// commit order, each with the revision its create returned (which a GET of the key reports
/// too), and a watch resumed after EVERY delivered revision delivers exactly the later creates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_get_their_own_revisions_and_every_resume_sees_the_rest() {
    let (_etcd, backend, prefix) = setup().await;
    let start = backend.current_revision().await.expect("revision") + 1;
    let watch_from = |start_revision| WatchRequest {
        prefix: prefix.clone(),
        start_revision,
        progress_interval: None,
        progress_requests: None,
    };
    let mut live = backend.watch(watch_from(start)).await.expect("watch");
    let created = create_concurrently(&backend, &prefix, 256, plain).await;
    let order = in_commit_order(&created);
    for (key, revision) in &created {
        let kv = backend.get(key, 0).await.expect("get").kv.expect("exists");
        assert_eq!(
            kv.mod_revision, *revision,
            "{key}: GET reports its create's"
        );
    }

    let delivered = collect_events(&mut live, order.len(), Some(Duration::from_millis(300))).await;
    assert_eq!(delivered, order, "every create once, in commit order");

    // A client that saw the event at `revision` resumes from it (etcd: start after it).
    for (i, (revision, _)) in delivered.iter().enumerate() {
        let mut resumed = backend
            .watch(watch_from(revision + 1))
            .await
            .expect("watch");
        let quiet = (i + 1 == delivered.len()).then(|| Duration::from_millis(300));
        let rest = collect_events(&mut resumed, delivered.len() - i - 1, quiet).await;
        assert_eq!(
            rest,
            delivered[i + 1..],
            "resumed after revision {revision}"
        );
    }
}

/// A cache over a Store over etcd.
async fn cacher(
    backend: Arc<EtcdBackend>,
    keys: &ResourceKeys,
    watcher_buffer: Option<usize>,
) -> Cacher {
    let store_config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
        .with_bookmark_interval(Duration::from_millis(100));
    let store = Arc::new(Store::new(backend as Arc<dyn Backend>, store_config));
    let mut cache_config = CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
    if let Some(buffer) = watcher_buffer {
        cache_config.watcher_buffer = buffer;
    }
    let cacher = Cacher::new(store, cache_config);
    assert!(cacher.wait_ready(Duration::from_secs(10)).await);
    cacher
}

fn watch_from(resource_version: i64) -> ListOptions {
    ListOptions {
        resource_version: resource_version.to_string(),
        recursive: true,
        ..ListOptions::default()
    }
}

/// Collects the ADDED events of a cache watch until `expected` arrived.
async fn collect_added(
    watch: &mut storage::interface::WatchEventStream,
    expected: usize,
) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    while out.len() < expected {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("event in time")
            .expect("watch open");
        match event {
            WatchEvent::Added(object) => out.push((object.resource_version, object.key)),
            WatchEvent::Bookmark { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    out
}

/// Through the watch cache: a consistent read right after a concurrent create sees it with the
/// create's resourceVersion, every create has its own resourceVersion, and a cache watch
/// resumed from EVERY delivered resourceVersion delivers exactly the later creates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_watches_resume_from_every_delivered_resource_version() {
    let (_etcd, backend, prefix) = setup().await;
    let keys = ResourceKeys::new(&prefix, "test.dev", "widgets").expect("keys");
    let cacher = Arc::new(cacher(backend, &keys, None).await);
    let start = cacher.revision().expect("ready");
    let mut watch = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");

    let count = 192;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let cacher = Arc::clone(&cacher);
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut created = Vec::new();
            for i in (writer..count).step_by(WRITERS) {
                let name = format!("o{i:04}");
                let key = keys.object_key(Some("ns"), &name).expect("key");
                let object = cacher
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
                assert_eq!(read.resource_version, object.resource_version);
                created.push((key, object.resource_version));
            }
            created
        }));
    }
    let mut created = BTreeMap::new();
    for task in tasks {
        created.extend(task.await.expect("writer"));
    }
    let order = in_commit_order(&created);
    let delivered = collect_added(&mut watch, count).await;
    assert_eq!(delivered, order, "every create once, in commit order");

    for (i, (rv, _)) in delivered.iter().enumerate() {
        let mut resumed = cacher
            .watch(keys.resource_prefix(), watch_from(*rv))
            .await
            .expect("resumed watch");
        let rest = collect_added(&mut resumed, delivered.len() - i - 1).await;
        assert_eq!(rest, delivered[i + 1..], "resumed from {rv}");
    }
}

/// A cache watcher that does not keep up is closed with an error after a gap-free prefix of the
/// changes, in commit order: resuming from the last resourceVersion it received loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_cache_watcher_gets_a_gap_free_prefix_then_an_error() {
    let (_etcd, backend, prefix) = setup().await;
    let keys = ResourceKeys::new(&prefix, "test.dev", "widgets").expect("keys");
    let cacher = cacher(Arc::clone(&backend), &keys, Some(7)).await;
    let start = cacher.revision().expect("ready");
    let mut slow = cacher
        .watch(keys.resource_prefix(), watch_from(start))
        .await
        .expect("watch");
    let prefix = format!("{}ns/", keys.resource_prefix());
    let created =
        create_concurrently(&backend, &prefix, 256, |name| object("ns", name, &[], "x")).await;
    let order = in_commit_order(&created);

    let mut received = Vec::new();
    let mut closed = false;
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(5), slow.next()).await {
        match event {
            WatchEvent::Added(object) => received.push((object.resource_version, object.key)),
            WatchEvent::Error(_) => closed = true,
            WatchEvent::Bookmark { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(closed, "the slow watcher was closed");
    assert!(received.len() < order.len());
    assert_eq!(received, order[..received.len()], "a gap-free prefix");
}
