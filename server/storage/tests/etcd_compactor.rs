//! The compactor's election on a real etcd: two compactors (two replicas' backends) on one
//! etcd, as kube-apiserver replicas share `compact_rev_key`. Starts its own etcd, since
//! compacting a shared one would expire other tests' historical reads.

use bytes::Bytes;
use storage::StorageError;
use storage::backend::{Backend, Condition};
use storage::compactor::{COMPACT_REV_KEY, CompactorState, Round, round};
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};

async fn write(backend: &EtcdBackend, n: usize) {
    for i in 0..n {
        backend
            .put(
                "/registry/k",
                Bytes::from(i.to_string()),
                Condition::Always,
                None,
            )
            .await
            .expect("put");
    }
}

/// The version and value of `compact_rev_key`.
async fn claim_key(backend: &EtcdBackend) -> (i64, String) {
    let mut client = backend.client();
    let response = client.get(COMPACT_REV_KEY, None).await.expect("get");
    let kv = response.kvs().first().expect("compact_rev_key exists");
    (kv.version(), kv.value_str().expect("utf-8").to_string())
}

#[tokio::test]
async fn two_compactors_on_one_etcd_compact_once_per_interval() {
    let etcd = EtcdProcess::start().expect("etcd must be installed and start");
    let connect = || async {
        EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
            .await
            .expect("connect")
    };
    let (a, b) = (connect().await, connect().await);
    let (mut sa, mut sb) = (CompactorState::default(), CompactorState::default());

    // Interval 1: a claims (nothing recorded yet, so nothing compacted); b learns the version.
    write(&a, 3).await;
    assert_eq!(round(&a, &mut sa).await.expect("round"), Round::Nothing);
    assert_eq!(round(&b, &mut sb).await.expect("round"), Round::Nothing);
    assert_eq!((sa.version, sb.version), (1, 1));
    let recorded_a = sa.revision;
    assert!(sb.revision >= recorded_a);

    // Interval 2: a compacts to the revision it recorded an interval before; b does not
    // compact and learns where a compacted.
    write(&b, 3).await;
    assert_eq!(
        round(&a, &mut sa).await.expect("round"),
        Round::Compacted(recorded_a)
    );
    assert_eq!(
        round(&b, &mut sb).await.expect("round"),
        Round::CompactedElsewhere(recorded_a)
    );
    assert_eq!(claim_key(&a).await, (2, recorded_a.to_string()));
    assert_eq!(a.compacted_revision().await.expect("compacted"), recorded_a);
    assert!(matches!(
        b.get("/registry/k", recorded_a - 1).await,
        Err(StorageError::Expired { .. })
    ));
    assert!(b.get("/registry/k", recorded_a).await.is_ok());
    assert!(
        b.get("/registry/k", 0)
            .await
            .expect("current read")
            .kv
            .is_some()
    );

    // Interval 3, b first (a stopped or is late): b claims and compacts to what it recorded at
    // interval 2; a then loses.
    write(&a, 3).await;
    let recorded_b = sb.revision;
    assert!(recorded_b > recorded_a);
    assert_eq!(
        round(&b, &mut sb).await.expect("round"),
        Round::Compacted(recorded_b)
    );
    assert_eq!(
        round(&a, &mut sa).await.expect("round"),
        Round::CompactedElsewhere(recorded_b)
    );
    assert_eq!(claim_key(&a).await, (3, recorded_b.to_string()));
    assert_eq!(b.compacted_revision().await.expect("compacted"), recorded_b);
}
