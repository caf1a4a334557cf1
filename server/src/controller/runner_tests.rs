//! A controller over a real [`Store`] (the registry's, over the embedded storage): it reacts
//! to creates, updates and deletes, to mapped secondary objects and changes, and to resync;
//! it retries failures, requeues when asked, and stops when told.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::core::v1::{ConfigMap, Secret};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::timeout;

use super::{
    Action, Change, Controller, ExponentialBackoff, Mutate, Notification, ObjectKey, Reconciler,
};
use crate::registry::{DeleteOptions, NoAdmission, Registry, Store, UpdateOptions};

/// What one reconcile saw: the key and the ConfigMap's `v` value (`None` when it is gone).
type Seen = (ObjectKey, Option<String>);

/// Records what it sees; fails the first `failures[key]` reconciles of a key, and asks to
/// look again after `requeue` when set.
struct Recorder {
    store: Arc<Store>,
    seen: mpsc::UnboundedSender<Seen>,
    failures: Mutex<HashMap<ObjectKey, usize>>,
    requeue: Option<Duration>,
}

#[async_trait]
impl Reconciler for Recorder {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let object = self.store.try_get(&key.namespace, &key.name).await?;
        let value = object
            .as_ref()
            .and_then(|o| o.downcast_ref::<ConfigMap>())
            .map(|c| c.data.get("v").cloned().unwrap_or_default());
        let _ = self.seen.send((key.clone(), value));
        if let Some(left) = self.failures.lock().get_mut(key).filter(|n| **n > 0) {
            *left -= 1;
            return Err(ApiError::internal("failing on purpose"));
        }
        Ok(self.requeue.map_or(Action::Done, Action::RequeueAfter))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    registry: Registry,
    config_maps: Arc<Store>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backend =
        storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let registry = Registry::new(Arc::new(backend), "/registry".to_string());
    let config_maps = registry
        .store(&kubernetes_api::core::CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    Fixture {
        _dir: dir,
        registry,
        config_maps,
    }
}

fn config_map(name: &str, value: &str) -> Box<dyn Object> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.namespace = Some("default".to_string());
    cm.data.insert("v".into(), value.into());
    Box::new(cm)
}

fn recorder(
    store: &Arc<Store>,
    requeue: Option<Duration>,
) -> (Recorder, mpsc::UnboundedReceiver<Seen>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let recorder = Recorder {
        store: store.clone(),
        seen: tx,
        failures: Mutex::new(HashMap::new()),
        requeue,
    };
    (recorder, rx)
}

/// Waits for a reconcile of `key` that saw `value`, skipping others; panics after 5 s.
async fn expect(seen: &mut mpsc::UnboundedReceiver<Seen>, key: &ObjectKey, value: Option<&str>) {
    let wanted = (key.clone(), value.map(str::to_string));
    let found = timeout(Duration::from_secs(5), async {
        while let Some(got) = seen.recv().await {
            if got == wanted {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no reconcile saw {wanted:?}");
}

/// Counts the reconciles that arrive within `window`.
async fn count_within(seen: &mut mpsc::UnboundedReceiver<Seen>, window: Duration) -> usize {
    let mut count = 0;
    let _ = timeout(window, async {
        while seen.recv().await.is_some() {
            count += 1;
        }
    })
    .await;
    count
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

#[tokio::test]
async fn reconciles_existing_objects_then_creates_updates_and_deletes() {
    let f = fixture();
    let store = &f.config_maps;
    store
        .create(config_map("before", "0"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (reconciler, mut seen) = recorder(store, None);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler)
            .workers(2)
            .run(async move {
                let _ = stop_rx.await;
            }),
    );

    // The initial list.
    expect(&mut seen, &key("before"), Some("0")).await;

    // A create.
    store
        .create(config_map("a", "1"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("a"), Some("1")).await;

    // An update.
    let set = Mutate(|o: &mut dyn Object| {
        if let Some(cm) = o.downcast_mut::<ConfigMap>() {
            cm.data.insert("v".into(), "2".into());
        }
    });
    store
        .update(
            "default",
            "a",
            &set,
            &NoAdmission,
            &NoAdmission,
            UpdateOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("a"), Some("2")).await;

    // A delete: the key is reconciled and the object is gone.
    store
        .delete("default", "a", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("a"), None).await;

    // Nothing more without changes (no resync configured).
    assert_eq!(count_within(&mut seen, Duration::from_millis(300)).await, 0);

    let _ = stop_tx.send(());
    let stopped = timeout(Duration::from_secs(5), running).await;
    assert!(matches!(stopped, Ok(Ok(()))), "the controller did not stop");
}

#[tokio::test]
async fn a_failed_reconcile_is_retried_with_backoff_until_it_succeeds() {
    let f = fixture();
    let store = &f.config_maps;
    let (reconciler, mut seen) = recorder(store, None);
    reconciler.failures.lock().insert(key("flaky"), 3);
    let controller =
        Controller::new("test", store.clone(), reconciler).backoff(ExponentialBackoff {
            base: Duration::from_millis(20),
            max: Duration::from_secs(1),
        });
    let running = tokio::spawn(controller.run(std::future::pending()));
    store
        .create(config_map("flaky", "x"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let start = tokio::time::Instant::now();
    // Three failures and the success: four reconciles, after 20 + 40 + 80 ms of backoff.
    for _ in 0..4 {
        expect(&mut seen, &key("flaky"), Some("x")).await;
    }
    assert!(
        start.elapsed() >= Duration::from_millis(140),
        "{:?}",
        start.elapsed()
    );
    // Succeeded: no more retries.
    assert_eq!(count_within(&mut seen, Duration::from_millis(300)).await, 0);
    running.abort();
}

#[tokio::test]
async fn requeue_after_and_resync_reconcile_again_without_changes() {
    let f = fixture();
    let store = &f.config_maps;
    store
        .create(config_map("a", "1"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let (reconciler, mut seen) = recorder(store, Some(Duration::from_millis(100)));
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler).run(std::future::pending()),
    );
    let requeued = count_within(&mut seen, Duration::from_millis(550)).await;
    assert!(
        (3..=7).contains(&requeued),
        "{requeued} reconciles in 550 ms"
    );
    running.abort();

    let (reconciler, mut seen) = recorder(store, None);
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler)
            .resync(Duration::from_millis(100))
            .run(std::future::pending()),
    );
    let resynced = count_within(&mut seen, Duration::from_millis(550)).await;
    assert!(
        (3..=7).contains(&resynced),
        "{resynced} reconciles in 550 ms"
    );
    running.abort();
}

#[tokio::test]
async fn changes_of_a_secondary_kind_reconcile_the_keys_they_map_to() {
    let f = fixture();
    let store = &f.config_maps;
    let secrets = f
        .registry
        .store(&kubernetes_api::core::SECRET_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let (reconciler, mut seen) = recorder(store, None);
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler)
            // A Secret concerns the ConfigMap named in its `for` label.
            .watches(secrets.clone(), |secret: Box<dyn Object>| {
                let target = secret.metadata().labels.get("for").cloned();
                let namespace = secret.metadata().namespace.clone().unwrap_or_default();
                async move {
                    target
                        .map(|name| vec![ObjectKey::new(namespace, name)])
                        .unwrap_or_default()
                }
            })
            .run(std::future::pending()),
    );
    store
        .create(config_map("target", "t"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("target"), Some("t")).await;
    assert_eq!(count_within(&mut seen, Duration::from_millis(200)).await, 0);

    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    secret.metadata.namespace = Some("default".into());
    secret.metadata.labels.insert("for".into(), "target".into());
    secrets
        .create(Box::new(secret), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("target"), Some("t")).await;

    // Its deletion maps from its last state.
    secrets
        .delete("default", "s", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("target"), Some("t")).await;
    running.abort();
}

#[tokio::test]
async fn a_mapping_of_changes_sees_what_happened_and_the_key() {
    let f = fixture();
    let store = &f.config_maps;
    let secrets = f
        .registry
        .store(&kubernetes_api::core::SECRET_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut before = Secret::default();
    before.metadata.name = Some("old".into());
    before.metadata.namespace = Some("default".into());
    secrets
        .create(Box::new(before), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .create(config_map("target", "t"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (reconciler, mut seen) = recorder(store, None);
    let (changes_tx, mut changes) = mpsc::unbounded_channel();
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler)
            // Only a deleted Secret concerns a ConfigMap: `target` in its namespace.
            .watches_changes(secrets.clone(), move |n: Notification| {
                let _ = changes_tx.send((n.change, n.key.clone()));
                let keys = if n.change == Change::Deleted {
                    vec![ObjectKey::new(n.key.namespace, "target")]
                } else {
                    Vec::new()
                };
                async move { keys }
            })
            .run(std::future::pending()),
    );
    expect(&mut seen, &key("target"), Some("t")).await;
    // The initial list reports the existing Secret as added, which maps to nothing.
    let got = timeout(Duration::from_secs(5), changes.recv()).await;
    assert_eq!(got, Ok(Some((Change::Added, key("old")))));
    assert_eq!(count_within(&mut seen, Duration::from_millis(200)).await, 0);

    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    secret.metadata.namespace = Some("default".into());
    secrets
        .create(Box::new(secret), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let got = timeout(Duration::from_secs(5), changes.recv()).await;
    assert_eq!(got, Ok(Some((Change::Added, key("s")))));
    assert_eq!(count_within(&mut seen, Duration::from_millis(200)).await, 0);

    secrets
        .delete("default", "s", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let got = timeout(Duration::from_secs(5), changes.recv()).await;
    assert_eq!(got, Ok(Some((Change::Deleted, key("s")))));
    expect(&mut seen, &key("target"), Some("t")).await;
    running.abort();
}

#[tokio::test]
async fn a_controller_the_server_starts_stops_when_its_watches_end() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backend =
        storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let ctx = crate::endpoints::ApiContext::new(
        Arc::new(kubernetes_api::scheme()),
        Arc::new(backend),
        "/registry".into(),
    );
    let store = ctx
        .store(&kubernetes_api::core::CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let (reconciler, mut seen) = recorder(&store, None);
    let running = ctx.spawn_controller(Controller::new("test", store.clone(), reconciler));
    store
        .create(config_map("a", "1"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    expect(&mut seen, &key("a"), Some("1")).await;

    ctx.end_watches();
    let stopped = timeout(Duration::from_secs(5), running).await;
    assert!(matches!(stopped, Ok(Ok(()))), "the controller did not stop");
    // Stopped: changes are no longer reconciled.
    store
        .create(config_map("b", "2"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count_within(&mut seen, Duration::from_millis(300)).await, 0);
}

/// Panics the first time it reconciles, then records.
struct PanicsOnce {
    panicked: std::sync::atomic::AtomicBool,
    seen: mpsc::UnboundedSender<ObjectKey>,
}

#[async_trait]
impl Reconciler for PanicsOnce {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        if !self
            .panicked
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            panic!("reconciling {key} panics on purpose");
        }
        let _ = self.seen.send(key.clone());
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_panicking_reconcile_is_retried_and_the_worker_goes_on() {
    let f = fixture();
    let store = &f.config_maps;
    let (tx, mut seen) = mpsc::unbounded_channel();
    let reconciler = PanicsOnce {
        panicked: std::sync::atomic::AtomicBool::new(false),
        seen: tx,
    };
    // One worker: if the panic ended it, nothing would be reconciled afterwards.
    let running = tokio::spawn(
        Controller::new("test", store.clone(), reconciler).run(std::future::pending()),
    );
    store
        .create(config_map("a", "1"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let got = timeout(Duration::from_secs(5), seen.recv()).await;
    assert_eq!(got, Ok(Some(key("a"))));
    store
        .create(config_map("b", "1"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let got = timeout(Duration::from_secs(5), seen.recv()).await;
    assert_eq!(got, Ok(Some(key("b"))));
    running.abort();
}
