//! The process's open-file limit. Go's runtime raises its soft limit to the hard limit when it
//! starts (since Go 1.19), so kube-apiserver may hold as many descriptors as the system allows;
//! apiary does the same, and keeps its bound on open connections under the limit, with room
//! left for the store, watch files, logs and configuration reloads.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Raises the soft open-file limit to the hard limit; returns the soft limit in force after
/// (`None` when unlimited or unknown).
pub fn raise_to_hard_limit() -> Option<u64> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, "raising the open-file limit failed");
        }
    }
    getrlimit(Resource::Nofile).current
}

/// The bound on open connections for `requested` (0: unbounded) under a soft open-file limit
/// of `soft`: at most the limit less a tenth of it (at least 64) kept for everything else.
pub fn connection_bound(requested: usize, soft: Option<u64>) -> usize {
    let Some(soft) = soft else {
        return requested;
    };
    let room = soft.saturating_sub((soft / 10).max(64)).max(1);
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    match requested {
        0 => room,
        n => n.min(room),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_stay_under_the_open_file_limit() {
        assert_eq!(connection_bound(10_000, Some(20_000)), 10_000);
        assert_eq!(connection_bound(10_000, Some(1024)), 922);
        assert_eq!(connection_bound(0, Some(1024)), 922);
        assert_eq!(connection_bound(10_000, Some(100)), 36);
        assert_eq!(connection_bound(10_000, None), 10_000);
        assert_eq!(connection_bound(0, None), 0);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let soft = raise_to_hard_limit();
        assert_eq!(soft, getrlimit(Resource::Nofile).maximum);
    }
}
