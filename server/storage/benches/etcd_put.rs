//! Write throughput on etcd at 1, 16 and 64 concurrent writers: raw `etcd-client` puts, raw
//! create transactions (`create_revision == 0` compare, put with `prev_kv`, else get: what the
//! backend sends), and `Store::create` on the etcd backend.
//!
//! `Store::create` sends each create as its own etcd transaction (the raw create transaction's
//! shape), concurrent ones in flight together, so each gets its own revision.
//!
//! After each benchmark it prints the CPU time per operation of etcd and of this process (the
//! client side: etcd-client, tonic, the Store), from `/proc/<pid>/stat` (Linux, 100 ticks/s).
//!
//! Starts its own etcd (`/usr/bin/etcd`, fails if missing). Run:
//! `cargo bench -p apiary-storage --bench etcd_put -- --warm-up-time 1 --measurement-time 5`

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use storage::backend::Backend;
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::interface::{Interface, ObjectAttrs, ObjectCodec};
use storage::store::{Store, StoreConfig};

const WRITERS: [u64; 3] = [1, 16, 64];
const PREFIX: &str = "/registry/example.dev/widgets/";

/// Benchmark objects are opaque.
struct OpaqueCodec;

impl ObjectCodec for OpaqueCodec {
    fn attrs(&self, _data: &[u8]) -> storage::Result<ObjectAttrs> {
        Ok(ObjectAttrs::default())
    }
}

/// A ~300-byte value, about the size of a small encoded object.
fn value() -> Bytes {
    Bytes::from(vec![b'x'; 300])
}

/// Runs `total` operations spread over `writers` tasks and returns the elapsed time.
async fn run_concurrently<F, Fut>(writers: u64, total: u64, op: F) -> Duration
where
    F: Fn(u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let next = Arc::clone(&next);
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                op(i).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
    started.elapsed()
}

/// CPU time (user + system) of a process in clock ticks, from `/proc/<pid>/stat`.
fn cpu_ticks(pid: &str) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name (which ends with the last ')'): state is field 3, utime
    // and stime are fields 14 and 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    field(14).unwrap_or(0) + field(15).unwrap_or(0)
}

/// Microseconds per clock tick (Linux's USER_HZ is 100).
const TICK_MICROS: f64 = 10_000.0;

/// Operations and CPU ticks (etcd, this process) accumulated over one benchmark.
#[derive(Default)]
struct CpuTotals {
    ops: u64,
    etcd: u64,
    client: u64,
}

/// Measures the CPU time of etcd and of this process around the benchmark's iterations.
#[derive(Clone)]
struct CpuMeter {
    etcd_pid: String,
    totals: Arc<Mutex<CpuTotals>>,
}

impl CpuMeter {
    fn new(etcd: &EtcdProcess) -> Self {
        Self {
            etcd_pid: etcd.pid().map(|p| p.to_string()).unwrap_or_default(),
            totals: Arc::default(),
        }
    }

    fn sample(&self) -> (u64, u64) {
        (cpu_ticks(&self.etcd_pid), cpu_ticks("self"))
    }

    fn add(&self, ops: u64, before: (u64, u64)) {
        let after = self.sample();
        let mut totals = self.totals.lock().expect("cpu totals");
        totals.ops += ops;
        totals.etcd += after.0.saturating_sub(before.0);
        totals.client += after.1.saturating_sub(before.1);
    }

    fn report(&self, name: &str) {
        let totals = self.totals.lock().expect("cpu totals");
        let per_op = |ticks: u64| ticks as f64 * TICK_MICROS / totals.ops.max(1) as f64;
        println!(
            "cpu {name}: etcd {:.1} us/op, client {:.1} us/op, total {:.1} us/op ({} ops)",
            per_op(totals.etcd),
            per_op(totals.client),
            per_op(totals.etcd + totals.client),
            totals.ops
        );
    }
}

/// A fresh etcd for one benchmark, so no benchmark runs against a database grown by another.
struct Target {
    _etcd: EtcdProcess,
    client: etcd_client::Client,
    store: Arc<Store>,
    cpu: CpuMeter,
}

fn fresh(runtime: &tokio::runtime::Runtime) -> Target {
    let etcd = EtcdProcess::start().expect("etcd must be installed and start");
    let backend = runtime
        .block_on(EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()])))
        .expect("connect");
    let client = backend.client();
    let store = Arc::new(Store::new(
        Arc::new(backend) as Arc<dyn Backend>,
        StoreConfig::new(PREFIX, Arc::new(OpaqueCodec)),
    ));
    Target {
        cpu: CpuMeter::new(&etcd),
        _etcd: etcd,
        client,
        store,
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let round = Arc::new(AtomicU64::new(0));

    let mut group = c.benchmark_group("etcd_write");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    for writers in WRITERS {
        let target = fresh(&runtime);
        let client = target.client.clone();
        let cpu = target.cpu.clone();
        group.bench_with_input(
            BenchmarkId::new("raw_put", writers),
            &writers,
            |b, &writers| {
                b.to_async(&runtime).iter_custom(|iters| {
                    let client = client.clone();
                    let round = round.fetch_add(1, Ordering::Relaxed);
                    let cpu = cpu.clone();
                    async move {
                        let before = cpu.sample();
                        let elapsed = run_concurrently(writers, iters, move |i| {
                            let mut client = client.clone();
                            async move {
                                client
                                    .put(format!("/raw/{round}/{i}"), value().to_vec(), None)
                                    .await
                                    .expect("put");
                            }
                        })
                        .await;
                        cpu.add(iters, before);
                        elapsed
                    }
                })
            },
        );
        target.cpu.report(&format!("raw_put/{writers}"));
        drop(target);
        let target = fresh(&runtime);
        let client = target.client.clone();
        let cpu = target.cpu.clone();
        group.bench_with_input(
            BenchmarkId::new("raw_txn_create", writers),
            &writers,
            |b, &writers| {
                b.to_async(&runtime).iter_custom(|iters| {
                    let client = client.clone();
                    let round = round.fetch_add(1, Ordering::Relaxed);
                    let cpu = cpu.clone();
                    async move {
                        let before = cpu.sample();
                        let elapsed = run_concurrently(writers, iters, move |i| {
                            let mut client = client.clone();
                            async move {
                                let key = format!("/rawtxn/{round}/{i}");
                                let txn = Txn::new()
                                    .when(vec![Compare::create_revision(
                                        key.clone(),
                                        CompareOp::Equal,
                                        0,
                                    )])
                                    .and_then(vec![TxnOp::put(
                                        key.clone(),
                                        value().to_vec(),
                                        Some(PutOptions::new().with_prev_key()),
                                    )])
                                    .or_else(vec![TxnOp::get(key, None)]);
                                client.txn(txn).await.expect("txn");
                            }
                        })
                        .await;
                        cpu.add(iters, before);
                        elapsed
                    }
                })
            },
        );
        target.cpu.report(&format!("raw_txn_create/{writers}"));
        drop(target);
        let target = fresh(&runtime);
        let store = Arc::clone(&target.store);
        let cpu = target.cpu.clone();
        group.bench_with_input(
            BenchmarkId::new("store_create", writers),
            &writers,
            |b, &writers| {
                b.to_async(&runtime).iter_custom(|iters| {
                    let store = Arc::clone(&store);
                    let round = round.fetch_add(1, Ordering::Relaxed);
                    let cpu = cpu.clone();
                    async move {
                        let before = cpu.sample();
                        let elapsed = run_concurrently(writers, iters, move |i| {
                            let store = Arc::clone(&store);
                            async move {
                                store
                                    .create(&format!("{PREFIX}ns/r{round}-{i}"), value(), None)
                                    .await
                                    .expect("create");
                            }
                        })
                        .await;
                        cpu.add(iters, before);
                        elapsed
                    }
                })
            },
        );
        target.cpu.report(&format!("store_create/{writers}"));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
