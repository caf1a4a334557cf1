//! `create` of a subresource a kind declares with `#[subresource]` (a ServiceAccount's `token`):
//! the named object is read, the JSON (or YAML) body handed to the kind's strategy with the
//! request's user and the server's token services, and the strategy's answer returned with 201.

use apimachinery::SubresourceInfo;
use apimachinery::status::ApiError;
use apimachinery::strategy::SubresourceBody;
use axum::body::Body;
use http::{Response, StatusCode, header};

use super::ApiContext;
use super::review::Context;
use super::scope::RequestScope;
use crate::negotiate::body::{BodyFormat, body_format, parse_json};

/// `POST .../<name>/<subresource>`.
pub async fn create(
    ctx: &ApiContext,
    scope: RequestScope,
    declared: &SubresourceInfo,
) -> Result<Response<Body>, ApiError> {
    let body = match body_format(scope.header("content-type"), scope.protobuf())? {
        BodyFormat::Json => {
            if scope.body.is_empty() {
                return Err(ApiError::bad_request("the body of the request was empty"));
            }
            SubresourceBody::Json(parse_json(&scope.body).map_err(|e| {
                ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
            })?)
        }
        BodyFormat::Yaml => SubresourceBody::Json(crate::negotiate::yaml_to_json(&scope.body)?),
        BodyFormat::Protobuf => {
            let unknown = apimachinery::protobuf::decode_envelope(&scope.body)
                .map_err(|e| ApiError::bad_request(format!("protobuf: {e}")))?;
            SubresourceBody::Protobuf {
                api_version: unknown.type_meta.api_version,
                kind: unknown.type_meta.kind,
                raw: unknown.raw.unwrap_or_default(),
            }
        }
    };
    let parent = scope
        .storage
        .get(scope.namespace(), scope.name(), "")
        .await?;
    let answer = scope
        .kind
        .strategy()
        .create_subresource(
            declared.name,
            &*parent,
            body,
            &Context { ctx, scope: &scope },
        )
        .await?;
    let bytes = serde_json::to_vec(&answer).map_err(ApiError::internal)?;
    Response::builder()
        .status(StatusCode::CREATED)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .map_err(ApiError::internal)
}
