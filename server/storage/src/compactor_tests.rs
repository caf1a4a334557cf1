//! The compactor's election against a fake claim key shared by replicas, and its rounds on the
//! embedded store.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;

use super::*;
use crate::backend::{
    Condition, GetResponse, RangeRequest, RangeResponse, TxnOutcome, WatchRequest, WatchStream,
};
use crate::errors::StorageError;

/// The state one fake etcd keeps for the compactors: the claim key's version and value, the
/// revision (bumped by every successful claim, as the claim's put is a write) and every
/// compaction made, by replica.
#[derive(Default)]
struct Cluster {
    version: i64,
    value: Revision,
    revision: Revision,
    compactions: Vec<(usize, Revision)>,
}

/// One replica's view of the shared fake: it answers claims and compactions only.
struct Replica {
    id: usize,
    cluster: Arc<Mutex<Cluster>>,
}

fn not_used() -> StorageError {
    StorageError::internal("the compactor fake answers claims and compactions only")
}

#[async_trait]
impl Backend for Replica {
    async fn get(&self, _key: &str, _revision: Revision) -> Result<GetResponse> {
        Err(not_used())
    }
    async fn range(&self, _request: RangeRequest) -> Result<RangeResponse> {
        Err(not_used())
    }
    async fn put(
        &self,
        _key: &str,
        _value: Bytes,
        _condition: Condition,
        _ttl: Option<u64>,
    ) -> Result<TxnOutcome> {
        Err(not_used())
    }
    async fn delete(&self, _key: &str, _condition: Condition) -> Result<TxnOutcome> {
        Err(not_used())
    }
    async fn count(&self, _prefix: &str) -> Result<i64> {
        Err(not_used())
    }
    async fn watch(&self, _request: WatchRequest) -> Result<WatchStream> {
        Err(not_used())
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        self.cluster.lock().compactions.push((self.id, revision));
        Ok(())
    }
    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.cluster.lock().revision)
    }
    async fn compacted_revision(&self) -> Result<Revision> {
        Err(not_used())
    }
    async fn claim_compaction(
        &self,
        seen_version: i64,
        revision: Revision,
    ) -> Result<CompactionClaim> {
        let mut c = self.cluster.lock();
        if c.version != seen_version {
            return Ok(CompactionClaim {
                claimed: false,
                version: c.version,
                revision: c.revision,
                recorded: c.value,
            });
        }
        c.version += 1;
        c.value = revision;
        c.revision += 1;
        Ok(CompactionClaim {
            claimed: true,
            version: c.version,
            revision: c.revision,
            recorded: 0,
        })
    }
}

fn replicas(n: usize) -> (Arc<Mutex<Cluster>>, Vec<Replica>) {
    let cluster = Arc::new(Mutex::new(Cluster {
        revision: 100,
        ..Cluster::default()
    }));
    let replicas = (0..n)
        .map(|id| Replica {
            id,
            cluster: Arc::clone(&cluster),
        })
        .collect();
    (cluster, replicas)
}

/// Two replicas whose rounds alternate: one claims each interval, and it compacts to the
/// revision it recorded at the previous interval; the first claimed round compacts nothing.
#[tokio::test]
async fn one_replica_compacts_per_interval_to_the_previous_revision() {
    let (cluster, replicas) = replicas(2);
    let mut states = [CompactorState::default(); 2];
    let mut compacted = Vec::new();
    for interval in 0..4 {
        // Writes between intervals.
        cluster.lock().revision += 10;
        for (replica, state) in replicas.iter().zip(states.iter_mut()) {
            compacted.push((
                interval,
                replica.id,
                round(replica, state).await.expect("round"),
            ));
        }
    }
    // Replica 0 claims every interval (it runs first); replica 1 learns the version and the
    // revision replica 0 compacts to. Revisions: 110 before the first claim, whose put makes it
    // 111; 121 at the second, ...
    use Round::{Compacted, CompactedElsewhere, Nothing};
    assert_eq!(
        compacted,
        vec![
            (0, 0, Nothing),
            (0, 1, Nothing),
            (1, 0, Compacted(111)),
            (1, 1, CompactedElsewhere(111)),
            (2, 0, Compacted(122)),
            (2, 1, CompactedElsewhere(122)),
            (3, 0, Compacted(133)),
            (3, 1, CompactedElsewhere(133)),
        ]
    );
    let c = cluster.lock();
    assert_eq!(c.compactions, vec![(0, 111), (0, 122), (0, 133)]);
    assert_eq!((c.version, c.value), (4, 133));
}

/// When the replica that used to claim stops, another one takes over within two intervals,
/// and its first claimed round compacts to the revision it recorded when it lost.
#[tokio::test]
async fn another_replica_takes_over() {
    let (cluster, replicas) = replicas(2);
    let mut states = [CompactorState::default(); 2];
    for (replica, state) in replicas.iter().zip(states.iter_mut()) {
        round(replica, state).await.expect("round");
    }
    assert_eq!(states[1].version, 1, "the loser learned the version");
    // Replica 0 is gone; replica 1's next round claims and compacts to what it saw.
    let seen = states[1].revision;
    cluster.lock().revision += 5;
    let got = round(&replicas[1], &mut states[1]).await.expect("round");
    assert_eq!(got, Round::Compacted(seen));
    assert_eq!(cluster.lock().compactions, vec![(1, seen)]);
}

/// A failed claim leaves the state unchanged, so the next round tries the same claim.
#[tokio::test]
async fn a_failed_claim_keeps_the_state() {
    struct Failing;
    #[async_trait]
    impl Backend for Failing {
        async fn get(&self, _key: &str, _revision: Revision) -> Result<GetResponse> {
            Err(not_used())
        }
        async fn range(&self, _request: RangeRequest) -> Result<RangeResponse> {
            Err(not_used())
        }
        async fn put(
            &self,
            _key: &str,
            _value: Bytes,
            _condition: Condition,
            _ttl: Option<u64>,
        ) -> Result<TxnOutcome> {
            Err(not_used())
        }
        async fn delete(&self, _key: &str, _condition: Condition) -> Result<TxnOutcome> {
            Err(not_used())
        }
        async fn count(&self, _prefix: &str) -> Result<i64> {
            Err(not_used())
        }
        async fn watch(&self, _request: WatchRequest) -> Result<WatchStream> {
            Err(not_used())
        }
        async fn compact(&self, _revision: Revision) -> Result<()> {
            Err(not_used())
        }
        async fn current_revision(&self) -> Result<Revision> {
            Err(StorageError::unavailable("etcd is down"))
        }
        async fn compacted_revision(&self) -> Result<Revision> {
            Err(not_used())
        }
    }
    let mut state = CompactorState {
        version: 3,
        revision: 40,
    };
    assert!(round(&Failing, &mut state).await.is_err());
    assert_eq!(
        state,
        CompactorState {
            version: 3,
            revision: 40
        }
    );
}

/// On the embedded store every round claims: the second round compacts to the revision of the
/// first, so reads below it are `Expired` and reads at it still work.
#[tokio::test]
async fn embedded_store_compacts_every_round() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = crate::embedded::EmbeddedBackend::open_dir(dir.path()).expect("open");
    let put = |v: &'static [u8]| backend.put("/k", Bytes::from_static(v), Condition::Always, None);
    put(b"1").await.expect("put");
    let mut state = CompactorState::default();
    assert_eq!(
        round(&backend, &mut state).await.expect("round"),
        Round::Nothing
    );
    let recorded = state.revision;
    put(b"2").await.expect("put");
    assert_eq!(
        round(&backend, &mut state).await.expect("round"),
        Round::Compacted(recorded)
    );
    assert_eq!(
        backend.compacted_revision().await.expect("compacted"),
        recorded
    );
    assert!(matches!(
        backend.get("/k", recorded - 1).await,
        Err(StorageError::Expired { .. })
    ));
    assert!(backend.get("/k", recorded).await.is_ok());
    assert_eq!(state.version, 2);
}

/// An interval of zero starts no compactor.
#[tokio::test]
async fn zero_interval_disables() {
    let (_, mut replicas) = replicas(1);
    let backend: Arc<dyn Backend> = Arc::new(replicas.remove(0));
    assert!(spawn(Arc::clone(&backend), Duration::ZERO, Box::new(|_| {})).is_none());
    let handle = spawn(backend, Duration::from_secs(3600), Box::new(|_| {})).expect("started");
    handle.abort();
}
