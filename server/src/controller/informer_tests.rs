//! The informer over a storage whose watch can be ended (410 Gone) and whose lists can fail:
//! it lists again, and reports what changed while it was not watching, deletions included.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use kubernetes_api::core::v1::ConfigMap;
use storage::errors::{Result, Revision, StorageError};
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, Preconditions, StoredObject, UpdateFn,
    ValidateDeletionFn, WatchEvent, WatchEventStream,
};
use storage::keys::ResourceKeys;
use tokio::sync::{Notify, mpsc};
use tokio::time::timeout;

use super::{Change, Informer, Notification, ObjectKey};
use crate::registry::{DeleteOptions, NoAdmission, Registry, Store};

/// A storage over another whose open watches end with 410 Gone when `expire` is notified, and
/// whose lists fail while `fail_lists` is set.
struct Faulty {
    inner: Arc<dyn Interface>,
    expire: Arc<Notify>,
    fail_lists: AtomicBool,
    lists: AtomicUsize,
}

#[async_trait]
impl Interface for Faulty {
    async fn create(&self, key: &str, data: Bytes, ttl: Option<u64>) -> Result<StoredObject> {
        self.inner.create(key, data, ttl).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<Preconditions>,
        validate_deletion: Option<ValidateDeletionFn<'_>>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.inner
            .delete(key, preconditions, validate_deletion, cached_existing)
            .await
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream> {
        let requested = storage::interface::parse_resource_version(&opts.resource_version)?;
        let events = self.inner.watch(key, opts).await?;
        let expire = self.expire.clone();
        let expired = futures::stream::once(async move {
            expire.notified().await;
            WatchEvent::Error(StorageError::Expired {
                requested,
                compacted: requested + 1,
            })
        });
        Ok(futures::stream::select(events, expired)
            .take_while(|e| std::future::ready(!matches!(e, WatchEvent::Error(_))))
            .chain(futures::stream::iter([WatchEvent::Error(
                StorageError::Expired {
                    requested: 0,
                    compacted: 1,
                },
            )]))
            .boxed())
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<StoredObject>> {
        self.inner.get(key, opts).await
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        if self.fail_lists.load(Ordering::SeqCst) {
            return Err(StorageError::internal("lists fail on purpose"));
        }
        self.inner.get_list(key, opts).await
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: UpdateFn<'_>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.inner
            .guaranteed_update(
                key,
                ignore_not_found,
                preconditions,
                try_update,
                cached_existing,
            )
            .await
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.inner.count(key).await
    }

    async fn current_resource_version(&self) -> Result<Revision> {
        self.inner.current_resource_version().await
    }
}

fn config_map(name: &str) -> Box<dyn apimachinery::runtime::Object> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.namespace = Some("default".to_string());
    Box::new(cm)
}

/// Waits for the next notification; panics after 5 s.
async fn next(rx: &mut mpsc::UnboundedReceiver<Notification>) -> (Change, ObjectKey) {
    match timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(n)) => (n.change, n.key),
        other => panic!("no notification: {other:?}"),
    }
}

#[tokio::test]
async fn lists_again_after_410_gone_and_reports_what_changed_meanwhile() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backend =
        storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let registry = Registry::new(Arc::new(backend), "/registry".to_string());
    let cached = registry
        .store(&kubernetes_api::core::CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let faulty = Arc::new(Faulty {
        inner: cached.storage().clone(),
        expire: Arc::new(Notify::new()),
        fail_lists: AtomicBool::new(false),
        lists: AtomicUsize::new(0),
    });
    let keys = ResourceKeys::new("/registry", "", "configmaps").unwrap_or_else(|e| panic!("{e}"));
    let store = Arc::new(Store::new(
        &kubernetes_api::core::CONFIG_MAP_KIND,
        faulty.clone(),
        keys,
    ));
    store
        .create(config_map("kept"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .create(config_map("deleted"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let (tx, mut rx) = mpsc::unbounded_channel();
    let informer = tokio::spawn(Informer::new(store.clone()).run(
        move |n| {
            let _ = tx.send(n);
        },
        std::future::pending(),
    ));
    let mut initial = vec![next(&mut rx).await, next(&mut rx).await];
    initial.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        initial,
        vec![
            (Change::Added, ObjectKey::new("default", "deleted")),
            (Change::Added, ObjectKey::new("default", "kept")),
        ]
    );
    // Watching: a create is reported by the watch.
    store
        .create(config_map("watched"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        next(&mut rx).await,
        (Change::Added, ObjectKey::new("default", "watched"))
    );

    // The watch ends with 410 Gone and lists fail for a while: changes made meanwhile reach no
    // watch.
    faulty.fail_lists.store(true, Ordering::SeqCst);
    let lists = faulty.lists.load(Ordering::SeqCst);
    faulty.expire.notify_waiters();
    while faulty.lists.load(Ordering::SeqCst) == lists {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    store
        .delete(
            "default",
            "deleted",
            &NoAdmission,
            &DeleteOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .create(config_map("added"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        timeout(Duration::from_millis(200), rx.recv())
            .await
            .is_err(),
        "a change was reported without a watch"
    );

    // The next list reports them: the new object, and the deletion from its last state.
    faulty.fail_lists.store(false, Ordering::SeqCst);
    let mut relisted = vec![next(&mut rx).await, next(&mut rx).await];
    relisted.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        relisted,
        vec![
            (Change::Added, ObjectKey::new("default", "added")),
            (Change::Deleted, ObjectKey::new("default", "deleted")),
        ]
    );
    // Unchanged objects are not reported again, and the new watch works.
    store
        .create(config_map("after"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        next(&mut rx).await,
        (Change::Added, ObjectKey::new("default", "after"))
    );
    informer.abort();
}
