//! The `/scale` subresource: an `autoscaling/v1` `Scale` mapped onto the kind's replica and
//! selector paths.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode, header};
use serde_json::{Value, json};

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::meta::options::{FieldValidation, PatchOptions, UpdateOptions as UpdateQuery};
use apimachinery::runtime::Object;
use async_trait::async_trait;

use super::ApiContext;
use super::decode::decode_tree;
use super::scope::RequestScope;
use crate::admission::RequestAdmission;
use crate::apply::update_managed_fields;
use crate::patch::{PatchType, SchemaNode, apply_patch};
use crate::registry::{UpdateOptions, UpdatedObjectInfo};
use crate::table::jsonpath;

/// Builds the Scale of an object (the JSON tree of the requested version).
fn to_scale(rc: &RequestScope, object: &Value) -> Value {
    let info = rc.version.scale.clone().unwrap_or(apimachinery::ScaleInfo {
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

fn tree(object: &dyn Object) -> Result<Value, ApiError> {
    object.to_value().map_err(ApiError::internal)
}

/// `GET .../scale`.
pub async fn get(_ctx: &ApiContext, rc: RequestScope) -> Result<Response<Body>, ApiError> {
    let obj = rc
        .storage
        .get(
            rc.namespace(),
            rc.name(),
            rc.q("resourceVersion").unwrap_or(""),
        )
        .await?;
    let obj = rc.to_request_version(obj)?;
    send(&to_scale(&rc, &tree(&*obj)?))
}

/// How a write derives the new Scale from the current one.
type MakeScale<'a> = dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync + 'a;

/// The new state a write of `/scale` gives the stored object: its replicas path set from the
/// new Scale (whose resourceVersion, if any, must be the stored one's).
struct ScaleInfo<'a> {
    rc: &'a RequestScope,
    make_scale: &'a MakeScale<'a>,
    manager: &'a str,
    admission: &'a RequestAdmission<'a>,
}

#[async_trait]
impl UpdatedObjectInfo for ScaleInfo<'_> {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let rc = self.rc;
        let old = old.ok_or_else(|| rc.not_found())?;
        let old_requested = rc.to_request_version(old.clone_object())?;
        let current = tree(&*old_requested)?;
        let scale = (self.make_scale)(&to_scale(rc, &current))?;
        let name = rc.name();
        let rv = scale
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !rv.is_empty() && Some(rv) != old.metadata().resource_version.as_deref() {
            return Err(ApiError::conflict_stale(rc.storage.resource(), name));
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
            .version
            .scale
            .as_ref()
            .map(|s| s.spec_replicas_path)
            .unwrap_or(".spec.replicas");
        let mut new_tree = current;
        jsonpath::set(&mut new_tree, path, Value::from(replicas));
        let mut new = decode_tree(rc, &new_tree, FieldValidation::Ignore)?.object;
        update_managed_fields(Some(&*old_requested), &mut *new, self.manager, "scale")?;
        let mut new = rc.to_storage_version(new)?;
        self.admission.mutate(&mut new, Some(old)).await?;
        Ok(new)
    }
}

async fn write(
    ctx: &ApiContext,
    rc: &RequestScope,
    make_scale: &MakeScale<'_>,
    dry_run: bool,
    manager: String,
) -> Result<Response<Body>, ApiError> {
    let admission = RequestAdmission::new(
        &ctx.admission,
        Operation::Update,
        rc.kind,
        rc.version,
        "scale",
        rc.namespace(),
        rc.name(),
        dry_run,
        OperationOptions {
            field_manager: manager.clone(),
            ..OperationOptions::default()
        },
        &rc.user,
    )
    .with_authorization(rc.authorizer(), ctx.rule_resolver())
    .with_audit(rc.audit_note.as_ref());
    let info = ScaleInfo {
        rc,
        make_scale,
        manager: &manager,
        admission: &admission,
    };
    let updated = rc
        .storage
        .update(
            rc.namespace(),
            rc.name(),
            &info,
            &admission,
            &admission,
            UpdateOptions {
                // The object's main resource changes (its replicas); its status stays.
                subresource: "",
                force_allow_create: false,
                dry_run,
            },
        )
        .await?;
    let out = rc.to_request_version(updated.object)?;
    send(&to_scale(rc, &tree(&*out)?))
}

/// `PUT .../scale`.
pub async fn update(ctx: &ApiContext, rc: RequestScope) -> Result<Response<Body>, ApiError> {
    let options = UpdateQuery::parse(&rc.query)?;
    let manager = rc.manager(&options.field_manager);
    let format = crate::negotiate::body::body_format(rc.header("content-type"), false)?;
    let body = crate::negotiate::decode_body(format, &rc.body)?;
    if body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|n| n != rc.name())
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            body["metadata"]["name"].as_str().unwrap_or(""),
            rc.name()
        )));
    }
    write(
        ctx,
        &rc,
        &|_| Ok(body.clone()),
        options.is_dry_run(),
        manager,
    )
    .await
}

/// `PATCH .../scale` (merge patch from `kubectl scale`, JSON patch, strategic merge).
pub async fn patch(ctx: &ApiContext, rc: RequestScope) -> Result<Response<Body>, ApiError> {
    let ct = rc.header("content-type").unwrap_or("").to_string();
    let pt = PatchType::from_content_type(&ct, true)?;
    let options = PatchOptions::parse(&rc.query, pt == PatchType::Apply)?;
    let manager = rc.manager(&options.field_manager);
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
    write(
        ctx,
        &rc,
        &|scale| apply_patch(pt, scale, &body, &SchemaNode::untyped()),
        options.is_dry_run(),
        manager,
    )
    .await
}
