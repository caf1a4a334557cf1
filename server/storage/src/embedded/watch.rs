//! Watches of the embedded backend.
//!
//! A watcher subscribes to the writer's broadcast first, then replays the history from its
//! start revision up to the current revision, then follows the broadcast, skipping anything it
//! already delivered. Subscribing before reading guarantees no gap; skipping by revision
//! guarantees no duplicate. A watcher that falls behind the broadcast buffer re-subscribes and
//! replays the missed revisions from the history; if they were compacted meanwhile it ends with
//! `Expired`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use redb::ReadableDatabase;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::records::LogRecord;
use super::tables::{LOG, db_err};
use super::{EventBatch, Shared, reads};
use crate::backend::{
    Event, ProgressRequests, WatchItem, WatchRequest, WatchStream, next_progress_request,
};
use crate::errors::{Result, Revision, StorageError};

/// Items buffered between a watcher task and its consumer.
const CHANNEL_CAPACITY: usize = 256;
/// History rows read per blocking replay step.
const REPLAY_CHUNK: u64 = 1024;

/// Opens a watch.
pub(super) async fn open(shared: Arc<Shared>, request: WatchRequest) -> Result<WatchStream> {
    let subscription = shared.events.subscribe();
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let watcher = Watcher {
        shared,
        prefix: request.prefix,
        start: request.start_revision,
        delivered: 0,
        tx,
    };
    let requests = request.progress_interval.and(request.progress_requests);
    tokio::spawn(watcher.run(subscription, request.progress_interval, requests));
    Ok(ReceiverStream::new(rx).boxed())
}

struct Watcher {
    shared: Arc<Shared>,
    prefix: String,
    /// The first revision to deliver.
    start: Revision,
    /// Every revision up to this one was processed (delivered or filtered out).
    delivered: Revision,
    tx: mpsc::Sender<Result<WatchItem>>,
}

/// Why a watcher stops.
enum Stop {
    /// The consumer dropped the stream.
    Closed,
    /// A terminal error was sent.
    Failed,
}

impl Watcher {
    async fn run(
        mut self,
        mut subscription: broadcast::Receiver<EventBatch>,
        progress: Option<Duration>,
        mut requests: Option<ProgressRequests>,
    ) {
        let current = self.shared.current.load(Ordering::Acquire);
        if self.start <= 0 {
            self.start = current + 1;
        }
        self.delivered = self.start - 1;
        if self.catch_up().await.is_err() {
            return;
        }
        let mut ticker = progress.map(|p| {
            let mut t = tokio::time::interval_at(tokio::time::Instant::now() + p, p);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        let mut active = false;
        // A requested progress report is due once every revision up to this one is processed.
        let mut requested: Option<Revision> = None;
        loop {
            if let Some(target) = requested
                && self.delivered >= target
            {
                requested = None;
                if self
                    .send(WatchItem::Progress(self.delivered))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let tick = async {
                match ticker.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = self.tx.closed() => return,
                received = subscription.recv() => {
                    let outcome = match received {
                        Ok(batch) => {
                            active = true;
                            self.deliver(&batch).await
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            subscription = subscription.resubscribe();
                            self.catch_up().await
                        }
                        Err(broadcast::error::RecvError::Closed) => {
                            let _ = self
                                .tx
                                .send(Err(StorageError::unavailable("embedded storage closed")))
                                .await;
                            return;
                        }
                    };
                    if outcome.is_err() {
                        return;
                    }
                }
                () = next_progress_request(requests.as_mut()) => {
                    // Every revision up to the current one is committed, so its events are in
                    // the broadcast (or the history) and reach this watcher in order.
                    let current = self.shared.current.load(Ordering::Acquire);
                    requested = Some(requested.map_or(current, |r| r.max(current)));
                }
                () = tick => {
                    if !active && self.delivered > 0 && self.tx.send(Ok(WatchItem::Progress(self.delivered))).await.is_err() {
                        return;
                    }
                    active = false;
                }
            }
        }
    }

    /// Delivers the events of a batch newer than what was already processed.
    async fn deliver(&mut self, batch: &[Event]) -> Result<(), Stop> {
        for event in batch {
            if event.mod_revision <= self.delivered {
                continue;
            }
            if event.mod_revision != self.delivered + 1 {
                // A revision is missing between the history and the broadcast: replay it.
                self.catch_up().await?;
                if event.mod_revision <= self.delivered {
                    continue;
                }
            }
            self.delivered = event.mod_revision;
            if event.key.starts_with(&self.prefix) {
                self.send(WatchItem::Events(vec![event.clone()])).await?;
            }
        }
        Ok(())
    }

    async fn send(&self, item: WatchItem) -> Result<(), Stop> {
        self.tx.send(Ok(item)).await.map_err(|_| Stop::Closed)
    }

    async fn fail(&self, err: StorageError) -> Stop {
        let _ = self.tx.send(Err(err)).await;
        Stop::Failed
    }

    /// Replays history after `delivered` up to the current revision.
    async fn catch_up(&mut self) -> Result<(), Stop> {
        loop {
            let from = self.delivered + 1;
            let shared = Arc::clone(&self.shared);
            let read = tokio::task::spawn_blocking(move || read_history(&shared, from)).await;
            let (records, current) = match read {
                Ok(Ok(v)) => v,
                Ok(Err(err)) => return Err(self.fail(err).await),
                Err(err) => {
                    return Err(self
                        .fail(StorageError::internal(format!(
                            "watch replay failed: {err}"
                        )))
                        .await);
                }
            };
            if records.is_empty() {
                if current > self.delivered {
                    // The snapshot advanced past the log (nothing to replay in between).
                    self.delivered = current;
                }
                return Ok(());
            }
            for (revision, record) in records {
                self.delivered = revision;
                if record.key.starts_with(&self.prefix) {
                    self.send(WatchItem::Events(vec![record.to_event(revision)]))
                        .await?;
                }
            }
        }
    }
}

/// Reads up to [`REPLAY_CHUNK`] history rows from `from`, checking the compaction point in the
/// same snapshot. Returns the rows and the snapshot's current revision.
fn read_history(shared: &Shared, from: Revision) -> Result<(Vec<(Revision, LogRecord)>, Revision)> {
    let txn = shared.db.begin_read().map_err(db_err)?;
    let (current, compacted) = reads::meta(&txn)?;
    if from > current {
        return Ok((Vec::new(), current));
    }
    if from < compacted {
        return Err(StorageError::Expired {
            requested: from,
            compacted,
        });
    }
    let log = txn.open_table(LOG).map_err(db_err)?;
    let end = (current as u64).min(from as u64 + REPLAY_CHUNK - 1);
    let mut out = Vec::new();
    let mut expected = from as u64;
    for row in log.range((from as u64)..=end).map_err(db_err)? {
        let (k, v) = row.map_err(db_err)?;
        if k.value() != expected {
            return Err(StorageError::internal(format!(
                "history row {expected} is missing"
            )));
        }
        expected += 1;
        out.push((k.value() as Revision, LogRecord::decode(v.value())?));
    }
    if expected <= end {
        return Err(StorageError::internal(format!(
            "history row {expected} is missing"
        )));
    }
    Ok((out, current))
}
