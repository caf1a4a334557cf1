//! Request body limit: a declared `Content-Length` over the limit is refused at once with 413;
//! other bodies are wrapped so that reading past the limit fails, and [`read_body`] turns that
//! failure into the same 413 `Status`.

use apimachinery::status::ApiError;
use axum::body::{Body, Bytes};
use http::Request;
use http_body::Body as _;
use http_body_util::LengthLimitError;

use super::ChainConfig;
use crate::genericserver::options::DEFAULT_MAX_REQUEST_BODY_BYTES;

/// The 413 error for a body over `limit` bytes.
pub fn too_large_with(limit: usize) -> ApiError {
    ApiError::request_entity_too_large(&format!("limit is {limit}"))
}

/// The 413 error for the default 3 MiB limit.
pub fn too_large() -> ApiError {
    too_large_with(DEFAULT_MAX_REQUEST_BODY_BYTES)
}

fn is_length_limit(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if e.is::<LengthLimitError>() {
            return true;
        }
        cur = e.source();
    }
    false
}

/// Reads a whole request body; a body over the limit yields the 413 `Status` error, a broken
/// connection a 400.
pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => Ok(bytes),
        Err(e) if is_length_limit(&e) => Err(too_large()),
        Err(e) => Err(ApiError::bad_request(format!(
            "unable to read the request body: {e}"
        ))),
    }
}

/// Applies the limit to a request: a declared `Content-Length` over it is the 413 error; a
/// body that may still arrive is wrapped so that reading past the limit fails.
pub fn limit(config: &ChainConfig, req: Request<Body>) -> Result<Request<Body>, ApiError> {
    let limit = config.max_request_body_bytes;
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large_with(limit));
    }
    if req.body().is_end_stream() {
        // Nothing can be read from an ended body: there is nothing to limit.
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let limited = Body::new(http_body_util::Limited::new(body, limit));
    Ok(Request::from_parts(parts, limited))
}
