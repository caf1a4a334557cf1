//! A bound on the memory large list responses hold at once. A list's response is built in
//! memory before it is sent (about its body's size), so many concurrent large lists could take
//! the process past its memory. A list estimated at 1 MiB or more reserves its estimate until
//! its body has been sent: one user may hold at most [`PER_USER_BYTES`] of such lists, and
//! everyone together [`TOTAL_BYTES`]; a list beyond them gets kube-apiserver's 429 `Too many
//! requests, please try again later.` with `Retry-After: 1`, which client-go retries. A user
//! holding no reservation is always let through, so no list is too large to be served once,
//! and `system:masters` is exempt, as from the in-flight limits. kube-apiserver bounds the same
//! with priority and fairness, counting a large list as up to ten seats.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::status::ApiError;
use parking_lot::Mutex;

use crate::authn::{MASTERS_GROUP, UserInfo};

/// Lists estimated below this are not counted.
pub const THRESHOLD_BYTES: u64 = 1 << 20;
/// The most one user's large lists may hold at once.
pub const PER_USER_BYTES: u64 = 512 << 20;
/// The most all large lists may hold at once.
pub const TOTAL_BYTES: u64 = 2 << 30;

/// The reservations of large lists in progress.
pub struct ListBudget {
    per_user: u64,
    total: u64,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: u64,
    by_user: HashMap<String, u64>,
}

impl Default for ListBudget {
    fn default() -> Self {
        Self::new(PER_USER_BYTES, TOTAL_BYTES)
    }
}

/// A list's reservation; dropping it (when the response has been sent) releases it.
pub struct Reservation {
    budget: Arc<ListBudget>,
    user: String,
    bytes: u64,
}

impl ListBudget {
    /// A budget of `per_user` bytes per user and `total` bytes in all.
    pub fn new(per_user: u64, total: u64) -> Self {
        Self {
            per_user,
            total,
            held: Mutex::default(),
        }
    }

    /// Reserves `bytes` (a list's estimated response) for `user`: `Ok(None)` when the list is
    /// small or the user exempt, the reservation, or the 429 error.
    pub fn reserve(
        self: &Arc<Self>,
        user: &UserInfo,
        bytes: u64,
    ) -> Result<Option<Reservation>, ApiError> {
        if bytes < THRESHOLD_BYTES || user.in_group(MASTERS_GROUP) {
            return Ok(None);
        }
        let mut held = self.held.lock();
        let mine = held.by_user.get(&user.name).copied().unwrap_or(0);
        if mine > 0 && (mine + bytes > self.per_user || held.total + bytes > self.total) {
            return Err(crate::filters::max_in_flight::too_many_requests());
        }
        held.total += bytes;
        *held.by_user.entry(user.name.clone()).or_default() += bytes;
        Ok(Some(Reservation {
            budget: Arc::clone(self),
            user: user.name.clone(),
            bytes,
        }))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock();
        held.total = held.total.saturating_sub(self.bytes);
        if let Some(mine) = held.by_user.get_mut(&self.user) {
            *mine = mine.saturating_sub(self.bytes);
            if *mine == 0 {
                held.by_user.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn large_lists_are_bounded_per_user_and_in_all() {
        let mb = 1 << 20;
        let budget = Arc::new(ListBudget::new(10 * mb, 25 * mb));
        let (bob, eve, ann) = (user("bob", &[]), user("eve", &[]), user("ann", &[]));
        // Small lists are not counted.
        assert!(budget.reserve(&bob, mb - 1).is_ok_and(|r| r.is_none()));
        // One list of any size is let through; more only within the user's share.
        let first = budget.reserve(&bob, 40 * mb).ok().flatten();
        assert!(first.is_some());
        assert_eq!(
            budget
                .reserve(&bob, 2 * mb)
                .map(|_| ())
                .err()
                .map(|e| e.code()),
            Some(429)
        );
        drop(first);
        let a = budget.reserve(&bob, 6 * mb).ok().flatten();
        let b = budget.reserve(&bob, 4 * mb).ok().flatten();
        assert!(a.is_some() && b.is_some());
        assert!(budget.reserve(&bob, mb).is_err(), "bob's share is used");
        // Others have their own share, within the total.
        let c = budget.reserve(&eve, 9 * mb).ok().flatten();
        assert!(c.is_some());
        let d = budget.reserve(&eve, mb).ok().flatten();
        assert!(d.is_some());
        let e = budget.reserve(&ann, 5 * mb).ok().flatten();
        assert!(e.is_some(), "ann holds nothing yet");
        assert!(budget.reserve(&ann, mb).is_err(), "the total is used");
        // system:masters is exempt.
        let admin = user("admin", &[MASTERS_GROUP]);
        assert!(budget.reserve(&admin, 100 * mb).is_ok_and(|r| r.is_none()));
        drop((a, b, c, d, e));
        let held = budget.held.lock();
        assert_eq!((held.total, held.by_user.len()), (0, 0));
    }
}
