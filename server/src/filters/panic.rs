//! Panic recovery: a handler that panics answers 500 `InternalError` instead of dropping the
//! connection.

use std::any::Any;

use apimachinery::status::ApiError;
use axum::body::Body;
use tower_http::catch_panic::{CatchPanicLayer, ResponseForPanic};

/// Turns a panic payload into a 500 `Status`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PanicToStatus;

impl ResponseForPanic for PanicToStatus {
    type ResponseBody = Body;

    fn response_for_panic(&mut self, err: Box<dyn Any + Send + 'static>) -> http::Response<Body> {
        let what = err
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".to_string());
        tracing::error!(panic = %what, "handler panicked");
        super::status_response(&ApiError::internal(format!("handler panicked: {what}")))
    }
}

/// The panic-recovery layer.
pub fn layer() -> CatchPanicLayer<PanicToStatus> {
    CatchPanicLayer::custom(PanicToStatus)
}
