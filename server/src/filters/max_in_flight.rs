//! In-flight limits (`--max-requests-inflight`, `--max-mutating-requests-inflight`): a request
//! that finds its pool full gets 429 `TooManyRequests` with `Retry-After: 1`. Long-running
//! requests and members of `system:masters` are exempt, as in Kubernetes.

use std::sync::Arc;

use apimachinery::status::{ApiError, StatusDetails, StatusReason};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ChainConfig;
use crate::authn::{MASTERS_GROUP, UserInfo};
use crate::request_info::RequestInfo;

/// The two pools; `None` means unlimited.
pub struct InFlightLimits {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl InFlightLimits {
    /// Creates the pools; 0 disables a limit.
    pub fn new(max_read_only: usize, max_mutating: usize) -> Self {
        let pool = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Self {
            read_only: pool(max_read_only),
            mutating: pool(max_mutating),
        }
    }
}

/// The 429 answer.
pub fn too_many_requests() -> ApiError {
    ApiError::new(
        429,
        StatusReason::TooManyRequests,
        "Too many requests, please try again later.",
        Some(StatusDetails {
            retry_after_seconds: 1,
            ..StatusDetails::default()
        }),
    )
}

/// Admits a request into its pool: `Ok(None)` when it is exempt or its pool is unlimited,
/// `Ok(Some(permit))` to hold while it is handled, or the 429 error when the pool is full.
pub fn admit(
    config: &ChainConfig,
    info: &RequestInfo,
    user: &UserInfo,
) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
    if info.is_long_running() || user.in_group(MASTERS_GROUP) {
        return Ok(None);
    }
    let pool = if info.is_read_only() {
        &config.in_flight.read_only
    } else {
        &config.in_flight.mutating
    };
    let Some(pool) = pool else {
        return Ok(None);
    };
    Arc::clone(pool)
        .try_acquire_owned()
        .map(Some)
        .map_err(|_| too_many_requests())
}
