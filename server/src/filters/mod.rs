//! The filter chain every request passes before it reaches a handler, outermost first:
//! panic recovery → request info → metrics → authentication → in-flight limit → authorization →
//! timeout → body limit. It is assembled in one place, [`build`], so that impersonation, audit, in-flight limits
//! and admission slot in between the existing layers. Every failure leaves as a `Status`.

pub mod authentication;
pub mod authorization;
pub mod body_limit;
pub mod max_in_flight;
pub mod panic;
pub mod request_info;
pub mod timeout;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use axum::Router;
use axum::body::Body;
use axum::middleware::from_fn_with_state;
use http::{HeaderValue, Response, header};

use crate::authn::UnionAuthenticator;
use crate::authz::Authorizer;
use crate::genericserver::lifecycle::LifecycleSignals;
use crate::genericserver::metrics::Metrics;

/// The minimum timeout of long-running requests (`--min-request-timeout`), stored as a request
/// extension; a watch without `timeoutSeconds` lasts a random duration in `[min, 2·min)`.
#[derive(Clone, Copy, Debug)]
pub struct MinRequestTimeout(pub Duration);

/// What the filters need.
pub struct ChainConfig {
    /// Authentication.
    pub authenticator: Arc<UnionAuthenticator>,
    /// Authorization.
    pub authorizer: Arc<dyn Authorizer>,
    /// The timeout of ordinary requests.
    pub request_timeout: Duration,
    /// The minimum timeout of long-running requests.
    pub min_request_timeout: Duration,
    /// The largest request body accepted.
    pub max_request_body_bytes: usize,
    /// The lifecycle signals (long-running responses end when the server stops accepting).
    pub signals: LifecycleSignals,
    /// Request metrics.
    pub metrics: Arc<Metrics>,
    /// The in-flight limits.
    pub in_flight: max_in_flight::InFlightLimits,
}

/// Wraps `router` in the filter chain.
pub fn build(router: Router, config: Arc<ChainConfig>) -> Router {
    // `layer` wraps what was built so far: the last layer added is the outermost.
    router
        .layer(from_fn_with_state(Arc::clone(&config), body_limit::filter))
        .layer(from_fn_with_state(Arc::clone(&config), timeout::filter))
        .layer(from_fn_with_state(
            Arc::clone(&config),
            authorization::filter,
        ))
        .layer(from_fn_with_state(
            Arc::clone(&config),
            max_in_flight::filter,
        ))
        .layer(from_fn_with_state(
            Arc::clone(&config),
            authentication::filter,
        ))
        .layer(from_fn_with_state(
            Arc::clone(&config),
            crate::genericserver::metrics::filter,
        ))
        .layer(from_fn_with_state(
            Arc::clone(&config),
            request_info::filter,
        ))
        .layer(panic::layer())
}

/// Renders an error as a JSON `Status` response (with `Retry-After` when the error has one).
pub fn status_response(err: &ApiError) -> Response<Body> {
    let mut resp = Response::new(Body::from(err.to_status_bytes()));
    *resp.status_mut() =
        http::StatusCode::from_u16(err.code()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = err.retry_after_seconds() {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

#[cfg(test)]
mod tests;
