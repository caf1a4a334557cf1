//! A soak: a bounded mixed workload against the real binary for `APIARY_SOAK_SECONDS` (default
//! 20; hours by the command in the README), then a check that the server's resources return to
//! their idle values. Several clients, each with its own connections, cycle through their own
//! ConfigMaps (create, update, get, list, delete), and each keeps opening watches that end by
//! the server's `timeoutSeconds` or by the client closing them early. Sampled from outside, before,
//! during and after the load: resident memory (`VmRSS` of /proc/<pid>/status), open file
//! descriptors (/proc/<pid>/fd), the runtime's alive tasks (`apiary_runtime_alive_tasks`) and the
//! watch caches' watchers (`apiserver_registered_watchers`, summed) from /metrics.
//!
//! Before the load, the same workload runs until the ConfigMap watch cache's ring of its last
//! 10,000 events is full (each event with the object, its previous state and the encodings
//! watches memoize, a few KiB): that ring is the one thing the server keeps by design and does
//! not give back, so the idle values sampled after it are the baseline. Measured on a 2-core
//! machine: RSS 49 MiB cold, 90 MiB once the ring is full.
//!
//! After the load stops and the clients are gone, within a settle time: watchers equal the
//! baseline exactly; tasks and file descriptors are within a few of it (the sampler's own
//! connection is open in both samples); memory is at most 8 MiB above the baseline (pages the
//! allocator keeps; measured +0.4 to +1.0 MiB after 20 s of load) and at most 64 MiB above the
//! cold start. A leak of a few hundred bytes per request passes the 8 MiB within a minute of
//! load (tens of thousands of requests per minute).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Server;
use serde_json::{Value, json};

const CLIENTS: usize = 4;
/// The ConfigMaps each client cycles through.
const NAMES: usize = 8;
const RSS_BOUND_KIB: u64 = 64 * 1024;
/// Resident memory after the load may exceed the warm baseline by this much (allocator pages
/// not yet returned).
const RSS_SLACK_KIB: u64 = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    tasks: u64,
    watchers: u64,
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

fn fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/fd: {e}"))
        .count() as u64
}

/// The sum of the samples of metric `name` in a Prometheus text exposition.
fn metric_sum(text: &str, name: &str) -> u64 {
    let values: Vec<u64> = text
        .lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(!values.is_empty(), "no {name} in /metrics:\n{text}");
    values.iter().sum()
}

async fn sample(server: &Server, client: &reqwest::Client) -> Sample {
    let text = client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .text()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Sample {
        rss_kib: rss_kib(server.pid()),
        fds: fds(server.pid()),
        tasks: metric_sum(&text, "apiary_runtime_alive_tasks"),
        watchers: metric_sum(&text, "apiserver_registered_watchers"),
    }
}

/// One client's writes and reads until `stop`: each ConfigMap is created, updated, read, listed
/// and deleted in turn. Counts requests in `ops`.
async fn crud(
    server: Arc<String>,
    client: reqwest::Client,
    id: usize,
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
) {
    let base = format!("{server}/api/v1/namespaces/default/configmaps");
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for i in 0..NAMES {
            let name = format!("soak-{id}-{i}");
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                "data": {"round": round.to_string(), "pad": "x".repeat(512)}});
            let r = client
                .post(&base)
                .json(&object)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 201, "create {name}");
            let created: Value = r.json().await.unwrap_or_else(|e| panic!("{e}"));
            let mut updated = created.clone();
            updated["data"]["round"] = json!(format!("{round}-updated"));
            let r = client
                .put(format!("{base}/{name}"))
                .json(&updated)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 200, "update {name}");
            let r = client
                .get(format!("{base}/{name}"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 200, "get {name}");
            let _ = r.bytes().await;
            if i.is_multiple_of(4) {
                let r = client
                    .get(format!("{base}?labelSelector=missing%3Dno&limit=50"))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(r.status().as_u16(), 200, "list");
                let _ = r.bytes().await;
            }
            let r = client
                .delete(format!("{base}/{name}"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 200, "delete {name}");
            let _ = r.bytes().await;
            ops.fetch_add(if i.is_multiple_of(4) { 5 } else { 4 }, Ordering::Relaxed);
        }
        round += 1;
    }
}

/// One client's watches until `stop`: each runs up to its `timeoutSeconds` (1 or 2 s) or is
/// closed by the client after a few events, alternately.
async fn watches(
    server: Arc<String>,
    client: reqwest::Client,
    stop: Arc<AtomicBool>,
    opened: Arc<AtomicU64>,
) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let url = format!(
            "{server}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds={}",
            1 + n % 2
        );
        let mut r = client
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200, "watch");
        opened.fetch_add(1, Ordering::Relaxed);
        let close_early = n.is_multiple_of(2);
        let mut chunks = 0;
        loop {
            match tokio::time::timeout(Duration::from_secs(5), r.chunk()).await {
                Ok(Ok(Some(_))) => {
                    chunks += 1;
                    if close_early && chunks >= 3 {
                        break;
                    }
                }
                Ok(Ok(None)) => break,
                Ok(Err(e)) => panic!("watch: {e}"),
                Err(_) => panic!("a watch with timeoutSeconds ≤ 2 is still open after 5 s"),
            }
        }
        drop(r);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_return_to_baseline_after_a_mixed_workload() {
    let seconds: u64 = std::env::var("APIARY_SOAK_SECONDS")
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|e| panic!("APIARY_SOAK_SECONDS={v}: {e}"))
        })
        .unwrap_or(20);
    let server = Server::start(&[]);
    let sampler = server.admin();
    // Idle: the post-start hooks and controllers have settled.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = sample(&server, &sampler).await;
    let cold = sample(&server, &sampler).await;
    eprintln!("cold: {cold:?}");
    let warmed = warm_up(&server).await;
    let _ = sample(&server, &sampler).await;
    let baseline = sample(&server, &sampler).await;
    eprintln!(
        "baseline after {warmed} warm-up requests (the watch cache's ring full): {baseline:?}"
    );

    let load = Load::start(&server);
    let started = Instant::now();
    let mut peak = baseline;
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_secs(1).min(Duration::from_secs(seconds))).await;
        let s = sample(&server, &sampler).await;
        if started.elapsed().as_secs().is_multiple_of(30) {
            eprintln!("{:?}: {s:?}", started.elapsed());
        }
        peak = Sample {
            rss_kib: peak.rss_kib.max(s.rss_kib),
            fds: peak.fds.max(s.fds),
            tasks: peak.tasks.max(s.tasks),
            watchers: peak.watchers.max(s.watchers),
        };
        assert!(load.running(), "a client stopped early");
    }
    let (requests, watches) = load.stop().await;
    eprintln!(
        "{requests} requests and {watches} watches in {:?}; peak: {peak:?}",
        started.elapsed()
    );
    assert!(
        peak.watchers > baseline.watchers,
        "the watches were counted"
    );

    // Settle: watchers back exactly, tasks and descriptors within a few.
    let settle = Instant::now();
    let after = loop {
        let s = sample(&server, &sampler).await;
        let settled = s.watchers == baseline.watchers
            && s.tasks <= baseline.tasks + 4
            && s.fds <= baseline.fds + 4;
        if settled || settle.elapsed() > Duration::from_secs(20) {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    eprintln!("after {:?} of settling: {after:?}", settle.elapsed());
    assert_eq!(
        after.watchers, baseline.watchers,
        "watchers: {baseline:?} → {after:?}"
    );
    assert!(
        after.tasks <= baseline.tasks + 4,
        "tasks: {baseline:?} → {after:?}"
    );
    assert!(
        after.fds <= baseline.fds + 4,
        "file descriptors: {baseline:?} → {after:?}"
    );
    assert!(
        after.rss_kib <= baseline.rss_kib + RSS_SLACK_KIB,
        "resident memory: {baseline:?} → {after:?} (peak {peak:?})"
    );
    assert!(
        after.rss_kib <= cold.rss_kib + RSS_BOUND_KIB,
        "resident memory since the start: {cold:?} → {after:?}"
    );
}

/// Runs the same workload (writes, reads and watches) until the ConfigMap watch cache's ring of
/// events is full and its events carry the encodings watches memoize, so that what the load
/// then adds is what the server does not give back. Returns the number of requests made.
async fn warm_up(server: &Server) -> u64 {
    // Each client's round is 34 requests of which 24 are writes (one event each).
    let ring = storage::cacher::DEFAULT_EVENT_CAPACITY as u64;
    let requests = (ring + ring / 10) * 34 / 24;
    let load = Load::start(server);
    let started = Instant::now();
    while load.ops.load(Ordering::Relaxed) < requests {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the warm-up made {} of {requests} requests in 300 s",
            load.ops.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    load.stop().await.0
}

/// The clients' tasks: per client a `crud` task and a `watches` task, each client with its own
/// connections, dropped with it when the load stops.
struct Load {
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    opened: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(server: &Server) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let opened = Arc::new(AtomicU64::new(0));
        let base = Arc::new(server.base.clone());
        let mut tasks = Vec::new();
        for id in 0..CLIENTS {
            let client = server.admin();
            tasks.push(tokio::spawn(crud(
                base.clone(),
                client.clone(),
                id,
                stop.clone(),
                ops.clone(),
            )));
            tasks.push(tokio::spawn(watches(
                base.clone(),
                client,
                stop.clone(),
                opened.clone(),
            )));
        }
        Load {
            stop,
            ops,
            opened,
            tasks,
        }
    }

    /// True while every client is still running.
    fn running(&self) -> bool {
        self.tasks.iter().all(|t| !t.is_finished())
    }

    /// Stops the clients and waits for them; returns the requests made and watches opened.
    async fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        }
        (
            self.ops.load(Ordering::Relaxed),
            self.opened.load(Ordering::Relaxed),
        )
    }
}
