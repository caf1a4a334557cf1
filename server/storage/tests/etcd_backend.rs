//! The etcd backend against a real etcd: conditional writes, reads at revisions, ranges with
//! limits and counts, TTL, compaction and watches with history and deletes.
//!
//! Tests that do not compact use `$APIARY_TEST_ETCD` when set (each under its own key prefix)
//! and otherwise start their own etcd; the compaction test always starts its own, since
//! compacting a shared etcd would expire other tests' historical reads.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::StorageError;
use storage::backend::{
    Backend, Condition, EventKind, RangeRequest, TxnOutcome, WatchItem, WatchRequest,
};
use storage::etcd::process::{EtcdProcess, TestEtcd, unique_test_prefix};
use storage::etcd::{EtcdBackend, EtcdConfig};

async fn setup() -> (TestEtcd, Arc<EtcdBackend>, String) {
    connect(TestEtcd::get().expect("etcd must be available for the etcd backend tests")).await
}

async fn setup_private() -> (TestEtcd, Arc<EtcdBackend>, String) {
    let etcd = EtcdProcess::start().expect("etcd must be installed and start");
    connect(TestEtcd::Owned(etcd)).await
}

async fn connect(etcd: TestEtcd) -> (TestEtcd, Arc<EtcdBackend>, String) {
    let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
        .await
        .expect("connect");
    (
        etcd,
        Arc::new(backend),
        format!("{}/", unique_test_prefix()),
    )
}

fn committed(outcome: TxnOutcome) -> i64 {
    match outcome {
        TxnOutcome::Committed { revision, .. } => revision,
        TxnOutcome::Failed { .. } => panic!("expected a committed write, got {outcome:?}"),
    }
}

#[tokio::test]
async fn conditional_writes_and_reads() {
    let (_etcd, backend, prefix) = setup().await;
    let key = format!("{prefix}a");
    let rev1 = committed(
        backend
            .put(&key, Bytes::from_static(b"one"), Condition::Absent, None)
            .await
            .unwrap(),
    );
    // Create again fails and reports the current value.
    match backend
        .put(&key, Bytes::from_static(b"x"), Condition::Absent, None)
        .await
        .unwrap()
    {
        TxnOutcome::Failed { current, .. } => {
            let current = current.expect("current value");
            assert_eq!(current.value, Bytes::from_static(b"one"));
            assert_eq!(current.mod_revision, rev1);
            assert_eq!(current.create_revision, rev1);
        }
        other => panic!("create over an existing key succeeded: {other:?}"),
    }
    // Compare-and-swap on the mod revision.
    let rev2 = committed(
        backend
            .put(
                &key,
                Bytes::from_static(b"two"),
                Condition::ModRevision(rev1),
                None,
            )
            .await
            .unwrap(),
    );
    assert!(rev2 > rev1);
    assert!(matches!(
        backend
            .put(
                &key,
                Bytes::from_static(b"3"),
                Condition::ModRevision(rev1),
                None
            )
            .await
            .unwrap(),
        TxnOutcome::Failed { .. }
    ));
    // Reads at the latest and at a past revision.
    let latest = backend.get(&key, 0).await.unwrap();
    assert_eq!(latest.kv.unwrap().value, Bytes::from_static(b"two"));
    let past = backend.get(&key, rev1).await.unwrap();
    assert_eq!(past.kv.unwrap().value, Bytes::from_static(b"one"));
    // A revision in the future is "too large".
    let current = backend.current_revision().await.unwrap();
    assert!(matches!(
        backend.get(&key, current + 100).await,
        Err(StorageError::TooLargeResourceVersion { .. })
    ));
    // Deletes: conditional, then of a missing key.
    assert!(matches!(
        backend
            .delete(&key, Condition::ModRevision(rev1))
            .await
            .unwrap(),
        TxnOutcome::Failed {
            current: Some(_),
            ..
        }
    ));
    match backend.delete(&key, Condition::Always).await.unwrap() {
        TxnOutcome::Committed { prev, .. } => {
            assert_eq!(prev.unwrap().value, Bytes::from_static(b"two"))
        }
        other => panic!("delete failed: {other:?}"),
    }
    assert!(matches!(
        backend.delete(&key, Condition::Always).await.unwrap(),
        TxnOutcome::Failed { current: None, .. }
    ));
    assert!(backend.delete(&key, Condition::Absent).await.is_err());
}

#[tokio::test]
async fn range_limit_count_and_revision() {
    let (_etcd, backend, prefix) = setup().await;
    for name in ["a", "b", "c", "d"] {
        backend
            .put(
                &format!("{prefix}ns1/{name}"),
                Bytes::from(name),
                Condition::Absent,
                None,
            )
            .await
            .unwrap();
    }
    backend
        .put(
            &format!("{prefix}ns10/x"),
            Bytes::from_static(b"x"),
            Condition::Absent,
            None,
        )
        .await
        .unwrap();
    let page = backend
        .range(RangeRequest {
            prefix: format!("{prefix}ns1/"),
            start: String::new(),
            limit: 2,
            revision: 0,
        })
        .await
        .unwrap();
    assert_eq!(page.kvs.len(), 2);
    assert!(page.more);
    assert_eq!(page.count, 4);
    let rest = backend
        .range(RangeRequest {
            prefix: format!("{prefix}ns1/"),
            start: format!("{prefix}ns1/c"),
            limit: 0,
            revision: page.revision,
        })
        .await
        .unwrap();
    assert_eq!(rest.kvs.len(), 2);
    assert!(!rest.more);
    assert_eq!(rest.count, 2);
    assert_eq!(rest.revision, page.revision);
    assert_eq!(backend.count(&format!("{prefix}ns1/")).await.unwrap(), 4);
    assert_eq!(backend.count(&prefix).await.unwrap(), 5);
}

#[tokio::test]
async fn compaction_expires_old_reads_and_watches() {
    let (_etcd, backend, prefix) = setup_private().await;
    let key = format!("{prefix}k");
    let first = committed(
        backend
            .put(&key, Bytes::from_static(b"1"), Condition::Always, None)
            .await
            .unwrap(),
    );
    let second = committed(
        backend
            .put(&key, Bytes::from_static(b"2"), Condition::Always, None)
            .await
            .unwrap(),
    );
    backend.compact(second).await.unwrap();
    assert!(backend.compacted_revision().await.unwrap() >= second);
    match backend.get(&key, first).await {
        Err(StorageError::Expired {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, first);
            assert!(compacted >= second);
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    // Compacting again at or below the point is a no-op.
    backend.compact(first).await.unwrap();
    let mut watch = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: first,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .unwrap();
    let item = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("watch answered")
        .expect("watch item");
    assert!(
        matches!(item, Err(StorageError::Expired { .. })),
        "expected Expired, got {item:?}"
    );
}

#[tokio::test]
async fn watch_replays_history_then_follows() {
    let (_etcd, backend, prefix) = setup().await;
    let key = format!("{prefix}w");
    let created = committed(
        backend
            .put(&key, Bytes::from_static(b"v1"), Condition::Absent, None)
            .await
            .unwrap(),
    );
    let mut watch = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: created,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .unwrap();
    committed(
        backend
            .put(
                &key,
                Bytes::from_static(b"v2"),
                Condition::ModRevision(created),
                None,
            )
            .await
            .unwrap(),
    );
    committed(backend.delete(&key, Condition::Always).await.unwrap());
    let mut events = Vec::new();
    while events.len() < 3 {
        let item = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("event in time")
            .expect("stream open")
            .expect("no error");
        if let WatchItem::Events(batch) = item {
            events.extend(batch);
        }
    }
    assert_eq!(events[0].kind, EventKind::Put);
    assert!(events[0].is_create());
    assert_eq!(events[1].kind, EventKind::Put);
    assert_eq!(events[1].prev_value.as_deref(), Some(&b"v1"[..]));
    assert_eq!(events[2].kind, EventKind::Delete);
    assert_eq!(events[2].prev_value.as_deref(), Some(&b"v2"[..]));
    assert_eq!(events[2].create_revision, created);
    assert!(
        events
            .windows(2)
            .all(|w| w[0].mod_revision < w[1].mod_revision)
    );
}

#[tokio::test]
async fn ttl_keys_expire_and_report_ttl() {
    let (_etcd, backend, prefix) = setup().await;
    let key = format!("{prefix}ttl");
    let start = backend.current_revision().await.unwrap() + 1;
    let mut watch = backend
        .watch(WatchRequest {
            prefix: prefix.clone(),
            start_revision: start,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .unwrap();
    committed(
        backend
            .put(&key, Bytes::from_static(b"e"), Condition::Absent, Some(1))
            .await
            .unwrap(),
    );
    let kv = backend.get(&key, 0).await.unwrap().kv.expect("present");
    assert!(kv.ttl.is_some_and(|ttl| ttl >= 1));
    // The expiry is an ordinary delete that watchers see (etcd checks leases every 500 ms).
    let mut saw_delete = false;
    while !saw_delete {
        let item = tokio::time::timeout(Duration::from_secs(15), watch.next())
            .await
            .expect("expiry in time")
            .expect("stream open")
            .expect("no error");
        if let WatchItem::Events(batch) = item {
            saw_delete = batch
                .iter()
                .any(|e| e.kind == EventKind::Delete && e.key == key);
        }
    }
    assert!(backend.get(&key, 0).await.unwrap().kv.is_none());
}
