//! `delete` and `deletecollection`, with DeleteOptions from the body or the query. Each object
//! goes through validating admission and then the kind's store, which removes it or, while
//! finalizers are pending, starts its deletion.

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::meta::ListMeta;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::ApiContext;
use super::get::list_params;
use super::params::dry_run;
use super::response;
use super::scope::RequestScope;
use crate::admission::RequestAdmission;
use crate::registry::{DeleteOptions, DeleteOutcome};

/// Reads DeleteOptions from the body (if any) and the query, and the propagation policy.
fn delete_options(rc: &RequestScope) -> Result<(DeleteOptions, Option<String>), ApiError> {
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
            || av == rc.version.api_version()
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
    Ok((opts, policy))
}

fn success_details(scope: &RequestScope, object: &dyn Object) -> Value {
    json!({
        "name": object.name(),
        "group": scope.version.group,
        "kind": scope.version.plural,
        "uid": object.metadata().uid.clone().unwrap_or_default(),
    })
}

fn admission<'a>(
    ctx: &'a ApiContext,
    scope: &'a RequestScope,
    name: &'a str,
    opts: &DeleteOptions,
    policy: Option<String>,
) -> RequestAdmission<'a> {
    RequestAdmission::new(
        &ctx.admission,
        Operation::Delete,
        scope.kind,
        scope.version,
        "",
        scope.namespace(),
        name,
        opts.dry_run,
        OperationOptions {
            propagation_policy: policy,
            ..OperationOptions::default()
        },
        &scope.user,
    )
}

/// `DELETE` of one object: a `Status` of success once it is gone, or the object (200) while
/// its finalizers are pending.
pub async fn delete(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let (opts, policy) = delete_options(&scope)?;
    let admission = admission(ctx, &scope, scope.name(), &opts, policy);
    match scope
        .store
        .delete(scope.namespace(), scope.name(), &admission, &opts)
        .await?
    {
        DeleteOutcome::Deleted(obj) => response::success(success_details(&scope, &*obj)),
        DeleteOutcome::Pending(obj) => {
            let out = scope.to_request_version(obj)?;
            response::object(&scope, StatusCode::OK, &*out, &admission.warnings())
        }
    }
}

/// `DELETE` of a collection: deletes every object matching the list options (each through
/// admission) and returns them.
pub async fn delete_collection(
    ctx: &ApiContext,
    scope: RequestScope,
) -> Result<Response<Body>, ApiError> {
    let (opts, policy) = delete_options(&scope)?;
    let params = list_params(&scope, false)?;
    let (items, result) = scope
        .store
        .list(scope.namespace(), params.storage_options())
        .await?;
    let mut deleted = Vec::new();
    for item in items {
        let namespace = item.namespace().to_string();
        let name = item.name().to_string();
        let admission = admission(ctx, &scope, &name, &opts, policy.clone());
        match scope
            .store
            .delete(&namespace, &name, &admission, &opts)
            .await
        {
            Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => {
                deleted.push(scope.to_request_version(o)?)
            }
            // Gone meanwhile, or refused (a namespace that may not be deleted): skipped.
            Err(e) if e.code() == 404 || e.code() == 403 => {}
            Err(e) => return Err(e),
        }
    }
    let meta = ListMeta {
        resource_version: Some(result.resource_version.to_string()),
        ..ListMeta::default()
    };
    response::list(&scope, &deleted, &meta)
}
