//! The `/scale` subresource: an `autoscaling/v1` `Scale` mapped onto the kind's replica and
//! selector paths.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode, header};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::ApiContext;
use super::request::RequestContext;
use crate::apply::record_update;
use crate::patch::{PatchType, SchemaNode, apply_patch};
use crate::registry::meta::{self, meta_mut, meta_str};
use crate::table::jsonpath;

/// Builds the Scale of an object of the requested version.
fn to_scale(rc: &RequestContext, object: &Value) -> Value {
    let info = rc
        .version_info
        .scale
        .clone()
        .unwrap_or(apimachinery::ScaleInfo {
            spec_replicas_path: ".spec.replicas",
            status_replicas_path: ".status.replicas",
            label_selector_path: "",
        });
    let m = |k: &str| object.pointer(&format!("/metadata/{k}")).cloned();
    let mut metadata = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m(k) {
            metadata.insert(k.into(), v);
        }
    }
    let spec_replicas = jsonpath::select(object, info.spec_replicas_path)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let status_replicas = jsonpath::select(object, info.status_replicas_path)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if !info.label_selector_path.is_empty()
        && let Some(sel) = jsonpath::select(object, info.label_selector_path)
            .and_then(|v| v.as_str().map(str::to_string))
    {
        status["selector"] = Value::from(sel);
    }
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata, "spec": {"replicas": spec_replicas}, "status": status})
}

fn send(scale: &Value) -> Result<Response<Body>, ApiError> {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            serde_json::to_vec(scale).map_err(ApiError::internal)?,
        ))
        .map_err(ApiError::internal)
}

/// `GET .../scale`.
pub async fn get(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let obj = rc
        .store
        .get(
            rc.namespace(),
            &rc.info.name,
            rc.q("resourceVersion").unwrap_or(""),
        )
        .await?;
    let obj = rc.to_request_version(obj)?;
    send(&to_scale(&rc, &obj))
}

/// Writes a new Scale: checks its resourceVersion, sets the replicas path and stores.
fn scaled(
    rc: &RequestContext,
    cur: &Value,
    scale: &Value,
    manager: &str,
) -> Result<Value, ApiError> {
    let cur_req = rc.to_request_version(cur.clone())?;
    let name = rc.info.name.as_str();
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !rv.is_empty() && Some(rv) != meta_str(cur, "resourceVersion") {
        return Err(ApiError::conflict_stale(&rc.store.resource, name));
    }
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.replicas must be an integer"))?,
    };
    if replicas < 0 {
        let err = apimachinery::errors::FieldError::invalid(
            "spec.replicas",
            &Value::from(replicas),
            "must be greater than or equal to 0",
        );
        return Err(ApiError::invalid("autoscaling", "Scale", name, &[err]));
    }
    let path = rc
        .version_info
        .scale
        .as_ref()
        .map(|s| s.spec_replicas_path)
        .unwrap_or(".spec.replicas");
    let mut new_req = cur_req.clone();
    jsonpath::set(&mut new_req, path, Value::from(replicas));
    record_update(
        Some(&cur_req),
        &mut new_req,
        manager,
        &rc.version_info.api_version(),
        "scale",
        rc.version_info.status_subresource,
        &SchemaNode::untyped(),
    );
    let mut sv = rc.to_storage_version(new_req)?;
    meta::prepare_update(&mut sv, cur, rc.version_info.status_subresource);
    let mut errs = rc
        .ops
        .validate_update(rc.storage_version(), &sv, cur)
        .map_err(ApiError::internal)?;
    errs.extend(meta::validate_meta_update(&sv, cur));
    if !errs.is_empty() {
        return Err(ApiError::invalid(
            rc.version_info.group,
            rc.version_info.kind,
            name,
            &errs,
        ));
    }
    meta_mut(&mut sv);
    Ok(sv)
}

async fn write(
    rc: &RequestContext,
    make_scale: impl Fn(&Value) -> Result<Value, ApiError> + Send,
) -> Result<Response<Body>, ApiError> {
    let dry_run = rc.dry_run()?;
    let manager = rc.field_manager()?;
    let rcr = rc;
    let (stored, _) = rc
        .store
        .update(
            rc.namespace(),
            &rc.info.name,
            false,
            dry_run,
            Box::new(move |cur| {
                let cur =
                    cur.ok_or_else(|| ApiError::not_found(&rcr.store.resource, &rcr.info.name))?;
                let cur_req = rcr.to_request_version(cur.clone())?;
                let scale = make_scale(&to_scale(rcr, &cur_req))?;
                scaled(rcr, &cur, &scale, &manager)
            }),
        )
        .await?;
    let out = rc.to_request_version(stored)?;
    send(&to_scale(rc, &out))
}

/// `PUT .../scale`.
pub async fn update(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let body = rc.body_value()?;
    if body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|n| n != rc.info.name)
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            body["metadata"]["name"].as_str().unwrap_or(""),
            rc.info.name
        )));
    }
    write(&rc, |_| Ok(body.clone())).await
}

/// `PATCH .../scale` (merge patch from `kubectl scale`, JSON patch, strategic merge).
pub async fn patch(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let ct = rc.header("content-type").unwrap_or("").to_string();
    let pt = PatchType::from_content_type(&ct, true)?;
    let pt = if pt == PatchType::Strategic || pt == PatchType::Apply {
        PatchType::Merge
    } else {
        pt
    };
    let body = if ct.starts_with(crate::patch::APPLY_PATCH_YAML) {
        serde_json::to_vec(&crate::negotiate::yaml_to_json(&rc.body)?)
            .map_err(ApiError::internal)?
    } else {
        rc.body.to_vec()
    };
    let err = Mutex::new(None::<ApiError>);
    let res = write(&rc, |scale| {
        apply_patch(pt, scale, &body, &SchemaNode::untyped())
    })
    .await;
    if let Some(e) = err.lock().take() {
        return Err(e);
    }
    res
}
