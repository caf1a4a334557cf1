//! `create`: a `POST` to a collection. The object runs one way: decoded from the body into the
//! requested version, its namespace set from the URL, its managed fields recorded, converted
//! to the storage version, through mutating admission, then into the kind's store (rules,
//! validation, validating admission, storage) and back out in the requested version.

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::meta::options::CreateOptions;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};

use super::ApiContext;
use super::decode::decode_body;
use super::response;
use super::scope::RequestScope;
use crate::admission::RequestAdmission;
use crate::apply::update_managed_fields;

/// `POST` to a collection.
pub async fn create(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let options = CreateOptions::parse(&scope.query)?;
    let dry_run = options.is_dry_run();
    let manager = scope.manager(&options.field_manager);
    if scope.version.namespaced() && scope.namespace().is_empty() {
        return Err(ApiError::not_found_path());
    }
    let body = decode_body(&scope, options.field_validation_directive())?;
    let mut object = body.object;
    scope.set_namespace(&mut *object)?;
    update_managed_fields(None, &mut *object, &manager, "")?;
    let mut object = scope.to_write_version(object)?;
    let name = object.name().to_string();
    let admission = RequestAdmission::new(
        &ctx.admission,
        Operation::Create,
        scope.kind,
        scope.version,
        "",
        scope.namespace(),
        &name,
        dry_run,
        OperationOptions {
            field_manager: manager,
            ..OperationOptions::default()
        },
        &scope.user,
    )
    .with_authorization(scope.authorizer(), ctx.rule_resolver())
    .with_audit(scope.audit_note.as_ref());
    admission.mutate(&mut object, None).await?;
    let (stored, strategy_warnings) = scope.storage.create(object, &admission, dry_run).await?;
    let out = scope.to_request_version(stored)?;
    let mut warnings = body.warnings;
    warnings.extend(admission.warnings());
    warnings.extend(strategy_warnings);
    response::object(&scope, StatusCode::CREATED, &*out, &warnings)
}
