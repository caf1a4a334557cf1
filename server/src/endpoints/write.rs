//! `create`, `update` and `patch` (JSON, merge, strategic merge and server-side apply), for
//! the main resource and `/status`.

use apimachinery::errors::FieldError;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::ApiContext;
use super::params::go_bool;
use super::request::RequestContext;
use super::response;
use crate::apply::{self, ApplyRequest, record_update};
use crate::authz::{Attributes, Authorization, Decision};
use crate::patch::{PatchType, apply_patch};
use crate::registry::encoding::StorageMediaType;
use crate::registry::meta::{self, meta_get, meta_mut, meta_str};
use crate::registry::namespace::{check_namespace_for_create, prepare_namespace_create};

/// How long Events live (their storage TTL), as kube-apiserver's `--event-ttl` default.
pub const EVENT_TTL_SECONDS: u64 = 3600;

/// Sets the object's namespace from the URL; a different one in the body is 400.
fn fix_namespace(rc: &RequestContext, object: &mut Value) -> Result<(), ApiError> {
    let url_ns = rc.namespace();
    let meta = meta_mut(object);
    if !rc.version_info.namespaced() {
        apimachinery::json::map_remove(meta, "namespace");
        return Ok(());
    }
    match apimachinery::json::map_get(meta, "namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && ns != url_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        // Already the URL's: setting it again would change nothing.
        Some(ns) if ns == url_ns => Ok(()),
        _ => {
            meta.insert("namespace".into(), Value::from(url_ns));
            Ok(())
        }
    }
}

/// Sets the object's name from the URL; a different one in the body is 400.
fn fix_name(rc: &RequestContext, object: &mut Value) -> Result<(), ApiError> {
    let url_name = rc.info.name.clone();
    let meta = meta_mut(object);
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != url_name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({url_name})"
        ))),
        _ => {
            meta.insert("name".into(), Value::from(url_name));
            Ok(())
        }
    }
}

fn invalid(rc: &RequestContext, object: &Value, errs: Vec<FieldError>) -> Result<(), ApiError> {
    if errs.is_empty() {
        return Ok(());
    }
    let name = meta_str(object, "name").unwrap_or("");
    Err(ApiError::invalid(
        rc.version_info.group,
        rc.version_info.kind,
        name,
        &errs,
    ))
}

fn validate_create(rc: &RequestContext, sv: &Value) -> Result<(), ApiError> {
    validate_create_with(rc, sv, false).map(drop)
}

/// Validates a storage-version object for create. With `encode`, also returns its storage
/// encoding when the kind's validation produced it on the way (see
/// `KindOps::validate_create_and_encode`) and the store keeps protobuf.
fn validate_create_with(
    rc: &RequestContext,
    sv: &Value,
    encode: bool,
) -> Result<Option<Vec<u8>>, ApiError> {
    let mut errs = meta::validate_object_meta(
        sv,
        rc.version_info.namespaced(),
        rc.version_info.kind == "Namespace",
    );
    let mut encoded = None;
    if meta_str(sv, "name").is_some_and(|n| !n.is_empty()) {
        let kind_errs = if encode && rc.store.media_type == StorageMediaType::Protobuf {
            let (kind_errs, raw) = rc
                .ops
                .validate_create_and_encode(rc.storage_version(), sv)
                .map_err(ApiError::internal)?;
            encoded = raw;
            kind_errs
        } else {
            rc.ops
                .validate_create(rc.storage_version(), sv)
                .map_err(ApiError::internal)?
        };
        errs.extend(kind_errs);
    }
    invalid(rc, sv, errs)?;
    Ok(encoded)
}

/// Prepares a storage-version object for create: system metadata, status reset, kind hooks.
fn prepare_create(rc: &RequestContext, sv: &mut Value) {
    meta::prepare_create(sv, rc.version_info.tracks_generation);
    if rc.version_info.status_subresource
        && let Some(m) = sv.as_object_mut()
    {
        m.remove("status");
    }
    if rc.version_info.kind == "Namespace" && rc.version_info.group.is_empty() {
        prepare_namespace_create(sv);
    }
}

fn event_ttl(rc: &RequestContext) -> Option<u64> {
    (rc.version_info.kind == "Event"
        && (rc.version_info.group.is_empty() || rc.version_info.group == "events.k8s.io"))
        .then_some(EVENT_TTL_SECONDS)
}

async fn check_namespace(
    ctx: &ApiContext,
    rc: &RequestContext,
    name: &str,
) -> Result<(), ApiError> {
    if !rc.version_info.namespaced() {
        return Ok(());
    }
    let Some(ns_ops) = ctx.scheme.by_resource("", "namespaces").cloned() else {
        return Ok(());
    };
    let ns_store = ctx.store(&ns_ops)?;
    check_namespace_for_create(
        &ns_store,
        &ctx.recent_namespace_deletions,
        rc.namespace(),
        &rc.store.resource,
        name,
    )
    .await
}

/// `POST` to a collection.
pub async fn create(ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let dry_run = rc.dry_run()?;
    let manager = rc.field_manager()?;
    if rc.version_info.namespaced() && rc.namespace().is_empty() {
        return Err(ApiError::not_found_path());
    }
    let (mut obj, warnings) = rc.decode_object(None)?;
    fix_namespace(&rc, &mut obj)?;
    let name = meta_str(&obj, "name").unwrap_or("").to_string();
    check_namespace(ctx, &rc, &name).await?;
    apimachinery::json::map_remove(meta_mut(&mut obj), "managedFields");
    record_update(
        None,
        &mut obj,
        &manager,
        &rc.version_info.api_version(),
        "",
        rc.version_info.status_subresource,
        &rc.schema,
    );
    if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut sv = rc.to_storage_version(obj)?;
    prepare_create(&rc, &mut sv);
    let encoded = validate_create_with(&rc, &sv, true)?;
    let stored = rc
        .store
        .create_encoded(rc.namespace(), sv, dry_run, event_ttl(&rc), encoded)
        .await?;
    let out = rc.to_request_version(stored)?;
    response::object(&rc, StatusCode::CREATED, out, &warnings)
}

/// Turns a requested-version object into the storage-version object that replaces `cur`:
/// optional resourceVersion check, managed fields, update preparation and validation.
fn finish_update(
    rc: &RequestContext,
    mut new_req: Value,
    cur: &Value,
    manager: &str,
    check_rv: bool,
    record: bool,
) -> Result<Value, ApiError> {
    let cur_rv = meta_str(cur, "resourceVersion").unwrap_or("").to_string();
    let new_rv = meta_str(&new_req, "resourceVersion")
        .unwrap_or("")
        .to_string();
    let name = rc.info.name.as_str();
    if check_rv && new_rv.is_empty() && !rc.version_info.allow_unconditional_update {
        let err = FieldError::new(
            apimachinery::errors::FieldErrorType::Invalid,
            "metadata.resourceVersion",
            Some("0x0".into()),
            "must be specified for an update",
        );
        return Err(ApiError::invalid(
            rc.version_info.group,
            rc.version_info.kind,
            name,
            &[err],
        ));
    }
    if !new_rv.is_empty() && new_rv != cur_rv {
        return Err(ApiError::conflict_stale(&rc.store.resource, name));
    }
    let subresource = rc.info.subresource.as_str();
    if record {
        let cur_req = rc.to_request_version(cur.clone())?;
        let managed = crate::apply::requested_managed_fields(
            meta_get(&new_req, "managedFields"),
            subresource,
        )
        .unwrap_or_else(|| {
            meta_get(&cur_req, "managedFields")
                .cloned()
                .unwrap_or(Value::Array(vec![]))
        });
        meta_mut(&mut new_req).insert("managedFields".into(), managed);
        record_update(
            Some(&cur_req),
            &mut new_req,
            manager,
            &rc.version_info.api_version(),
            subresource,
            rc.version_info.status_subresource,
            &rc.schema,
        );
    }
    let mut sv = rc.to_storage_version(new_req)?;
    if subresource == "status" {
        meta::prepare_status_update(&mut sv, cur);
    } else {
        meta::prepare_update(&mut sv, cur, rc.version_info.status_subresource);
    }
    let mut errs = meta::validate_object_meta(
        &sv,
        rc.version_info.namespaced(),
        rc.version_info.kind == "Namespace",
    );
    errs.extend(meta::validate_meta_update(&sv, cur));
    errs.extend(
        rc.ops
            .validate_update(rc.storage_version(), &sv, cur)
            .map_err(ApiError::internal)?,
    );
    invalid(rc, &sv, errs)?;
    Ok(sv)
}

fn not_found(rc: &RequestContext) -> ApiError {
    ApiError::not_found(&rc.store.resource, &rc.info.name)
}

/// Asks the authorizer whether the user may `create` the object a `PUT` is about to create
/// (kube-apiserver authorizes create-on-update as a `create` too); 403 with the authorizer's
/// reason otherwise.
fn authorize_create(rc: &RequestContext) -> Result<(), ApiError> {
    let mut info = rc.info.clone();
    info.verb = "create".to_string();
    let attrs = crate::authz::request_attributes(&rc.user, &info);
    let verdict = match &rc.authorizer {
        Some(a) => a.0.authorize(&attrs),
        None => Authorization::no_opinion(),
    };
    if verdict.decision == Decision::Allow {
        return Ok(());
    }
    Err(ApiError::forbidden(
        &rc.store.resource,
        &rc.info.name,
        &verdict.reason,
    ))
}

/// Turns the body of a `PUT` of a missing object into the storage-version object to create
/// (create-on-update): a `uid` in the body is a failed precondition (409) and a
/// resourceVersion is ignored; otherwise as a `POST`: managed fields (operation `Update`),
/// create preparation and validation, then the `create` authorization.
fn create_on_update(rc: &RequestContext, mut obj: Value, manager: &str) -> Result<Value, ApiError> {
    if let Some(uid) = meta_str(&obj, "uid").filter(|u| !u.is_empty()) {
        return Err(ApiError::conflict(
            &rc.store.resource,
            &rc.info.name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: "),
        ));
    }
    let meta = meta_mut(&mut obj);
    meta.remove("resourceVersion");
    meta.remove("managedFields");
    record_update(
        None,
        &mut obj,
        manager,
        &rc.version_info.api_version(),
        "",
        rc.version_info.status_subresource,
        &rc.schema,
    );
    let mut sv = rc.to_storage_version(obj)?;
    prepare_create(rc, &mut sv);
    validate_create(rc, &sv)?;
    authorize_create(rc)?;
    Ok(sv)
}

/// `PUT` of an object (or `/status`). A missing object is created (201) when the kind allows
/// create-on-update and the request is not for a subresource; otherwise it is 404.
pub async fn update(ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let dry_run = rc.dry_run()?;
    let manager = rc.field_manager()?;
    let (mut obj, warnings) = rc.decode_object(None)?;
    fix_namespace(&rc, &mut obj)?;
    fix_name(&rc, &mut obj)?;
    let may_create = rc.version_info.allow_create_on_update && rc.info.subresource.is_empty();
    // A create needs a live namespace, as a `POST` does; an update of an existing object in a
    // terminating namespace does not.
    if may_create
        && rc
            .store
            .try_get(rc.namespace(), &rc.info.name)
            .await?
            .is_none()
    {
        check_namespace(ctx, &rc, &rc.info.name).await?;
    }
    let rcr = &rc;
    let (stored, created) = rc
        .store
        .update_with_create_ttl(
            rc.namespace(),
            &rc.info.name,
            may_create,
            dry_run,
            event_ttl(&rc),
            Box::new(move |cur| match cur {
                Some(cur) => finish_update(rcr, obj.clone(), &cur, &manager, true, true),
                None if may_create => create_on_update(rcr, obj.clone(), &manager),
                None => Err(not_found(rcr)),
            }),
        )
        .await?;
    let out = rc.to_request_version(stored)?;
    response::object(
        &rc,
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        out,
        &warnings,
    )
}

/// `PATCH` of an object (or `/status`).
pub async fn patch(ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let content_type = rc.header("content-type").unwrap_or("").to_string();
    let patch_type =
        PatchType::from_content_type(&content_type, rc.version_info.strategic_merge_patch)?;
    if patch_type == PatchType::Apply {
        return apply_request(ctx, rc).await;
    }
    if rc.q("force").is_some() {
        let err = FieldError::forbidden("force", "may not be specified for non-apply patch");
        return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[err]));
    }
    let dry_run = rc.dry_run()?;
    let manager = rc.field_manager()?;
    let warnings = Mutex::new(Vec::new());
    let rcr = &rc;
    let warn = &warnings;
    let (stored, _) = rc
        .store
        .update(
            rc.namespace(),
            &rc.info.name,
            false,
            dry_run,
            Box::new(move |cur| {
                let cur = cur.ok_or_else(|| not_found(rcr))?;
                let cur_req = rcr.to_request_version(cur.clone())?;
                let patched = apply_patch(patch_type, &cur_req, &rcr.body, &rcr.schema)?;
                let (mut new_req, w) = rcr.decode_object(Some(patched))?;
                *warn.lock() = w;
                fix_namespace(rcr, &mut new_req)?;
                fix_name(rcr, &mut new_req)?;
                finish_update(rcr, new_req, &cur, &manager, false, true)
            }),
        )
        .await?;
    let out = rc.to_request_version(stored)?;
    let w = warnings.lock().clone();
    response::object(&rc, StatusCode::OK, out, &w)
}

/// Server-side apply (`application/apply-patch+yaml`).
async fn apply_request(ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let dry_run = rc.dry_run()?;
    let manager = match rc.q("fieldManager") {
        Some(m) if !m.is_empty() => rc.field_manager()?,
        _ => {
            let err = FieldError::required("fieldManager", "is required for apply patch");
            return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[err]));
        }
    };
    let force = go_bool(rc.q("force")).unwrap_or(false);
    let mut applied = crate::negotiate::yaml_to_json(&rc.body)?;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    }
    fix_namespace(&rc, &mut applied)?;
    fix_name(&rc, &mut applied)?;
    // Unknown fields are checked (and dropped) as for any write; defaults are not applied to
    // the configuration, so appliers own only what they wrote.
    let (_, warnings) = rc.decode_object(Some(applied.clone()))?;
    let kind = rc.version_info.kind;
    let exists = rc
        .store
        .try_get(rc.namespace(), &rc.info.name)
        .await?
        .is_some();
    if !exists {
        check_namespace(ctx, &rc, &rc.info.name).await?;
    }
    let api_version = rc.version_info.api_version();
    let rcr = &rc;
    let (stored, created) = rc
        .store
        .update(
            rc.namespace(),
            &rc.info.name,
            true,
            dry_run,
            Box::new(move |cur| {
                let live = match &cur {
                    Some(c) => Some(rcr.to_request_version(c.clone())?),
                    None => None,
                };
                let req = ApplyRequest {
                    manager: &manager,
                    api_version: &api_version,
                    force,
                    subresource: &rcr.info.subresource,
                    status_subresource: rcr.version_info.status_subresource,
                };
                let mut merged = apply::apply(live.as_ref(), &applied, &req, &rcr.schema)?;
                if let Some(m) = merged.as_object_mut() {
                    m.insert("apiVersion".into(), Value::from(api_version.clone()));
                    m.insert("kind".into(), Value::from(kind));
                }
                let (new_req, _) = rcr.decode_object(Some(merged))?;
                match cur {
                    Some(cur) => finish_update(rcr, new_req, &cur, &manager, false, false),
                    None => {
                        let mut sv = rcr.to_storage_version(new_req)?;
                        prepare_create(rcr, &mut sv);
                        validate_create(rcr, &sv)?;
                        Ok(sv)
                    }
                }
            }),
        )
        .await?;
    let out = rc.to_request_version(stored)?;
    response::object(
        &rc,
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        out,
        &warnings,
    )
}
