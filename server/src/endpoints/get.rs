//! `get` and `list`. Objects stored as protobuf in the requested (storage) version are served
//! as JSON straight from their typed decode (memoized per resourceVersion for GETs); anything
//! else is decoded, converted to the requested version and encoded as negotiated.

use apimachinery::meta::ListMeta;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::Value;
use storage::interface::ListResult;

use super::ApiContext;
use super::params::ListParams;
use super::response;
use super::scope::RequestScope;
use crate::negotiate::{OutputFormat, Transform, negotiate_output};

/// The list (or watch) options of a request, checked against the kind's field labels.
pub fn list_params(scope: &RequestScope) -> Result<ListParams, ApiError> {
    ListParams::parse(scope)
}

/// `GET .../{name}` (and `/status`).
pub async fn get(_ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let rv = scope.q("resourceVersion").unwrap_or("").to_string();
    let stored = scope
        .store
        .get_stored(scope.namespace(), scope.name(), &rv)
        .await?;
    let n = negotiate_output(scope.header("accept"), false, scope.protobuf())?;
    if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && scope.is_storage_version()
    {
        return response::raw_json(&scope, scope.store.json_for_get(&stored)?.to_vec());
    }
    let object = scope.to_request_version(scope.store.decode(&stored)?)?;
    response::object(&scope, StatusCode::OK, &*object, &[])
}

/// `GET` of a collection.
pub async fn list(_ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let params = list_params(&scope)?;
    let n = negotiate_output(scope.header("accept"), true, scope.protobuf())?;
    if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && scope.is_storage_version()
    {
        let mut result = scope
            .store
            .list_stored(scope.namespace(), params.storage_options())
            .await?;
        let stored = std::mem::take(&mut result.items);
        let items = scope.store.json_list_items(stored).await?;
        let meta =
            serde_json::to_value(list_meta(&result, params.filtered())).unwrap_or(Value::Null);
        return response::raw_json_list(&scope, items, &meta);
    }
    let (items, result) = scope
        .store
        .list(scope.namespace(), params.storage_options())
        .await?;
    let items = items
        .into_iter()
        .map(|o| scope.to_request_version(o))
        .collect::<Result<Vec<_>, _>>()?;
    response::list(&scope, &items, &list_meta(&result, params.filtered()))
}

/// The `ListMeta` of a list result: resourceVersion, and continue plus remainingItemCount
/// (the latter only without selectors) when more items remain.
fn list_meta(result: &ListResult, filtered: bool) -> ListMeta {
    let mut meta = ListMeta {
        resource_version: Some(result.resource_version.to_string()),
        ..ListMeta::default()
    };
    if let Some(c) = result.continue_token.as_ref().filter(|c| !c.is_empty()) {
        meta.continue_ = Some(c.clone());
        meta.remaining_item_count = result.remaining_item_count.filter(|_| !filtered);
    }
    meta
}
