//! Issue 11, "prove it under faults": short checked runs of the real binary, each with faults
//! injected while concurrent clients and watchers record a history (`common::history`) that
//! `checker::check` then judges: every history linearizable, every watch keeping its
//! guarantees, and nothing acknowledged lost (the final reads are part of the history).
//!
//! - the embedded store, `kill -9` of the server under write load, restarted on the same data
//!   directory (`APIARY_KILL_ROUNDS` rounds, 3 by default; the soak mode is
//!   `APIARY_KILL_ROUNDS=100`);
//! - one server on etcd with a short compaction interval, etcd frozen (SIGSTOP) and resumed;
//! - two replicas on one etcd, etcd killed (SIGKILL) and restarted on its data directory, then
//!   one replica killed and restarted while the other serves.
//!
//! Every read kind is in each run: consistent and `resourceVersion=0` gets and lists, served by
//! the watch cache in front of each storage. Uses `tools/etcd-test-server` for etcd.

mod common;

use std::time::{Duration, Instant};

use common::history::{self, Config, Recorder, Targets};
use common::{Etcd, Server, copy_dir};

/// How many kill rounds the embedded run does (`APIARY_KILL_ROUNDS`, default 3).
fn kill_rounds() -> usize {
    std::env::var("APIARY_KILL_ROUNDS")
        .ok()
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|e| panic!("APIARY_KILL_ROUNDS={n}: {e}"))
        })
        .unwrap_or(3)
}

/// Starts a server on `dir` from inside the test's runtime (starting blocks until ready).
fn start_in(dir: &std::path::Path, args: &[&str]) -> Server {
    tokio::task::block_in_place(|| Server::start_in(dir, args))
}

/// Checks the history and that the run exercised every kind of operation and event.
fn check(name: &str, history: &checker::history::History, seed: u64, started: Instant) {
    let counts = history::check(name, history, seed);
    println!("{name}: ran for {:?}", started.elapsed());
    history::assert_exercised(&counts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_kill_9_under_load() {
    let seed = history::seed();
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("data");
    let mut server = start_in(&dir, &[]);
    let targets = Targets::new(&[&server]);
    let recorder = Recorder::start(targets.clone(), Config::default(), seed).await;
    let mut rng = history::Rng::new(seed ^ 0x6b69_6c6c);
    let mut faults = Vec::new();
    for round in 0..kill_rounds() {
        tokio::time::sleep(Duration::from_millis(1500) + rng.duration(Duration::from_secs(2)))
            .await;
        let from = recorder.now();
        server.kill();
        let down = Instant::now();
        server = start_in(&dir, &[]);
        targets.replace(0, &server);
        faults.push((from, recorder.now()));
        // The restarted server's watch cache holds no history from before its initial list.
        let rv = recorder.warm().await;
        recorder.expired_below(rv);
        println!("round {round}: killed, back in {:?}", down.elapsed());
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let history = recorder.finish().await;
    check("embedded-kill", &history, seed, started);
    for (from, to) in faults {
        history::assert_fault_felt(&history, from, to);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_paused_under_load_with_compaction() {
    let seed = history::seed();
    let started = Instant::now();
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let server =
        tokio::task::block_in_place(|| Server::start(&[&servers, "--etcd-compaction-interval=3s"]));
    let config = Config {
        expires: true,
        ..Config::default()
    };
    let recorder = Recorder::start(Targets::new(&[&server]), config, seed).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Longer than a client's request timeout: the requests waiting on etcd time out.
    let from = recorder.now();
    etcd.pause();
    tokio::time::sleep(Duration::from_secs(7)).await;
    etcd.resume();
    let to = recorder.now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let history = recorder.finish().await;
    check("etcd-pause", &history, seed, started);
    history::assert_fault_felt(&history, from, to);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_etcd_killed_and_restarted_under_load() {
    let seed = history::seed();
    let started = Instant::now();
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = start_in(&tmp.path().join("a"), &[&servers]);
    // The second replica shares the first one's CA and credentials.
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let b = start_in(&tmp.path().join("b"), &[&servers]);
    let config = Config {
        expires: true,
        ..Config::default()
    };
    let targets = Targets::new(&[&a, &b]);
    let recorder = Recorder::start(targets.clone(), config, seed).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let from = recorder.now();
    tokio::task::block_in_place(|| etcd.crash_and_restart(Duration::from_secs(2)));
    let to = recorder.now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Then replica b crashes and comes back while a keeps serving: its watch cache starts
    // afresh from etcd, and watches resume across the replicas.
    let mut b = b;
    let b_from = recorder.now();
    b.kill();
    let b = start_in(&tmp.path().join("b"), &[&servers]);
    targets.replace(1, &b);
    let b_to = recorder.now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let history = recorder.finish().await;
    check("replicas-etcd-kill", &history, seed, started);
    history::assert_fault_felt(&history, from, to);
    history::assert_fault_felt(&history, b_from, b_to);
}
