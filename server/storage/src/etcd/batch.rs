//! Group commit: conditional writes that arrive while earlier ones are in flight share one etcd
//! transaction.
//!
//! Every write of the backend is a small transaction `when(compare) then(write) else(get)`. On
//! its own each such transaction costs etcd one request, one raft proposal and one apply. The
//! [`Batcher`] keeps up to [`MAX_IN_FLIGHT`] requests in flight: a write that finds a free slot
//! is sent at once from its caller's task; writes submitted while all slots are busy queue up
//! and leave together in the next request (sent from a spawned task when a slot frees), as ONE
//! transaction whose success branch holds each write's own transaction as a nested transaction
//! (etcd ≥ 3.3). etcd evaluates every nested compare against the state before the batch and
//! runs each nested transaction's success or failure branch independently, so every write
//! commits or fails exactly as it would alone; all writes of a batch share one raft entry and
//! one revision.
//!
//! Constraints honoured when a batch is formed:
//! - a batch never holds two writes to the same key (etcd rejects a transaction that writes a
//!   key twice); a later write to a key waits for the next batch, keeping submission order;
//! - at most [`MAX_BATCH_OPS`] writes (etcd's `--max-txn-ops` defaults to 128 and nested
//!   transactions count against it) and about [`MAX_BATCH_BYTES`] of keys and values (etcd's
//!   `--max-request-bytes` defaults to 1.5 MiB);
//! - a batch of one is sent as the plain transaction, so a lone writer pays nothing extra.
//!
//! A write whose conditions fail reports the revision of the whole batch; the batch did not
//! touch its key, so the current value it returns is the key's value at that revision too.
//!
//! If etcd rejects a batch as invalid (a server configured with lower limits), nothing of it
//! was applied: its writes are sent again one by one, and later batches are at most half as
//! large.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, Compare, KvClient, Txn, TxnOp, TxnOpResponse, TxnResponse};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::error::classify;
use crate::errors::{Result, Revision, StorageError};

/// How many etcd requests carrying writes may be in flight at once.
pub(crate) const MAX_IN_FLIGHT: usize = 2;

/// The most writes one batch carries.
pub(crate) const MAX_BATCH_OPS: usize = 64;

/// The most key and value bytes one batch carries (a single larger write is sent alone).
pub(crate) const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// How many queued writes forming a batch looks at.
const SCAN_LIMIT: usize = 4 * MAX_BATCH_OPS;

/// The largest response a batch may receive: updates and deletes return previous values.
const MAX_RESPONSE_BYTES: usize = 512 * 1024 * 1024;

/// One conditional write: `when(compare) then(success) else(failure)` on a single key.
pub(crate) struct Write {
    /// The key written (batches never hold the same key twice).
    pub(crate) key: String,
    /// The conditions.
    pub(crate) compare: Vec<Compare>,
    /// The write, run when every condition holds.
    pub(crate) success: TxnOp,
    /// The read run otherwise (the key's current value).
    pub(crate) failure: TxnOp,
    /// Key and value bytes, for the batch size limit.
    pub(crate) size: usize,
}

impl Write {
    /// The write's transaction, keeping the write (for a batch that may be resent).
    fn txn(&self) -> Txn {
        Txn::new()
            .when(self.compare.clone())
            .and_then(vec![self.success.clone()])
            .or_else(vec![self.failure.clone()])
    }

    /// The write's transaction.
    fn into_txn(self) -> Txn {
        Txn::new()
            .when(self.compare)
            .and_then(vec![self.success])
            .or_else(vec![self.failure])
    }
}

/// The result of one write: the revision of the transaction that carried it (the new revision
/// when anything in it committed) and the write's own transaction response (whether its
/// conditions held, and the responses of the branch that ran).
pub(crate) struct Applied {
    /// The revision in the header of the etcd response.
    pub(crate) revision: Revision,
    /// This write's transaction response; its header may be absent.
    pub(crate) response: TxnResponse,
}

/// A queued write and where its result goes.
struct Pending {
    write: Write,
    reply: oneshot::Sender<Result<Applied>>,
}

/// What the batcher's users share.
struct Shared {
    kv: KvClient,
    timeout: Duration,
    state: Mutex<State>,
}

/// The queue and what is in flight.
struct State {
    /// Writes waiting for a request slot, in submission order.
    queue: VecDeque<Pending>,
    /// Requests carrying writes that etcd has not answered yet.
    in_flight: usize,
    /// The most writes per batch; lowered when etcd rejects a batch as too large.
    max_ops: usize,
}

/// Submits writes to etcd, grouping concurrent ones (see the module documentation).
pub(crate) struct Batcher {
    shared: Arc<Shared>,
}

impl Batcher {
    /// A batcher sending over `client`, bounding each etcd request by `timeout`.
    pub(crate) fn new(client: &Client, timeout: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                kv: client
                    .kv_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES),
                timeout,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    in_flight: 0,
                    max_ops: MAX_BATCH_OPS,
                }),
            }),
        }
    }

    /// Runs `write`, alone or together with concurrent writes, and returns its result. A write
    /// whose request failed or timed out may or may not have been applied.
    ///
    /// With a request slot free the write is sent right away from the caller's task, as its
    /// plain transaction; otherwise it waits in the queue for the next batch.
    pub(crate) async fn submit(&self, write: Write) -> Result<Applied> {
        let queued = {
            let mut state = self.shared.state.lock();
            if state.in_flight < MAX_IN_FLIGHT {
                state.in_flight += 1;
                Err(write)
            } else {
                let (reply, result) = oneshot::channel();
                state.queue.push_back(Pending { write, reply });
                Ok(result)
            }
        };
        let result = match queued {
            Ok(result) => result,
            Err(write) => {
                // Frees the slot (and sends what queued meanwhile) also if this future is
                // dropped.
                let _slot = Slot(Arc::clone(&self.shared));
                let mut kv = self.shared.kv.clone();
                return send_one(&mut kv, self.shared.timeout, write).await;
            }
        };
        match result.await {
            Ok(result) => result,
            Err(_) => Err(StorageError::unavailable(
                "the etcd write batch was dropped before it was answered",
            )),
        }
    }
}

/// One occupied request slot; releasing it starts the next batches.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.in_flight -= 1;
        pump(&self.0, &mut state);
    }
}

/// Starts batches from the queue while request slots are free.
fn pump(shared: &Arc<Shared>, state: &mut State) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        // No runtime to send from (it is shutting down): nothing queued can be sent.
        for pending in state.queue.drain(..) {
            let _ = pending.reply.send(Err(StorageError::unavailable(
                "no runtime left to send the etcd write from",
            )));
        }
        return;
    };
    while state.in_flight < MAX_IN_FLIGHT && !state.queue.is_empty() {
        let batch = take_batch(&mut state.queue, state.max_ops);
        state.in_flight += 1;
        let slot = Slot(Arc::clone(shared));
        runtime.spawn(async move {
            send(&slot.0, batch).await;
            drop(slot);
        });
    }
}

/// Takes the next batch from the front of `queue`: writes in queue order, skipping (and
/// leaving queued) any write to a key already in the batch, at most `max_ops` writes and
/// within the byte limit.
fn take_batch(queue: &mut VecDeque<Pending>, max_ops: usize) -> Vec<Pending> {
    let mut batch: Vec<Pending> = Vec::new();
    let mut keys: HashSet<String> = HashSet::new();
    let mut bytes = 0;
    let mut index = 0;
    // Writes to keys already in the batch are skipped; bound the scan so that a queue full of
    // writes to one hot key costs little per batch.
    let mut examined = 0;
    while index < queue.len() && examined < SCAN_LIMIT && batch.len() < max_ops.max(1) {
        examined += 1;
        let write = &queue[index].write;
        if keys.contains(&write.key) {
            index += 1;
            continue;
        }
        if !batch.is_empty() && bytes + write.size > MAX_BATCH_BYTES {
            break;
        }
        let Some(pending) = queue.remove(index) else {
            break;
        };
        bytes += pending.write.size;
        keys.insert(pending.write.key.clone());
        batch.push(pending);
    }
    // etcd reports a transaction's events in the order of its writes; key order is what the
    // backend's watch promises for the events of one revision.
    batch.sort_by(|a, b| a.write.key.cmp(&b.write.key));
    batch
}

/// Sends one batch and answers each of its writes.
async fn send(shared: &Shared, mut batch: Vec<Pending>) {
    let mut kv = shared.kv.clone();
    let timeout = shared.timeout;
    if batch.len() == 1 {
        let Some(pending) = batch.pop() else {
            return;
        };
        let result = send_one(&mut kv, timeout, pending.write).await;
        let _ = pending.reply.send(result);
        return;
    }
    let txn = Txn::new().and_then(
        batch
            .iter()
            .map(|pending| TxnOp::txn(pending.write.txn()))
            .collect::<Vec<_>>(),
    );
    match tokio::time::timeout(timeout, kv.txn(txn)).await {
        Ok(Ok(response)) => answer(batch, response),
        Ok(Err(etcd_client::Error::GRpcStatus(status)))
            if status.code() == tonic::Code::InvalidArgument =>
        {
            // Rejected before anything was applied (limits lower than the defaults): send the
            // writes one by one, and smaller batches from now on.
            tracing::debug!(%status, size = batch.len(), "etcd rejected a write batch; splitting");
            {
                let mut state = shared.state.lock();
                state.max_ops = state.max_ops.min((batch.len() / 2).max(1));
            }
            let singles = batch.into_iter().map(|pending| {
                let mut kv = kv.clone();
                async move {
                    let result = send_one(&mut kv, timeout, pending.write).await;
                    let _ = pending.reply.send(result);
                }
            });
            futures::future::join_all(singles).await;
        }
        Ok(Err(error)) => fail_all(batch, classify(error).into_storage()),
        Err(_) => fail_all(batch, timed_out()),
    }
}

/// Sends one write as its plain transaction.
async fn send_one(kv: &mut KvClient, timeout: Duration, write: Write) -> Result<Applied> {
    match tokio::time::timeout(timeout, kv.txn(write.into_txn())).await {
        Ok(Ok(mut response)) => Ok(Applied {
            revision: header_revision(&mut response)?,
            response,
        }),
        Ok(Err(error)) => Err(classify(error).into_storage()),
        Err(_) => Err(timed_out()),
    }
}

/// Hands each write of a committed batch its nested transaction response.
fn answer(batch: Vec<Pending>, mut response: TxnResponse) {
    let revision = match header_revision(&mut response) {
        Ok(revision) => revision,
        Err(error) => return fail_all(batch, error),
    };
    let responses = response.op_responses();
    if responses.len() != batch.len() {
        let error = StorageError::internal(format!(
            "etcd answered a batch of {} writes with {} responses",
            batch.len(),
            responses.len()
        ));
        return fail_all(batch, error);
    }
    for (pending, op) in batch.into_iter().zip(responses) {
        let result = match op {
            TxnOpResponse::Txn(response) => Ok(Applied { revision, response }),
            _ => Err(StorageError::internal(
                "etcd answered a nested transaction with another operation",
            )),
        };
        let _ = pending.reply.send(result);
    }
}

fn fail_all(batch: Vec<Pending>, error: StorageError) {
    for pending in batch {
        let _ = pending.reply.send(Err(error.clone()));
    }
}

fn timed_out() -> StorageError {
    StorageError::Timeout {
        message: "etcd write timed out; it may or may not have been applied".to_string(),
    }
}

fn header_revision(response: &mut TxnResponse) -> Result<Revision> {
    response
        .take_header()
        .map(|h| h.revision())
        .ok_or_else(|| StorageError::internal("etcd txn response without header"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(key: &str, size: usize) -> Pending {
        let (reply, _) = oneshot::channel();
        Pending {
            write: Write {
                key: key.to_string(),
                compare: Vec::new(),
                success: TxnOp::put(key, Vec::new(), None),
                failure: TxnOp::get(key, None),
                size,
            },
            reply,
        }
    }

    fn keys(batch: &[Pending]) -> Vec<&str> {
        batch.iter().map(|p| p.write.key.as_str()).collect()
    }

    #[test]
    fn a_batch_holds_each_key_once_in_key_order_and_keeps_the_rest_queued() {
        let mut queue: VecDeque<Pending> = ["b", "a", "b", "c", "a", "d"]
            .into_iter()
            .map(|k| queued(k, 1))
            .collect();
        let batch = take_batch(&mut queue, 64);
        assert_eq!(keys(&batch), ["a", "b", "c", "d"]);
        let rest: Vec<&str> = queue.iter().map(|p| p.write.key.as_str()).collect();
        assert_eq!(rest, ["b", "a"], "later writes to a key wait, in order");
    }

    #[test]
    fn a_batch_respects_the_operation_and_byte_limits() {
        let mut queue: VecDeque<Pending> = (0..10).map(|i| queued(&format!("k{i}"), 1)).collect();
        assert_eq!(take_batch(&mut queue, 4).len(), 4);
        assert_eq!(queue.len(), 6);

        let mut queue: VecDeque<Pending> = [
            queued("a", MAX_BATCH_BYTES / 2),
            queued("b", MAX_BATCH_BYTES / 2),
            queued("c", 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(keys(&take_batch(&mut queue, 64)), ["a", "b"]);
        // A single write larger than the byte limit still leaves, alone.
        let mut queue: VecDeque<Pending> = [queued("big", 2 * MAX_BATCH_BYTES), queued("x", 1)]
            .into_iter()
            .collect();
        assert_eq!(keys(&take_batch(&mut queue, 64)), ["big"]);
    }
}
