//! Watch conformance cases, after Kubernetes' `watcher_tests.go`.

use std::time::Duration;

use futures::FutureExt;

use super::{
    Factory, TestContext, expect_no_event, next_event, next_non_bookmark, object, spec_of,
};
use crate::interface::{ListOptions, Predicate, StoredObject, Update, UpdateFn, WatchEvent};

fn key(ctx: &TestContext, ns: &str, name: &str) -> String {
    ctx.keys.object_key(Some(ns), name).expect("valid key")
}

async fn create(
    ctx: &TestContext,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
    spec: &str,
) -> StoredObject {
    ctx.store
        .create(&key(ctx, ns, name), object(ns, name, labels, spec), None)
        .await
        .expect("create")
}

async fn update(
    ctx: &TestContext,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
    spec: &str,
) -> StoredObject {
    let data = object(ns, name, labels, spec);
    let f: UpdateFn<'static> = Box::new(move |_| {
        let data = data.clone();
        async move { Ok(Update { data, ttl: None }) }.boxed()
    });
    ctx.store
        .guaranteed_update(&key(ctx, ns, name), false, None, f, None)
        .await
        .expect("update")
}

fn watch_all(resource_version: &str) -> ListOptions {
    ListOptions {
        resource_version: resource_version.to_string(),
        recursive: true,
        ..ListOptions::default()
    }
}

fn added(event: WatchEvent) -> StoredObject {
    match event {
        WatchEvent::Added(o) => o,
        other => panic!("expected ADDED, got {other:?}"),
    }
}

fn modified(event: WatchEvent) -> StoredObject {
    match event {
        WatchEvent::Modified { object, .. } => object,
        other => panic!("expected MODIFIED, got {other:?}"),
    }
}

fn deleted(event: WatchEvent) -> StoredObject {
    match event {
        WatchEvent::Deleted(o) => o,
        other => panic!("expected DELETED, got {other:?}"),
    }
}

/// A watch from "0" starts with the current state as ADDED events, then follows changes.
pub async fn watch_from_zero(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), watch_all("0"))
        .await
        .expect("watch");
    let first = added(next_non_bookmark(&mut w).await);
    assert_eq!(first.resource_version, a.resource_version);
    let b = create(&ctx, "ns", "b", &[], "b").await;
    let second = added(next_non_bookmark(&mut w).await);
    assert_eq!(second.resource_version, b.resource_version);
    let u = update(&ctx, "ns", "a", &[], "a2").await;
    let m = modified(next_non_bookmark(&mut w).await);
    assert_eq!(m.resource_version, u.resource_version);
    assert_eq!(spec_of(&m.data), "a2");
}

/// A watch from a resourceVersion delivers exactly the changes after it.
pub async fn watch_from_resource_version(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    let u = update(&ctx, "ns", "a", &[], "a2").await;
    let b = create(&ctx, "ns", "b", &[], "b").await;
    let mut w = ctx
        .store
        .watch(
            ctx.keys.resource_prefix(),
            watch_all(&a.resource_version.to_string()),
        )
        .await
        .expect("watch");
    let m = modified(next_non_bookmark(&mut w).await);
    assert_eq!(m.resource_version, u.resource_version);
    let n = added(next_non_bookmark(&mut w).await);
    assert_eq!(n.resource_version, b.resource_version);
    expect_no_event(&mut w, Duration::from_millis(300)).await;
}

/// A delete is delivered as DELETED carrying the last state and the deletion revision.
pub async fn watch_delete(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "last").await;
    let mut w = ctx
        .store
        .watch(
            ctx.keys.resource_prefix(),
            watch_all(&a.resource_version.to_string()),
        )
        .await
        .expect("watch");
    let gone = ctx
        .store
        .delete(&key(&ctx, "ns", "a"), None, None, None)
        .await
        .expect("delete");
    let d = deleted(next_non_bookmark(&mut w).await);
    assert_eq!(spec_of(&d.data), "last");
    assert_eq!(d.resource_version, gone.resource_version);
}

/// A non-recursive watch sees only its key.
pub async fn watch_single_key(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    let opts = ListOptions {
        resource_version: a.resource_version.to_string(),
        ..ListOptions::default()
    };
    let mut w = ctx
        .store
        .watch(&key(&ctx, "ns", "a"), opts)
        .await
        .expect("watch");
    create(&ctx, "ns", "ab", &[], "other").await;
    update(&ctx, "ns", "a", &[], "a2").await;
    let m = modified(next_non_bookmark(&mut w).await);
    assert_eq!(spec_of(&m.data), "a2");
}

/// With a predicate, an object that starts matching is ADDED and one that stops is DELETED.
pub async fn watch_predicate_transitions(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[("color", "blue")], "a").await;
    let red = Predicate::new(|attrs| attrs.labels.get("color") == Some("red"));
    let opts = ListOptions {
        predicate: red,
        ..watch_all(&a.resource_version.to_string())
    };
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), opts)
        .await
        .expect("watch");
    update(&ctx, "ns", "a", &[("color", "red")], "now-red").await;
    assert_eq!(
        spec_of(&added(next_non_bookmark(&mut w).await).data),
        "now-red"
    );
    update(&ctx, "ns", "a", &[("color", "red")], "still-red").await;
    assert_eq!(
        spec_of(&modified(next_non_bookmark(&mut w).await).data),
        "still-red"
    );
    let u = update(&ctx, "ns", "a", &[("color", "green")], "green").await;
    let d = deleted(next_non_bookmark(&mut w).await);
    assert_eq!(
        spec_of(&d.data),
        "still-red",
        "DELETED carries the last matching state"
    );
    assert_eq!(d.resource_version, u.resource_version);
    create(&ctx, "ns", "b", &[("color", "blue")], "b").await;
    expect_no_event(&mut w, Duration::from_millis(300)).await;
}

/// A watch from a compacted revision ends with an Expired error.
pub async fn watch_error_after_compaction(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    update(&ctx, "ns", "a", &[], "b").await;
    update(&ctx, "ns", "a", &[], "c").await;
    let current = ctx.store.current_resource_version().await.expect("rv");
    ctx.backend.compact(current).await.expect("compact");
    let mut w = ctx
        .store
        .watch(
            ctx.keys.resource_prefix(),
            watch_all(&(a.resource_version - 1).max(1).to_string()),
        )
        .await
        .expect("watch opens");
    match next_non_bookmark(&mut w).await {
        WatchEvent::Error(err) => assert!(err.is_expired(), "{err:?}"),
        other => panic!("expected an Expired error, got {other:?}"),
    }
    let end = tokio::time::timeout(super::WAIT, futures::StreamExt::next(&mut w)).await;
    assert!(matches!(end, Ok(None)), "the stream ends after the error");
}

/// Dropping a watch cancels it; the store keeps working and new watches see new writes.
pub async fn watch_cancel(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    for _ in 0..20 {
        let w = ctx
            .store
            .watch(
                ctx.keys.resource_prefix(),
                watch_all(&a.resource_version.to_string()),
            )
            .await
            .expect("watch");
        drop(w);
    }
    let mut w = ctx
        .store
        .watch(
            ctx.keys.resource_prefix(),
            watch_all(&a.resource_version.to_string()),
        )
        .await
        .expect("watch");
    create(&ctx, "ns", "b", &[], "b").await;
    assert_eq!(spec_of(&added(next_non_bookmark(&mut w).await).data), "b");
}

/// A watch that allows bookmarks receives one while idle, at a revision not older than the
/// last event.
pub async fn watch_bookmarks(factory: &Factory) {
    let ctx = factory().await;
    let a = create(&ctx, "ns", "a", &[], "a").await;
    let opts = ListOptions {
        allow_bookmarks: true,
        ..watch_all(&a.resource_version.to_string())
    };
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), opts)
        .await
        .expect("watch");
    let b = create(&ctx, "ns", "b", &[], "b").await;
    assert_eq!(
        added(next_non_bookmark(&mut w).await).resource_version,
        b.resource_version
    );
    match next_event(&mut w).await {
        WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            assert!(resource_version >= b.resource_version);
            assert!(!initial_events_end);
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// sendInitialEvents=true: the current state as ADDED, then the initial-events-end bookmark,
/// then changes.
pub async fn watch_initial_events(factory: &Factory) {
    let ctx = factory().await;
    create(&ctx, "ns", "a", &[], "a").await;
    let b = create(&ctx, "ns", "b", &[], "b").await;
    let opts = ListOptions {
        allow_bookmarks: true,
        send_initial_events: Some(true),
        ..watch_all("")
    };
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), opts)
        .await
        .expect("watch");
    let mut specs = Vec::new();
    specs.push(spec_of(&added(next_non_bookmark(&mut w).await).data));
    specs.push(spec_of(&added(next_non_bookmark(&mut w).await).data));
    specs.sort();
    assert_eq!(specs, ["a", "b"]);
    match next_event(&mut w).await {
        WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            assert!(initial_events_end, "first bookmark ends the initial events");
            assert!(resource_version >= b.resource_version);
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    let c = create(&ctx, "ns", "c", &[], "c").await;
    assert_eq!(
        added(next_non_bookmark(&mut w).await).resource_version,
        c.resource_version
    );
}

/// Under concurrent writers every change (creates and updates of different keys) gets its own
/// resourceVersion, the one its write returned: a watch delivers every change once, in strictly
/// increasing resourceVersion order, and a watch resumed from ANY delivered resourceVersion
/// delivers exactly the changes after it (Kubernetes' watch contract: a client resumes from the
/// last resourceVersion it saw).
pub async fn watch_ordering_under_concurrency(factory: &Factory) {
    let ctx = factory().await;
    let start = ctx.store.current_resource_version().await.expect("rv");
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), watch_all(&start.to_string()))
        .await
        .expect("watch");
    let writers = 8;
    let per_writer = 12;
    let mut tasks = Vec::new();
    for t in 0..writers {
        let store = std::sync::Arc::clone(&ctx.store);
        let keys = ctx.keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut written = Vec::new();
            for i in 0..per_writer {
                let name = format!("o-{t}-{i}");
                let k = keys.object_key(Some("ns"), &name).expect("key");
                let created = store
                    .create(&k, object("ns", &name, &[], "x"), None)
                    .await
                    .expect("create");
                written.push((created.resource_version, k.clone()));
                if i % 3 == 0 {
                    let data = object("ns", &name, &[], "y");
                    let f: UpdateFn<'static> = Box::new(move |_| {
                        let data = data.clone();
                        async move { Ok(Update { data, ttl: None }) }.boxed()
                    });
                    let updated = store
                        .guaranteed_update(&k, false, None, f, None)
                        .await
                        .expect("update");
                    written.push((updated.resource_version, k));
                }
            }
            written
        }));
    }
    let mut written = Vec::new();
    for t in tasks {
        written.extend(t.await.expect("task"));
    }
    written.sort();
    let distinct: std::collections::BTreeSet<i64> = written.iter().map(|(rv, _)| *rv).collect();
    assert_eq!(
        distinct.len(),
        written.len(),
        "every change has its own resourceVersion"
    );
    assert!(written.iter().all(|(rv, _)| *rv > start));

    let mut delivered = Vec::new();
    while delivered.len() < written.len() {
        delivered.push(object_change(next_non_bookmark(&mut w).await));
    }
    expect_no_event(&mut w, Duration::from_millis(300)).await;
    assert_eq!(
        delivered, written,
        "every change once, in resourceVersion order, with the resourceVersion its write returned"
    );

    for (i, (rv, _)) in delivered.iter().enumerate() {
        let mut resumed = ctx
            .store
            .watch(ctx.keys.resource_prefix(), watch_all(&rv.to_string()))
            .await
            .expect("resumed watch");
        for expected in &delivered[i + 1..] {
            let got = object_change(next_non_bookmark(&mut resumed).await);
            assert_eq!(&got, expected, "a watch resumed from {rv}");
        }
        if i + 1 == delivered.len() {
            expect_no_event(&mut resumed, Duration::from_millis(300)).await;
        }
    }
}

/// The resourceVersion and key of an ADDED or MODIFIED event.
fn object_change(event: WatchEvent) -> (i64, String) {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified { object: o, .. } => {
            (o.resource_version, o.key)
        }
        other => panic!("expected ADDED or MODIFIED, got {other:?}"),
    }
}

/// sendInitialEvents=false without a resourceVersion starts from now: existing objects are not
/// replayed, later changes are delivered.
pub async fn watch_without_initial_events(factory: &Factory) {
    let ctx = factory().await;
    create(&ctx, "ns", "old", &[], "old").await;
    let opts = ListOptions {
        send_initial_events: Some(false),
        ..watch_all("")
    };
    let mut w = ctx
        .store
        .watch(ctx.keys.resource_prefix(), opts)
        .await
        .expect("watch");
    let n = create(&ctx, "ns", "new", &[], "new").await;
    let first = added(next_non_bookmark(&mut w).await);
    assert_eq!(
        spec_of(&first.data),
        "new",
        "existing objects are not replayed"
    );
    assert_eq!(first.resource_version, n.resource_version);
}
