//! Watches of the embedded backend.
//!
//! A watcher registers its queue with the writer's [`Router`](super::router::Router) first,
//! then replays the history from its start revision up to the current revision, then follows
//! its queue, which receives only the committed batches touching its prefix, skipping anything
//! it already delivered. Registering before reading guarantees no gap; skipping by revision
//! guarantees no duplicate. A watcher whose queue overflowed registers again and replays the
//! missed revisions from the history; if they were compacted meanwhile it ends with `Expired`.
//! A watcher that receives nothing still reports its progress up to the current revision: the
//! router routes a batch before the writer publishes its revision, so once the queue is drained
//! every revision up to the one read before draining was processed.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
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
    let queue = shared.router.subscribe(&request.prefix);
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let watcher = Watcher {
        shared,
        prefix: request.prefix,
        start: request.start_revision,
        delivered: 0,
        tx,
    };
    let requests = request.progress_interval.and(request.progress_requests);
    tokio::spawn(watcher.run(queue, request.progress_interval, requests));
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
        mut queue: mpsc::Receiver<EventBatch>,
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
        loop {
            let tick = async {
                match ticker.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let outcome = tokio::select! {
                () = self.tx.closed() => return,
                received = queue.recv() => match received {
                    Some(batch) => {
                        active = true;
                        self.deliver(&batch).await
                    }
                    None => self.resume(&mut queue).await,
                },
                () = next_progress_request(requests.as_mut()) => {
                    // Every revision up to the current one is committed and routed, so its
                    // events are in the queue (or the history) and are delivered first.
                    match self.settle(&mut queue).await {
                        Ok(()) => self.send(WatchItem::Progress(self.delivered)).await,
                        Err(stop) => Err(stop),
                    }
                }
                () = tick => {
                    let idle = !std::mem::replace(&mut active, false);
                    if idle {
                        match self.settle(&mut queue).await {
                            Ok(()) if self.delivered > 0 => {
                                self.send(WatchItem::Progress(self.delivered)).await
                            }
                            other => other,
                        }
                    } else {
                        Ok(())
                    }
                }
            };
            if outcome.is_err() {
                return;
            }
        }
    }

    /// Delivers the events of a batch newer than what was already processed. The batches of
    /// the queue come in revision order; those that skip revisions skip only revisions that do
    /// not touch the prefix.
    async fn deliver(&mut self, batch: &[Event]) -> Result<(), Stop> {
        for event in batch {
            if event.mod_revision <= self.delivered {
                continue;
            }
            self.delivered = event.mod_revision;
            if event.key.starts_with(&self.prefix) {
                self.send(WatchItem::Events(vec![event.clone()])).await?;
            }
        }
        Ok(())
    }

    /// Processes every revision up to the current one: delivers what is queued, after which
    /// nothing up to the revision read first remains (the router routes a batch before its
    /// revision is published).
    async fn settle(&mut self, queue: &mut mpsc::Receiver<EventBatch>) -> Result<(), Stop> {
        let current = self.shared.current.load(Ordering::Acquire);
        loop {
            match queue.try_recv() {
                Ok(batch) => self.deliver(&batch).await?,
                Err(TryRecvError::Empty) => break,
                // The replay reads a snapshot taken after `current` was published.
                Err(TryRecvError::Disconnected) => return self.resume(queue).await,
            }
        }
        self.delivered = self.delivered.max(current);
        Ok(())
    }

    /// The router dropped the queue because it was full, after everything queued before was
    /// delivered: registers a new queue, then replays what was missed from the history.
    async fn resume(&mut self, queue: &mut mpsc::Receiver<EventBatch>) -> Result<(), Stop> {
        *queue = self.shared.router.subscribe(&self.prefix);
        self.catch_up().await
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
    let txn = shared.begin_read()?;
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
