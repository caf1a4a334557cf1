//! `get` and `list`.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Map, Value};

use super::ApiContext;
use super::params::ListParams;
use super::request::RequestContext;
use super::response;

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
    let obj = rc.store.get(rc.namespace(), &rc.info.name, &rv).await?;
    let obj = rc.to_request_version(obj)?;
    response::object(&rc, StatusCode::OK, obj, &[])
}

/// `GET` of a collection.
pub async fn list(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let labels = field_labels(&rc);
    let params = ListParams::parse(&|k: &str| rc.q(k).map(str::to_string), false, &labels)?;
    let (items, result) = rc
        .store
        .list(rc.namespace(), params.storage_options())
        .await?;
    let items = items
        .into_iter()
        .map(|o| rc.to_request_version(o))
        .collect::<Result<Vec<_>, _>>()?;
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        Value::from(result.resource_version.to_string()),
    );
    if let Some(c) = result.continue_token.filter(|c| !c.is_empty()) {
        meta.insert("continue".into(), Value::from(c));
        if let Some(n) = result.remaining_item_count.filter(|_| !params.filtered()) {
            meta.insert("remainingItemCount".into(), Value::from(n));
        }
    }
    response::list(&rc, items, Value::Object(meta))
}
