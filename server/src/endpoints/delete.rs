//! `delete` and `deletecollection`, with DeleteOptions from the body or the query. Each object
//! goes through validating admission and then the kind's store, which removes it or, while
//! finalizers are pending, starts its deletion.

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::meta::ListMeta;
use apimachinery::meta::options::DeleteOptions as DeleteQuery;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::ApiContext;
use super::get::list_params;
use super::response;
use super::scope::RequestScope;
use crate::admission::RequestAdmission;
use crate::registry::{DeleteOptions, DeleteOutcome, KindStorage};

/// Reads DeleteOptions from the body (if any, replacing the query's) or the query, and the
/// propagation policy.
fn delete_options(rc: &RequestScope) -> Result<(DeleteOptions, Option<String>), ApiError> {
    let body = if rc.body.is_empty() {
        None
    } else {
        Some(crate::negotiate::decode_body(
            crate::negotiate::body::body_format(rc.header("content-type"), false)?,
            &rc.body,
        )?)
    };
    let options = DeleteQuery::parse(&rc.query, body.as_ref(), Some(&rc.version.api_version()))?;
    let preconditions = options.preconditions.clone().unwrap_or_default();
    Ok((
        DeleteOptions {
            uid: preconditions.uid,
            resource_version: preconditions.resource_version,
            dry_run: options.is_dry_run(),
        },
        options.propagation_policy,
    ))
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
    .with_authorization(scope.authorizer(), ctx.rule_resolver())
    .with_audit(scope.audit_note.as_ref())
}

/// `DELETE` of one object: a `Status` of success once it is gone, or the object (200) while
/// its finalizers are pending.
pub async fn delete(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let (opts, policy) = delete_options(&scope)?;
    let admission = admission(ctx, &scope, scope.name(), &opts, policy);
    match scope
        .storage
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
    let params = list_params(&scope)?;
    let (items, resource_version) = match &scope.storage {
        KindStorage::Store(store) => {
            let (items, result) = store
                .list(scope.namespace(), params.storage_options())
                .await?;
            (items, result.resource_version.to_string())
        }
        KindStorage::Custom(custom) => {
            let list = custom.list(&params.rest_options(scope.namespace())).await?;
            (list.items, list.resource_version)
        }
    };
    // The items are read in the requested version before any is deleted, as kube-apiserver's
    // list does: a conversion that fails (a conversion webhook) fails the request first.
    let items = scope.to_request_version_all(items)?;
    let mut deleted = Vec::new();
    for item in items {
        let namespace = item.namespace().to_string();
        let name = item.name().to_string();
        let admission = admission(ctx, &scope, &name, &opts, policy.clone());
        match scope
            .storage
            .delete(&namespace, &name, &admission, &opts)
            .await
        {
            Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => deleted.push(o),
            // Gone meanwhile, or refused (a namespace that may not be deleted): skipped.
            Err(e) if e.code() == 404 || e.code() == 403 => {}
            Err(e) => return Err(e),
        }
    }
    let deleted = scope.to_request_version_all(deleted)?;
    let meta = ListMeta {
        resource_version: Some(resource_version),
        ..ListMeta::default()
    };
    response::list(&scope, &deleted, &meta)
}
