//! Panic recovery: a handler that panics answers 500 `InternalError` instead of dropping the
//! connection.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use apimachinery::status::ApiError;
use axum::body::Body;
use futures::FutureExt;
use http::Response;

/// The message of a panic payload (a `String` or `&str`; otherwise `panic`).
pub fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

/// Turns a panic payload into a 500 `Status`.
pub fn response_for_panic(err: Box<dyn Any + Send + 'static>) -> Response<Body> {
    let what = message(err.as_ref());
    tracing::error!(panic = %what, "handler panicked");
    super::status_response(&ApiError::internal(format!("handler panicked: {what}")))
}

/// Runs `handler`; a panic while it runs becomes the 500 `Status`.
pub async fn recover(handler: impl Future<Output = Response<Body>>) -> Response<Body> {
    match AssertUnwindSafe(handler).catch_unwind().await {
        Ok(resp) => resp,
        Err(err) => response_for_panic(err),
    }
}
