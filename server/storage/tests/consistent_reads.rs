//! Linearizable consistent reads through the watch cache, on the embedded store and on etcd,
//! with the cache's upstream watch slowed down: the conformance case
//! `consistent_reads_see_acknowledged_writes` (a get or list without resourceVersion observes
//! every write acknowledged before it started) while every upstream event reaches the cache
//! several milliseconds after the write was acknowledged. Without that delay the cache usually
//! applies an event before its writer even sees the response, so a cache that answered without
//! confirming its freshness would rarely be caught.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use storage::Result;
use storage::backend::{
    Backend, Condition, GetResponse, RangeRequest, RangeResponse, TxnOutcome, WatchRequest,
    WatchStream,
};
use storage::cacher::{Cacher, CacherConfig};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::errors::Revision;
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{Factory, JsonTestCodec, TestContext, conformance};

/// The latency added to every upstream watch item.
const UPSTREAM_DELAY: Duration = Duration::from_millis(5);

/// A backend whose watches deliver every item `delay` late (a fixed latency, in order, without
/// limiting throughput), as a slow network to the watch cache's upstream would. Everything else
/// is forwarded.
pub struct DelayedWatches {
    /// The real backend.
    pub inner: Arc<dyn Backend>,
    /// The added latency of each watch item.
    pub delay: std::time::Duration,
}

#[async_trait]
impl Backend for DelayedWatches {
    async fn get(&self, key: &str, revision: Revision) -> Result<GetResponse> {
        self.inner.get(key, revision).await
    }
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        self.inner.range(request).await
    }
    async fn put(
        &self,
        key: &str,
        value: Bytes,
        condition: Condition,
        ttl: Option<u64>,
    ) -> Result<TxnOutcome> {
        self.inner.put(key, value, condition, ttl).await
    }
    async fn delete(&self, key: &str, condition: Condition) -> Result<TxnOutcome> {
        self.inner.delete(key, condition).await
    }
    async fn count(&self, prefix: &str) -> Result<i64> {
        self.inner.count(prefix).await
    }
    async fn watch(&self, request: WatchRequest) -> Result<WatchStream> {
        use futures::StreamExt;
        let mut upstream = self.inner.watch(request).await?;
        let delay = self.delay;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(item) = upstream.next().await {
                if tx
                    .send((tokio::time::Instant::now() + delay, item))
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)
            .then(|(due, item)| async move {
                tokio::time::sleep_until(due).await;
                item
            })
            .boxed())
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }
    async fn compacted_revision(&self) -> Result<Revision> {
        self.inner.compacted_revision().await
    }
    async fn claim_compaction(
        &self,
        seen_version: i64,
        revision: Revision,
    ) -> Result<storage::compactor::CompactionClaim> {
        self.inner.claim_compaction(seen_version, revision).await
    }
    fn supports_progress_requests(&self) -> bool {
        self.inner.supports_progress_requests()
    }
}

/// A cache over `backend` whose upstream watch is [`DelayedWatches`].
async fn delayed_cache(
    backend: Arc<dyn Backend>,
    guard: Box<dyn std::any::Any + Send + Sync>,
) -> TestContext {
    let delayed: Arc<dyn Backend> = Arc::new(DelayedWatches {
        inner: Arc::clone(&backend),
        delay: UPSTREAM_DELAY,
    });
    let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
    let store_config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
        .with_bookmark_interval(Duration::from_millis(100));
    let store = Arc::new(Store::new(delayed, store_config));
    let cacher = Cacher::new(
        store,
        CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec)),
    );
    assert!(
        cacher.wait_ready(Duration::from_secs(10)).await,
        "watch cache did not load"
    );
    TestContext {
        store: Arc::new(cacher),
        backend,
        keys,
        guard,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_over_embedded_with_a_slow_upstream() {
    let factory: Factory = Arc::new(|| {
        async {
            let dir = tempfile::tempdir().expect("temp dir");
            let backend: Arc<dyn Backend> = Arc::new(
                EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).expect("open backend"),
            );
            delayed_cache(backend, Box::new(dir)).await
        }
        .boxed()
    });
    conformance::consistent_reads_see_acknowledged_writes(&factory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_over_etcd_with_a_slow_upstream() {
    let factory: Factory = Arc::new(|| {
        async {
            let etcd = EtcdProcess::start().expect("etcd must be installed and start");
            let backend: Arc<dyn Backend> = Arc::new(
                EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
                    .await
                    .expect("connect to etcd"),
            );
            delayed_cache(backend, Box::new(etcd)).await
        }
        .boxed()
    });
    conformance::consistent_reads_see_acknowledged_writes(&factory).await;
}
