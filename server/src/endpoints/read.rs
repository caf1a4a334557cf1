//! `get` and `list`.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Map, Value};

use storage::interface::ListResult;

use super::ApiContext;
use super::params::ListParams;
use super::request::RequestContext;
use super::response;
use crate::negotiate::{OutputFormat, Transform, negotiate_output};

/// The field labels a kind supports in field selectors.
pub fn field_labels(rc: &RequestContext) -> Vec<String> {
    let mut labels = vec![
        "metadata.name".to_string(),
        "metadata.namespace".to_string(),
    ];
    labels.extend(
        rc.version_info
            .field_selectors
            .iter()
            .map(|s| s.to_string()),
    );
    labels
}

/// `GET .../{name}` (and `/status`).
pub async fn get(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let rv = rc.q("resourceVersion").unwrap_or("").to_string();
    let stored = rc
        .store
        .get_stored(rc.namespace(), &rc.info.name, &rv)
        .await?;
    let n = negotiate_output(rc.header("accept"), false, rc.protobuf())?;
    if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && rc.version() == rc.storage_version()
    {
        // Written from the stored bytes: no decode, no re-encode.
        return response::raw_json(&rc, rc.store.json_for_get(&stored)?.to_vec());
    }
    let obj = rc.to_request_version(rc.store.decode(&stored)?)?;
    response::object(&rc, StatusCode::OK, obj, &[])
}

/// `GET` of a collection.
pub async fn list(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let labels = field_labels(&rc);
    let params = ListParams::parse(&|k: &str| rc.q(k).map(str::to_string), false, &labels)?;
    let n = negotiate_output(rc.header("accept"), true, rc.protobuf())?;
    if n.format == OutputFormat::Json
        && n.transform == Transform::None
        && rc.version() == rc.storage_version()
    {
        // Written from the stored bytes: no decode, no re-encode.
        let result = rc
            .store
            .list_raw(rc.namespace(), params.storage_options())
            .await?;
        let items = rc.store.json_list_items(&result.items)?;
        let meta = list_meta(&result, params.filtered());
        return response::raw_json_list(&rc, &items, &meta);
    }
    let (items, result) = rc
        .store
        .list(rc.namespace(), params.storage_options())
        .await?;
    let items = items
        .into_iter()
        .map(|o| rc.to_request_version(o))
        .collect::<Result<Vec<_>, _>>()?;
    let meta = list_meta(&result, params.filtered());
    response::list(&rc, items, meta)
}

/// The `ListMeta` of a list result: resourceVersion, and continue plus remainingItemCount
/// (the latter only without selectors) when more items remain.
fn list_meta(result: &ListResult, filtered: bool) -> Value {
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        Value::from(result.resource_version.to_string()),
    );
    if let Some(c) = result.continue_token.as_ref().filter(|c| !c.is_empty()) {
        meta.insert("continue".into(), Value::from(c.clone()));
        if let Some(n) = result.remaining_item_count.filter(|_| !filtered) {
            meta.insert("remainingItemCount".into(), Value::from(n));
        }
    }
    Value::Object(meta)
}
