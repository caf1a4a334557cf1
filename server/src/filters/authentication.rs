//! Authentication: stores the request's [`UserInfo`](crate::authn::UserInfo) as an extension or
//! answers 401.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use http::Response;

use super::{ChainConfig, status_response};

/// The filter.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    req: Request,
    next: Next,
) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    match config.authenticator.authenticate(&parts) {
        Ok(user) => {
            parts.extensions.insert(user);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(reason) => {
            tracing::debug!(%reason, "authentication failed");
            status_response(&ApiError::unauthorized("Unauthorized"))
        }
    }
}
