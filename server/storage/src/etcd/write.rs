//! Conditional writes: each write is its own etcd transaction, so each change gets its own
//! revision.
//!
//! Every write of the backend is a small transaction `when(compare) then(write) else(get)` on
//! one key, sent from its caller's task as soon as it is submitted. Concurrent writes are
//! concurrent requests on the client's connection; etcd still groups their raft proposals and
//! fsyncs, but each commits at its own revision. A resourceVersion is a revision, so two
//! changes never share one, and a watch resumed from any delivered resourceVersion delivers
//! every later change (Kubernetes' watch contract). Writes of different keys are therefore
//! never combined into one transaction.

use std::time::Duration;

use etcd_client::{Client, Compare, KvClient, Txn, TxnOp, TxnResponse};

use super::error::classify;
use crate::errors::{Result, Revision, StorageError};

/// The largest response a write may receive: updates and deletes return the previous value,
/// which may exceed tonic's default decoding limit of 4 MiB.
const MAX_RESPONSE_BYTES: usize = 512 * 1024 * 1024;

/// One conditional write: `when(compare) then(success) else(failure)` on a single key.
pub(crate) struct Write {
    /// The conditions.
    pub(crate) compare: Vec<Compare>,
    /// The write, run when every condition holds.
    pub(crate) success: TxnOp,
    /// The read run otherwise (the key's current value).
    pub(crate) failure: TxnOp,
}

/// The result of one write: the revision in the response header (the write's own revision
/// when it committed, the current revision when its conditions failed) and the transaction
/// response (whether its conditions held, and the responses of the branch that ran).
pub(crate) struct Applied {
    /// The revision in the header of the etcd response.
    pub(crate) revision: Revision,
    /// The transaction response.
    pub(crate) response: TxnResponse,
}

/// Sends conditional writes to etcd, each as its own transaction.
pub(crate) struct Writer {
    kv: KvClient,
    timeout: Duration,
}

impl Writer {
    /// A writer sending over `client`, bounding each etcd request by `timeout`.
    pub(crate) fn new(client: &Client, timeout: Duration) -> Self {
        Self {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_RESPONSE_BYTES),
            timeout,
        }
    }

    /// Runs `write` as one etcd transaction. A write whose request failed or timed out may or
    /// may not have been applied, so it is never retried.
    pub(crate) async fn submit(&self, write: Write) -> Result<Applied> {
        let txn = Txn::new()
            .when(write.compare)
            .and_then(vec![write.success])
            .or_else(vec![write.failure]);
        let mut kv = self.kv.clone();
        match tokio::time::timeout(self.timeout, kv.txn(txn)).await {
            Ok(Ok(mut response)) => {
                let revision = response
                    .take_header()
                    .map(|h| h.revision())
                    .ok_or_else(|| StorageError::internal("etcd txn response without header"))?;
                Ok(Applied { revision, response })
            }
            Ok(Err(error)) => Err(classify(error).into_storage()),
            Err(_) => Err(StorageError::Timeout {
                message: "etcd write timed out; it may or may not have been applied".to_string(),
            }),
        }
    }
}
