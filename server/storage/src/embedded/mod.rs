//! The embedded backend: a durable, revisioned key-value store on [`redb`].
//!
//! - One file, `<data dir>/storage.redb`, holds the current state (`kv`), the history of
//!   recent revisions (`log`: revision → key, kind, value, previous value), a TTL index and the
//!   revision counter, all updated in the same transaction.
//! - All writes go through one writer thread that batches every queued request into one
//!   transaction and one fsync (group commit); a write is acknowledged only after its commit is
//!   durable.
//! - Reads use concurrent redb read transactions; reads at past revisions are answered from the
//!   history within the retained window and fail with `Expired` below it.
//! - Watches replay history from their start revision, then follow the committed batches the
//!   writer routes to them (only those touching their prefix) without gap or duplicate.
//! - TTLs are timed on the monotonic clock, each restarting in full when the database is
//!   opened, as etcd's leases do (`leases`); revisions are a counter. Neither depends on the
//!   wall clock.
//! - A failed commit (a full disk) fails every write of its batch; the writer then reopens the
//!   database, which redb requires after an I/O error, and retries commits with a growing wait
//!   while they fail (`writer::recover`).

mod leases;
mod reads;
mod records;
mod router;
mod tables;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};
use tokio::sync::oneshot;

use crate::backend::{
    Backend, Condition, Event, GetResponse, RangeRequest, RangeResponse, TxnOutcome, WatchRequest,
    WatchStream,
};
use crate::errors::{Result, Revision, StorageError};
use crate::private_files;
use tables::{KV, LOG, META, META_COMPACTED, META_LOG_FLOOR, META_REVISION, db_err};
use writer::{Request, WriteOp, WriterSettings};

/// The file name of the database inside the data directory.
pub const DATABASE_FILE: &str = "storage.redb";

/// The default bound of redb's page cache: 8 MiB.
pub const DEFAULT_CACHE_SIZE: usize = 8 * 1024 * 1024;

/// Options of the embedded backend.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// The directory holding the database; created if missing.
    pub data_dir: PathBuf,
    /// How many past revisions stay readable (and resumable by watches); older history is
    /// compacted automatically.
    pub retained_revisions: u64,
    /// How often expired TTL keys are deleted.
    pub sweep_interval: Duration,
    /// The number of committed batches touching a watcher's prefix buffered for it before it
    /// falls back to replaying from the history. A batch stays in memory only until every
    /// watcher it was routed to has read it.
    pub watch_buffer: usize,
    /// The upper bound, in bytes, of redb's page cache (the memory redb may keep of database
    /// pages read or written; it is filled lazily). The default is [`DEFAULT_CACHE_SIZE`]: the
    /// server also holds every object in its watch cache, so a large page cache mostly
    /// duplicates values already in memory, while reads that miss it are served from the OS page
    /// cache. Raise it for stores much larger than memory-resident working sets.
    pub cache_size: usize,
    /// The most bytes the stored rows (objects and their retained history) may take; a write
    /// that would pass it is refused with [`StorageError::SpaceExceeded`] while deletes go on,
    /// and compaction of history frees space. 0 is unbounded. The default is
    /// [`DEFAULT_QUOTA_BYTES`], etcd's default `--quota-backend-bytes`.
    pub quota_bytes: u64,
}

/// The default space quota of the embedded store: 2 GiB, etcd's default backend quota.
pub const DEFAULT_QUOTA_BYTES: u64 = 2 << 30;

impl EmbeddedOptions {
    /// Defaults: 100,000 retained revisions, a 1 second TTL sweep, a 128-batch watch buffer,
    /// a [`DEFAULT_CACHE_SIZE`] (8 MiB) page cache and a [`DEFAULT_QUOTA_BYTES`] (2 GiB) quota.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            retained_revisions: 100_000,
            sweep_interval: Duration::from_secs(1),
            watch_buffer: 128,
            cache_size: DEFAULT_CACHE_SIZE,
            quota_bytes: DEFAULT_QUOTA_BYTES,
        }
    }
}

/// The events of one committed transaction, in revision order (one event per revision).
pub(crate) type EventBatch = Arc<[Event]>;

/// State shared by the backend handle, the writer thread and watchers.
pub(crate) struct Shared {
    /// The open database; `None` while the writer reopens it after a failed commit (redb fails
    /// every operation after an I/O error until the database is reopened, see
    /// `writer::recover`).
    db: RwLock<Option<Database>>,
    /// The database file and the page cache bound it is opened with.
    pub path: PathBuf,
    pub cache_size: usize,
    pub router: router::Router,
    /// The TTL schedule; only the writer thread uses it.
    pub leases: Mutex<leases::Leases>,
    pub current: AtomicI64,
    pub compacted: AtomicI64,
    pub log_floor: AtomicI64,
    /// The bytes of the stored rows (keys and values of `kv` and `log`), as of the last commit;
    /// only the writer changes it.
    pub stored_bytes: AtomicU64,
}

impl Shared {
    /// State over an open database whose counters are (revision, compacted, log floor).
    fn new(
        db: Database,
        path: PathBuf,
        cache_size: usize,
        watch_buffer: usize,
        (revision, compacted, floor): (Revision, Revision, Revision),
        leases: leases::Leases,
        stored_bytes: u64,
    ) -> Self {
        Self {
            db: RwLock::new(Some(db)),
            path,
            cache_size,
            router: router::Router::new(watch_buffer),
            leases: Mutex::new(leases),
            current: AtomicI64::new(revision),
            compacted: AtomicI64::new(compacted),
            log_floor: AtomicI64::new(floor),
            stored_bytes: AtomicU64::new(stored_bytes),
        }
    }

    /// A read transaction, or `Unavailable` while the database is being reopened.
    pub fn begin_read(&self) -> Result<ReadTransaction> {
        match &*self.db.read() {
            Some(db) => db.begin_read().map_err(db_err),
            None => Err(reopening()),
        }
    }

    /// The write transaction of the writer thread, or `Unavailable` while the database is
    /// being reopened.
    pub fn begin_write(&self) -> Result<WriteTransaction> {
        match &*self.db.read() {
            Some(db) => db.begin_write().map_err(db_err),
            None => Err(reopening()),
        }
    }

    /// Whether the database is open (not being reopened).
    pub fn is_open(&self) -> bool {
        self.db.read().is_some()
    }

    /// Takes the database out (closing it is the caller's), so that it can be reopened.
    pub fn take_database(&self) -> Option<Database> {
        self.db.write().take()
    }

    /// Puts a (re)opened database in place.
    pub fn set_database(&self, db: Database) {
        *self.db.write() = Some(db);
    }
}

fn reopening() -> StorageError {
    StorageError::unavailable("the embedded database is being reopened after a failed commit")
}

/// Opens (or creates) the database file at `path`; redb repairs a file that was not closed
/// cleanly.
pub(crate) fn open_database(path: &Path, cache_size: usize) -> Result<Database> {
    Database::builder()
        .set_cache_size(cache_size)
        .create(path)
        .map_err(db_err)
}

/// The embedded [`Backend`].
pub struct EmbeddedBackend {
    shared: Arc<Shared>,
    requests: std::sync::mpsc::Sender<Request>,
    writer: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl Drop for EmbeddedBackend {
    /// Stops the writer after it commits what is queued. The database file closes once the
    /// last open watch is dropped as well.
    fn drop(&mut self) {
        let (closed, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut self.requests, closed));
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl std::fmt::Debug for EmbeddedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedBackend")
            .field("path", &self.path)
            .finish()
    }
}

impl EmbeddedBackend {
    /// Opens (or creates) the database under `options.data_dir` and starts the writer thread.
    pub fn open(options: EmbeddedOptions) -> Result<Self> {
        // The store holds every object, Secrets included: the owner's only, even when an
        // earlier version left the directory open.
        let dir = &options.data_dir;
        private_files::create_dir(dir)
            .and_then(|()| private_files::restrict(dir, 0o700))
            .map_err(|e| {
                StorageError::internal(format!(
                    "cannot create data directory {}: {e}",
                    options.data_dir.display()
                ))
            })?;
        let path = options.data_dir.join(DATABASE_FILE);
        let db = open_database(&path, options.cache_size)?;
        private_files::restrict(&path, 0o600).map_err(|e| {
            StorageError::internal(format!("cannot restrict {}: {e}", path.display()))
        })?;
        let counters = initialize(&db)?;
        let leases = leases::Leases::load(&db)?;
        let stored = stored_bytes(&db)?;
        let shared = Arc::new(Shared::new(
            db,
            path.clone(),
            options.cache_size,
            options.watch_buffer.max(16),
            counters,
            leases,
            stored,
        ));
        let (requests, rx) = std::sync::mpsc::channel();
        let settings = WriterSettings {
            sweep_interval: options.sweep_interval,
            retained_revisions: options.retained_revisions.max(1),
            quota_bytes: options.quota_bytes,
        };
        let writer_shared = Arc::clone(&shared);
        let writer = std::thread::Builder::new()
            .name("storage-writer".to_string())
            .spawn(move || writer::run(writer_shared, rx, settings))
            .map_err(|e| StorageError::internal(format!("cannot start writer thread: {e}")))?;
        Ok(Self {
            shared,
            requests,
            writer: Some(writer),
            path,
        })
    }

    /// Opens the database in `data_dir` with default options.
    pub fn open_dir(data_dir: impl AsRef<Path>) -> Result<Self> {
        Self::open(EmbeddedOptions::new(data_dir.as_ref()))
    }

    /// The path of the database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes the stored rows take (the measure [`EmbeddedOptions::quota_bytes`] bounds), as
    /// of the last commit.
    pub fn stored_bytes(&self) -> u64 {
        self.shared.stored_bytes.load(Ordering::Acquire)
    }

    /// The oldest revision whose history row may still be stored: below the compaction point
    /// while the writer is still removing compacted history, in bounded steps between writes.
    pub fn history_floor(&self) -> Revision {
        self.shared.log_floor.load(Ordering::Acquire)
    }

    async fn write(&self, key: &str, op: WriteOp, condition: Condition) -> Result<TxnOutcome> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(Request::Write {
                key: key.to_string(),
                op,
                condition,
                reply,
            })
            .map_err(|_| StorageError::unavailable("embedded storage writer stopped"))?;
        rx.await
            .map_err(|_| StorageError::unavailable("embedded storage write was not committed"))?
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Shared) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || f(&shared))
            .await
            .map_err(|e| StorageError::internal(format!("read task failed: {e}")))?
    }
}

/// Creates the tables on first use and returns (revision, compacted, log floor). A new
/// database starts at revision 1, as etcd does. A database that has them is only read (no
/// commit, which a full disk could fail).
pub(crate) fn initialize(db: &Database) -> Result<(Revision, Revision, Revision)> {
    if let Some(values) = stored_counters(db) {
        return Ok(values);
    }
    let txn = db.begin_write().map_err(db_err)?;
    let values = {
        let _ = txn.open_table(KV).map_err(db_err)?;
        let _ = txn.open_table(LOG).map_err(db_err)?;
        let _ = txn.open_table(tables::EXPIRY).map_err(db_err)?;
        let mut meta = txn.open_table(META).map_err(db_err)?;
        let get = |meta: &redb::Table<&str, u64>, name: &str| -> Result<Option<u64>> {
            Ok(meta.get(name).map_err(db_err)?.map(|v| v.value()))
        };
        let revision = match get(&meta, META_REVISION)? {
            Some(r) => r,
            None => {
                meta.insert(META_REVISION, 1).map_err(db_err)?;
                1
            }
        };
        let compacted = get(&meta, META_COMPACTED)?.unwrap_or(0);
        let floor = get(&meta, META_LOG_FLOOR)?.unwrap_or(0);
        (
            revision as Revision,
            compacted as Revision,
            floor as Revision,
        )
    };
    txn.commit().map_err(db_err)?;
    Ok(values)
}

/// The bytes of the rows of `kv` and `log` (keys and values, as redb counts them); the writer
/// keeps the figure current from here on.
pub(crate) fn stored_bytes(db: &Database) -> Result<u64> {
    use redb::ReadableTableMetadata;
    let txn = db.begin_read().map_err(db_err)?;
    let kv = txn
        .open_table(KV)
        .map_err(db_err)?
        .stats()
        .map_err(db_err)?;
    let log = txn
        .open_table(LOG)
        .map_err(db_err)?
        .stats()
        .map_err(db_err)?;
    Ok(kv.stored_bytes() + log.stored_bytes())
}

/// The counters of a database that has every table and a revision; `None` otherwise.
fn stored_counters(db: &Database) -> Option<(Revision, Revision, Revision)> {
    let txn = db.begin_read().ok()?;
    txn.open_table(KV).ok()?;
    txn.open_table(LOG).ok()?;
    txn.open_table(tables::EXPIRY).ok()?;
    let meta = txn.open_table(META).ok()?;
    let get = |name: &str| {
        meta.get(name)
            .ok()
            .map(|v| v.map(|v| v.value() as Revision))
    };
    Some((
        get(META_REVISION)??,
        get(META_COMPACTED)?.unwrap_or(0),
        get(META_LOG_FLOOR)?.unwrap_or(0),
    ))
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn get(&self, key: &str, revision: Revision) -> Result<GetResponse> {
        let key = key.to_string();
        self.read(move |s| {
            let txn = s.begin_read()?;
            reads::get(&txn, &key, revision)
        })
        .await
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        self.read(move |s| {
            let txn = s.begin_read()?;
            reads::range(&txn, &request)
        })
        .await
    }

    async fn put(
        &self,
        key: &str,
        value: Bytes,
        condition: Condition,
        ttl: Option<u64>,
    ) -> Result<TxnOutcome> {
        self.write(key, WriteOp::Put { value, ttl }, condition)
            .await
    }

    async fn delete(&self, key: &str, condition: Condition) -> Result<TxnOutcome> {
        if condition == Condition::Absent {
            return Err(StorageError::internal("a delete cannot require absence"));
        }
        self.write(key, WriteOp::Delete, condition).await
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let prefix = prefix.to_string();
        self.read(move |s| {
            let txn = s.begin_read()?;
            reads::count(&txn, &prefix)
        })
        .await
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream> {
        watch::open(Arc::clone(&self.shared), request).await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(Request::Compact { revision, reply })
            .map_err(|_| StorageError::unavailable("embedded storage writer stopped"))?;
        rx.await.map_err(|_| {
            StorageError::unavailable("embedded storage compaction was not committed")
        })?
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.current.load(Ordering::Acquire))
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.shared.compacted.load(Ordering::Acquire))
    }

    fn supports_progress_requests(&self) -> bool {
        true
    }
}
