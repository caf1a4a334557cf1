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
//!   one replica killed and restarted while the other serves;
//! - the embedded store on a slow disk (the `fsync-delay` fault of `server/src/fault.rs`), the
//!   server killed while its commits are slow, restarted, slow again, then fast;
//! - the embedded store on a full disk (a small tmpfs the test mounts, as root; padded writes
//!   fill it), writes failing with 500 while reads go on, then space freed and writes resuming.
//!
//! Every read kind is in each run: consistent and `resourceVersion=0` gets and lists, served by
//! the watch cache in front of each storage. Uses `tools/etcd-test-server` for etcd.

mod common;

use std::time::{Duration, Instant};

use checker::history::{History, Input, Operation, Output};
use common::history::{self, Config, Recorder, Targets};
use common::tmpfs::Tmpfs;
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

/// Two replicas over one etcd with `flags`, the second sharing the first one's CA and
/// credentials, their data directories under `tmp`.
fn two_replicas(tmp: &std::path::Path, flags: &[&str]) -> (Server, Server) {
    let a = start_in(&tmp.join("a"), flags);
    copy_dir(&tmp.join("a/pki"), &tmp.join("b/pki"));
    let b = start_in(&tmp.join("b"), flags);
    (a, b)
}

/// Checks the history and that the run exercised every kind of operation and event.
fn check(name: &str, history: &checker::history::History, seed: u64, started: Instant) {
    let counts = history::check(name, history, seed);
    println!("{name}: ran for {:?}", started.elapsed());
    history::assert_exercised(&counts);
}

/// Whether `input` writes.
fn is_write(input: &Input) -> bool {
    matches!(
        input,
        Input::Create { .. } | Input::Update { .. } | Input::Patch { .. } | Input::Delete { .. }
    )
}

/// Whether `operation` was answered with an outcome (anything but no answer or a 5xx).
fn has_outcome(operation: &Operation) -> bool {
    operation.ret.is_some() && operation.output != Output::Unknown
}

/// The operations of `history` called from `from` to `to` (recorder times) that `pick` selects.
fn count(history: &History, from: u64, to: u64, pick: impl Fn(&Operation) -> bool) -> usize {
    history
        .operations
        .iter()
        .filter(|op| (from..to).contains(&op.call) && pick(op))
        .count()
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
async fn etcd_paused_under_load() {
    let seed = history::seed();
    let started = Instant::now();
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    // One server over etcd (the replicated runs follow); etcd stops for longer than a
    // client's request timeout, so the requests waiting on it time out.
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = start_in(&tmp.path().join("a"), &[&servers]);
    let config = Config {
        expires: true,
        ..Config::default()
    };
    let recorder = Recorder::start(Targets::new(&[&server]), config, seed).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let from = recorder.now();
    etcd.pause();
    tokio::time::sleep(Duration::from_secs(6)).await;
    etcd.resume();
    let to = recorder.now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let history = recorder.finish().await;
    check("etcd-pause-single", &history, seed, started);
    history::assert_fault_felt(&history, from, to);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_etcd_paused_under_load_with_compaction() {
    let seed = history::seed();
    let started = Instant::now();
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    // Two replicas, both compacting every 3 s (one of them wins each round, as among
    // kube-apiservers), with clients and watches on both.
    let flags = [servers.as_str(), "--etcd-compaction-interval=3s"];
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = two_replicas(tmp.path(), &flags);
    let config = Config {
        expires: true,
        ..Config::default()
    };
    let recorder = Recorder::start(Targets::new(&[&a, &b]), config, seed).await;
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
    let (a, b) = two_replicas(tmp.path(), &[&servers]);
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

/// How long each embedded commit waits in the slow-disk run.
#[cfg(feature = "fault-injection")]
const FSYNC_DELAY: Duration = Duration::from_millis(200);

// The fsync-delay fault exists only in builds with the `fault-injection` feature (every
// `tools/test` build: `--all-features`); the default build has no such test.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_slow_fsync_under_load() {
    let seed = history::seed();
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("data");
    let mut server = start_in(&dir, &[]);
    let targets = Targets::new(&[&server]);
    let recorder = Recorder::start(targets.clone(), Config::default(), seed).await;
    let delay = format!("{}ms", FSYNC_DELAY.as_millis());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let from = recorder.now();
    server.set_fsync_delay(&delay).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The writes waiting on a slow commit are in flight when the server dies.
    let killed = recorder.now();
    server.kill();
    server = start_in(&dir, &[]);
    targets.replace(0, &server);
    let rv = recorder.warm().await;
    recorder.expired_below(rv);
    // The delay is the process's: the restarted server commits at full speed until told again.
    server.set_fsync_delay(&delay).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.set_fsync_delay("0").await;
    let to = recorder.now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let history = recorder.finish().await;
    check("embedded-slow-fsync", &history, seed, started);
    history::assert_fault_felt(&history, from, to);
    let slow = count(&history, from, to, |op| {
        is_write(&op.input)
            && has_outcome(op)
            && op
                .ret
                .is_some_and(|ret| ret - op.call >= FSYNC_DELAY.as_nanos() as u64)
    });
    let cut = count(&history, from, killed, |op| {
        is_write(&op.input) && op.ret.is_none()
    });
    println!(
        "embedded-slow-fsync: {slow} writes answered after a slow commit, {cut} cut by the kill"
    );
    assert!(slow > 0, "no write waited for a slow commit");
    assert!(cut > 0, "no write was in flight at the kill");
}

/// Fills the file system of `path` with the file `path`, then frees `slack` bytes of it.
fn fill(path: &std::path::Path, slack: u64) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap_or_else(|e| panic!("{e}"));
    let chunk = vec![0u8; 1 << 20];
    let mut written = 0u64;
    loop {
        match file.write(&chunk) {
            Ok(n) => written += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    file.set_len(written.saturating_sub(slack))
        .unwrap_or_else(|e| panic!("{e}"));
    println!("filler of {} MiB", (written - slack) >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_disk_full_under_load() {
    let seed = history::seed();
    let started = Instant::now();
    let fs = Tmpfs::mount("128m");
    let server = start_in(&fs.path().join("data"), &[]);
    let config = Config {
        padding: 64 * 1024,
        padded_percent: 20,
        ..Config::default()
    };
    let recorder = Recorder::start(Targets::new(&[&server]), config, seed).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Most of the space goes to a filler; the padded writes run the rest full.
    let filler = fs.path().join("filler");
    tokio::task::block_in_place(|| fill(&filler, 2 << 20));
    let full = recorder.now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    std::fs::remove_file(&filler).unwrap_or_else(|e| panic!("{e}"));
    let freed = recorder.now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let history = recorder.finish().await;
    check("embedded-disk-full", &history, seed, started);
    let failed = |op: &Operation| is_write(&op.input) && op.ret.is_some() && !has_outcome(op);
    let failed_full = count(&history, full, freed, failed);
    let first_failure = history
        .operations
        .iter()
        .filter(|op| op.call >= full && failed(op))
        .map(|op| op.call)
        .min()
        .unwrap_or(freed);
    let read = |op: &Operation| !is_write(&op.input) && has_outcome(op);
    let reads_full = count(&history, first_failure, freed, read);
    let written_after = count(&history, freed, u64::MAX, |op| {
        matches!(op.output, Output::Written { .. } | Output::Deleted)
    });
    println!(
        "embedded-disk-full: full after {:?}: {failed_full} writes failed with 5xx, {reads_full} reads \
         answered; {written_after} writes took effect once space was freed",
        Duration::from_nanos(first_failure - full)
    );
    assert!(failed_full > 0, "no write failed on the full disk");
    assert!(
        reads_full > 0,
        "no read was answered while the disk was full"
    );
    assert!(written_after > 0, "no write succeeded once space was freed");
}
