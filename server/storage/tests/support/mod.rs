//! Helpers shared by the watch cache's test files.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use storage::Result;
use storage::backend::{
    Backend, Condition, GetResponse, RangeRequest, RangeResponse, TxnOutcome, WatchRequest,
    WatchStream,
};
use storage::cacher::Cacher;
use storage::errors::Revision;

/// A backend that forwards everything and, on compaction, also compacts a watch cache's
/// history (as Kubernetes' cacher tests compact etcd and the watch cache together).
pub struct CompactingBackend {
    /// The real backend.
    pub inner: Arc<dyn Backend>,
    /// The cache to compact along; set once the cache exists.
    pub cacher: Mutex<Option<Cacher>>,
}

#[async_trait]
impl Backend for CompactingBackend {
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
        self.inner.watch(request).await
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await?;
        let cacher = self.cacher.lock().clone();
        if let Some(cacher) = cacher {
            cacher.compact(revision);
        }
        Ok(())
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
