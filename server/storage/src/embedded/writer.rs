//! The single writer: group commit of all pending writes into one transaction and one sync.
//!
//! Writers send requests over a channel; the writer thread takes everything queued, applies it
//! in order inside one redb write transaction (each successful write gets the next revision),
//! appends one history row per revision, persists the revision counter in the same transaction,
//! commits with immediate durability (fsync), and only then routes the events to the watches
//! they concern, publishes the new revision and answers the callers. TTL expiry (on the
//! monotonic clock, `leases`) and log compaction run on the same thread, so every revision is
//! assigned in exactly one place.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redb::{ReadableDatabase, ReadableTable, Table, WriteTransaction};
use tokio::sync::oneshot;

use super::leases::Deadline;
use super::records::{KvRecord, LogRecord, expiry_key};
use super::tables::{EXPIRY, KV, LOG, META, META_COMPACTED, META_LOG_FLOOR, META_REVISION, db_err};
use super::{EventBatch, Shared};
use crate::backend::{Condition, Event, EventKind, TxnOutcome};
use crate::errors::{Result, Revision, StorageError};

/// The largest number of requests committed in one transaction.
const MAX_BATCH: usize = 4096;
/// How long the writer waits for one more request of a concurrent burst.
const LINGER_GAP: Duration = Duration::from_micros(500);
/// The longest the writer delays a commit to grow its batch.
const MAX_LINGER: Duration = Duration::from_millis(1);
/// The largest number of expired keys deleted per transaction.
const MAX_EXPIRED_PER_BATCH: usize = 1024;
/// The largest number of history rows removed per transaction.
const MAX_COMPACTED_PER_BATCH: usize = 4096;
/// History rows are removed in steps of this many rows...
const COMPACTION_STEP: usize = 256;
/// ...while a transaction has spent less than this removing them: a write that queues behind a
/// commit waits for at most about one step more than without compaction.
const COMPACTION_BUDGET: Duration = Duration::from_millis(2);

/// A write operation.
pub(crate) enum WriteOp {
    Put { value: Bytes, ttl: Option<u64> },
    Delete,
}

/// A request to the writer thread.
pub(crate) enum Request {
    Write {
        key: String,
        op: WriteOp,
        condition: Condition,
        reply: oneshot::Sender<Result<TxnOutcome>>,
    },
    Compact {
        revision: Revision,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// Settings of the writer.
#[derive(Debug, Clone)]
pub(crate) struct WriterSettings {
    pub sweep_interval: Duration,
    pub retained_revisions: u64,
    /// The bound of [`Shared::stored_bytes`] (0: none).
    pub quota_bytes: u64,
}

/// Runs the writer loop until every sender is dropped.
pub(crate) fn run(shared: Arc<Shared>, rx: Receiver<Request>, settings: WriterSettings) {
    let mut last_sweep = Instant::now();
    // A decaying maximum of recent batch sizes: the number of writers expected per round.
    let mut expected = 0usize;
    let mut broken: Option<Broken> = None;
    loop {
        let first = match rx.recv_timeout(settings.sweep_interval) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = Vec::new();
        if let Some(first) = first {
            batch.push(first);
            collect(&rx, &mut batch, expected);
        }
        expected = batch.len().max(expected - expected.div_ceil(8));
        let sweep = last_sweep.elapsed() >= settings.sweep_interval;
        if sweep {
            last_sweep = Instant::now();
        }
        if batch.is_empty() && !sweep && !needs_compaction(&shared, &settings) {
            continue;
        }
        if let Some(failed) = &mut broken {
            // The last commit failed (a full disk, say): until the retry time, writes fail at
            // once with its error instead of failing another commit, each of which would make
            // redb fail every operation, reads included, until the database is reopened.
            if Instant::now() < failed.retry_at {
                fail_batch(batch, &failed.error);
                continue;
            }
            if !shared.is_open()
                && let Err(error) = recover(&shared)
            {
                failed.retry(error);
                fail_batch(batch, &failed.error);
                continue;
            }
        }
        match commit_batch(&shared, batch, sweep, &settings) {
            Ok(()) => broken = None,
            Err(error) => match &mut broken {
                Some(failed) => failed.retry(error),
                None => broken = Some(Broken::new(error)),
            },
        }
    }
}

/// The first wait after a failed commit before the writer commits again.
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest wait between two commit attempts while commits fail: writes resume at most this
/// long after the cause (a full disk) is gone.
const MAX_RETRY: Duration = Duration::from_secs(4);

/// Why the last commit failed, and when the writer tries again (doubling the wait after each
/// failed attempt, up to [`MAX_RETRY`]).
struct Broken {
    error: StorageError,
    wait: Duration,
    retry_at: Instant,
}

impl Broken {
    fn new(error: StorageError) -> Self {
        Self {
            error,
            wait: FIRST_RETRY,
            retry_at: Instant::now() + FIRST_RETRY,
        }
    }

    fn retry(&mut self, error: StorageError) {
        self.error = error;
        self.wait = (self.wait * 2).min(MAX_RETRY);
        self.retry_at = Instant::now() + self.wait;
    }
}

/// Answers every request of `batch` with `error`.
fn fail_batch(batch: Vec<Request>, error: &StorageError) {
    for request in batch {
        match request {
            Request::Write { reply, .. } => {
                let _ = reply.send(Err(error.clone()));
            }
            Request::Compact { reply, .. } => {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

/// Closes the database after a failed commit and opens it again (redb repairs it, back to the
/// last durable commit), then takes the counters from the file. A failed commit normally left
/// nothing durable, so they equal those in memory; when its data did reach the file after all
/// (the failure came after its last write), the revisions it holds are routed to the watches
/// now and published (`commit_batch` then answers its writes as committed), so watches stay
/// gap-free and no revision is ever assigned twice. While the file
/// cannot be opened (a disk still full), reads from storage fail as unavailable; the watch
/// cache keeps answering from memory.
fn recover(shared: &Shared) -> Result<()> {
    if let Some(old) = shared.take_database()
        && let Err(err) = old.close()
    {
        tracing::warn!(error = %err, "closing the embedded database after a failed commit");
    }
    let db = super::open_database(&shared.path, shared.cache_size)?;
    let (revision, compacted, floor) = super::initialize(&db)?;
    shared.leases.lock().reload(&db)?;
    let current = shared.current.load(Ordering::Acquire);
    if revision > current {
        let events = {
            let txn = db.begin_read().map_err(db_err)?;
            let log = txn.open_table(LOG).map_err(db_err)?;
            let mut events = Vec::new();
            for row in log
                .range((current as u64 + 1)..=(revision as u64))
                .map_err(db_err)?
            {
                let (k, v) = row.map_err(db_err)?;
                events.push(LogRecord::decode(v.value())?.into_event(k.value() as Revision));
            }
            events
        };
        tracing::warn!(
            from = current + 1,
            to = revision,
            "a commit reported as failed reached the embedded database; delivering its events"
        );
        if !events.is_empty() {
            shared.router.route(&EventBatch::from(events));
        }
        shared.current.store(revision, Ordering::Release);
    } else if revision < current {
        // Never expected: a commit acknowledged as durable is missing. Revisions continue above
        // every one handed out (the in-memory counter), so none is reused.
        tracing::error!(
            stored = revision,
            current,
            "the reopened embedded database lacks acknowledged revisions"
        );
    }
    shared.compacted.fetch_max(compacted, Ordering::AcqRel);
    shared.log_floor.store(floor, Ordering::Release);
    shared
        .stored_bytes
        .store(super::stored_bytes(&db)?, Ordering::Release);
    shared.set_database(db);
    tracing::info!(
        revision,
        "reopened the embedded database after a failed commit"
    );
    Ok(())
}

/// Drains queued requests into `batch`. When recent batches had several writers (`expected` >
/// 1), keeps collecting until `expected` requests arrived, or no request
/// arrived for [`LINGER_GAP`], for at most [`MAX_LINGER`]: writers woken by the previous commit
/// resubmit some microseconds apart, and waiting for them turns many small commits into one.
fn collect(rx: &Receiver<Request>, batch: &mut Vec<Request>, expected: usize) {
    let started = Instant::now();
    loop {
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let elapsed = started.elapsed();
        if expected <= 1 || batch.len() >= expected.min(MAX_BATCH) || elapsed >= MAX_LINGER {
            return;
        }
        match rx.recv_timeout(LINGER_GAP.min(MAX_LINGER - elapsed)) {
            Ok(r) => batch.push(r),
            Err(_) => return,
        }
    }
}

fn needs_compaction(shared: &Shared, settings: &WriterSettings) -> bool {
    let current = shared.current.load(Ordering::Acquire).max(0) as u64;
    let floor = shared.log_floor.load(Ordering::Acquire).max(0) as u64;
    let compacted = shared.compacted.load(Ordering::Acquire).max(0) as u64;
    floor < compacted || current.saturating_sub(compacted) > settings.retained_revisions
}

/// The reply to send once the batch is durable.
enum Reply {
    Write(oneshot::Sender<Result<TxnOutcome>>, Result<TxnOutcome>),
    Compact(oneshot::Sender<Result<()>>, Result<()>),
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

struct Txn<'a> {
    txn: &'a WriteTransaction,
    kv: Table<'a, &'static str, &'static [u8]>,
    log: Table<'a, u64, &'static [u8]>,
    /// Opened on first use: most commits touch no TTL key.
    expiry: Option<Table<'a, &'static [u8], ()>>,
    revision: Revision,
    compacted: Revision,
    events: Vec<Event>,
    /// The changes to the TTL schedule, applied once the commit is durable.
    lease_changes: Vec<(String, Option<Deadline>)>,
    /// The encoding of the row being written, reused for every row.
    scratch: Vec<u8>,
    /// The bytes of the stored rows, kept current with every row written or removed.
    stored: u64,
}

impl<'a> Txn<'a> {
    fn expiry(&mut self) -> Result<&mut Table<'a, &'static [u8], ()>> {
        if self.expiry.is_none() {
            self.expiry = Some(self.txn.open_table(EXPIRY).map_err(db_err)?);
        }
        self.expiry
            .as_mut()
            .ok_or_else(|| StorageError::internal("expiry table not open"))
    }

    /// The verdict on a write before it is applied: a put of more than [`MAX_WRITE_BYTES`] is
    /// refused, as etcd refuses it, and so is a put that would take the stored rows past
    /// `quota` (its new row and its history row, which carries the value again; the previous
    /// value moves from the row to the history, so it counts once).
    /// Deletes always pass, as etcd lets them through its space alarm: they are how space is
    /// freed once history is compacted.
    fn space_for(&self, key: &str, op: &WriteOp, quota: u64) -> Result<()> {
        let WriteOp::Put { value, .. } = op else {
            return Ok(());
        };
        let size = key.len() + value.len();
        if size > MAX_WRITE_BYTES {
            return Err(StorageError::TooLarge {
                size,
                limit: MAX_WRITE_BYTES,
            });
        }
        let needed = 2 * (key.len() + value.len()) as u64 + KV_ROW_OVERHEAD + LOG_ROW_OVERHEAD;
        if quota == 0 || self.stored.saturating_add(needed) <= quota {
            return Ok(());
        }
        Err(StorageError::SpaceExceeded {
            message: format!(
                "mvcc: database space exceeded: the store is at its quota of {quota} bytes; \
                 deletes free space once history is compacted"
            ),
        })
    }

    fn current(&self, key: &str) -> Result<Option<KvRecord>> {
        let row = self.kv.get(key).map_err(db_err)?;
        row.map(|v| KvRecord::decode(v.value())).transpose()
    }

    fn apply_write(
        &mut self,
        key: String,
        op: WriteOp,
        condition: Condition,
    ) -> Result<TxnOutcome> {
        let current = self.current(&key)?;
        let holds = match (&op, condition, &current) {
            (WriteOp::Delete, _, None) | (WriteOp::Delete, Condition::Absent, _) => false,
            (_, Condition::Absent, cur) => cur.is_none(),
            (_, Condition::ModRevision(r), Some(cur)) => cur.mod_revision == r,
            (_, Condition::ModRevision(_), None) => false,
            (_, Condition::Always, _) => true,
        };
        if !holds {
            return Ok(TxnOutcome::Failed {
                current: current.map(|c| c.into_key_value(key)),
                revision: self.revision,
            });
        }
        let revision = self.revision + 1;
        let prev = current.clone().map(|c| c.into_key_value(key.clone()));
        match op {
            WriteOp::Put { value, ttl } => self.put(key, value, ttl, current, revision)?,
            WriteOp::Delete => {
                let Some(cur) = current else {
                    return Err(StorageError::internal("delete of a missing key"));
                };
                self.delete(key, cur, revision)?;
            }
        }
        self.revision = revision;
        Ok(TxnOutcome::Committed { revision, prev })
    }

    fn put(
        &mut self,
        key: String,
        value: Bytes,
        ttl: Option<u64>,
        current: Option<KvRecord>,
        revision: Revision,
    ) -> Result<()> {
        let ttl = ttl.unwrap_or(0);
        // The expiry row's timestamp: the wall-clock time the key is due, for people reading
        // the file; expiry itself follows the monotonic clock (`leases`).
        let expires_at_ms = if ttl > 0 {
            now_ms().saturating_add(ttl.saturating_mul(1000))
        } else {
            0
        };
        if ttl > 0 {
            let deadline = Deadline::after(ttl, expires_at_ms);
            self.lease_changes.push((key.clone(), Some(deadline)));
        } else if current.as_ref().is_some_and(|c| c.expires_at_ms > 0) {
            self.lease_changes.push((key.clone(), None));
        }
        let create_revision = current.as_ref().map_or(revision, |c| c.create_revision);
        let record = KvRecord {
            create_revision,
            mod_revision: revision,
            expires_at_ms,
            ttl,
            value: value.clone(),
        };
        if let Some(cur) = &current
            && cur.expires_at_ms > 0
        {
            self.expiry()?
                .remove(expiry_key(cur.expires_at_ms, &key).as_slice())
                .map_err(db_err)?;
        }
        if expires_at_ms > 0 {
            self.expiry()?
                .insert(expiry_key(expires_at_ms, &key).as_slice(), ())
                .map_err(db_err)?;
        }
        self.scratch.clear();
        record.encode_into(&mut self.scratch);
        self.kv
            .insert(key.as_str(), self.scratch.as_slice())
            .map_err(db_err)?;
        self.stored += (key.len() + self.scratch.len()) as u64;
        if let Some(cur) = &current {
            self.stored = self.stored.saturating_sub(kv_row_len(&key, cur));
        }
        self.log(
            revision,
            LogRecord {
                kind: EventKind::Put,
                key,
                value,
                create_revision,
                prev: current,
            },
        )
    }

    fn delete(&mut self, key: String, current: KvRecord, revision: Revision) -> Result<()> {
        if current.expires_at_ms > 0 {
            self.expiry()?
                .remove(expiry_key(current.expires_at_ms, &key).as_slice())
                .map_err(db_err)?;
            self.lease_changes.push((key.clone(), None));
        }
        self.kv.remove(key.as_str()).map_err(db_err)?;
        self.stored = self.stored.saturating_sub(kv_row_len(&key, &current));
        self.log(
            revision,
            LogRecord {
                kind: EventKind::Delete,
                key,
                value: Bytes::new(),
                create_revision: current.create_revision,
                prev: Some(current),
            },
        )
    }

    fn log(&mut self, revision: Revision, record: LogRecord) -> Result<()> {
        self.scratch.clear();
        record.encode_into(&mut self.scratch);
        self.log
            .insert(revision as u64, self.scratch.as_slice())
            .map_err(db_err)?;
        self.stored += (8 + self.scratch.len()) as u64;
        self.events.push(record.into_event(revision));
        Ok(())
    }

    /// Deletes the keys whose TTL has passed (`due`, from the schedule), each as an ordinary
    /// delete; a scheduled key that no longer carries that TTL only loses its expiry row.
    fn sweep_expired(&mut self, due: Vec<(String, Deadline)>) -> Result<()> {
        for (key, deadline) in due {
            match self.current(&key)? {
                Some(cur) if cur.expires_at_ms == deadline.row && cur.ttl > 0 => {
                    let revision = self.revision + 1;
                    self.delete(key, cur, revision)?;
                    self.revision = revision;
                }
                _ => {
                    self.expiry()?
                        .remove(expiry_key(deadline.row, &key).as_slice())
                        .map_err(db_err)?;
                    self.lease_changes.push((key, None));
                }
            }
        }
        Ok(())
    }

    fn compact(&mut self, revision: Revision) -> Result<()> {
        if revision > self.revision {
            return Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current: self.revision,
            });
        }
        self.compacted = self.compacted.max(revision);
        Ok(())
    }
}

/// The most bytes of key and value one put may store: etcd's default `--max-request-bytes`
/// (1.5 MiB), so that an object the embedded store keeps would fit in etcd too.
pub(crate) const MAX_WRITE_BYTES: usize = 1536 * 1024;

/// The bytes of a `kv` row beside its value: the four counters of [`KvRecord`].
const KV_ROW_OVERHEAD: u64 = 32;
/// The bytes of a `log` row beside its key and value: the revision, kind, create revision,
/// two lengths and the previous value's flag (its counters are in [`KV_ROW_OVERHEAD`]).
const LOG_ROW_OVERHEAD: u64 = 8 + 1 + 8 + 4 + 4 + 1;

/// The bytes `kv` stores for `key` with `record` (as its encoding makes them).
fn kv_row_len(key: &str, record: &KvRecord) -> u64 {
    (key.len() + record.value.len()) as u64 + KV_ROW_OVERHEAD
}

/// Removes history rows below the compaction point in steps of [`COMPACTION_STEP`], while
/// within [`COMPACTION_BUDGET`] and up to [`MAX_COMPACTED_PER_BATCH`] rows, and returns the new
/// log floor with the bytes the removed rows took. At least one step is taken, so removal
/// always progresses.
fn trim_log(
    log: &mut Table<'_, u64, &'static [u8]>,
    floor: Revision,
    compacted: Revision,
) -> Result<(Revision, u64)> {
    let started = Instant::now();
    let limit = compacted.min(floor.saturating_add(MAX_COMPACTED_PER_BATCH as i64));
    let mut floor = floor;
    let mut freed = 0u64;
    while floor < limit {
        let end = limit.min(floor.saturating_add(COMPACTION_STEP as i64));
        log.retain_in((floor.max(0) as u64)..(end.max(0) as u64), |_, value| {
            freed += 8 + value.len() as u64;
            false
        })
        .map_err(db_err)?;
        floor = end;
        if started.elapsed() >= COMPACTION_BUDGET {
            break;
        }
    }
    Ok((floor, freed))
}

/// The counters as of the last commit, which only this thread writes: the shared atomics hold
/// exactly the values of the last successful commit (an aborted transaction changes neither), so
/// the writer reads them instead of the `meta` table.
fn counters(shared: &Shared) -> (Revision, Revision, Revision) {
    (
        shared.current.load(Ordering::Acquire),
        shared.compacted.load(Ordering::Acquire),
        shared.log_floor.load(Ordering::Acquire),
    )
}

/// Answers the requests of a committed batch.
fn send_replies(replies: Vec<Reply>) {
    for reply in replies {
        match reply {
            Reply::Write(tx, outcome) => {
                let _ = tx.send(outcome);
            }
            Reply::Compact(tx, outcome) => {
                let _ = tx.send(outcome);
            }
        }
    }
}

/// What a transaction changed, published once it is committed.
struct Committed {
    events: Vec<Event>,
    revision: Revision,
    compacted: Revision,
    floor: Revision,
    lease_changes: Vec<(String, Option<Deadline>)>,
    stored: u64,
}

/// Commits `batch` (and the TTL sweep, when `sweep`) in one transaction and answers its
/// requests. On failure the database is reopened; unless the batch turns out durable after all,
/// every request of the batch gets the error, nothing is published, and the error is returned
/// (the writer then waits before its next commit).
fn commit_batch(
    shared: &Shared,
    batch: Vec<Request>,
    sweep: bool,
    settings: &WriterSettings,
) -> Result<()> {
    let mut replies = Vec::with_capacity(batch.len());
    let mut pending = batch.into_iter();
    let (old_revision, old_compacted, old_floor) = counters(shared);
    let due = if sweep {
        shared
            .leases
            .lock()
            .due(Instant::now(), MAX_EXPIRED_PER_BATCH)
    } else {
        Vec::new()
    };
    // The revision the batch reaches, once it is about to be committed.
    let mut committing = None;
    let old_stored = shared.stored_bytes.load(Ordering::Acquire);
    let result = (|| -> Result<Committed> {
        let txn = shared.begin_write()?;
        let committed = {
            let mut state = Txn {
                kv: txn.open_table(KV).map_err(db_err)?,
                log: txn.open_table(LOG).map_err(db_err)?,
                expiry: None,
                txn: &txn,
                revision: old_revision,
                compacted: old_compacted,
                events: Vec::with_capacity(pending.len()),
                lease_changes: Vec::new(),
                scratch: Vec::with_capacity(4096),
                stored: old_stored,
            };
            for request in &mut pending {
                match request {
                    Request::Write {
                        key,
                        op,
                        condition,
                        reply,
                    } => {
                        if let Err(full) = state.space_for(&key, &op, settings.quota_bytes) {
                            // Refused alone: the batch's other writes go on.
                            replies.push(Reply::Write(reply, Err(full)));
                            continue;
                        }
                        let outcome = state.apply_write(key, op, condition);
                        let failed = outcome.as_ref().err().cloned();
                        replies.push(Reply::Write(reply, outcome));
                        if let Some(err) = failed {
                            return Err(err);
                        }
                    }
                    Request::Compact { revision, reply } => {
                        let outcome = state.compact(revision);
                        replies.push(Reply::Compact(reply, outcome));
                    }
                }
            }
            if !due.is_empty() {
                state.sweep_expired(due)?;
            }
            let auto = state.revision - settings.retained_revisions as Revision;
            if auto > state.compacted {
                state.compacted = auto;
            }
            let (floor, freed) = trim_log(&mut state.log, old_floor, state.compacted)?;
            Committed {
                events: state.events,
                revision: state.revision,
                compacted: state.compacted,
                floor,
                lease_changes: state.lease_changes,
                stored: state.stored.saturating_sub(freed),
            }
        };
        let Committed {
            revision,
            compacted,
            floor,
            ..
        } = committed;
        // Only the counters that changed are written: an unchanged `meta` table is not
        // rewritten (nor its root in the table tree).
        if revision != old_revision || compacted != old_compacted || floor != old_floor {
            let mut meta = txn.open_table(META).map_err(db_err)?;
            if revision != old_revision {
                meta.insert(META_REVISION, revision as u64)
                    .map_err(db_err)?;
            }
            if compacted != old_compacted {
                meta.insert(META_COMPACTED, compacted as u64)
                    .map_err(db_err)?;
            }
            if floor != old_floor {
                meta.insert(META_LOG_FLOOR, floor as u64).map_err(db_err)?;
            }
        }
        committing = Some(revision);
        crate::fault::before_commit_sync();
        txn.commit().map_err(db_err)?;
        Ok(committed)
    })();
    match result {
        Ok(Committed {
            events,
            revision,
            compacted,
            floor,
            lease_changes,
            stored,
        }) => {
            if !lease_changes.is_empty() {
                let mut leases = shared.leases.lock();
                for (key, deadline) in lease_changes {
                    leases.set(key, deadline);
                }
            }
            if !events.is_empty() {
                // Routed before the revision is published, so a watcher that reads the current
                // revision finds every batch up to it in its queue (see `router`).
                shared.router.route(&EventBatch::from(events));
            }
            shared.current.store(revision, Ordering::Release);
            shared.compacted.store(compacted, Ordering::Release);
            shared.log_floor.store(floor, Ordering::Release);
            shared.stored_bytes.store(stored, Ordering::Release);
            send_replies(replies);
            Ok(())
        }
        Err(err) => {
            tracing::error!(error = %err, "embedded storage commit failed");
            // redb fails every operation after an I/O error until the database is reopened:
            // reopen it before answering, so reads work again by the time callers see the
            // error (when reopening fails too, the writer tries again before its next commit).
            let landed = match recover(shared) {
                Ok(()) => committing.is_some_and(|revision| {
                    revision > old_revision && shared.current.load(Ordering::Acquire) == revision
                }),
                Err(reopen) => {
                    tracing::error!(error = %reopen, "reopening the embedded database failed");
                    false
                }
            };
            if landed {
                // The commit reported an error after its data was durable (the reopened file
                // holds the batch's last revision, and redb commits are all or nothing), and
                // `recover` has delivered its events and published its revision: its writes
                // are answered as committed. Its TTL keys were scheduled by the reload.
                tracing::warn!(
                    revision = committing,
                    "the failed commit is durable; its writes are acknowledged"
                );
                send_replies(replies);
                return Ok(());
            }
            // The transaction was dropped (aborted) or its commit failed: nothing is published,
            // and every caller of the batch fails, those whose request was not reached too.
            for reply in replies {
                match reply {
                    Reply::Write(tx, _) => {
                        let _ = tx.send(Err(err.clone()));
                    }
                    Reply::Compact(tx, _) => {
                        let _ = tx.send(Err(err.clone()));
                    }
                }
            }
            fail_batch(pending.collect(), &err);
            Err(err)
        }
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
