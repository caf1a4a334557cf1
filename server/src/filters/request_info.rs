//! Parses the [`RequestInfo`](crate::request_info::RequestInfo) of every request and stores it
//! as an extension.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use http::Response;

use super::{ChainConfig, MinRequestTimeout, status_response};
use crate::request_info::RequestInfo;

/// The filter.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    mut req: Request,
    next: Next,
) -> Response<Body> {
    let info = RequestInfo::parse(
        req.method(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    );
    match info {
        Ok(info) => {
            req.extensions_mut().insert(info);
            req.extensions_mut()
                .insert(MinRequestTimeout(config.min_request_timeout));
            next.run(req).await
        }
        Err(e) => status_response(&ApiError::internal(e)),
    }
}
