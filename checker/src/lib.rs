//! Checkers for histories recorded against a real apiary server.
//!
//! A test drives the server with many concurrent clients, records every operation with its
//! real call and return times ([`history`]), records what its watches delivered
//! ([`history::WatchRecord`]), and asks this crate whether the run kept Kubernetes' contract:
//!
//! - [`linearizability`]: every key's operations have a sequential order, consistent with real
//!   time, that a single Kubernetes object would produce (Wing & Gong's search with Lowe's
//!   memoisation, per key by P-compositionality); lists are snapshots at their
//!   resourceVersion; resourceVersions of writes are unique and follow real time.
//! - [`watch`]: the watch guarantees (ordered, unique, atomic, bookmarkable, reliable,
//!   resumable) checked against the same history.
//!
//! No I/O and no async runtime: the recorder lives in the tests, this crate only judges.
//!
//! # How a history is checked
//!
//! 1. [`resolve`]: values are unique per write, so every observed value (a get, a list
//!    item, a watch event) names its write; a write whose outcome the client never learnt
//!    takes the resourceVersion an observation showed for it (then it certainly took effect),
//!    and a DELETED event can name a delete acknowledged without its resourceVersion.
//! 2. [`timeline::check_rvs`]: across all keys, committed writes have distinct
//!    resourceVersions, and a write called after another returned has a larger one.
//! 3. [`linearizability`]: each key's writes and consistent gets are searched for a
//!    linearization against the [`model`]; a key that has none is shrunk ([`shrink`]) to a
//!    small set of its operations that fails on its own, from the state right after the
//!    last write before them (so that the key's history fails whenever the set does),
//!    printed with the longest linearizable prefix of it.
//! 4. [`lists`]: every list is compared with the snapshot at its resourceVersion (the
//!    committed writes in resourceVersion order, [`timeline`]); consistent lists also with
//!    real time; reads from the watch cache must show states that held, without going back.
//! 5. [`watch`]: every watch's events against the same commits.
//!
//! # What is not checked
//!
//! - Keys are assumed absent when the history starts (a run uses fresh keys).
//! - A write whose outcome is unknown and that nothing showed is taken as not having taken
//!   effect by the lists and watches, unless the key's linearization applied it as a
//!   delete: then the key may be absent between its neighbouring commits, and a watch that
//!   covers both neighbours must have delivered a delete between them. The linearization is
//!   one of possibly several, so such a delete's placement is the search's choice.
//! - A delete acknowledged without its resourceVersion ([`history::Output::Deleted`]) that no
//!   DELETED event names is placed by its key's search between its call and return, above
//!   every write that returned before it was called and below every write called after it
//!   returned. Lists and watches check it against those real-time bounds only, not against
//!   that place (one of possibly several): a list cannot show the object it removed when the
//!   delete certainly lies between the object's write and the list, and a watch that covers
//!   both bounds must have delivered some DELETED event of the key between them.
//! - A DELETED event that more than one uncertain delete of its key can have made is a
//!   commit for lists and watches, but the key's search does not learn which delete it was.
//! - A key whose search runs out of its budget (only likely with many uncertain writes that
//!   nothing showed and that do not fit being left out) is reported as undecided, a
//!   violation, rather than passed.
//! - Lists are checked against the keys the history's operations name: a key created
//!   outside the history is reported as unknown.
//! - Reads from the cache are monotonic only against the same client's earlier reads from
//!   the cache (Kubernetes lets them lag the client's own writes and consistent reads).
//! - Only the first problem of each watch is reported; a watch's events after an ERROR
//!   event are not checked.
//! - Consistent gets are checked per key by the search; a get's resourceVersion is not
//!   compared with writes to other keys (it is its object's, not a point in time).

pub mod history;
pub mod linearizability;
pub mod lists;
pub mod model;
pub mod resolve;
pub mod shrink;
pub mod timeline;
pub mod watch;

mod describe;

use std::fmt;

/// What a passing check looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Operations checked.
    pub operations: usize,
    /// Distinct keys (independent partitions).
    pub keys: usize,
    /// Lists checked as snapshots.
    pub lists: usize,
    /// Watches checked.
    pub watches: usize,
    /// Watch events checked.
    pub events: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operations on {} keys, {} lists, {} watches with {} events",
            self.operations, self.keys, self.lists, self.watches, self.events
        )
    }
}

/// Why a history broke the contract: each violation with a minimal counterexample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// One line of explanation per violation, each followed by its counterexample.
    pub violations: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for v in &self.violations {
            writeln!(f, "{v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// Checks a whole history: linearizability of every key's operations, lists as snapshots,
/// resourceVersions unique and in real-time order, and every watch's guarantees.
pub fn check(history: &history::History) -> Result<Summary, Failure> {
    let mut violations = Vec::new();
    let resolution = resolve::Resolution::new(history);
    timeline::check_rvs(history, &resolution, &mut violations);
    let orders = linearizability::check_keys(history, &resolution, &mut violations);
    let timeline = timeline::Timeline::new(history, &resolution, &orders);
    let lists = lists::check(history, &resolution, &timeline, &mut violations);
    let events = watch::check(history, &resolution, &timeline, &mut violations);
    if !violations.is_empty() {
        return Err(Failure { violations });
    }
    Ok(Summary {
        operations: history.operations.len(),
        keys: timeline.all_keys.len(),
        lists,
        watches: history.watches.len(),
        events,
    })
}

#[cfg(test)]
mod tests;
