//! Parses the [`crate::request_info::RequestInfo`] of every request; the chain
//! stores it as an extension for the handlers.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::Request;

use crate::request_info::RequestInfo;

/// The request's facts, or the 500 error of a path that cannot be interpreted.
pub fn parse(req: &Request<Body>) -> Result<RequestInfo, ApiError> {
    let target = crate::request_target::of(req.uri(), req.extensions());
    RequestInfo::parse(req.method(), target.path(), target.query()).map_err(ApiError::internal)
}
