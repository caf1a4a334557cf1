//! The periodic compactor: kube-apiserver's `--etcd-compaction-interval` loop
//! (`k8s.io/apiserver/pkg/storage/etcd3/compact.go`) over any [`Backend`].
//!
//! Every interval each replica runs one round: it claims the round with
//! [`Backend::claim_compaction`] (on etcd a transaction that bumps the version of the key
//! [`COMPACT_REV_KEY`] only if it still has the version this replica saw last time), and the one
//! replica whose claim succeeds compacts to the revision it recorded at the previous round. So
//! at least one interval of history is always kept, and among replicas sharing one etcd one of
//! them compacts per interval while the others learn the new version and wait. A replica that
//! stops compacting is replaced within two intervals by the next one whose claim succeeds. The
//! embedded store belongs to one process, whose claims always succeed.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::Backend;
use crate::errors::{Result, Revision};

/// The etcd key whose version is the compactors' logical clock and whose value is the last
/// revision compacted to (kube-apiserver's `compact_rev_key`, outside `--etcd-prefix`).
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// kube-apiserver's default `--etcd-compaction-interval`: 5 minutes.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// The answer to one round's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionClaim {
    /// True when this replica claimed the round and compacts.
    pub claimed: bool,
    /// The version of the claim after the round: the version the next round expects.
    pub version: i64,
    /// The storage revision when the round ran: what the next claimed round compacts to.
    pub revision: Revision,
    /// When not claimed: the revision the replica that claimed recorded, which it compacts to
    /// (0 when unknown).
    pub recorded: Revision,
}

/// What a compactor remembers between rounds: the claim version it saw and the revision it
/// recorded (both 0 before the first round, as in kube-apiserver).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactorState {
    /// The claim version seen at the last round.
    pub version: i64,
    /// The revision recorded at the last round.
    pub revision: Revision,
}

/// The result of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// This replica compacted the history below this revision.
    Compacted(Revision),
    /// Another replica claimed the round; it compacts (or compacted) below this revision.
    CompactedElsewhere(Revision),
    /// Nothing to compact yet (the first claimed round, or nothing recorded by the other).
    Nothing,
}

impl Round {
    /// The revision below which history is gone after this round, if known.
    pub fn revision(self) -> Option<Revision> {
        match self {
            Round::Compacted(r) | Round::CompactedElsewhere(r) => Some(r),
            Round::Nothing => None,
        }
    }
}

/// Runs one round: claims it, and when claimed compacts to the revision recorded at the previous
/// round (none at the first round). A failed claim leaves `state` unchanged; once claimed,
/// `state` advances even if the compaction fails, as in kube-apiserver.
pub async fn round(backend: &dyn Backend, state: &mut CompactorState) -> Result<Round> {
    let claim = backend
        .claim_compaction(state.version, state.revision)
        .await?;
    let previous = std::mem::replace(
        state,
        CompactorState {
            version: claim.version,
            revision: claim.revision,
        },
    );
    if !claim.claimed {
        return Ok(if claim.recorded > 0 {
            Round::CompactedElsewhere(claim.recorded)
        } else {
            Round::Nothing
        });
    }
    if previous.revision == 0 {
        return Ok(Round::Nothing);
    }
    backend.compact(previous.revision).await?;
    Ok(Round::Compacted(previous.revision))
}

/// Called with the revision below which history is gone, after each round that knows one (the
/// server compacts its watch caches with it).
pub type OnCompacted = Box<dyn Fn(Revision) + Send + Sync>;

/// Starts the compactor of `backend`: a round every `interval`, the first one `interval` after
/// the start, each followed by `on_compacted` when it learnt a compaction revision. Returns
/// `None` when `interval` is zero (compaction disabled). Aborting the handle stops it.
pub fn spawn(
    backend: Arc<dyn Backend>,
    interval: Duration,
    on_compacted: OnCompacted,
) -> Option<tokio::task::JoinHandle<()>> {
    if interval.is_zero() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut state = CompactorState::default();
        loop {
            tokio::time::sleep(interval).await;
            match round(backend.as_ref(), &mut state).await {
                Ok(done) => {
                    if let Round::Compacted(revision) = done {
                        tracing::info!(revision, "storage compacted");
                    }
                    if let Some(revision) = done.revision() {
                        on_compacted(revision);
                    }
                }
                Err(error) => tracing::error!(%error, "storage compaction failed"),
            }
        }
    }))
}

#[cfg(test)]
#[path = "compactor_tests.rs"]
mod tests;
