//! Request timeout: ordinary requests that take longer than `--request-timeout` (or a shorter
//! `?timeout=` of the request, as `kubectl --request-timeout` sends) get 504 `Timeout`.
//! Long-running requests (watches) are exempt, but their response bodies end when the server
//! stops accepting requests, so shutdown is not held up by open watches.

use std::future::Future;
use std::time::Duration;

use apimachinery::status::ApiError;
use axum::body::Body;
use futures::StreamExt;
use http::Response;

use super::{ChainConfig, status_response};

/// How long an ordinary request may take: `--request-timeout`, or the request's `timeout`
/// parameter when that is shorter; an unparsable `timeout` is a 400 error.
pub fn limit(config: &ChainConfig, query: &str) -> Result<Duration, ApiError> {
    let mut limit = config.request_timeout;
    if let Some(asked) =
        crate::request_info::query_param(query, "timeout").filter(|v| !v.is_empty())
    {
        // As kube-apiserver: a timeout of zero or less means the server's limit.
        match apimachinery::duration::parse_go_duration(&asked) {
            Ok(n) if n > 0 => limit = limit.min(Duration::from_nanos(n as u64)),
            Ok(_) => {}
            Err(e) => {
                return Err(ApiError::bad_request(format!(
                    "invalid timeout specified in the request URL - {}",
                    e.message()
                )));
            }
        }
    }
    Ok(limit)
}

/// When an ordinary request's response must have been sent (a response extension the
/// connection reads): its start plus its time limit. A client that stops reading cannot hold
/// the response, and the connection, past it.
#[derive(Clone, Copy, Debug)]
pub struct ResponseDeadline(pub tokio::time::Instant);

/// Runs an ordinary request's handler; 504 `Timeout` when it has not answered within `limit`.
pub async fn bounded(
    limit: Duration,
    handler: impl Future<Output = Response<Body>>,
) -> Response<Body> {
    let started = tokio::time::Instant::now();
    let mut resp = match tokio::time::timeout(limit, handler).await {
        Ok(resp) => resp,
        Err(_) => status_response(&ApiError::request_timeout()),
    };
    resp.extensions_mut()
        .insert(ResponseDeadline(started + limit));
    resp
}

/// Ends a long-running response's body when the server stops accepting new requests.
pub fn end_on_shutdown(config: &ChainConfig, resp: Response<Body>) -> Response<Body> {
    let stop = config.signals.not_accepting_new_requests.clone();
    let (parts, body) = resp.into_parts();
    let stream = body
        .into_data_stream()
        .take_until(Box::pin(async move { stop.wait().await }));
    Response::from_parts(parts, Body::from_stream(stream))
}
