//! In-flight limits (`--max-requests-inflight`, `--max-mutating-requests-inflight`): a request
//! that finds its pool full gets 429 `TooManyRequests` with `Retry-After: 1`. Long-running
//! requests and members of `system:masters` are exempt, as in Kubernetes.

use std::sync::Arc;

use apimachinery::status::{ApiError, StatusDetails, StatusReason};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use http::Response;
use tokio::sync::Semaphore;

use super::{ChainConfig, status_response};
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

/// The filter.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    req: Request,
    next: Next,
) -> Response<Body> {
    let info = req.extensions().get::<RequestInfo>();
    let exempt = info.is_some_and(RequestInfo::is_long_running)
        || req
            .extensions()
            .get::<UserInfo>()
            .is_some_and(|u| u.in_group(MASTERS_GROUP));
    if exempt {
        return next.run(req).await;
    }
    let pool = if info.is_some_and(RequestInfo::is_read_only) {
        &config.in_flight.read_only
    } else {
        &config.in_flight.mutating
    };
    let Some(pool) = pool else {
        return next.run(req).await;
    };
    match Arc::clone(pool).try_acquire_owned() {
        Ok(permit) => {
            let resp = next.run(req).await;
            drop(permit);
            resp
        }
        Err(_) => status_response(&too_many_requests()),
    }
}
