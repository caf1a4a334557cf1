//! Throughput of the embedded engine, printed as a table (not a criterion bench: the figure of
//! interest is sustained operations per second at a given writer concurrency).
//!
//! Run: `cargo bench -p apiary-storage --bench embedded -- [seconds per case] [case filter...]`
//! (default 3 seconds, all cases; a filter such as `store` selects cases whose name contains it).
//!
//! Cases, each at 1, 16 and 64 concurrent writers:
//! - `fsync`: write 4 KiB + `fdatasync` on a plain file (the device's sync latency).
//! - `redb txn/write`: one redb write transaction with immediate durability per insert.
//! - `redb batched`: one transaction per batch of as many inserts as there are writers.
//! - `backend put`: `EmbeddedBackend::put` (create-if-absent) through the group-commit writer.
//! - `store create`: `Store::create` over the embedded backend (identity transformer).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Database, Durability, TableDefinition};
use storage::backend::{Backend, Condition};
use storage::embedded::EmbeddedBackend;
use storage::interface::Interface;
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{JsonTestCodec, object};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("bench");
const CONCURRENCY: [usize; 3] = [1, 16, 64];
const VALUE_SIZE: usize = 512;

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<u64>().is_err())
        .collect();
    let selected =
        |case: &str| filters.is_empty() || filters.iter().any(|f| case.contains(f.as_str()));
    let duration = Duration::from_secs(seconds);
    println!("embedded storage throughput, {seconds}s per case, {VALUE_SIZE}-byte values");
    println!(
        "{:<16} {:>8} {:>14} {:>12}",
        "case", "writers", "ops/s", "p50 ms"
    );
    for writers in CONCURRENCY.into_iter().filter(|_| selected("fsync")) {
        report("fsync", writers, fsync(writers, duration));
    }
    for writers in CONCURRENCY
        .into_iter()
        .filter(|_| selected("redb txn/write"))
    {
        report("redb txn/write", writers, redb_per_write(writers, duration));
    }
    for writers in CONCURRENCY.into_iter().filter(|_| selected("redb batched")) {
        report("redb batched", writers, redb_batched(writers, duration));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for writers in CONCURRENCY.into_iter().filter(|_| selected("backend put")) {
        report(
            "backend put",
            writers,
            runtime.block_on(backend_put(writers, duration)),
        );
    }
    for writers in CONCURRENCY.into_iter().filter(|_| selected("store create")) {
        report(
            "store create",
            writers,
            runtime.block_on(store_create(writers, duration)),
        );
    }
}

/// Operations completed and the median latency.
struct Outcome {
    ops: u64,
    elapsed: Duration,
    median: Duration,
}

fn report(case: &str, writers: usize, o: Outcome) {
    let rate = o.ops as f64 / o.elapsed.as_secs_f64();
    println!(
        "{case:<16} {writers:>8} {rate:>14.0} {:>12.2}",
        o.median.as_secs_f64() * 1000.0
    );
    let _ = std::io::stdout().flush();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `op` on `writers` threads until `duration` passes.
fn threads(writers: usize, duration: Duration, op: impl Fn(usize, u64) + Sync) -> Outcome {
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Instant::now();
    let samples = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (stop, ops, op) = (&stop, &ops, &op);
                s.spawn(move || {
                    let mut samples = Vec::new();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        op(w, n);
                        samples.push(t.elapsed());
                        ops.fetch_add(1, Ordering::Relaxed);
                        n += 1;
                    }
                    samples
                })
            })
            .collect();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect::<Vec<_>>()
    });
    Outcome {
        ops: ops.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
        median: median(samples),
    }
}

fn fsync(writers: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let files: Vec<_> = (0..writers)
        .map(|w| {
            std::sync::Mutex::new(
                std::fs::File::create(dir.path().join(format!("f{w}"))).expect("file"),
            )
        })
        .collect();
    let block = vec![7u8; 4096];
    threads(writers, duration, |w, _| {
        let mut f = files[w].lock().expect("lock");
        f.write_all(&block).expect("write");
        f.sync_data().expect("fdatasync");
    })
}

fn open_redb(dir: &std::path::Path) -> Database {
    let db = Database::create(dir.join("bench.redb")).expect("redb");
    let txn = db.begin_write().expect("txn");
    txn.open_table(TABLE).expect("table");
    txn.commit().expect("commit");
    db
}

fn redb_per_write(writers: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = open_redb(dir.path());
    let value = vec![1u8; VALUE_SIZE];
    threads(writers, duration, |w, n| {
        let mut txn = db.begin_write().expect("txn");
        txn.set_durability(Durability::Immediate)
            .expect("durability");
        {
            let mut t = txn.open_table(TABLE).expect("table");
            t.insert(format!("/k/{w}/{n}").as_str(), value.as_slice())
                .expect("insert");
        }
        txn.commit().expect("commit");
    })
}

fn redb_batched(batch: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = open_redb(dir.path());
    let value = vec![1u8; VALUE_SIZE];
    let mut out = threads(1, duration, |_, n| {
        let txn = db.begin_write().expect("txn");
        {
            let mut t = txn.open_table(TABLE).expect("table");
            for i in 0..batch {
                t.insert(format!("/k/{n}/{i}").as_str(), value.as_slice())
                    .expect("insert");
            }
        }
        txn.commit().expect("commit");
    });
    out.ops *= batch as u64;
    out
}

async fn tasks<F, Fut>(writers: usize, duration: Duration, op: F) -> Outcome
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (op, stop, ops) = (Arc::clone(&op), Arc::clone(&stop), Arc::clone(&ops));
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    op(w, n).await;
                    samples.push(t.elapsed());
                    ops.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                samples
            })
        })
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for h in handles {
        samples.extend(h.await.unwrap_or_default());
    }
    Outcome {
        ops: ops.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
        median: median(samples),
    }
}

async fn backend_put(writers: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = Arc::new(EmbeddedBackend::open_dir(dir.path()).expect("open"));
    let value = Bytes::from(vec![1u8; VALUE_SIZE]);
    let b = Arc::clone(&backend);
    tasks(writers, duration, move |w, n| {
        let b = Arc::clone(&b);
        let value = value.clone();
        async move {
            b.put(&format!("/k/{w}/{n}"), value, Condition::Absent, None)
                .await
                .expect("put");
        }
    })
    .await
}

async fn store_create(writers: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open_dir(dir.path()).expect("open"));
    let keys = ResourceKeys::new("/registry", "example.dev", "widgets").expect("keys");
    let store = Arc::new(Store::new(
        backend,
        StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec)),
    ));
    let spec = "x".repeat(VALUE_SIZE - 120);
    tasks(writers, duration, move |w, n| {
        let store = Arc::clone(&store);
        let name = format!("w{w}-{n}");
        let key = keys.object_key(Some("bench"), &name).expect("key");
        let data = object("bench", &name, &[], &spec);
        async move {
            store.create(&key, data, None).await.expect("create");
        }
    })
    .await
}
