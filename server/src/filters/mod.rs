//! The filter chain every request passes before it reaches a handler, outermost first:
//! audit id → panic recovery → request info → metrics → authentication → audit →
//! impersonation → in-flight limit → authorization → timeout → body limit (Kubernetes' order).
//! It is assembled in one place, [`FilterChain`] (a tower service built by [`build`]).
//! Each filter is a module with plain functions that either let the request on or answer it;
//! every failure leaves as a `Status`.

pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod body_limit;
pub mod impersonation;
pub mod max_in_flight;
pub mod panic;
pub mod request_info;
pub mod timeout;

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use axum::body::Body;
use futures::FutureExt;
use http::{HeaderValue, Request, Response, header};
use tower::{Service, ServiceExt};

use crate::audit::{Auditor, RequestAudit};
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
    /// The audit policy and log (`None` without `--audit-policy-file` and `--audit-log-path`).
    pub audit: Option<Arc<Auditor>>,
    /// The served kinds, whose scope a resource request's path must match.
    pub scheme: Option<Arc<apimachinery::Scheme>>,
    /// The delegated authorizer of an aggregated server, whose cache is filled (without
    /// blocking) before the authorizer is asked.
    pub delegated_authorizer: Option<Arc<crate::delegation::authorizer::DelegatedAuthorizer>>,
}

/// Wraps `inner` (the director, or any handler service) in the filter chain.
pub fn build<S>(inner: S, config: Arc<ChainConfig>) -> FilterChain<S> {
    FilterChain { inner, config }
}

/// The filter chain around a handler service, itself a tower service.
///
/// The filters run in the order of the module documentation as plain steps of one future per
/// request (one allocation for the whole chain, not one per layer). The request's
/// [`RequestInfo`], `Arc<`[`UserInfo`](crate::authn::UserInfo)`>` (the impersonated user, if
/// any; shared with what the connection remembers of its credentials) and [`AuthorizerRef`]
/// are stored as extensions before the handler runs, with the real user as an
/// [`Impersonator`](impersonation::Impersonator) when the request impersonates and the
/// [`ObjectNote`](crate::audit::ObjectNote) of a recorded resource request. Every response
/// carries the request's `Audit-Id`.
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

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let config = Arc::clone(&self.config);
        let inner = self.inner.clone();
        let audit_id = crate::audit::audit_id(req.headers());
        // A generated audit ID travels with the request too, so that a proxied request
        // carries it to the aggregated server (kube-apiserver's `NewRequestForProxy`).
        if req.headers().get(crate::audit::AUDIT_ID_HEADER) != Some(&audit_id) {
            req.headers_mut()
                .insert(crate::audit::AUDIT_ID_HEADER, audit_id.clone());
        }
        Box::pin(async move {
            // The chain's state (≈ 4 KiB: the request's parts, users, audit record and the
            // filters' futures) is boxed where it is built and polled in place, so starting a
            // request does not copy it into this future and the panic recovery's (those copies
            // made `FilterChain::call` ≈ 9.8k instructions per create, measured with callgrind;
            // none after).
            let chain = Box::pin(handle(config, inner, req, &audit_id));
            let mut resp = panic::recover(chain).await;
            resp.headers_mut()
                .insert(crate::audit::AUDIT_ID_HEADER, audit_id);
            Ok(resp)
        })
    }
}

/// Request info, then metrics around the rest; the audit record of the request is finished
/// here (its `Panic` event written before the panic goes on to the recovery).
async fn handle<S>(
    config: Arc<ChainConfig>,
    inner: S,
    req: Request<Body>,
    audit_id: &HeaderValue,
) -> Response<Body>
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
    let long_running = info.is_long_running();
    let mut record = None;
    let result = if config.audit.is_some() {
        let run = authorized(&config, inner, req, info, audit_id, &mut record);
        match AssertUnwindSafe(run).catch_unwind().await {
            Ok(result) => result,
            Err(payload) => {
                if let Some(record) = record.take() {
                    record.panicked(&panic::message(payload.as_ref()));
                }
                std::panic::resume_unwind(payload)
            }
        }
    } else {
        authorized(&config, inner, req, info, audit_id, &mut record).await
    };
    let resp = match (result, record) {
        (Ok(resp), None) => resp,
        (Ok(resp), Some(record)) => audit::responded(record, long_running, resp),
        (Err(err), record) => {
            if let Some(record) = record {
                audit::refused(record, &err);
            }
            status_response(&err)
        }
    };
    config.metrics.record(
        series,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    resp
}

/// Authentication, audit, impersonation, in-flight limit, authorization, timeout and body
/// limit, then the handler; `Err` is the error of the filter that refused the request. A
/// request the audit policy records leaves its [`RequestAudit`] in `record`.
async fn authorized<S>(
    config: &ChainConfig,
    inner: S,
    req: Request<Body>,
    info: RequestInfo,
    audit_id: &HeaderValue,
    record: &mut Option<RequestAudit>,
) -> Result<Response<Body>, ApiError>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let received = config.audit.as_ref().map(|_| chrono::Utc::now());
    let (mut parts, body) = req.into_parts();
    let user = match authentication::authenticate(config, &mut parts).await {
        Ok(user) => user,
        Err(err) => {
            if let (Some(auditor), Some(received)) = (&config.audit, received) {
                auditor.failed_authentication(audit_id, &info, &parts, received);
            }
            return Err(err);
        }
    };
    if let (Some(auditor), Some(received)) = (&config.audit, received) {
        *record = auditor.begin(audit_id, &user, &info, &parts, received);
    }
    let user = match impersonation::impersonate(config, &user, &mut parts.headers)? {
        Some(impersonated) => {
            if let Some(record) = record.as_mut() {
                record.impersonated(&impersonated);
            }
            parts.extensions.insert(impersonation::Impersonator(user));
            Arc::new(impersonated)
        }
        None => user,
    };
    let permit = max_in_flight::admit(config, &info, &user)?;
    authorization::check_scope(config, &info)?;
    if let Some(delegated) = &config.delegated_authorizer {
        delegated
            .prefetch(&crate::authz::request_attributes(&user, &info))
            .await;
    }
    let (decision, verdict) = authorization::decide(config, &user, &info);
    if let Some(record) = record.as_mut() {
        record.authorized(&decision);
    }
    verdict?;
    crate::fault::handler(&parts.headers, &user);
    let limit = if info.is_long_running() {
        None
    } else {
        let target = crate::request_target::of(&parts.uri, &parts.extensions);
        Some(timeout::limit(config, target.query())?)
    };
    if let Some(note) = record.as_ref().and_then(RequestAudit::object_note) {
        parts.extensions.insert(note);
    }
    parts.extensions.insert(info);
    parts.extensions.insert(user);
    parts
        .extensions
        .insert(AuthorizerRef(Arc::clone(&config.authorizer)));
    let req = body_limit::limit(config, Request::from_parts(parts, body))?;
    let (req, copy) = audit::copy_request(record.as_ref(), req);
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
    // A request counts against the limit while its response is written, as in
    // kube-apiserver, so clients that stop reading cannot each hold a response beyond it.
    let resp = crate::held_body::held_until_sent(resp, permit);
    if let Some(record) = record.as_mut() {
        audit::record_request(record, copy);
    }
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
#[cfg(test)]
mod tests_audit;
