//! Kill -9 durability of the embedded backend.
//!
//! The test binary re-executes itself as a child (selected by an environment variable) that
//! runs 64 concurrent writers against a data directory and prints every acknowledged write as
//! `ACK <key> <revision>`. The parent SIGKILLs the child mid-flight, reopens the directory and
//! checks that every acknowledged write is present at its revision and that revisions never go
//! backwards across restarts. Several cycles reuse the same directory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::backend::{Backend, Condition, TxnOutcome};
use storage::embedded::EmbeddedBackend;

const CHILD_DIR_ENV: &str = "APIARY_DURABILITY_CHILD_DIR";
const CHILD_CYCLE_ENV: &str = "APIARY_DURABILITY_CHILD_CYCLE";
const WRITERS: usize = 64;
const CYCLES: usize = 4;
/// Acknowledgements to wait for before killing the child.
const ACKS_BEFORE_KILL: usize = 3000;

fn main() {
    if let Ok(dir) = std::env::var(CHILD_DIR_ENV) {
        let cycle = std::env::var(CHILD_CYCLE_ENV).unwrap_or_default();
        child(&dir, &cycle);
        return;
    }
    parent();
    println!("durability: ok");
}

/// Writes until killed (or for 60 seconds), printing each acknowledged write.
fn child(dir: &str, cycle: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let backend = Arc::new(EmbeddedBackend::open_dir(dir).expect("open in child"));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let backend = Arc::clone(&backend);
            let cycle = cycle.to_string();
            tasks.push(tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let key = format!("/registry/durability/c{cycle}-w{w}-{n}");
                    let value = Bytes::from(format!("value-{cycle}-{w}-{n}"));
                    match backend.put(&key, value, Condition::Absent, None).await {
                        Ok(TxnOutcome::Committed { revision, .. }) => {
                            let mut out = std::io::stdout().lock();
                            let _ = writeln!(out, "ACK {key} {revision}");
                            let _ = out.flush();
                        }
                        other => panic!("unexpected write outcome {other:?}"),
                    }
                    n += 1;
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

fn parent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("current exe");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut floor = 0i64;
    let mut total_acked = 0usize;
    for cycle in 0..CYCLES {
        let mut child = Command::new(&exe)
            .env(CHILD_DIR_ENV, dir.path())
            .env(CHILD_CYCLE_ENV, cycle.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let (tx, rx) = std::sync::mpsc::channel::<(String, i64)>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut parts = line.split(' ');
                if let (Some("ACK"), Some(key), Some(rev)) =
                    (parts.next(), parts.next(), parts.next())
                    && let Ok(rev) = rev.parse::<i64>()
                {
                    let _ = tx.send((key.to_string(), rev));
                }
            }
        });
        let mut acked = Vec::new();
        let started = Instant::now();
        while acked.len() < ACKS_BEFORE_KILL {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(ack) => acked.push(ack),
                Err(_) => panic!("cycle {cycle}: child produced only {} acks", acked.len()),
            }
        }
        // SIGKILL while the writers are still running.
        child.kill().expect("kill -9 child");
        let status = child.wait().expect("wait child");
        assert!(
            !status.success(),
            "cycle {cycle}: child must die by the signal"
        );
        reader.join().expect("reader thread");
        // Every line the child printed before dying was acknowledged.
        acked.extend(rx.try_iter());
        let elapsed = started.elapsed();
        let max_acked = acked.iter().map(|(_, r)| *r).max().unwrap_or(0);
        runtime.block_on(async {
            let backend = EmbeddedBackend::open_dir(dir.path()).expect("reopen after kill -9");
            let current = backend.current_revision().await.expect("revision");
            assert!(current >= max_acked, "cycle {cycle}: revision went backwards: {current} < acknowledged {max_acked}");
            assert!(current >= floor, "cycle {cycle}: revision went backwards: {current} < previous {floor}");
            let mut revisions = std::collections::HashSet::new();
            for (key, rev) in &acked {
                assert!(revisions.insert(*rev), "cycle {cycle}: revision {rev} acknowledged twice");
                let got = backend.get(key, 0).await.expect("get").kv;
                let kv = got.unwrap_or_else(|| panic!("cycle {cycle}: acknowledged write {key}@{rev} lost"));
                assert_eq!(kv.mod_revision, *rev, "cycle {cycle}: {key} has the wrong revision");
            }
            let next = match backend
                .put(&format!("/registry/durability/probe-{cycle}"), Bytes::from_static(b"p"), Condition::Absent, None)
                .await
                .expect("probe write")
            {
                TxnOutcome::Committed { revision, .. } => revision,
                other => panic!("probe not committed: {other:?}"),
            };
            assert!(next > current, "cycle {cycle}: new revision {next} not after {current}");
            floor = next;
            println!(
                "cycle {cycle}: {} acknowledged writes in {elapsed:?} all present; revision {current} -> {next}",
                acked.len()
            );
        });
        total_acked += acked.len();
    }
    assert!(total_acked >= CYCLES * ACKS_BEFORE_KILL);
}
