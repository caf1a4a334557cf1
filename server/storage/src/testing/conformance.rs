//! Storage conformance cases, after Kubernetes' `store_tests.go`. Each case takes a
//! [`Factory`] and panics on a violation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;

use super::{Factory, TestContext, object, spec_of};
use crate::errors::StorageError;
use crate::interface::{
    GetOptions, ListOptions, Preconditions, Predicate, ResourceVersionMatch, StoredObject, Update,
    UpdateFn, ValidateDeletionFn,
};

async fn context(factory: &Factory) -> TestContext {
    factory().await
}

fn key(ctx: &TestContext, ns: &str, name: &str) -> String {
    ctx.keys.object_key(Some(ns), name).expect("valid key")
}

async fn create_object(ctx: &TestContext, ns: &str, name: &str, spec: &str) -> StoredObject {
    ctx.store
        .create(&key(ctx, ns, name), object(ns, name, &[], spec), None)
        .await
        .expect("create")
}

fn set_spec(spec: &'static str) -> UpdateFn<'static> {
    Box::new(move |current: Option<StoredObject>| {
        async move {
            let (ns, name) = match &current {
                Some(o) => {
                    let v: serde_json::Value =
                        serde_json::from_slice(&o.data).expect("test object");
                    (
                        v["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        v["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    )
                }
                None => ("ns".to_string(), "new".to_string()),
            };
            Ok(Update {
                data: object(&ns, &name, &[], spec),
                ttl: None,
            })
        }
        .boxed()
    })
}

fn list_all(resource_version: &str) -> ListOptions {
    ListOptions {
        resource_version: resource_version.to_string(),
        recursive: true,
        ..ListOptions::default()
    }
}

/// Create stores the object and returns it with a resourceVersion that get agrees with.
pub async fn create(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    assert!(created.resource_version > 0);
    let got = ctx
        .store
        .get(&key(&ctx, "ns", "a"), GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.data, created.data);
    assert_eq!(got.resource_version, created.resource_version);
    let second = create_object(&ctx, "ns", "b", "two").await;
    assert!(second.resource_version > created.resource_version);
}

/// An object created with a TTL disappears on its own.
pub async fn create_with_ttl(factory: &Factory) {
    let ctx = context(factory).await;
    let k = key(&ctx, "ns", "ttl");
    ctx.store
        .create(&k, object("ns", "ttl", &[], "x"), Some(1))
        .await
        .expect("create");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let got = ctx
            .store
            .get(
                &k,
                GetOptions {
                    ignore_not_found: true,
                    ..GetOptions::default()
                },
            )
            .await
            .expect("get");
        if got.is_none() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "TTL object did not expire"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creating an existing key fails with KeyExists and leaves the object unchanged.
pub async fn create_key_exists(factory: &Factory) {
    let ctx = context(factory).await;
    let first = create_object(&ctx, "ns", "a", "one").await;
    let err = ctx
        .store
        .create(&key(&ctx, "ns", "a"), object("ns", "a", &[], "two"), None)
        .await
        .expect_err("second create must fail");
    assert!(err.is_exists(), "{err:?}");
    let got = ctx
        .store
        .get(&key(&ctx, "ns", "a"), GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.resource_version, first.resource_version);
    assert_eq!(spec_of(&got.data), "one");
}

/// Get: present, missing, ignore-not-found, resourceVersion "0" and exact current.
pub async fn get(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    for rv in ["", "0", &created.resource_version.to_string()] {
        let got = ctx
            .store
            .get(
                &key(&ctx, "ns", "a"),
                GetOptions {
                    resource_version: rv.to_string(),
                    ..GetOptions::default()
                },
            )
            .await
            .expect("get")
            .expect("present");
        assert_eq!(got.resource_version, created.resource_version, "rv {rv:?}");
    }
    let err = ctx
        .store
        .get(&key(&ctx, "ns", "missing"), GetOptions::default())
        .await
        .expect_err("missing");
    assert!(err.is_not_found(), "{err:?}");
    let none = ctx
        .store
        .get(
            &key(&ctx, "ns", "missing"),
            GetOptions {
                ignore_not_found: true,
                ..GetOptions::default()
            },
        )
        .await
        .expect("ignore not found");
    assert!(none.is_none());
    let err = ctx
        .store
        .get(
            &key(&ctx, "ns", "a"),
            GetOptions {
                resource_version: "abc".to_string(),
                ..GetOptions::default()
            },
        )
        .await
        .expect_err("invalid rv");
    assert!(
        matches!(err, StorageError::InvalidResourceVersion { .. }),
        "{err:?}"
    );
}

/// A resourceVersion beyond the current revision fails with TooLargeResourceVersion for get and
/// list.
pub async fn get_too_large_resource_version(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    let requested = created.resource_version + 1_000_000;
    let err = ctx
        .store
        .get(
            &key(&ctx, "ns", "a"),
            GetOptions {
                resource_version: requested.to_string(),
                ..GetOptions::default()
            },
        )
        .await
        .expect_err("too large");
    assert!(
        matches!(err, StorageError::TooLargeResourceVersion { requested: r, .. } if r == requested),
        "{err:?}"
    );
    for rv_match in [None, Some(ResourceVersionMatch::NotOlderThan)] {
        let err = ctx
            .store
            .get_list(
                ctx.keys.resource_prefix(),
                ListOptions {
                    resource_version_match: rv_match,
                    ..list_all(&requested.to_string())
                },
            )
            .await
            .expect_err("too large list");
        assert!(
            matches!(err, StorageError::TooLargeResourceVersion { .. }),
            "{err:?}"
        );
    }
}

/// Delete without preconditions returns the deleted object; the key is gone afterwards.
pub async fn unconditional_delete(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let deleted = ctx
        .store
        .delete(&k, None, None, None)
        .await
        .expect("delete");
    assert_eq!(deleted.data, created.data);
    assert!(deleted.resource_version > created.resource_version);
    let err = ctx
        .store
        .get(&k, GetOptions::default())
        .await
        .expect_err("gone");
    assert!(err.is_not_found());
    let err = ctx
        .store
        .delete(&k, None, None, None)
        .await
        .expect_err("second delete");
    assert!(err.is_not_found(), "{err:?}");
}

/// Delete with uid and resourceVersion preconditions.
pub async fn conditional_delete(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let wrong_uid = Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    };
    let err = ctx
        .store
        .delete(&k, Some(wrong_uid), None, None)
        .await
        .expect_err("uid");
    assert!(err.is_invalid_obj(), "{err:?}");
    let wrong_rv = Preconditions {
        uid: None,
        resource_version: Some((created.resource_version + 100).to_string()),
    };
    let err = ctx
        .store
        .delete(&k, Some(wrong_rv), None, None)
        .await
        .expect_err("rv");
    assert!(err.is_invalid_obj(), "{err:?}");
    let right = Preconditions {
        uid: Some("uid-ns-a".into()),
        resource_version: Some(created.resource_version.to_string()),
    };
    ctx.store
        .delete(&k, Some(right), None, None)
        .await
        .expect("delete");
    assert!(ctx.store.get(&k, GetOptions::default()).await.is_err());
}

/// Delete with a stale cached suggestion refreshes and deletes the current object.
pub async fn delete_with_stale_suggestion(factory: &Factory) {
    let ctx = context(factory).await;
    let stale = create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let fresh = ctx
        .store
        .guaranteed_update(&k, false, None, set_spec("two"), None)
        .await
        .expect("update");
    let deleted = ctx
        .store
        .delete(&k, None, None, Some(stale))
        .await
        .expect("delete with stale suggestion");
    assert_eq!(spec_of(&deleted.data), "two");
    assert!(deleted.resource_version > fresh.resource_version);
    // A precondition that fails on the stale suggestion but holds on the fresh object succeeds.
    let again = create_object(&ctx, "ns", "b", "one").await;
    let kb = key(&ctx, "ns", "b");
    let updated = ctx
        .store
        .guaranteed_update(&kb, false, None, set_spec("two"), None)
        .await
        .expect("update");
    let pre = Preconditions {
        uid: None,
        resource_version: Some(updated.resource_version.to_string()),
    };
    ctx.store
        .delete(&kb, Some(pre), None, Some(again))
        .await
        .expect("precondition verified against fresh state");
}

/// The deletion validation sees the current object and can veto the delete.
pub async fn delete_validation(factory: &Factory) {
    let ctx = context(factory).await;
    create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let veto: ValidateDeletionFn<'static> = Box::new(move |current: StoredObject| {
        seen.fetch_add(1, Ordering::SeqCst);
        async move {
            assert_eq!(spec_of(&current.data), "one");
            Err(StorageError::InvalidObj {
                key: current.key,
                message: "vetoed".into(),
            })
        }
        .boxed()
    });
    let err = ctx
        .store
        .delete(&k, None, Some(veto), None)
        .await
        .expect_err("vetoed");
    assert!(err.is_invalid_obj(), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(ctx.store.get(&k, GetOptions::default()).await.is_ok());
    let allow: ValidateDeletionFn<'static> = Box::new(|_| async { Ok(()) }.boxed());
    ctx.store
        .delete(&k, None, Some(allow), None)
        .await
        .expect("allowed");
}

/// Guaranteed update writes the new object; an unchanged object is not rewritten.
pub async fn guaranteed_update(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let updated = ctx
        .store
        .guaranteed_update(&k, false, None, set_spec("two"), None)
        .await
        .expect("update");
    assert!(updated.resource_version > created.resource_version);
    assert_eq!(spec_of(&updated.data), "two");
    let same = ctx
        .store
        .guaranteed_update(&k, false, None, set_spec("two"), None)
        .await
        .expect("no-op update");
    assert_eq!(
        same.resource_version, updated.resource_version,
        "no-op must not write"
    );
    let err = ctx
        .store
        .guaranteed_update(
            &key(&ctx, "ns", "missing"),
            false,
            None,
            set_spec("x"),
            None,
        )
        .await
        .expect_err("missing");
    assert!(err.is_not_found(), "{err:?}");
    // An error from the update function aborts and is returned as-is.
    let failing: UpdateFn<'static> = Box::new(|_| {
        async {
            Err(StorageError::InvalidObj {
                key: "k".into(),
                message: "nope".into(),
            })
        }
        .boxed()
    });
    let err = ctx
        .store
        .guaranteed_update(&k, false, None, failing, None)
        .await
        .expect_err("aborted");
    assert!(err.is_invalid_obj(), "{err:?}");
}

/// With ignore_not_found, the update function sees `None` and its result is created.
pub async fn guaranteed_update_ignore_not_found(factory: &Factory) {
    let ctx = context(factory).await;
    let k = key(&ctx, "ns", "new");
    let saw_none = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&saw_none);
    let update: UpdateFn<'static> = Box::new(move |current| {
        if current.is_none() {
            flag.fetch_add(1, Ordering::SeqCst);
        }
        async {
            Ok(Update {
                data: object("ns", "new", &[], "made"),
                ttl: None,
            })
        }
        .boxed()
    });
    let created = ctx
        .store
        .guaranteed_update(&k, true, None, update, None)
        .await
        .expect("create through update");
    assert_eq!(saw_none.load(Ordering::SeqCst), 1);
    let got = ctx
        .store
        .get(&k, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.resource_version, created.resource_version);
}

/// Preconditions on uid and resourceVersion.
pub async fn guaranteed_update_preconditions(factory: &Factory) {
    let ctx = context(factory).await;
    let created = create_object(&ctx, "ns", "a", "one").await;
    let k = key(&ctx, "ns", "a");
    let bad = Preconditions {
        uid: Some("wrong".into()),
        resource_version: None,
    };
    let err = ctx
        .store
        .guaranteed_update(&k, false, Some(bad), set_spec("two"), None)
        .await
        .expect_err("uid precondition");
    assert!(err.is_invalid_obj(), "{err:?}");
    let bad = Preconditions {
        uid: None,
        resource_version: Some("1".into()),
    };
    let err = ctx
        .store
        .guaranteed_update(&k, false, Some(bad), set_spec("two"), None)
        .await
        .expect_err("rv precondition");
    assert!(err.is_invalid_obj(), "{err:?}");
    let good = Preconditions {
        uid: Some("uid-ns-a".into()),
        resource_version: Some(created.resource_version.to_string()),
    };
    ctx.store
        .guaranteed_update(&k, false, Some(good), set_spec("two"), None)
        .await
        .expect("preconditions hold");
}

/// Concurrent guaranteed updates conflict and retry; no increment is lost.
pub async fn guaranteed_update_conflicts(factory: &Factory) {
    let ctx = context(factory).await;
    create_object(&ctx, "ns", "counter", "0").await;
    let k = key(&ctx, "ns", "counter");
    let calls = Arc::new(AtomicUsize::new(0));
    let writers = 8;
    let per_writer = 5;
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let store = Arc::clone(&ctx.store);
        let k = k.clone();
        let calls = Arc::clone(&calls);
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_writer {
                let calls = Arc::clone(&calls);
                let update: UpdateFn<'static> = Box::new(move |current| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let n: u64 = current
                        .map(|o| spec_of(&o.data).parse().unwrap_or(0))
                        .unwrap_or(0);
                    async move {
                        Ok(Update {
                            data: object("ns", "counter", &[], &(n + 1).to_string()),
                            ttl: None,
                        })
                    }
                    .boxed()
                });
                store
                    .guaranteed_update(&k, false, None, update, None)
                    .await
                    .expect("update");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let got = ctx
        .store
        .get(&k, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(spec_of(&got.data), (writers * per_writer).to_string());
    assert!(calls.load(Ordering::SeqCst) >= writers * per_writer);
}

/// A stale cached suggestion is verified: the update function ends up applied to the current
/// object.
pub async fn guaranteed_update_stale_suggestion(factory: &Factory) {
    let ctx = context(factory).await;
    let stale = create_object(&ctx, "ns", "a", "1").await;
    let k = key(&ctx, "ns", "a");
    ctx.store
        .guaranteed_update(&k, false, None, set_spec("2"), None)
        .await
        .expect("update");
    let update: UpdateFn<'static> = Box::new(|current| {
        let n: u64 = current
            .map(|o| spec_of(&o.data).parse().unwrap_or(0))
            .unwrap_or(0);
        async move {
            Ok(Update {
                data: object("ns", "a", &[], &(n * 10).to_string()),
                ttl: None,
            })
        }
        .boxed()
    });
    let result = ctx
        .store
        .guaranteed_update(&k, false, None, update, Some(stale))
        .await
        .expect("update with stale suggestion");
    assert_eq!(spec_of(&result.data), "20");
    // A suggestion that equals the desired result is verified before skipping the write.
    let current = ctx
        .store
        .get(&k, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    let stale_same = StoredObject {
        data: object("ns", "a", &[], "x"),
        ..current.clone()
    };
    let out = ctx
        .store
        .guaranteed_update(
            &k,
            false,
            None,
            set_spec("x"),
            Some(StoredObject {
                resource_version: current.resource_version - 1,
                ..stale_same
            }),
        )
        .await
        .expect("verified no-op");
    assert_eq!(spec_of(&out.data), "x");
    let stored = ctx
        .store
        .get(&k, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(spec_of(&stored.data), "x");
}

/// Recursive lists return the collection in key order; non-recursive lists one object.
pub async fn list_recursive_and_single(factory: &Factory) {
    let ctx = context(factory).await;
    create_object(&ctx, "ns", "b", "b").await;
    create_object(&ctx, "ns", "a", "a").await;
    let last = create_object(&ctx, "other", "c", "c").await;
    let all = ctx
        .store
        .get_list(ctx.keys.resource_prefix(), list_all(""))
        .await
        .expect("list");
    let specs: Vec<String> = all.items.iter().map(|o| spec_of(&o.data)).collect();
    assert_eq!(specs, ["a", "b", "c"]);
    assert!(all.resource_version >= last.resource_version);
    assert!(all.continue_token.is_none());
    let single = ctx
        .store
        .get_list(&key(&ctx, "ns", "a"), ListOptions::default())
        .await
        .expect("single");
    assert_eq!(single.items.len(), 1);
    assert_eq!(spec_of(&single.items[0].data), "a");
    let missing = ctx
        .store
        .get_list(&key(&ctx, "ns", "zzz"), ListOptions::default())
        .await
        .expect("single missing");
    assert!(missing.items.is_empty());
}

/// Listing namespace `ns1` never returns objects of `ns10`.
pub async fn list_namespace_prefix(factory: &Factory) {
    let ctx = context(factory).await;
    create_object(&ctx, "ns1", "a", "in-ns1").await;
    create_object(&ctx, "ns10", "a", "in-ns10").await;
    let ns1 = ctx.keys.namespace_prefix("ns1").expect("prefix");
    for prefix in [ns1.clone(), ns1.trim_end_matches('/').to_string()] {
        let list = ctx
            .store
            .get_list(&prefix, list_all(""))
            .await
            .expect("list");
        let specs: Vec<String> = list.items.iter().map(|o| spec_of(&o.data)).collect();
        assert_eq!(specs, ["in-ns1"], "prefix {prefix}");
        assert_eq!(ctx.store.count(&prefix).await.expect("count"), 1);
    }
}

/// Paging with limit and continue tokens walks the list at one revision, with remaining counts.
pub async fn list_pagination(factory: &Factory) {
    let ctx = context(factory).await;
    for name in ["a", "b", "c", "d", "e"] {
        create_object(&ctx, "ns", name, name).await;
    }
    let first = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 2,
                ..list_all("")
            },
        )
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.remaining_item_count, Some(3));
    let token = first.continue_token.clone().expect("continue token");
    // Writes after the first page are not visible to the continuation.
    create_object(&ctx, "ns", "bb", "bb").await;
    let mut seen: Vec<String> = first.items.iter().map(|o| spec_of(&o.data)).collect();
    let mut next = Some(token);
    while let Some(token) = next {
        let page = ctx
            .store
            .get_list(
                ctx.keys.resource_prefix(),
                ListOptions {
                    limit: 2,
                    continue_token: token,
                    ..list_all("")
                },
            )
            .await
            .expect("next page");
        assert_eq!(page.resource_version, first.resource_version);
        seen.extend(page.items.iter().map(|o| spec_of(&o.data)));
        next = page.continue_token;
    }
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    // A continue token with a resourceVersion is rejected.
    let err = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 2,
                continue_token: first.continue_token.clone().unwrap_or_default(),
                ..list_all("5")
            },
        )
        .await
        .expect_err("rv with continue");
    assert!(
        matches!(err, StorageError::InvalidContinue { .. }),
        "{err:?}"
    );
    let err = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 2,
                continue_token: "garbage".into(),
                ..list_all("")
            },
        )
        .await
        .expect_err("bad token");
    assert!(
        matches!(err, StorageError::InvalidContinue { .. }),
        "{err:?}"
    );
}

/// A continue token whose revision was compacted fails with 410 (ContinueExpired).
pub async fn list_continue_after_compaction(factory: &Factory) {
    let ctx = context(factory).await;
    for name in ["a", "b", "c"] {
        create_object(&ctx, "ns", name, name).await;
    }
    let first = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 1,
                ..list_all("")
            },
        )
        .await
        .expect("page 1");
    for i in 0..3 {
        ctx.store
            .guaranteed_update(
                &key(&ctx, "ns", "a"),
                false,
                None,
                set_spec(["x", "y", "z"][i]),
                None,
            )
            .await
            .expect("update");
    }
    let current = ctx.store.current_resource_version().await.expect("rv");
    ctx.backend.compact(current).await.expect("compact");
    let err = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 1,
                continue_token: first.continue_token.expect("token"),
                ..list_all("")
            },
        )
        .await
        .expect_err("compacted continue");
    assert!(
        matches!(err, StorageError::ContinueExpired { .. }),
        "{err:?}"
    );
    assert!(err.is_expired());
}

/// Paging with a filter fills pages from matching objects only and omits remaining counts.
pub async fn list_continue_with_filter(factory: &Factory) {
    let ctx = context(factory).await;
    for (name, color) in [
        ("a", "red"),
        ("b", "blue"),
        ("c", "red"),
        ("d", "blue"),
        ("e", "red"),
    ] {
        ctx.store
            .create(
                &key(&ctx, "ns", name),
                object("ns", name, &[("color", color)], name),
                None,
            )
            .await
            .expect("create");
    }
    let red = Predicate::new(|attrs| attrs.labels.get("color") == Some("red"));
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = ctx
            .store
            .get_list(
                ctx.keys.resource_prefix(),
                ListOptions {
                    limit: 2,
                    continue_token: token.clone(),
                    predicate: red.clone(),
                    ..list_all("")
                },
            )
            .await
            .expect("page");
        assert!(page.items.len() <= 2);
        assert!(
            page.remaining_item_count.is_none(),
            "no count with a filter"
        );
        seen.extend(page.items.iter().map(|o| spec_of(&o.data)));
        match page.continue_token {
            Some(t) => token = t,
            None => break,
        }
    }
    assert_eq!(seen, ["a", "c", "e"]);
}

/// resourceVersionMatch=Exact reads the past; NotOlderThan reads at least as new.
pub async fn list_resource_version_match(factory: &Factory) {
    let ctx = context(factory).await;
    let a = create_object(&ctx, "ns", "a", "a1").await;
    create_object(&ctx, "ns", "b", "b1").await;
    ctx.store
        .guaranteed_update(&key(&ctx, "ns", "a"), false, None, set_spec("a2"), None)
        .await
        .expect("update");
    ctx.store
        .delete(&key(&ctx, "ns", "b"), None, None, None)
        .await
        .expect("delete");
    create_object(&ctx, "ns", "c", "c1").await;
    let exact = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                resource_version_match: Some(ResourceVersionMatch::Exact),
                ..list_all(&a.resource_version.to_string())
            },
        )
        .await
        .expect("exact");
    assert_eq!(exact.resource_version, a.resource_version);
    let specs: Vec<String> = exact.items.iter().map(|o| spec_of(&o.data)).collect();
    assert_eq!(specs, ["a1"]);
    assert_eq!(exact.items[0].resource_version, a.resource_version);
    let newer = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                ..list_all(&a.resource_version.to_string())
            },
        )
        .await
        .expect("not older than");
    assert!(newer.resource_version >= a.resource_version);
    // Any state at least as new is allowed (a cache may lag); it must be the state at the
    // revision it reports.
    let at_reported = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                resource_version_match: Some(ResourceVersionMatch::Exact),
                ..list_all(&newer.resource_version.to_string())
            },
        )
        .await
        .expect("exact at the reported revision");
    assert_eq!(newer.items, at_reported.items);
    let latest = ctx
        .store
        .get_list(ctx.keys.resource_prefix(), list_all(""))
        .await
        .expect("consistent list");
    let specs: Vec<String> = latest.items.iter().map(|o| spec_of(&o.data)).collect();
    assert_eq!(specs, ["a2", "c1"]);
    // Legacy: a resourceVersion with a limit is an exact read.
    let legacy = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                limit: 10,
                ..list_all(&a.resource_version.to_string())
            },
        )
        .await
        .expect("legacy exact");
    assert_eq!(legacy.items.len(), 1);
    // After compaction the old revision is gone.
    let current = ctx.store.current_resource_version().await.expect("rv");
    ctx.backend.compact(current).await.expect("compact");
    let err = ctx
        .store
        .get_list(
            ctx.keys.resource_prefix(),
            ListOptions {
                resource_version_match: Some(ResourceVersionMatch::Exact),
                ..list_all(&a.resource_version.to_string())
            },
        )
        .await
        .expect_err("compacted exact");
    assert!(matches!(err, StorageError::Expired { .. }), "{err:?}");
}

/// Count counts the collection.
pub async fn count(factory: &Factory) {
    let ctx = context(factory).await;
    assert_eq!(
        ctx.store
            .count(ctx.keys.resource_prefix())
            .await
            .expect("count"),
        0
    );
    create_object(&ctx, "ns", "a", "a").await;
    create_object(&ctx, "ns2", "b", "b").await;
    assert_eq!(
        ctx.store
            .count(ctx.keys.resource_prefix())
            .await
            .expect("count"),
        2
    );
}

/// Keys with `.`/`..` segments or outside the resource are rejected.
pub async fn invalid_keys(factory: &Factory) {
    let ctx = context(factory).await;
    let prefix = ctx.keys.resource_prefix();
    for bad in [
        format!("{prefix}ns/../x"),
        format!("{prefix}./x"),
        "/elsewhere/x".to_string(),
        prefix.to_string(),
        format!("{prefix}ns/"),
    ] {
        let err = ctx
            .store
            .create(&bad, Bytes::from_static(b"{}"), None)
            .await
            .expect_err("invalid key");
        assert!(
            matches!(err, StorageError::InvalidKey { .. }),
            "{bad}: {err:?}"
        );
    }
}

/// Consistent reads are linearizable under concurrency: a get or list without resourceVersion
/// observes every write acknowledged before the read started (creates, updates and deletes of
/// the resource), while other readers and writers run, and while writes elsewhere in the
/// storage move its revision past the resource's own.
pub async fn consistent_reads_see_acknowledged_writes(factory: &Factory) {
    use std::collections::BTreeMap;

    use crate::backend::Condition;

    const KEYS: usize = 4;
    const READERS: usize = 8;
    const READS: usize = 60;

    /// What was acknowledged so far: the resourceVersion of each updated key's last write, and
    /// the keys created then deleted.
    #[derive(Default, Clone)]
    struct Acked {
        updated: BTreeMap<String, i64>,
        deleted: Vec<String>,
    }

    let ctx = Arc::new(context(factory).await);
    let acked = Arc::new(parking_lot::Mutex::new(Acked::default()));
    for i in 0..KEYS {
        let created = create_object(&ctx, "ns", &format!("k{i}"), "0").await;
        acked
            .lock()
            .updated
            .insert(created.key.clone(), created.resource_version);
    }
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for i in 0..KEYS {
        let (ctx, acked, done) = (Arc::clone(&ctx), Arc::clone(&acked), Arc::clone(&done));
        writers.push(tokio::spawn(async move {
            let key = key(&ctx, "ns", &format!("k{i}"));
            let mut n = 0u64;
            while !done.load(Ordering::Relaxed) {
                n += 1;
                let spec = n.to_string();
                let updated = ctx
                    .store
                    .guaranteed_update(
                        &key,
                        false,
                        None,
                        Box::new(move |current: Option<StoredObject>| {
                            let spec = spec.clone();
                            async move {
                                let current = current.expect("the key is never deleted");
                                let v: serde_json::Value =
                                    serde_json::from_slice(&current.data).expect("test object");
                                let name = v["metadata"]["name"].as_str().unwrap_or("");
                                Ok(Update {
                                    data: object("ns", name, &[], &spec),
                                    ttl: None,
                                })
                            }
                            .boxed()
                        }),
                        None,
                    )
                    .await
                    .expect("update");
                acked
                    .lock()
                    .updated
                    .insert(key.clone(), updated.resource_version);
            }
        }));
    }
    {
        // Creates then deletes of short-lived keys, and writes to another resource that move the
        // storage revision without events for this one.
        let (ctx, acked, done) = (Arc::clone(&ctx), Arc::clone(&acked), Arc::clone(&done));
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !done.load(Ordering::Relaxed) {
                n += 1;
                let name = format!("d{n}");
                let key = key(&ctx, "ns", &name);
                ctx.store
                    .create(&key, object("ns", &name, &[], "d"), None)
                    .await
                    .expect("create");
                ctx.store
                    .delete(&key, None, None, None)
                    .await
                    .expect("delete");
                acked.lock().deleted.push(key);
                let elsewhere = format!("/conformance-elsewhere/{}", ctx.keys.resource_prefix());
                ctx.backend
                    .put(
                        &elsewhere,
                        Bytes::from_static(b"x"),
                        Condition::Always,
                        None,
                    )
                    .await
                    .expect("write elsewhere");
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..READERS {
        let (ctx, acked) = (Arc::clone(&ctx), Arc::clone(&acked));
        readers.push(tokio::spawn(async move {
            for i in 0..READS {
                // Everything acknowledged before the read starts.
                let before = acked.lock().clone();
                if (r + i) % 2 == 0 {
                    let (key, written) = before
                        .updated
                        .iter()
                        .nth((r + i) % KEYS)
                        .map(|(k, v)| (k.clone(), *v))
                        .expect("keys");
                    let got = ctx
                        .store
                        .get(&key, GetOptions::default())
                        .await
                        .expect("get")
                        .expect("present");
                    assert!(
                        got.resource_version >= written,
                        "reader {r} read {i}: get of {key} at {} misses the write at {written}",
                        got.resource_version
                    );
                    let deleted = before.deleted.last().cloned();
                    if let Some(deleted) = deleted {
                        let got = ctx
                            .store
                            .get(
                                &deleted,
                                GetOptions {
                                    ignore_not_found: true,
                                    ..GetOptions::default()
                                },
                            )
                            .await
                            .expect("get deleted");
                        assert!(
                            got.is_none(),
                            "reader {r} read {i}: {deleted} was deleted before the read"
                        );
                    }
                } else {
                    let list = ctx
                        .store
                        .get_list(ctx.keys.resource_prefix(), list_all(""))
                        .await
                        .expect("list");
                    let seen: BTreeMap<&str, i64> = list
                        .items
                        .iter()
                        .map(|o| (o.key.as_str(), o.resource_version))
                        .collect();
                    for (key, written) in &before.updated {
                        let rv = seen.get(key.as_str()).copied().unwrap_or(0);
                        assert!(
                            rv >= *written,
                            "reader {r} read {i}: list at {} has {key} at {rv}, written at \
                             {written}",
                            list.resource_version
                        );
                        assert!(list.resource_version >= *written);
                    }
                    for key in &before.deleted {
                        assert!(
                            !seen.contains_key(key.as_str()),
                            "reader {r} read {i}: list at {} has {key}, deleted before",
                            list.resource_version
                        );
                    }
                }
            }
        }));
    }
    // A failed reader is reported after the writers stopped, so the failure ends the case.
    let mut failure = None;
    for reader in readers {
        if let Err(error) = reader.await {
            failure.get_or_insert(error);
        }
    }
    done.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.expect("writer");
    }
    if let Some(error) = failure {
        std::panic::resume_unwind(error.into_panic());
    }
    let acked = acked.lock().clone();
    assert!(
        !acked.deleted.is_empty(),
        "the deleting writer ran while readers read"
    );
}
