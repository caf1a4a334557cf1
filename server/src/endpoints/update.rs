//! `update`: a `PUT` of an object (or of its `/status`). The body is decoded once; the store
//! turns it into the new state of the stored object ([`PutInfo`], which records managed
//! fields and runs mutating admission against the current object, again on a retry), then
//! applies the kind's rules, validation and validating admission, and writes it. A missing
//! object is created when the kind allows create-on-update, after a `create` authorization
//! ([`AuthorizeCreate`]).

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::meta::options::UpdateOptions as UpdateQuery;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use axum::body::Body;
use http::{Response, StatusCode};

use super::ApiContext;
use super::decode::decode_body;
use super::response;
use super::scope::RequestScope;
use crate::admission::RequestAdmission;
use crate::apply::update_managed_fields;
use crate::authz::{Authorization, Decision};
use crate::registry::{UpdateOptions, UpdatedObjectInfo, ValidateObject};

/// `PUT` of an object (or `/status`).
pub async fn update(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let options = UpdateQuery::parse(&scope.query)?;
    let dry_run = options.is_dry_run();
    let manager = scope.manager(&options.field_manager);
    let body = decode_body(&scope, options.field_validation_directive())?;
    let mut object = body.object;
    scope.set_namespace(&mut *object)?;
    scope.set_name(&mut *object)?;
    let admission = RequestAdmission::new(
        &ctx.admission,
        Operation::Update,
        scope.kind,
        scope.version,
        scope.subresource(),
        scope.namespace(),
        scope.name(),
        dry_run,
        OperationOptions {
            field_manager: manager.clone(),
            ..OperationOptions::default()
        },
        &scope.user,
    )
    .with_authorization(scope.authorizer(), ctx.rule_resolver())
    .with_audit(scope.audit_note.as_ref());
    let create_admission = admission.as_operation(Operation::Create);
    let info = PutInfo {
        scope: &scope,
        object,
        manager: &manager,
        admission: &admission,
        create_admission: &create_admission,
    };
    let updated = scope
        .storage
        .update(
            scope.namespace(),
            scope.name(),
            &info,
            &AuthorizeCreate {
                scope: &scope,
                then: &create_admission,
            },
            &admission,
            UpdateOptions {
                subresource: scope.subresource(),
                force_allow_create: false,
                dry_run,
            },
        )
        .await?;
    let out = scope.to_request_version(updated.object)?;
    let mut warnings = body.warnings;
    warnings.extend(admission.warnings());
    warnings.extend(create_admission.warnings());
    warnings.extend(updated.warnings);
    let status = if updated.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    response::object(&scope, status, &*out, &warnings)
}

/// The new state a `PUT` gives the stored object.
struct PutInfo<'a> {
    scope: &'a RequestScope,
    /// The decoded body, of the requested version.
    object: Box<dyn Object>,
    manager: &'a str,
    admission: &'a RequestAdmission<'a>,
    create_admission: &'a RequestAdmission<'a>,
}

#[async_trait]
impl UpdatedObjectInfo for PutInfo<'_> {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let scope = self.scope;
        let mut new = self.object.clone_object();
        match old {
            None => {
                // A create through a `PUT`: a uid in the body cannot match an object that does
                // not exist, and the resourceVersion is ignored.
                if let Some(uid) = new.metadata().uid.as_deref().filter(|u| !u.is_empty()) {
                    return Err(ApiError::conflict(
                        scope.storage.resource(),
                        scope.name(),
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: "
                        ),
                    ));
                }
                update_managed_fields(None, &mut *new, self.manager, "")?;
                let mut new = scope.to_write_version(new)?;
                self.create_admission.mutate(&mut new, None).await?;
                Ok(new)
            }
            Some(old) => {
                let old_requested = scope.to_request_version(old.clone_object())?;
                update_managed_fields(
                    Some(&*old_requested),
                    &mut *new,
                    self.manager,
                    scope.subresource(),
                )?;
                let mut new = scope.to_write_version(new)?;
                let old = scope.admitted_old(old, &*old_requested);
                self.admission.mutate(&mut new, Some(old)).await?;
                Ok(new)
            }
        }
    }
}

/// The validating step of a create through an update (`PUT` or apply of a missing object):
/// the user must also be allowed to `create` (kube-apiserver authorizes it so), then the
/// admission of the create runs.
pub(super) struct AuthorizeCreate<'a> {
    pub(super) scope: &'a RequestScope,
    pub(super) then: &'a RequestAdmission<'a>,
}

#[async_trait]
impl ValidateObject for AuthorizeCreate<'_> {
    async fn validate(
        &self,
        object: Option<&dyn Object>,
        old: Option<&dyn Object>,
    ) -> Result<(), ApiError> {
        let scope = self.scope;
        let mut info = scope.info.clone();
        info.verb = "create".to_string();
        let attrs = crate::authz::request_attributes(&scope.user, &info);
        let verdict = match &scope.authorizer {
            Some(a) => a.0.authorize(&attrs),
            None => Authorization::no_opinion(),
        };
        if verdict.decision != Decision::Allow {
            return Err(ApiError::forbidden(
                scope.storage.resource(),
                scope.name(),
                &verdict.reason.to_string(),
            ));
        }
        self.then.validate(object, old).await
    }

    async fn committed(&self, succeeded: bool) {
        self.then.committed(succeeded).await
    }

    fn authorize(&self, object: &dyn Object, old: Option<&dyn Object>) -> Result<(), ApiError> {
        self.then.authorize(object, old)
    }
}
