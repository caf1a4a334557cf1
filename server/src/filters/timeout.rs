//! Request timeout: ordinary requests that take longer than `--request-timeout` (or a shorter
//! `?timeout=` of the request, as `kubectl --request-timeout` sends) get 504 `Timeout`. Long-running requests (watches) are exempt, but their response bodies end when the
//! server stops accepting requests, so shutdown is not held up by open watches.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use futures::StreamExt;
use http::Response;

use super::{ChainConfig, status_response};
use crate::genericserver::duration::parse_duration;
use crate::request_info::RequestInfo;

/// The filter.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    req: Request,
    next: Next,
) -> Response<Body> {
    let long_running = req
        .extensions()
        .get::<RequestInfo>()
        .is_some_and(RequestInfo::is_long_running);
    if long_running {
        let resp = next.run(req).await;
        let stop = config.signals.not_accepting_new_requests.clone();
        let (parts, body) = resp.into_parts();
        let stream = body
            .into_data_stream()
            .take_until(Box::pin(async move { stop.wait().await }));
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let mut limit = config.request_timeout;
    if let Some(asked) =
        crate::request_info::query_param(req.uri().query().unwrap_or(""), "timeout")
            .filter(|v| !v.is_empty())
    {
        match parse_duration(&asked) {
            Ok(d) if !d.is_zero() => limit = limit.min(d),
            Ok(_) => {}
            Err(_) => {
                return status_response(&ApiError::bad_request(format!(
                    "invalid timeout specified in the request URL: {asked:?}"
                )));
            }
        }
    }
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => status_response(&ApiError::request_timeout()),
    }
}
