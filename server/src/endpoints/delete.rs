//! `delete` and `deletecollection`, with DeleteOptions from the body or the query, and the
//! namespace deletion flow.

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Map, Value, json};

use super::ApiContext;
use super::params::{ListParams, dry_run};
use super::read::field_labels;
use super::request::RequestContext;
use super::response;
use crate::registry::namespace::{
    begin_namespace_deletion, finalize_namespace, is_terminating, namespaced_kinds,
};
use crate::registry::{DeleteOptions, DeleteOutcome};

/// Reads DeleteOptions from the body (if any) and the query.
fn delete_options(rc: &RequestContext) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions {
        dry_run: rc.dry_run()?,
        ..DeleteOptions::default()
    };
    let mut policy = rc.q("propagationPolicy").map(str::to_string);
    if let Some(g) = rc.q("gracePeriodSeconds")
        && g.parse::<i64>().is_err()
    {
        return Err(ApiError::bad_request(format!(
            "invalid gracePeriodSeconds {g:?}"
        )));
    }
    if !rc.body.is_empty() {
        let body: Value = crate::negotiate::decode_body(
            crate::negotiate::body::body_format(rc.header("content-type"), false)?,
            &rc.body,
        )?;
        let av = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = body
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("DeleteOptions");
        let gv_ok = av.is_empty()
            || av == "v1"
            || av == "meta.k8s.io/v1"
            || av == rc.version_info.api_version()
            || av == "meta.k8s.io/v1beta1";
        if kind != "DeleteOptions" || !gv_ok {
            return Err(ApiError::bad_request(format!(
                "the body of the request was in an unknown format - {av}, Kind={kind} is not a DeleteOptions"
            )));
        }
        if let Some(p) = body.get("preconditions") {
            opts.uid = p.get("uid").and_then(Value::as_str).map(str::to_string);
            opts.resource_version = p
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
            policy = Some(p.to_string());
        }
        if let Some(d) = body.get("dryRun").and_then(Value::as_array) {
            for v in d {
                opts.dry_run |= dry_run(v.as_str())?;
            }
        }
        if body.get("orphanDependents").is_some_and(|v| !v.is_null()) && policy.is_some() {
            let err = FieldError::invalid(
                "propagationPolicy",
                &Value::from(policy.clone().unwrap_or_default()),
                "orphanDependents and deletionPropagation cannot be both set",
            );
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &[err],
            ));
        }
    }
    if let Some(p) = policy.as_deref()
        && !matches!(p, "Orphan" | "Background" | "Foreground")
    {
        let err = FieldError::new(
            FieldErrorType::NotSupported,
            "propagationPolicy",
            Some(format!("{p:?}")),
            "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        );
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            &[err],
        ));
    }
    Ok(opts)
}

fn success_details(rc: &RequestContext, object: &Value) -> Value {
    json!({
        "name": object.pointer("/metadata/name").cloned().unwrap_or(Value::from("")),
        "group": rc.version_info.group,
        "kind": rc.version_info.plural,
        "uid": object.pointer("/metadata/uid").cloned().unwrap_or(Value::from("")),
    })
}

/// `DELETE` of one object.
pub async fn delete(ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(&rc)?;
    if rc.version_info.kind == "Namespace" && rc.version_info.group.is_empty() {
        return delete_namespace(ctx, rc, opts).await;
    }
    match rc
        .store
        .delete(rc.namespace(), &rc.info.name, &opts)
        .await?
    {
        DeleteOutcome::Deleted(obj) => response::success(success_details(&rc, &obj)),
        DeleteOutcome::Pending(obj) => {
            let out = rc.to_request_version(obj)?;
            response::object(&rc, StatusCode::OK, out, &[])
        }
    }
}

async fn delete_namespace(
    ctx: &ApiContext,
    rc: RequestContext,
    opts: DeleteOptions,
) -> Result<Response<Body>, ApiError> {
    let name = rc.info.name.clone();
    let current = rc.store.get("", &name, "").await?;
    if let Some(uid) = &opts.uid
        && current.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid.as_str())
    {
        let have = current
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(ApiError::conflict(
            &rc.store.resource,
            &name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"),
        ));
    }
    if matches!(name.as_str(), "default" | "kube-system" | "kube-public") {
        return Err(ApiError::forbidden(
            &rc.store.resource,
            &name,
            "this namespace may not be deleted",
        ));
    }
    if opts.dry_run || is_terminating(&current) {
        let out = rc.to_request_version(current)?;
        return response::object(&rc, StatusCode::OK, out, &[]);
    }
    ctx.recent_namespace_deletions.mark(&name);
    let obj = begin_namespace_deletion(&rc.store, &name).await?;
    let stores = namespaced_kinds(&ctx.scheme)
        .iter()
        .map(|k| ctx.store(k))
        .collect::<Result<Vec<_>, _>>()?;
    tokio::spawn(finalize_namespace(stores, rc.store.clone(), name));
    let out = rc.to_request_version(obj)?;
    response::object(&rc, StatusCode::OK, out, &[])
}

/// `DELETE` of a collection: deletes every object matching the list options and returns them.
pub async fn delete_collection(
    ctx: &ApiContext,
    rc: RequestContext,
) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(&rc)?;
    let labels = field_labels(&rc);
    let params = ListParams::parse(&|k: &str| rc.q(k).map(str::to_string), false, &labels)?;
    let (items, result) = rc
        .store
        .list(rc.namespace(), params.storage_options())
        .await?;
    let mut deleted = Vec::new();
    for item in items {
        let ns = item
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if rc.version_info.kind == "Namespace" && rc.version_info.group.is_empty() {
            if !opts.dry_run
                && !is_terminating(&item)
                && !matches!(name.as_str(), "default" | "kube-system" | "kube-public")
            {
                ctx.recent_namespace_deletions.mark(&name);
                let obj = begin_namespace_deletion(&rc.store, &name).await?;
                let stores = namespaced_kinds(&ctx.scheme)
                    .iter()
                    .map(|k| ctx.store(k))
                    .collect::<Result<Vec<_>, _>>()?;
                tokio::spawn(finalize_namespace(stores, rc.store.clone(), name));
                deleted.push(rc.to_request_version(obj)?);
            }
            continue;
        }
        match rc.store.delete(&ns, &name, &opts).await {
            Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => {
                deleted.push(rc.to_request_version(o)?)
            }
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        Value::from(result.resource_version.to_string()),
    );
    response::list(&rc, deleted, Value::Object(meta))
}
