//! The filter chain every request passes before it reaches a handler, outermost first:
//! panic recovery → request info → metrics → authentication → in-flight limit → authorization →
//! timeout → body limit. It is assembled in one place, [`FilterChain`] (a tower service built by
//! [`build`]), so that impersonation, audit and admission slot in between the existing steps.
//! Each filter is a module with plain functions that either let the request on or answer it;
//! every failure leaves as a `Status`.

pub mod authentication;
pub mod authorization;
pub mod body_limit;
pub mod max_in_flight;
pub mod panic;
pub mod request_info;
pub mod timeout;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{HeaderValue, Request, Response, header};
use tower::{Service, ServiceExt};

use crate::authn::UnionAuthenticator;
use crate::authz::Authorizer;
use crate::authz::AuthorizerRef;
use crate::genericserver::lifecycle::LifecycleSignals;
use crate::genericserver::metrics::{Metrics, is_apply};
use crate::request_info::RequestInfo;

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

/// Wraps `inner` (the director, or any handler service) in the filter chain.
pub fn build<S>(inner: S, config: Arc<ChainConfig>) -> FilterChain<S> {
    FilterChain { inner, config }
}

/// The filter chain around a handler service, itself a tower service.
///
/// The filters run in the order of the module documentation as plain steps of one future per
/// request (one allocation for the whole chain, not one per layer). The request's
/// [`RequestInfo`], [`UserInfo`](crate::authn::UserInfo) and [`AuthorizerRef`] are stored as
/// extensions before the handler runs.
#[derive(Clone)]
pub struct FilterChain<S> {
    inner: S,
    config: Arc<ChainConfig>,
}

impl<S> Service<Request<Body>> for FilterChain<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The handler is made ready when it is called (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let config = Arc::clone(&self.config);
        let inner = self.inner.clone();
        Box::pin(async move { Ok(panic::recover(handle(config, inner, req)).await) })
    }
}

/// Request info, then metrics around the rest.
async fn handle<S>(config: Arc<ChainConfig>, inner: S, req: Request<Body>) -> Response<Body>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let info = match request_info::parse(&req) {
        Ok(info) => info,
        Err(err) => return status_response(&err),
    };
    let started = Instant::now();
    let series = config
        .metrics
        .series(&info, req.method(), is_apply(req.headers()));
    let resp = match authorized(&config, inner, req, info).await {
        Ok(resp) => resp,
        Err(err) => status_response(&err),
    };
    config.metrics.record(
        series,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    resp
}

/// Authentication, in-flight limit, authorization, timeout and body limit, then the handler;
/// `Err` is the error of the filter that refused the request.
async fn authorized<S>(
    config: &ChainConfig,
    inner: S,
    req: Request<Body>,
    info: RequestInfo,
) -> Result<Response<Body>, ApiError>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let (mut parts, body) = req.into_parts();
    let user = authentication::authenticate(config, &parts).await?;
    let permit = max_in_flight::admit(config, &info, &user)?;
    authorization::authorize(config, &user, &info)?;
    let limit = if info.is_long_running() {
        None
    } else {
        Some(timeout::limit(config, parts.uri.query().unwrap_or(""))?)
    };
    parts.extensions.insert(info);
    parts.extensions.insert(user);
    parts
        .extensions
        .insert(AuthorizerRef(Arc::clone(&config.authorizer)));
    let req = body_limit::limit(config, Request::from_parts(parts, body))?;
    let handler = async move {
        match inner.oneshot(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    };
    let resp = match limit {
        Some(limit) => timeout::bounded(limit, handler).await,
        None => timeout::end_on_shutdown(config, handler.await),
    };
    drop(permit);
    Ok(resp)
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
