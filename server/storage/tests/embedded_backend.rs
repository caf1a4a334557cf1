//! Behaviour specific to the embedded backend: the raw `Backend` contract, history reads,
//! automatic compaction, TTL expiry, restarts, and watchers that fall behind their queue.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::StorageError;
use storage::backend::{
    Backend, Condition, EventKind, RangeRequest, TxnOutcome, WatchItem, WatchRequest, WatchStream,
};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};

fn open(dir: &std::path::Path) -> EmbeddedBackend {
    let mut options = EmbeddedOptions::new(dir);
    options.sweep_interval = Duration::from_millis(50);
    EmbeddedBackend::open(options).expect("open")
}

async fn put(b: &EmbeddedBackend, key: &str, value: &str, condition: Condition) -> i64 {
    match b
        .put(key, Bytes::from(value.to_string()), condition, None)
        .await
        .expect("put")
    {
        TxnOutcome::Committed { revision, .. } => revision,
        other => panic!("{key}: not committed: {other:?}"),
    }
}

async fn next_item(w: &mut WatchStream) -> WatchItem {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("watch item in time")
        .expect("watch open")
        .expect("watch item")
}

#[tokio::test]
async fn conditions_and_revisions() {
    let dir = tempfile::tempdir().expect("dir");
    let b = open(dir.path());
    assert_eq!(
        b.current_revision().await.expect("rev"),
        1,
        "a new store starts at 1"
    );
    let r1 = put(&b, "/a", "1", Condition::Absent).await;
    assert_eq!(r1, 2);
    match b
        .put("/a", Bytes::from_static(b"x"), Condition::Absent, None)
        .await
        .expect("put")
    {
        TxnOutcome::Failed { current, revision } => {
            assert_eq!(current.expect("current").mod_revision, r1);
            assert_eq!(revision, r1);
        }
        other => panic!("create over existing must fail: {other:?}"),
    }
    match b
        .put(
            "/a",
            Bytes::from_static(b"x"),
            Condition::ModRevision(r1 + 7),
            None,
        )
        .await
        .expect("put")
    {
        TxnOutcome::Failed { .. } => {}
        other => panic!("stale CAS must fail: {other:?}"),
    }
    let r2 = put(&b, "/a", "2", Condition::ModRevision(r1)).await;
    let kv = b.get("/a", 0).await.expect("get").kv.expect("present");
    assert_eq!((kv.create_revision, kv.mod_revision), (r1, r2));
    match b
        .delete("/missing", Condition::Always)
        .await
        .expect("delete")
    {
        TxnOutcome::Failed { current: None, .. } => {}
        other => panic!("deleting a missing key fails: {other:?}"),
    }
    assert!(b.delete("/a", Condition::Absent).await.is_err());
    match b
        .delete("/a", Condition::ModRevision(r2))
        .await
        .expect("delete")
    {
        TxnOutcome::Committed { revision, prev } => {
            assert_eq!(revision, r2 + 1);
            assert_eq!(prev.expect("prev").value, Bytes::from_static(b"2"));
        }
        other => panic!("{other:?}"),
    }
    let err = b.get("/a", 100).await.expect_err("future revision");
    assert!(
        matches!(err, StorageError::TooLargeResourceVersion { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn reads_at_past_revisions() {
    let dir = tempfile::tempdir().expect("dir");
    let b = open(dir.path());
    let a1 = put(&b, "/p/a", "a1", Condition::Absent).await;
    let b1 = put(&b, "/p/b", "b1", Condition::Absent).await;
    put(&b, "/q/x", "outside", Condition::Absent).await;
    let a2 = put(&b, "/p/a", "a2", Condition::ModRevision(a1)).await;
    b.delete("/p/b", Condition::Always).await.expect("delete");
    let c1 = put(&b, "/p/c", "c1", Condition::Absent).await;
    let b2 = put(&b, "/p/b", "b2", Condition::Absent).await;
    let at = |revision| RangeRequest {
        prefix: "/p/".into(),
        start: String::new(),
        limit: 0,
        revision,
    };
    let values = |r: storage::backend::RangeResponse| {
        r.kvs
            .into_iter()
            .map(|kv| String::from_utf8_lossy(&kv.value).into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(b.range(at(b1)).await.expect("range")), ["a1", "b1"]);
    assert_eq!(values(b.range(at(a2)).await.expect("range")), ["a2", "b1"]);
    assert_eq!(values(b.range(at(c1)).await.expect("range")), ["a2", "c1"]);
    assert_eq!(
        values(b.range(at(0)).await.expect("range")),
        ["a2", "b2", "c1"]
    );
    let old_b = b
        .get("/p/b", b1)
        .await
        .expect("get")
        .kv
        .expect("present at b1");
    assert_eq!((old_b.create_revision, old_b.mod_revision), (b1, b1));
    assert!(
        b.get("/p/b", c1).await.expect("get").kv.is_none(),
        "deleted at c1"
    );
    let new_b = b.get("/p/b", b2).await.expect("get").kv.expect("recreated");
    assert_eq!(
        new_b.create_revision, b2,
        "a recreated key has a new create revision"
    );
    // Limit, count and `more`, from a start key, at a past revision.
    let page = b
        .range(RangeRequest {
            prefix: "/p/".into(),
            start: "/p/a\0".into(),
            limit: 1,
            revision: c1,
        })
        .await
        .expect("range");
    assert_eq!(values(page.clone()), ["c1"]);
    assert_eq!((page.count, page.more, page.revision), (1, false, c1));
    let page = b
        .range(RangeRequest {
            prefix: "/p/".into(),
            start: String::new(),
            limit: 1,
            revision: 0,
        })
        .await
        .expect("range");
    assert_eq!((page.count, page.more), (3, true));
    assert_eq!(b.count("/p/").await.expect("count"), 3);
}

#[tokio::test]
async fn automatic_compaction_bounds_history() {
    let dir = tempfile::tempdir().expect("dir");
    let mut options = EmbeddedOptions::new(dir.path());
    options.retained_revisions = 10;
    let b = EmbeddedBackend::open(options).expect("open");
    let first = put(&b, "/k", "0", Condition::Absent).await;
    let mut last = first;
    for i in 1..50 {
        last = put(&b, "/k", &i.to_string(), Condition::ModRevision(last)).await;
    }
    let compacted = b.compacted_revision().await.expect("compacted");
    assert!(
        compacted >= last - 10 && compacted <= last,
        "compacted {compacted}, last {last}"
    );
    let err = b.get("/k", first).await.expect_err("compacted");
    assert!(err.is_expired(), "{err:?}");
    let kv = b
        .get("/k", last - 5)
        .await
        .expect("retained")
        .kv
        .expect("present");
    assert_eq!(kv.mod_revision, last - 5);
    let mut w = b
        .watch(WatchRequest {
            prefix: "/".into(),
            start_revision: first,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let end = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("in time");
    assert!(
        matches!(end, Some(Err(StorageError::Expired { .. }))),
        "{end:?}"
    );
    // Explicit compaction beyond the current revision is refused.
    assert!(b.compact(last + 100).await.is_err());
}

#[tokio::test]
async fn ttl_expiry_is_a_watched_delete() {
    let dir = tempfile::tempdir().expect("dir");
    let b = open(dir.path());
    let mut w = b
        .watch(WatchRequest {
            prefix: "/e/".into(),
            start_revision: 0,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let r = match b
        .put("/e/x", Bytes::from_static(b"v"), Condition::Absent, Some(1))
        .await
        .expect("put")
    {
        TxnOutcome::Committed { revision, .. } => revision,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        b.get("/e/x", 0)
            .await
            .expect("get")
            .kv
            .expect("present")
            .ttl,
        Some(1)
    );
    let WatchItem::Events(created) = next_item(&mut w).await else {
        panic!("expected events")
    };
    assert_eq!(created[0].mod_revision, r);
    let WatchItem::Events(expired) = next_item(&mut w).await else {
        panic!("expected events")
    };
    assert_eq!(expired[0].kind, EventKind::Delete);
    assert_eq!(expired[0].prev_value.as_deref(), Some(&b"v"[..]));
    assert!(b.get("/e/x", 0).await.expect("get").kv.is_none());
    // Rewriting without a TTL cancels the expiry.
    put(&b, "/e/y", "v", Condition::Absent).await;
    let kv = b.get("/e/y", 0).await.expect("get").kv.expect("present");
    b.put(
        "/e/y",
        Bytes::from_static(b"v2"),
        Condition::ModRevision(kv.mod_revision),
        Some(1),
    )
    .await
    .expect("ttl");
    let kv = b.get("/e/y", 0).await.expect("get").kv.expect("present");
    b.put(
        "/e/y",
        Bytes::from_static(b"v3"),
        Condition::ModRevision(kv.mod_revision),
        None,
    )
    .await
    .expect("no ttl");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(
        b.get("/e/y", 0).await.expect("get").kv.is_some(),
        "TTL was removed by the rewrite"
    );
}

/// TTLs follow the monotonic clock and restart on open, as etcd gives each lease its full TTL
/// again after a restart: a key written with a 2 s TTL, 1.5 s before a reopen, is still there
/// 1 s after it (2.5 s after the write) and gone once 2 s have passed since the reopen.
#[tokio::test]
async fn ttls_restart_in_full_when_the_store_is_reopened() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let b = open(dir.path());
        b.put("/t/k", Bytes::from_static(b"v"), Condition::Absent, Some(2))
            .await
            .expect("put");
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    let b = open(dir.path());
    let reopened = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let kv = b.get("/t/k", 0).await.expect("get").kv;
    assert_eq!(kv.expect("still there").ttl, Some(2));
    while b.get("/t/k", 0).await.expect("get").kv.is_some() {
        assert!(
            reopened.elapsed() < Duration::from_secs(5),
            "the key never expired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        reopened.elapsed() >= Duration::from_secs(2),
        "expired early"
    );
}

#[tokio::test]
async fn revisions_and_data_survive_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let last = {
        let b = open(dir.path());
        put(&b, "/r/a", "1", Condition::Absent).await;
        put(&b, "/r/b", "2", Condition::Absent).await
    };
    let b = open(dir.path());
    assert_eq!(b.current_revision().await.expect("rev"), last);
    assert!(put(&b, "/r/c", "3", Condition::Absent).await > last);
    // History from before the restart still replays.
    let mut w = b
        .watch(WatchRequest {
            prefix: "/r/".into(),
            start_revision: last,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let WatchItem::Events(e) = next_item(&mut w).await else {
        panic!("expected events")
    };
    assert_eq!((e[0].key.as_str(), e[0].mod_revision), ("/r/b", last));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_catches_up_from_history() {
    let dir = tempfile::tempdir().expect("dir");
    let mut options = EmbeddedOptions::new(dir.path());
    options.watch_buffer = 16;
    let b = Arc::new(EmbeddedBackend::open(options).expect("open"));
    let start = b.current_revision().await.expect("rev") + 1;
    let mut w = b
        .watch(WatchRequest {
            prefix: "/s/".into(),
            start_revision: start,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let total = 2000;
    let mut tasks = Vec::new();
    for t in 0..16 {
        let b = Arc::clone(&b);
        tasks.push(tokio::spawn(async move {
            for i in 0..total / 16 {
                let key = format!("/s/{t}-{i}");
                b.put(&key, Bytes::from_static(b"v"), Condition::Absent, None)
                    .await
                    .expect("put");
                if i % 10 == 0 {
                    b.put(
                        &format!("/other/{t}-{i}"),
                        Bytes::from_static(b"v"),
                        Condition::Absent,
                        None,
                    )
                    .await
                    .expect("put");
                }
            }
        }));
    }
    // Do not read until every write is done, so the watch queue overflows.
    for t in tasks {
        t.await.expect("writer");
    }
    let mut last = start - 1;
    let mut seen = 0;
    while seen < total {
        let WatchItem::Events(events) = next_item(&mut w).await else {
            continue;
        };
        for e in events {
            assert!(e.mod_revision > last, "ordered without duplicates");
            assert!(e.key.starts_with("/s/"));
            last = e.mod_revision;
            seen += 1;
        }
    }
    assert_eq!(seen, total);
}

#[tokio::test]
async fn progress_notifications_while_idle() {
    let dir = tempfile::tempdir().expect("dir");
    let b = open(dir.path());
    let r = put(&b, "/x/a", "1", Condition::Absent).await;
    let mut w = b
        .watch(WatchRequest {
            prefix: "/y/".into(),
            start_revision: 0,
            progress_interval: Some(Duration::from_millis(100)),
            progress_requests: None,
        })
        .await
        .expect("watch");
    match next_item(&mut w).await {
        WatchItem::Progress(p) => assert!(p >= r),
        other => panic!("expected progress, got {other:?}"),
    }
}

/// A watch receives only the batches of its prefix, yet a progress request reports every
/// revision committed before it, also those of other prefixes, and the watch goes on gap-free.
#[tokio::test]
async fn progress_requests_cover_revisions_of_other_prefixes() {
    let dir = tempfile::tempdir().expect("dir");
    let b = open(dir.path());
    let requester = storage::backend::ProgressRequester::new();
    let mut w = b
        .watch(WatchRequest {
            prefix: "/y/".into(),
            start_revision: 0,
            progress_interval: Some(Duration::from_secs(3600)),
            progress_requests: Some(requester.subscribe()),
        })
        .await
        .expect("watch");
    let mine = put(&b, "/y/a", "1", Condition::Absent).await;
    let mut last = mine;
    for i in 0..5 {
        last = put(&b, &format!("/x/{i}"), "1", Condition::Absent).await;
    }
    match next_item(&mut w).await {
        WatchItem::Events(e) => assert_eq!((e[0].key.as_str(), e[0].mod_revision), ("/y/a", mine)),
        other => panic!("expected the event of /y/a, got {other:?}"),
    }
    requester.request();
    match next_item(&mut w).await {
        WatchItem::Progress(p) => assert_eq!(p, last, "progress covers the other prefix"),
        other => panic!("expected progress, got {other:?}"),
    }
    let next = put(&b, "/y/b", "1", Condition::Absent).await;
    match next_item(&mut w).await {
        WatchItem::Events(e) => assert_eq!((e[0].key.as_str(), e[0].mod_revision), ("/y/b", next)),
        other => panic!("expected the event of /y/b, got {other:?}"),
    }
}
