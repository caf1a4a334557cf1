//! [`EtcdBackend`]: the [`Backend`] contract on an etcd v3 cluster.
//!
//! Revisions are etcd's: a key's resourceVersion is its `mod_revision`. Conditional writes are
//! transactions (create compares `create_revision == 0`, compare-and-swap compares
//! `mod_revision`), so they are atomic on the server; each write is its own transaction (see
//! [`super::write`]), so no two changes share a revision. Reads are retried with backoff while
//! etcd is unavailable (they are idempotent); writes are not retried, since a write whose
//! response was lost may have been applied.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn,
    TxnOp, TxnOpResponse,
};

use super::config::EtcdConfig;
use super::error::{Backoff, Failure, classify};
use super::lease::LeaseManager;
use super::watch::{WatchTask, supports_progress_requests};
use super::write::{Applied, Write, Writer};
use crate::backend::{
    Backend, Condition, GetResponse, KeyValue, RangeRequest, RangeResponse, TxnOutcome,
    WatchRequest, WatchStream,
};
use crate::compactor::{COMPACT_REV_KEY, CompactionClaim};
use crate::errors::{Result, Revision, StorageError};

/// The etcd implementation of [`Backend`]. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct EtcdBackend {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    pub(crate) config: EtcdConfig,
    leases: LeaseManager,
    /// Sends the conditional writes.
    writer: Writer,
    /// True when the server answers progress requests in order with events (etcd ≥ 3.4.25,
    /// ≥ 3.5.8); older servers may send such a notification ahead of pending events.
    pub(crate) progress_requests: bool,
    /// The highest compaction revision observed (by this process's compactions, reads and
    /// watches).
    pub(crate) compacted: AtomicI64,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("endpoints", &self.inner.config.endpoints)
            .finish_non_exhaustive()
    }
}

/// The end of the key range of all keys starting with `prefix` (etcd's "prefix end").
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff (or the prefix is empty): the range extends to the end of the keyspace.
    vec![0]
}

/// Converts an etcd key-value; the TTL is filled in separately.
pub(crate) fn convert_kv(kv: etcd_client::KeyValue) -> Result<(KeyValue, i64)> {
    let create_revision = kv.create_revision();
    let mod_revision = kv.mod_revision();
    let lease = kv.lease();
    let (key, value) = kv.into_key_value();
    let key = String::from_utf8(key)
        .map_err(|e| StorageError::internal(format!("etcd returned a non-UTF-8 key: {e}")))?;
    Ok((
        KeyValue {
            key,
            value: Bytes::from(value),
            create_revision,
            mod_revision,
            ttl: None,
        },
        lease,
    ))
}

impl EtcdBackend {
    /// Connects to etcd as `config` says. The connection itself is established lazily; this
    /// fails only on invalid configuration (endpoints, TLS files).
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let client = config.connect().await?;
        let mut backend = Self {
            inner: Arc::new(Inner {
                writer: Writer::new(&client, config.request_timeout),
                client,
                config,
                leases: LeaseManager::default(),
                progress_requests: false,
                compacted: AtomicI64::new(0),
            }),
        };
        let version = backend.server_version().await.ok();
        if let Some(inner) = Arc::get_mut(&mut backend.inner) {
            inner.progress_requests = version.as_deref().is_some_and(supports_progress_requests);
        }
        Ok(backend)
    }

    /// The configuration this backend was built with.
    pub fn config(&self) -> &EtcdConfig {
        &self.inner.config
    }

    /// The etcd server version (for example `3.5.12`).
    pub async fn server_version(&self) -> Result<String> {
        let response = self
            .read(|mut client| async move { client.status().await })
            .await
            .map_err(Failure::into_storage)?;
        Ok(response.version().to_string())
    }

    /// The underlying etcd client (for benchmarks and diagnostics).
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// Runs an idempotent request, retrying with backoff while etcd is unavailable, within
    /// the configured read retry budget. Each attempt is bounded by the request timeout.
    async fn read<T, F, Fut>(&self, op: F) -> std::result::Result<T, Failure>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.inner.config.read_retry_budget;
        let mut backoff = Backoff::new();
        loop {
            let attempt =
                tokio::time::timeout(self.inner.config.request_timeout, op(self.client())).await;
            let failure = match attempt {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => classify(error),
                Err(_) => Failure::Unavailable("etcd request timed out".to_string()),
            };
            match failure {
                Failure::Unavailable(message) => {
                    let delay = backoff.next_delay();
                    if tokio::time::Instant::now() + delay > deadline {
                        return Err(Failure::Unavailable(message));
                    }
                    tracing::debug!(%message, "etcd unavailable; retrying read");
                    tokio::time::sleep(delay).await;
                }
                other => return Err(other),
            }
        }
    }

    /// Turns a revision-related read failure into `Expired` / `TooLargeResourceVersion` with the
    /// revisions filled in.
    async fn revision_failure(&self, failure: Failure, requested: Revision) -> StorageError {
        match failure {
            Failure::Compacted => StorageError::Expired {
                requested,
                compacted: self.compacted_revision().await.unwrap_or(0),
            },
            Failure::FutureRevision => StorageError::TooLargeResourceVersion {
                requested,
                current: self.current_revision().await.unwrap_or(0),
            },
            other => other.into_storage(),
        }
    }

    /// Fills the TTL of a converted key-value from its lease.
    async fn with_ttl(&self, (mut kv, lease): (KeyValue, i64)) -> KeyValue {
        kv.ttl = self.inner.leases.ttl_of(&self.inner.client, lease).await;
        kv
    }

    async fn convert_all(&self, kvs: Vec<etcd_client::KeyValue>) -> Result<Vec<KeyValue>> {
        let mut out = Vec::with_capacity(kvs.len());
        for kv in kvs {
            let converted = convert_kv(kv)?;
            out.push(if converted.1 == 0 {
                converted.0
            } else {
                self.with_ttl(converted).await
            });
        }
        Ok(out)
    }

    /// Interprets a transaction of the form `when(cmp) then(op with prev_kv) else(get key)`.
    async fn outcome(&self, applied: Applied) -> Result<TxnOutcome> {
        let Applied { revision, response } = applied;
        let succeeded = response.succeeded();
        let op = response.op_responses().into_iter().next();
        if succeeded {
            let prev = match op {
                Some(TxnOpResponse::Put(mut put)) => put.take_prev_key(),
                Some(TxnOpResponse::Delete(mut delete)) => {
                    delete.take_prev_kvs().into_iter().next()
                }
                _ => None,
            };
            let prev = match prev {
                Some(kv) => Some(self.with_ttl(convert_kv(kv)?).await),
                None => None,
            };
            Ok(TxnOutcome::Committed { revision, prev })
        } else {
            let current = match op {
                Some(TxnOpResponse::Get(mut get)) => get.take_kvs().into_iter().next(),
                _ => None,
            };
            let current = match current {
                Some(kv) => Some(self.with_ttl(convert_kv(kv)?).await),
                None => None,
            };
            Ok(TxnOutcome::Failed { current, revision })
        }
    }

    fn compare_for(key: &str, condition: Condition) -> Vec<Compare> {
        match condition {
            Condition::Absent => vec![Compare::create_revision(key, CompareOp::Equal, 0)],
            Condition::ModRevision(rev) => vec![Compare::mod_revision(key, CompareOp::Equal, rev)],
            Condition::Always => vec![],
        }
    }
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn get(&self, key: &str, revision: Revision) -> Result<GetResponse> {
        let key_bytes = key.as_bytes().to_vec();
        let result = self
            .read(|mut client| {
                let key = key_bytes.clone();
                async move {
                    client
                        .get(key, Some(GetOptions::new().with_revision(revision)))
                        .await
                }
            })
            .await;
        let mut response = match result {
            Ok(response) => response,
            Err(failure) => return Err(self.revision_failure(failure, revision).await),
        };
        let read_revision = response.take_header().map(|h| h.revision()).unwrap_or(0);
        let kv = match response.take_kvs().into_iter().next() {
            Some(kv) => Some(self.with_ttl(convert_kv(kv)?).await),
            None => None,
        };
        Ok(GetResponse {
            kv,
            revision: if revision > 0 {
                revision
            } else {
                read_revision
            },
        })
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let start = if request.start.is_empty() {
            request.prefix.clone()
        } else {
            request.start.clone()
        };
        if !start.starts_with(&request.prefix) {
            return Err(StorageError::internal(format!(
                "range start {start:?} is outside prefix {:?}",
                request.prefix
            )));
        }
        let end = prefix_end(request.prefix.as_bytes());
        let limit = i64::try_from(request.limit).unwrap_or(i64::MAX);
        let revision = request.revision;
        let result = self
            .read(|mut client| {
                let (start, end) = (start.clone().into_bytes(), end.clone());
                async move {
                    let options = GetOptions::new()
                        .with_range(end)
                        .with_limit(limit)
                        .with_revision(revision);
                    client.get(start, Some(options)).await
                }
            })
            .await;
        let mut response = match result {
            Ok(response) => response,
            Err(failure) => return Err(self.revision_failure(failure, revision).await),
        };
        let read_revision = response.take_header().map(|h| h.revision()).unwrap_or(0);
        let more = response.more();
        let count = response.count();
        let kvs = self.convert_all(response.take_kvs()).await?;
        Ok(RangeResponse {
            kvs,
            revision: if revision > 0 {
                revision
            } else {
                read_revision
            },
            more,
            count,
        })
    }

    async fn put(
        &self,
        key: &str,
        value: Bytes,
        condition: Condition,
        ttl: Option<u64>,
    ) -> Result<TxnOutcome> {
        // A successful create has no previous value, so only other writes ask for it.
        let mut options = if condition == Condition::Absent {
            PutOptions::new()
        } else {
            PutOptions::new().with_prev_key()
        };
        if let Some(ttl) = ttl {
            let lease = self.inner.leases.lease_for(&self.inner.client, ttl).await?;
            options = options.with_lease(lease);
        }
        let write = Write {
            compare: Self::compare_for(key, condition),
            success: TxnOp::put(key, value.to_vec(), Some(options)),
            failure: TxnOp::get(key, None),
        };
        let applied = self.inner.writer.submit(write).await?;
        self.outcome(applied).await
    }

    async fn delete(&self, key: &str, condition: Condition) -> Result<TxnOutcome> {
        let compare = match condition {
            Condition::Absent => {
                return Err(StorageError::internal(
                    "a delete cannot be conditioned on the key being absent",
                ));
            }
            Condition::ModRevision(rev) => Compare::mod_revision(key, CompareOp::Equal, rev),
            Condition::Always => Compare::create_revision(key, CompareOp::Greater, 0),
        };
        let write = Write {
            compare: vec![compare],
            success: TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key())),
            failure: TxnOp::get(key, None),
        };
        let applied = self.inner.writer.submit(write).await?;
        self.outcome(applied).await
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let prefix = prefix.as_bytes().to_vec();
        let response = self
            .read(|mut client| {
                let prefix = prefix.clone();
                async move {
                    let end = prefix_end(&prefix);
                    let options = GetOptions::new().with_range(end).with_count_only();
                    client.get(prefix, Some(options)).await
                }
            })
            .await
            .map_err(Failure::into_storage)?;
        Ok(response.count())
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream> {
        let start = if request.start_revision > 0 {
            request.start_revision
        } else {
            self.current_revision().await? + 1
        };
        Ok(WatchTask::start(Arc::clone(&self.inner), request, start).await)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut client = self.client();
        let options = CompactionOptions::new().with_physical();
        let attempt = tokio::time::timeout(
            self.inner.config.request_timeout,
            client.compact(revision, Some(options)),
        )
        .await;
        match attempt {
            Ok(Ok(_)) => {
                self.inner.compacted.fetch_max(revision, Ordering::Relaxed);
                Ok(())
            }
            Ok(Err(error)) => match classify(error) {
                // Already compacted at or beyond this revision: nothing to do.
                Failure::Compacted => Ok(()),
                Failure::FutureRevision => Err(StorageError::TooLargeResourceVersion {
                    requested: revision,
                    current: self.current_revision().await.unwrap_or(0),
                }),
                other => Err(other.into_storage()),
            },
            Err(_) => Err(StorageError::Timeout {
                message: "etcd compaction timed out".to_string(),
            }),
        }
    }

    /// kube-apiserver's claim: `If(version(compact_rev_key) = seen) Then(put compact_rev_key =
    /// revision) Else(get compact_rev_key)`. The put bumps the key's version, so of the replicas
    /// that saw one version only the first claims the round. Not retried: a claim whose answer
    /// was lost may have been applied, and the next round learns the version either way.
    async fn claim_compaction(
        &self,
        seen_version: i64,
        revision: Revision,
    ) -> Result<CompactionClaim> {
        let txn = Txn::new()
            .when([Compare::version(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                seen_version,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let mut client = self.client();
        let response =
            match tokio::time::timeout(self.inner.config.request_timeout, client.txn(txn)).await {
                Ok(Ok(response)) => response,
                Ok(Err(error)) => return Err(classify(error).into_storage()),
                Err(_) => {
                    return Err(StorageError::Timeout {
                        message: "etcd compaction claim timed out".to_string(),
                    });
                }
            };
        let current = response
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| StorageError::internal("etcd response without header"))?;
        if response.succeeded() {
            return Ok(CompactionClaim {
                claimed: true,
                version: seen_version + 1,
                revision: current,
                recorded: 0,
            });
        }
        let (version, recorded) = match response.op_responses().into_iter().next() {
            Some(TxnOpResponse::Get(get)) => get.kvs().first().map_or((0, 0), |kv| {
                let recorded = kv.value_str().ok().and_then(|v| v.parse().ok());
                (kv.version(), recorded.unwrap_or(0))
            }),
            _ => (0, 0),
        };
        Ok(CompactionClaim {
            claimed: false,
            version,
            revision: current,
            recorded,
        })
    }

    async fn current_revision(&self) -> Result<Revision> {
        // A linearizable read, so the revision includes every acknowledged write.
        let response = self
            .read(|mut client| async move {
                client
                    .get(vec![0u8], Some(GetOptions::new().with_count_only()))
                    .await
            })
            .await
            .map_err(Failure::into_storage)?;
        response
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| StorageError::internal("etcd response without header"))
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        // etcd does not expose its compaction point, but a read below it fails with
        // `ErrCompacted`: find the oldest readable revision by bisection, starting from the last
        // known point (usually a single read).
        let known = self.inner.compacted.load(Ordering::Relaxed);
        if self.readable_at(known.max(1)).await? {
            return Ok(known);
        }
        let (mut low, mut high) = (known.max(1), self.current_revision().await?);
        // Invariant: `low` is not readable, `high` is.
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.readable_at(mid).await? {
                high = mid;
            } else {
                low = mid;
            }
        }
        self.inner.compacted.fetch_max(high, Ordering::Relaxed);
        Ok(high)
    }

    fn supports_progress_requests(&self) -> bool {
        self.inner.progress_requests
    }
}

impl EtcdBackend {
    /// True when a read at `revision` is still possible (not compacted away).
    async fn readable_at(&self, revision: Revision) -> Result<bool> {
        let result = self
            .read(|mut client| async move {
                let options = GetOptions::new().with_count_only().with_revision(revision);
                client.get(vec![0u8], Some(options)).await
            })
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(Failure::Compacted) => Ok(false),
            // A revision beyond the current one is not compacted.
            Err(Failure::FutureRevision) => Ok(true),
            Err(other) => Err(other.into_storage()),
        }
    }
}
