//! Tests of the writer: stored counters and bytes after every kind of commit, the space
//! quota, and the instruction-count probe.

use super::*;

fn shared(dir: &std::path::Path) -> Arc<Shared> {
    let path = dir.join("probe.redb");
    let db = redb::Database::create(&path).expect("create");
    let counters = super::super::initialize(&db).expect("initialize");
    let leases = super::super::leases::Leases::load(&db).expect("leases");
    let stored = crate::embedded::stored_bytes(&db).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(Shared::new(db, path, 1 << 20, 16, counters, leases, stored))
}

fn create_batch(commit: usize, size: usize, value: &Bytes) -> Vec<Request> {
    (0..size)
        .map(|i| Request::Write {
            key: format!("/registry/example.dev/widgets/bench/w{i}-{commit}"),
            op: WriteOp::Put {
                value: value.clone(),
                ttl: None,
            },
            condition: Condition::Absent,
            reply: oneshot::channel().0,
        })
        .collect()
}

fn write(key: &str, value: &'static [u8], ttl: Option<u64>, condition: Condition) -> Request {
    Request::Write {
        key: key.to_string(),
        op: WriteOp::Put {
            value: Bytes::from_static(value),
            ttl,
        },
        condition,
        reply: oneshot::channel().0,
    }
}

/// The counters in the `meta` table of the last commit.
fn stored(shared: &Shared) -> (Revision, Revision, Revision) {
    let txn = shared.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let get = |name: &str| {
        meta.get(name)
            .expect("get")
            .map_or(0, |v| v.value() as Revision)
    };
    (get(META_REVISION), get(META_COMPACTED), get(META_LOG_FLOOR))
}

/// The writer takes its counters from memory and writes only those that changed: after
/// every kind of commit (writes, failed writes only, TTL sweep, explicit and automatic
/// compaction, an empty sweep) the stored counters equal the in-memory ones, and a reopen
/// reads them back.
#[test]
fn stored_counters_follow_every_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = shared(dir.path());
    let settings = WriterSettings {
        sweep_interval: Duration::from_secs(1),
        retained_revisions: 4,
        quota_bytes: 0,
    };
    let check = |expected: (Revision, Revision, Revision)| {
        assert_eq!(counters(&shared), expected);
        assert_eq!(stored(&shared), expected);
    };
    check((1, 0, 0));
    commit_batch(&shared, vec![], true, &settings).expect("commit");
    check((1, 0, 0));
    let batch = vec![
        write("/a", b"1", None, Condition::Absent),
        write("/t", b"1", Some(1), Condition::Absent),
    ];
    commit_batch(&shared, batch, false, &settings).expect("commit");
    check((3, 0, 0));
    // Only failed writes: nothing changes.
    commit_batch(
        &shared,
        vec![write("/a", b"2", None, Condition::Absent)],
        false,
        &settings,
    )
    .expect("commit");
    check((3, 0, 0));
    let (reply, _rx) = oneshot::channel();
    let compact = Request::Compact { revision: 2, reply };
    commit_batch(&shared, vec![compact], false, &settings).expect("commit");
    check((3, 2, 2));
    std::thread::sleep(Duration::from_millis(1100));
    commit_batch(&shared, vec![], true, &settings).expect("commit");
    check((4, 2, 2));
    for i in 0..3 {
        let batch = vec![write("/a", b"3", None, Condition::Always)];
        commit_batch(&shared, batch, i == 0, &settings).expect("commit");
    }
    // Automatic compaction keeps 4 revisions.
    check((7, 3, 3));
    let shared = Arc::into_inner(shared).expect("sole owner");
    let db = shared.take_database().expect("open");
    assert_eq!(super::super::initialize(&db).expect("reopen"), (7, 3, 3));
    shared.set_database(db);
    // Every retained revision has its history row, and none below the floor remains.
    use redb::ReadableTableMetadata;
    let txn = shared.begin_read().expect("read");
    let log = txn.open_table(LOG).expect("log");
    assert_eq!(log.len().expect("len"), 5);
    assert_eq!(log.first().expect("first").map(|(k, _)| k.value()), Some(3));
}

/// A write request whose answer the test reads.
fn answered(key: &str, op: WriteOp) -> (Request, oneshot::Receiver<Result<TxnOutcome>>) {
    let (reply, rx) = oneshot::channel();
    let request = Request::Write {
        key: key.to_string(),
        op,
        condition: Condition::Always,
        reply,
    };
    (request, rx)
}

fn put(value: &[u8]) -> WriteOp {
    WriteOp::Put {
        value: Bytes::copy_from_slice(value),
        ttl: None,
    }
}

/// The writer's count of stored bytes equals what redb counts after creates, updates that
/// grow and shrink a value, deletes, TTL expiry and history compaction.
#[test]
fn the_stored_bytes_follow_every_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = shared(dir.path());
    let settings = WriterSettings {
        sweep_interval: Duration::from_secs(1),
        retained_revisions: 6,
        quota_bytes: 0,
    };
    let check = |shared: &Shared| {
        let db = shared.db.read();
        let counted = crate::embedded::stored_bytes(db.as_ref().expect("open")).expect("stats");
        assert_eq!(shared.stored_bytes.load(Ordering::Acquire), counted);
    };
    check(&shared);
    let batch = vec![
        write("/a", b"0123456789", None, Condition::Absent),
        write("/b", b"x", None, Condition::Absent),
        write("/t", b"expiring", Some(1), Condition::Absent),
    ];
    commit_batch(&shared, batch, false, &settings).expect("commit");
    check(&shared);
    let batch = vec![
        write(
            "/a",
            b"a much longer value than before",
            None,
            Condition::Always,
        ),
        write("/b", b"", None, Condition::Always),
        answered("/a", WriteOp::Delete).0,
    ];
    commit_batch(&shared, batch, false, &settings).expect("commit");
    check(&shared);
    std::thread::sleep(Duration::from_millis(1100));
    commit_batch(&shared, vec![], true, &settings).expect("sweep");
    check(&shared);
    // Enough revisions for automatic compaction to remove history rows.
    for i in 0..8 {
        let batch = vec![write("/c", b"some value", None, Condition::Always)];
        commit_batch(&shared, batch, i % 2 == 0, &settings).expect("commit");
        check(&shared);
    }
    assert!(
        shared.log_floor.load(Ordering::Acquire) > 0,
        "history was trimmed"
    );
}

/// A put of more than etcd's 1.5 MiB request limit is refused alone, whatever the quota.
#[test]
fn a_put_larger_than_etcd_accepts_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = shared(dir.path());
    let settings = WriterSettings {
        sweep_interval: Duration::from_secs(1),
        retained_revisions: 100,
        quota_bytes: 0,
    };
    let (fits, fits_rx) = answered("/k", put(&vec![b'v'; MAX_WRITE_BYTES - 2]));
    let (big, big_rx) = answered("/k2", put(&vec![b'v'; MAX_WRITE_BYTES - 2]));
    commit_batch(&shared, vec![fits, big], false, &settings).expect("commit");
    assert!(matches!(
        fits_rx.blocking_recv(),
        Ok(Ok(TxnOutcome::Committed { .. }))
    ));
    match big_rx.blocking_recv() {
        Ok(Err(StorageError::TooLarge { size, limit })) => {
            assert_eq!((size, limit), (MAX_WRITE_BYTES + 1, MAX_WRITE_BYTES));
        }
        other => panic!("{other:?}"),
    }
}

/// At the quota a put is refused alone (the batch's other writes commit) while deletes go
/// on; compaction of the history they leave makes room again.
#[test]
fn a_put_past_the_quota_is_refused_and_deletes_make_room() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = shared(dir.path());
    let mut settings = WriterSettings {
        sweep_interval: Duration::from_secs(1),
        retained_revisions: 100,
        quota_bytes: 0,
    };
    let value = [b'v'; 1000];
    for i in 0..4 {
        let batch = vec![write(
            &format!("/k{i}"),
            &[b'v'; 1000],
            None,
            Condition::Absent,
        )];
        commit_batch(&shared, batch, false, &settings).expect("commit");
    }
    let used = shared.stored_bytes.load(Ordering::Acquire);
    // Room for one more such object (its row and its history), not two.
    settings.quota_bytes = used + 2 * 1100;
    let (fits, fits_rx) = answered("/k4", put(&value));
    let (over, mut over_rx) = answered("/k5", put(&value));
    let (small, small_rx) = answered("/k6", put(b"s"));
    commit_batch(&shared, vec![fits, over, small], false, &settings).expect("commit");
    assert!(matches!(
        fits_rx.blocking_recv(),
        Ok(Ok(TxnOutcome::Committed { .. }))
    ));
    match over_rx.try_recv() {
        Ok(Err(StorageError::SpaceExceeded { message })) => {
            assert!(message.contains("database space exceeded"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        small_rx.blocking_recv(),
        Ok(Ok(TxnOutcome::Committed { .. }))
    ));
    // Deletes are accepted at the quota...
    let (delete, delete_rx) = answered("/k0", WriteOp::Delete);
    let (retry, retry_rx) = answered("/k5", put(&value));
    commit_batch(&shared, vec![delete, retry], false, &settings).expect("commit");
    assert!(matches!(
        delete_rx.blocking_recv(),
        Ok(Ok(TxnOutcome::Committed { .. }))
    ));
    assert!(matches!(
        retry_rx.blocking_recv(),
        Ok(Err(StorageError::SpaceExceeded { .. }))
    ));
    // ...and once their history is compacted, the put fits.
    let current = shared.current.load(Ordering::Acquire);
    let (compact, _rx) = oneshot::channel();
    let compact = Request::Compact {
        revision: current,
        reply: compact,
    };
    commit_batch(&shared, vec![compact], false, &settings).expect("compact");
    let (retry, retry_rx) = answered("/k5", put(&value));
    commit_batch(&shared, vec![retry], false, &settings).expect("commit");
    assert!(matches!(
        retry_rx.blocking_recv(),
        Ok(Ok(TxnOutcome::Committed { .. }))
    ));
}

#[inline(never)]
fn probe_commits(shared: &Shared, batches: Vec<Vec<Request>>, settings: &WriterSettings) {
    for batch in batches {
        commit_batch(shared, batch, false, settings).expect("commit");
    }
}

/// Fixed-shape commits each assign one revision per create; also the writer's
/// instruction-count probe: run the test binary under
/// `valgrind --tool=callgrind --toggle-collect='*probe_commits*'` with `APIARY_IR_BATCH`
/// creates per commit (default 4) for `APIARY_IR_COMMITS` commits (default 10), after as
/// many unmeasured commits of the same shape.
#[test]
fn ir_probe() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let size = env("APIARY_IR_BATCH", 4);
    let commits = env("APIARY_IR_COMMITS", 10);
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = shared(dir.path());
    let settings = WriterSettings {
        sweep_interval: Duration::from_secs(1),
        retained_revisions: 100_000,
        quota_bytes: 0,
    };
    let value = Bytes::from(vec![b'x'; 512]);
    for c in 0..commits {
        commit_batch(&shared, create_batch(c, size, &value), false, &settings).expect("commit");
    }
    let batches = (commits..2 * commits)
        .map(|c| create_batch(c, size, &value))
        .collect();
    probe_commits(&shared, batches, &settings);
    let expected = 1 + 2 * commits * size;
    assert_eq!(shared.current.load(Ordering::Acquire), expected as Revision);
}
