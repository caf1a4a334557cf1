//! The embedded store on a full disk (a small tmpfs, mounted by the test: it runs as root, as
//! on CI, and fails loudly when it cannot mount): writes fail with an error naming the cause,
//! reads keep working, nothing acknowledged is lost, revisions are not reused, and once space is
//! freed writes succeed again without reopening the backend by hand.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::backend::{Backend, Condition, RangeRequest, TxnOutcome, WatchItem, WatchRequest};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("running mount: {e}"));
        assert!(
            out.status.success(),
            "mounting a {size} tmpfs on {} failed (the test needs root): {}",
            dir.path().display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn data_dir(fs: &Tmpfs) -> PathBuf {
    fs.path().join("data")
}

fn no_space(err: &storage::StorageError) -> bool {
    err.to_string().contains("No space left on device")
}

async fn put(backend: &EmbeddedBackend, key: &str, value: &Bytes) -> storage::Result<i64> {
    match backend
        .put(key, value.clone(), Condition::Absent, None)
        .await?
    {
        TxnOutcome::Committed { revision, .. } => Ok(revision),
        other => panic!("{key}: not committed: {other:?}"),
    }
}

/// Checks that every acknowledged key holds its revision.
async fn check_acknowledged(backend: &EmbeddedBackend, acknowledged: &[(String, i64)]) {
    let all = backend
        .range(RangeRequest {
            prefix: "/k/".to_string(),
            start: "/k/".to_string(),
            limit: 0,
            revision: 0,
        })
        .await
        .expect("range");
    let stored: Vec<(String, i64)> = all
        .kvs
        .iter()
        .map(|kv| (kv.key.clone(), kv.mod_revision))
        .collect();
    for (key, revision) in acknowledged {
        assert!(
            stored.contains(&(key.clone(), *revision)),
            "{key} at {revision} was acknowledged but is not stored"
        );
    }
}

#[tokio::test]
async fn writes_fail_on_a_full_disk_and_resume_when_space_is_freed() {
    let fs = Tmpfs::mount("4m");
    let filler = fs.path().join("filler");
    std::fs::write(&filler, vec![0u8; 1 << 20]).expect("filler");
    let backend = EmbeddedBackend::open(EmbeddedOptions::new(data_dir(&fs))).expect("open");
    let start = backend.current_revision().await.expect("revision");
    let mut watch = backend
        .watch(WatchRequest {
            prefix: "/k/".to_string(),
            start_revision: start + 1,
            progress_interval: None,
            progress_requests: None,
        })
        .await
        .expect("watch");
    let value = Bytes::from(vec![b'x'; 64 * 1024]);

    // Fill the disk: the failing write names the cause.
    let mut acknowledged = Vec::new();
    let failure = loop {
        let key = format!("/k/{}", acknowledged.len());
        match put(&backend, &key, &value).await {
            Ok(revision) => acknowledged.push((key, revision)),
            Err(e) => break e,
        }
        assert!(acknowledged.len() < 100, "the 4 MiB disk never filled up");
    };
    assert!(no_space(&failure), "{failure}");
    eprintln!(
        "{} writes acknowledged, then: {failure}",
        acknowledged.len()
    );
    // Later writes fail the same way (failing at once between the writer's retries), and reads
    // keep answering.
    for _ in 0..4 {
        let err = put(&backend, "/k/full", &value)
            .await
            .expect_err("disk full");
        assert!(no_space(&err), "{err}");
        for (key, revision) in &acknowledged {
            let got = backend
                .get(key, 0)
                .await
                .expect("read while the disk is full");
            assert_eq!(got.kv.map(|kv| kv.mod_revision), Some(*revision), "{key}");
        }
        check_acknowledged(&backend, &acknowledged).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Space freed: writes succeed again, with revisions above every acknowledged one.
    std::fs::remove_file(&filler).expect("free");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let resumed = loop {
        match put(&backend, "/k/resumed", &Bytes::from_static(b"small")).await {
            Ok(revision) => break revision,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "writes never resumed: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let last = acknowledged.last().map_or(start, |(_, r)| *r);
    assert_eq!(resumed, last + 1, "no revision was skipped or reused");
    check_acknowledged(&backend, &acknowledged).await;

    // The watch saw every acknowledged write and the resumed one, in order, without gap.
    let mut seen = Vec::new();
    while seen.last() != Some(&resumed) {
        let item = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("watch item in time")
            .expect("watch open")
            .expect("watch item");
        if let WatchItem::Events(events) = item {
            seen.extend(events.iter().map(|e| e.mod_revision));
        }
    }
    let expected: Vec<i64> = (start + 1..=resumed).collect();
    assert_eq!(seen, expected);

    // After a restart everything acknowledged is there. (The watcher task lets the database
    // go once it finds its stream dropped, at the next batch.)
    drop(watch);
    put(&backend, "/k/last", &Bytes::from_static(b"small"))
        .await
        .expect("write");
    drop(backend);
    let backend = loop {
        match EmbeddedBackend::open(EmbeddedOptions::new(data_dir(&fs))) {
            Ok(backend) => break backend,
            Err(e) => {
                assert!(std::time::Instant::now() < deadline, "reopen: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert_eq!(
        backend.current_revision().await.expect("revision"),
        resumed + 1
    );
    check_acknowledged(&backend, &acknowledged).await;
    drop(backend);
}
