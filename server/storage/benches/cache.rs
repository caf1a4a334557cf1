//! Watch cache benchmarks: listing 10,000 objects from memory, and fanning events out to 100
//! and 1,000 watchers on a single core (each watcher takes the event's memoized encoding, as
//! the server does, so every event is encoded once).
//!
//! The cache runs over a synthetic in-memory upstream so that the figures measure the cache,
//! not a backend. Run:
//! `cargo bench -p apiary-storage --bench cache -- --warm-up-time 1 --measurement-time 5`

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use parking_lot::Mutex;
use storage::cacher::{Cacher, CacherConfig, EncodingKey};
use storage::errors::{Result, Revision, StorageError};
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, Preconditions, Predicate, StoredObject,
    UpdateFn, ValidateDeletionFn, WatchEvent, WatchEventStream,
};
use storage::testing::{JsonTestCodec, object};
use tokio::sync::{Notify, mpsc};
use tokio_stream::wrappers::ReceiverStream;

const PREFIX: &str = "/registry/test.dev/widgets/";

/// An upstream that lists a fixed set of objects and streams whatever the benchmark sends.
struct Synthetic {
    items: Vec<StoredObject>,
    revision: AtomicI64,
    events: Mutex<Option<mpsc::Receiver<WatchEvent>>>,
}

fn unsupported() -> StorageError {
    StorageError::internal("not used by the benchmark")
}

#[async_trait]
impl Interface for Synthetic {
    async fn create(&self, _: &str, _: Bytes, _: Option<u64>) -> Result<StoredObject> {
        Err(unsupported())
    }
    async fn delete(
        &self,
        _: &str,
        _: Option<Preconditions>,
        _: Option<ValidateDeletionFn<'_>>,
        _: Option<StoredObject>,
    ) -> Result<StoredObject> {
        Err(unsupported())
    }
    async fn watch(&self, _: &str, _: ListOptions) -> Result<WatchEventStream> {
        let rx = self.events.lock().take().ok_or_else(unsupported)?;
        Ok(ReceiverStream::new(rx).boxed())
    }
    async fn get(&self, _: &str, _: GetOptions) -> Result<Option<StoredObject>> {
        Err(unsupported())
    }
    async fn get_list(&self, _: &str, _: ListOptions) -> Result<ListResult> {
        Ok(ListResult {
            items: self.items.clone(),
            resource_version: self.revision.load(Ordering::SeqCst),
            continue_token: None,
            remaining_item_count: None,
        })
    }
    async fn guaranteed_update(
        &self,
        _: &str,
        _: bool,
        _: Option<Preconditions>,
        _: UpdateFn<'_>,
        _: Option<StoredObject>,
    ) -> Result<StoredObject> {
        Err(unsupported())
    }
    async fn count(&self, _: &str) -> Result<i64> {
        Ok(self.items.len() as i64)
    }
    async fn current_resource_version(&self) -> Result<Revision> {
        Ok(self.revision.load(Ordering::SeqCst))
    }
}

fn objects(n: usize) -> Vec<StoredObject> {
    (0..n)
        .map(|i| {
            let name = format!("obj-{i:05}");
            let color = if i % 2 == 0 { "red" } else { "blue" };
            StoredObject {
                key: format!("{PREFIX}ns/{name}"),
                data: object("ns", &name, &[("color", color)], &"s".repeat(200)),
                resource_version: 1 + i as i64,
                stale: false,
            }
        })
        .collect()
}

/// A cacher over a synthetic upstream holding `items`; returns it with the event sender.
async fn cacher(
    items: Vec<StoredObject>,
    buffer: usize,
) -> (Cacher, mpsc::Sender<WatchEvent>, Arc<Synthetic>) {
    let (tx, rx) = mpsc::channel(4096);
    let revision = items.len() as i64 + 1;
    let upstream = Arc::new(Synthetic {
        items,
        revision: AtomicI64::new(revision),
        events: Mutex::new(Some(rx)),
    });
    let mut config = CacherConfig::new(PREFIX, Arc::new(JsonTestCodec));
    config.watcher_buffer = buffer;
    config.bookmark_interval = Duration::from_secs(3600);
    let cacher = Cacher::new(upstream.clone(), config);
    assert!(
        cacher.wait_ready(Duration::from_secs(10)).await,
        "cache ready"
    );
    (cacher, tx, upstream)
}

fn list_bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (cacher, _tx, _upstream) = runtime.block_on(cacher(objects(10_000), 1000));
    let mut group = c.benchmark_group("cache_list_10k");
    group.sample_size(20);
    for (name, rv, predicate) in [
        ("rv0", "0", Predicate::everything()),
        ("consistent", "", Predicate::everything()),
        (
            "label_filter_half",
            "0",
            Predicate::new(|a| a.labels.get("color") == Some("red")),
        ),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| {
                let opts = ListOptions {
                    resource_version: rv.to_string(),
                    recursive: true,
                    predicate: predicate.clone(),
                    ..ListOptions::default()
                };
                let cacher = cacher.clone();
                async move {
                    let list = cacher.get_list(PREFIX, opts).await.expect("list");
                    assert!(list.items.len() >= 5_000);
                    list
                }
            })
        });
    }
    group.finish();
}

fn fanout_bench(c: &mut Criterion) {
    // One thread: the figure is deliveries per second per core.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("cache_watch_fanout_1core");
    group.sample_size(10);
    for watchers in [100u64, 1000] {
        let base = objects(1000);
        let (cacher, tx, upstream) = runtime.block_on(cacher(base.clone(), 1 << 20));
        let delivered = Arc::new(AtomicU64::new(0));
        let target = Arc::new(AtomicU64::new(u64::MAX));
        let done = Arc::new(Notify::new());
        let encoding = EncodingKey::new("json;v1");
        runtime.block_on(async {
            let start = upstream.revision.load(Ordering::SeqCst);
            for _ in 0..watchers {
                let mut stream = cacher
                    .watch_memoized(
                        PREFIX,
                        ListOptions {
                            resource_version: start.to_string(),
                            recursive: true,
                            send_initial_events: Some(false),
                            ..ListOptions::default()
                        },
                    )
                    .await
                    .expect("watch");
                let (delivered, target, done, encoding) = (
                    Arc::clone(&delivered),
                    Arc::clone(&target),
                    Arc::clone(&done),
                    encoding.clone(),
                );
                tokio::spawn(async move {
                    while let Some(event) = stream.next().await {
                        if let (Some(memo), WatchEvent::Modified { object, .. }) =
                            (&event.memo, &event.event)
                        {
                            let bytes = memo.encoded(&encoding, || object.data.clone());
                            std::hint::black_box(bytes);
                        }
                        let n = delivered.fetch_add(1, Ordering::Relaxed) + 1;
                        if n == target.load(Ordering::Relaxed) {
                            done.notify_one();
                        }
                    }
                });
            }
        });
        group.throughput(Throughput::Elements(watchers));
        group.bench_with_input(BenchmarkId::from_parameter(watchers), &watchers, |b, &w| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (tx, upstream, base) = (tx.clone(), Arc::clone(&upstream), base.clone());
                let (delivered, target, done) = (
                    Arc::clone(&delivered),
                    Arc::clone(&target),
                    Arc::clone(&done),
                );
                async move {
                    let before = delivered.load(Ordering::SeqCst);
                    target.store(before + iters * w, Ordering::SeqCst);
                    let started = Instant::now();
                    for i in 0..iters {
                        let revision = upstream.revision.fetch_add(1, Ordering::SeqCst) + 1;
                        let mut object = base[(i % base.len() as u64) as usize].clone();
                        object.resource_version = revision;
                        tx.send(WatchEvent::Modified { object, prev: None })
                            .await
                            .expect("cache consumes events");
                    }
                    if delivered.load(Ordering::SeqCst) < before + iters * w {
                        done.notified().await;
                    }
                    started.elapsed()
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, list_bench, fanout_bench);
criterion_main!(benches);
