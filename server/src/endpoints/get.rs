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
use crate::registry::KindStorage;

/// The list (or watch) options of a request, checked against the kind's field labels.
pub fn list_params(scope: &RequestScope) -> Result<ListParams, ApiError> {
    ListParams::parse(scope)
}

/// `GET .../{name}` (and `/status`).
pub async fn get(_ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let store = match &scope.storage {
        KindStorage::Store(store) => store,
        KindStorage::Custom(custom) => {
            let object = custom.get(scope.namespace(), scope.name()).await?;
            let object = scope.to_request_version(object)?;
            return response::object(&scope, StatusCode::OK, &*object, &[]);
        }
    };
    let rv = scope.q("resourceVersion").unwrap_or("");
    let stored = store
        .get_stored(scope.namespace(), scope.name(), rv)
        .await?;
    let n = negotiate_output(scope.header("accept"), false, scope.protobuf())?;
    if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && scope.is_storage_version()
    {
        return response::raw_json(&scope, store.json_for_get(&stored)?.to_vec());
    }
    let object = scope.to_request_version(store.decode(&stored)?)?;
    response::object(&scope, StatusCode::OK, &*object, &[])
}

/// `GET` of a collection.
pub async fn list(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let params = list_params(&scope)?;
    let n = negotiate_output(scope.header("accept"), true, scope.protobuf())?;
    let store = match &scope.storage {
        KindStorage::Store(store) => store,
        KindStorage::Custom(custom) => {
            let list = custom.list(&params.rest_options(scope.namespace())).await?;
            let items = scope.to_request_version_all(list.items)?;
            let mut meta = ListMeta {
                resource_version: Some(list.resource_version),
                ..ListMeta::default()
            };
            if let Some(c) = list.continue_token.filter(|c| !c.is_empty()) {
                meta.continue_ = Some(c);
                meta.remaining_item_count =
                    list.remaining_item_count.filter(|_| !params.filtered());
            }
            return response::list(&scope, &items, &meta);
        }
    };
    let mut result = store
        .list_stored(scope.namespace(), params.storage_options())
        .await?;
    let stored = std::mem::take(&mut result.items);
    // The response is built in memory: about twice the stored bytes (protobuf at rest is
    // about half its JSON). A large one needs room in the list budget, or is 429.
    let estimate = 2 * stored.iter().map(|o| o.data.len() as u64).sum::<u64>();
    let reservation = ctx.list_budget.reserve(&scope.user, estimate)?;
    let meta = list_meta(&result, params.filtered());
    let resp = if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && scope.is_storage_version()
    {
        let items = store.json_list_items(stored).await?;
        let meta = serde_json::to_value(meta).unwrap_or(Value::Null);
        response::raw_json_list(&scope, items, &meta)?
    } else {
        let decoded = stored
            .iter()
            .map(|o| store.decode(o))
            .collect::<Result<Vec<_>, _>>()?;
        drop(stored);
        let items = scope.to_request_version_all(decoded)?;
        response::list(&scope, &items, &meta)?
    };
    Ok(crate::held_body::held_until_sent(resp, reservation))
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
