//! Compaction of the embedded store under load: the file stops growing under a churn of updates
//! once history is compacted (redb reuses the freed pages), and writes stay fast while a large
//! history is being removed, since the writer removes it in bounded steps between commits.
//!
//! The figures are printed (`--nocapture`) and recorded in BENCHMARKS.md; sizes can be raised
//! with `APIARY_CHURN_UPDATES` (default 2,000 updates of 64 KiB) and `APIARY_COMPACTION_HISTORY`
//! (default 200,000 history entries).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::backend::{Backend, Condition, TxnOutcome};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn file_size(backend: &EmbeddedBackend) -> u64 {
    std::fs::metadata(backend.path()).expect("metadata").len()
}

/// Updates `keys` keys round robin `updates` times with 64 KiB values; with `compact_every`,
/// compacts as the compactor does: every that many updates, to the revision recorded the
/// previous time. Returns the file size after each half of the updates.
async fn churn(updates: usize, compact_every: Option<usize>) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).expect("open");
    let value = Bytes::from(vec![b'x'; 64 * 1024]);
    let mut recorded = 0;
    let mut half = 0;
    for i in 0..updates {
        let key = format!("/registry/configmaps/default/c{}", i % 4);
        backend
            .put(&key, value.clone(), Condition::Always, None)
            .await
            .expect("put");
        if let Some(every) = compact_every
            && (i + 1) % every == 0
        {
            if recorded > 0 {
                backend.compact(recorded).await.expect("compact");
            }
            recorded = backend.current_revision().await.expect("revision");
        }
        if i + 1 == updates / 2 {
            half = file_size(&backend);
        }
    }
    // The writer finishes removing compacted history between commits.
    let deadline = Instant::now() + Duration::from_secs(30);
    while backend.history_floor() < backend.compacted_revision().await.expect("compacted") {
        assert!(Instant::now() < deadline, "history removal did not finish");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (half, file_size(&backend))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_space_is_reused_after_compaction() {
    let updates = env("APIARY_CHURN_UPDATES", 2000);
    let written = (updates * 64 * 1024) as u64;
    let (off_half, off) = churn(updates, None).await;
    let (on_half, on) = churn(updates, Some(100)).await;
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "churn of {updates} updates of 64 KiB ({:.0} MB written): file without compaction {:.0} MB \
         (half-way {:.0} MB), with compaction every 100 updates {:.1} MB (half-way {:.1} MB)",
        mb(written),
        mb(off),
        mb(off_half),
        mb(on),
        mb(on_half)
    );
    assert!(off > written, "without compaction the history is kept");
    // With compaction the file holds a bounded window of history and stops growing.
    assert!(on * 4 < off, "{on} vs {off}");
    assert!(
        on <= on_half + on_half / 2,
        "the file kept growing: {on_half} then {on}"
    );
}

fn p99(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort();
    latencies[latencies.len() * 99 / 100]
}

async fn timed_writes(backend: &EmbeddedBackend, n: usize) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let outcome = backend
            .put(
                &format!("/registry/configmaps/probe/p{}", i % 16),
                Bytes::from_static(b"probe"),
                Condition::Always,
                None,
            )
            .await
            .expect("put");
        assert!(matches!(outcome, TxnOutcome::Committed { .. }));
        latencies.push(started.elapsed());
    }
    latencies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stay_fast_while_a_large_history_is_removed() {
    let history = env("APIARY_COMPACTION_HISTORY", 200_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut options = EmbeddedOptions::new(dir.path());
    options.retained_revisions = u64::MAX / 2;
    let backend = Arc::new(EmbeddedBackend::open(options).expect("open"));
    // Many concurrent writers fill the history quickly (group commit).
    let value = Bytes::from(vec![b'v'; 256]);
    let writers = 256;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let backend = Arc::clone(&backend);
            let value = value.clone();
            tokio::spawn(async move {
                for i in 0..history / writers {
                    backend
                        .put(
                            &format!("/registry/configmaps/w{w}/c{}", i % 8),
                            value.clone(),
                            Condition::Always,
                            None,
                        )
                        .await
                        .expect("put");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer");
    }
    let baseline = p99(timed_writes(&backend, 1000).await);
    let current = backend.current_revision().await.expect("revision");
    let started = Instant::now();
    backend.compact(current).await.expect("compact");
    let mut during = Vec::new();
    while backend.history_floor() < current {
        during.extend(timed_writes(&backend, 1).await);
    }
    let removal = started.elapsed();
    let writes = during.len();
    let max = during.iter().max().copied().unwrap_or_default();
    let during = p99(during);
    println!(
        "{current} history entries: removed in {removal:?}; write p99 {baseline:?} without \
         compaction, {during:?} during it ({writes} writes, slowest {max:?})"
    );
    assert!(
        writes >= 30,
        "too few writes during the removal to measure: {writes}"
    );
    // The target is 2x (measured 1.8x, and 2.2x under load, in a debug build: BENCHMARKS.md);
    // removing 4,096 rows per commit, as before the time budget, measured 5.5x.
    assert!(
        during <= baseline * 3,
        "write p99 during compaction {during:?} > 3 x {baseline:?}"
    );
}
