//! etcd restarts under open watches: a watch through the etcd backend, through a Store on it,
//! and through the watch cache over that Store all see every event exactly once, in order,
//! across a SIGKILL and a SIGTERM of etcd (restarted on the same data directory and ports).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use storage::StorageError;
use storage::backend::{Backend, WatchItem, WatchRequest};
use storage::cacher::{Cacher, CacherConfig};
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::interface::{Interface, ListOptions, ObjectAttrs, ObjectCodec, WatchEvent};
use storage::store::{Store, StoreConfig};

/// Objects are opaque here; filtering is not under test.
struct OpaqueCodec;

impl ObjectCodec for OpaqueCodec {
    fn attrs(&self, _data: &[u8]) -> storage::Result<ObjectAttrs> {
        Ok(ObjectAttrs::default())
    }
}

const PREFIX: &str = "/registry/example.dev/widgets/";

/// Creates `key`, retrying while etcd comes back. A retry after an ambiguous failure may find
/// the key already created, which counts as success.
async fn create(store: &Store, key: &str) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match store.create(key, Bytes::from(key.to_string()), None).await {
            Ok(object) => return object.resource_version,
            Err(StorageError::KeyExists { revision, .. }) => return revision,
            Err(error) if tokio::time::Instant::now() < deadline => {
                eprintln!("create {key} failed ({error}); retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("create {key} kept failing: {error}"),
        }
    }
}

/// Collects `(key, revision)` of the next `n` object events, failing on errors and timeouts.
async fn next_objects(stream: &mut BoxStream<'static, WatchEvent>, n: usize) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    while out.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no event within 60 s after {out:?}"))
            .expect("watch stream ended");
        match event {
            WatchEvent::Added(o)
            | WatchEvent::Deleted(o)
            | WatchEvent::Modified { object: o, .. } => out.push((o.key, o.resource_version)),
            WatchEvent::Bookmark { .. } => {}
            WatchEvent::Error(error) => panic!("watch failed: {error}"),
        }
    }
    out
}

async fn next_backend_events(
    stream: &mut storage::backend::WatchStream,
    n: usize,
) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    while out.len() < n {
        let item = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no event within 60 s after {out:?}"))
            .expect("watch stream ended")
            .unwrap_or_else(|error| panic!("watch failed: {error}"));
        if let WatchItem::Events(events) = item {
            out.extend(events.into_iter().map(|e| (e.key, e.mod_revision)));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_survive_etcd_restarts_without_gaps_or_duplicates() {
    let mut etcd = EtcdProcess::start().expect("etcd must be installed and start");
    let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
        .await
        .expect("connect");
    let backend: Arc<dyn Backend> = Arc::new(backend);
    let store = Store::new(
        Arc::clone(&backend),
        StoreConfig::new(PREFIX, Arc::new(OpaqueCodec))
            .with_bookmark_interval(Duration::from_millis(100)),
    );
    let start = store.current_resource_version().await.expect("revision");

    let mut raw = backend
        .watch(WatchRequest {
            prefix: PREFIX.to_string(),
            start_revision: start + 1,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("backend watch");
    let watch_opts = ListOptions {
        resource_version: start.to_string(),
        recursive: true,
        send_initial_events: Some(false),
        ..ListOptions::default()
    };
    let mut through_store = store
        .watch(PREFIX, watch_opts.clone())
        .await
        .expect("store watch");
    let cacher = Cacher::new(
        Arc::new(store.clone()),
        CacherConfig::new(PREFIX, Arc::new(OpaqueCodec)),
    );
    assert!(
        cacher.wait_ready(Duration::from_secs(10)).await,
        "cache ready"
    );
    let mut through_cache = cacher.watch(PREFIX, watch_opts).await.expect("cache watch");

    let mut expected = Vec::new();
    for round in 0..3 {
        let base = format!("{PREFIX}ns/round{round}-");
        for i in 0..10 {
            let key = format!("{base}{i:02}");
            let revision = create(&store, &key).await;
            expected.push((key, revision));
        }
        match round {
            0 => etcd.kill().expect("SIGKILL etcd"),
            1 => etcd.terminate().expect("SIGTERM etcd"),
            _ => break,
        }
        // Give the watches time to notice the broken connection before etcd returns.
        tokio::time::sleep(Duration::from_millis(500)).await;
        etcd.restart()
            .expect("etcd restarts on the same data dir and ports");
    }

    let raw_events = next_backend_events(&mut raw, expected.len()).await;
    assert_eq!(raw_events, expected, "backend watch");
    let store_events = next_objects(&mut through_store, expected.len()).await;
    assert_eq!(store_events, expected, "store watch");
    let cache_events = next_objects(&mut through_cache, expected.len()).await;
    assert_eq!(cache_events, expected, "cache watch");

    // Nothing else is pending: no duplicates after the expected events.
    let extra = tokio::time::timeout(Duration::from_millis(500), raw.next()).await;
    assert!(
        !matches!(extra, Ok(Some(Ok(WatchItem::Events(_))))),
        "unexpected extra backend events: {extra:?}"
    );
    // The cache serves the final state.
    let list = cacher
        .get_list(
            PREFIX,
            ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .expect("list from cache");
    assert_eq!(list.items.len(), expected.len());
}
