//! Authentication: finds the request's [`UserInfo`] (the chain stores it as an extension) or
//! answers 401.

use std::sync::Arc;

use super::ChainConfig;
use crate::authn::UserInfo;
use apimachinery::status::ApiError;

/// The user of a request, or the 401 error.
pub async fn authenticate(
    config: &ChainConfig,
    parts: &mut http::request::Parts,
) -> Result<Arc<UserInfo>, ApiError> {
    config
        .authenticator
        .authenticate_and_clear(parts)
        .await
        .map_err(|reason| {
            tracing::debug!(%reason, "authentication failed");
            ApiError::unauthorized("Unauthorized")
        })
}
