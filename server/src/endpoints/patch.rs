//! `patch`: JSON patch, merge patch and strategic merge patch of an object (or `/status`), and
//! server-side apply. The patch is applied to the stored object's JSON tree in the requested
//! version (again on a retry), the result decoded into its typed form, its managed fields
//! recorded and mutating admission run ([`PatchInfo`], [`ApplyInfo`]); then the store applies
//! the kind's rules, validation and validating admission, and writes it.

use apimachinery::admission::{Operation, OperationOptions};
use apimachinery::meta::options::{FieldValidation, PatchOptions};
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use axum::body::Body;
use http::{Response, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::ApiContext;
use super::decode::decode_tree;
use super::response;
use super::scope::RequestScope;
use super::update::AuthorizeCreate;
use crate::admission::RequestAdmission;
use crate::apply::{ApplyRequest, apply_typed, update_managed_fields};
use crate::patch::{PatchType, SchemaNode, apply_patch_off_worker};
use crate::registry::{UpdateOptions, UpdatedObjectInfo};

/// `PATCH` of an object (or `/status`).
pub async fn patch(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let content_type = scope.header("content-type").unwrap_or("").to_string();
    let patch_type =
        PatchType::from_content_type(&content_type, scope.version.strategic_merge_patch)?;
    let options = PatchOptions::parse(&scope.query, patch_type == PatchType::Apply)?;
    if patch_type == PatchType::Apply {
        return apply(ctx, scope, options).await;
    }
    let dry_run = options.is_dry_run();
    let manager = scope.manager(&options.field_manager);
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
            patch_type: Some(content_type.clone()),
            ..OperationOptions::default()
        },
        &scope.user,
    )
    .with_authorization(scope.authorizer(), ctx.rule_resolver())
    .with_audit(scope.audit_note.as_ref());
    let info = PatchInfo {
        scope: &scope,
        patch_type,
        manager: &manager,
        validation: options.field_validation_directive(),
        admission: &admission,
        warnings: Mutex::new(Vec::new()),
    };
    let updated = scope
        .storage
        .update(
            scope.namespace(),
            scope.name(),
            &info,
            &admission,
            &admission,
            UpdateOptions {
                subresource: scope.subresource(),
                force_allow_create: false,
                dry_run,
            },
        )
        .await?;
    let out = scope.to_request_version(updated.object)?;
    let mut warnings = info.warnings.into_inner();
    warnings.extend(admission.warnings());
    warnings.extend(updated.warnings);
    response::object(&scope, StatusCode::OK, &*out, &warnings)
}

/// The new state a patch gives the stored object.
struct PatchInfo<'a> {
    scope: &'a RequestScope,
    patch_type: PatchType,
    manager: &'a str,
    validation: FieldValidation,
    admission: &'a RequestAdmission<'a>,
    /// The decode's warnings (of the last attempt).
    warnings: Mutex<Vec<String>>,
}

#[async_trait]
impl UpdatedObjectInfo for PatchInfo<'_> {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let scope = self.scope;
        // A patch never creates: there is nothing to patch.
        let old = old.ok_or_else(|| scope.not_found())?;
        let old_requested = scope.to_request_version(old.clone_object())?;
        let tree = old_requested.to_value().map_err(ApiError::internal)?;
        let patched = apply_patch_off_worker(
            self.patch_type,
            tree,
            scope.body.clone(),
            SchemaNode::of(scope.shape()),
        )
        .await?;
        let body = decode_tree(scope, &patched, self.validation)?;
        *self.warnings.lock() = body.warnings;
        let mut new = body.object;
        scope.set_namespace(&mut *new)?;
        scope.set_name(&mut *new)?;
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

/// Server-side apply (`application/apply-patch+yaml`).
async fn apply(
    ctx: &ApiContext,
    scope: RequestScope,
    options: PatchOptions,
) -> Result<Response<Body>, ApiError> {
    let dry_run = options.is_dry_run();
    // The options' validation requires a field manager for apply.
    let manager = options.field_manager.clone();
    let force = options.is_force();
    let validation = options.field_validation_directive();
    let mut applied = crate::negotiate::yaml_to_json(&scope.body)?;
    let Some(map) = applied.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    };
    check_apply_configuration(&scope, map)?;
    set_tree_identity(&scope, map)?;
    // Unknown fields are checked (and dropped) as for any write; defaults are not applied to
    // the configuration, so appliers own only what they wrote.
    let warnings = decode_tree(&scope, &applied, validation)?.warnings;
    let options = OperationOptions {
        field_manager: manager.clone(),
        patch_type: Some(crate::patch::APPLY_PATCH_YAML.to_string()),
        force,
        ..OperationOptions::default()
    };
    let admission = RequestAdmission::new(
        &ctx.admission,
        Operation::Update,
        scope.kind,
        scope.version,
        scope.subresource(),
        scope.namespace(),
        scope.name(),
        dry_run,
        options,
        &scope.user,
    )
    .with_authorization(scope.authorizer(), ctx.rule_resolver())
    .with_audit(scope.audit_note.as_ref());
    let create_admission = admission.as_operation(Operation::Create);
    let info = ApplyInfo {
        scope: &scope,
        applied,
        manager: &manager,
        force,
        validation,
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
                force_allow_create: true,
                dry_run,
            },
        )
        .await?;
    let out = scope.to_request_version(updated.object)?;
    let mut warnings = warnings;
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

/// Sets the namespace and name of an apply configuration from the URL (400 when it names
/// others).
/// What an apply configuration must be before it is merged (kube-apiserver's structured
/// merge manager): of the request's group version, and without `managedFields`, which only
/// the server writes.
fn check_apply_configuration(
    scope: &RequestScope,
    map: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let specified = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let expected = scope.version.api_version();
    if specified != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {specified}, expected: {expected}"
        )));
    }
    let managed = map.get("metadata").and_then(|m| m.get("managedFields"));
    if managed.is_some_and(Value::is_array) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(())
}

fn set_tree_identity(
    scope: &RequestScope,
    map: &mut serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    let meta = meta
        .as_object_mut()
        .expect("metadata was just made an object");
    if scope.version.namespaced() {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != scope.namespace() => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::from(scope.namespace()));
            }
        }
    } else {
        meta.remove("namespace");
    }
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != scope.name() => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({})",
                scope.name()
            )));
        }
        _ => {
            meta.insert("name".into(), Value::from(scope.name()));
        }
    }
    Ok(())
}

/// The new state a server-side apply gives the stored object (or the object it creates).
struct ApplyInfo<'a> {
    scope: &'a RequestScope,
    applied: Value,
    manager: &'a str,
    force: bool,
    validation: FieldValidation,
    admission: &'a RequestAdmission<'a>,
    create_admission: &'a RequestAdmission<'a>,
}

#[async_trait]
impl UpdatedObjectInfo for ApplyInfo<'_> {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let scope = self.scope;
        let live = old
            .map(|o| scope.to_request_version(o.clone_object()))
            .transpose()?;
        let api_version = scope.version.api_version();
        let req = ApplyRequest {
            manager: self.manager,
            api_version: &api_version,
            force: self.force,
            subresource: scope.subresource(),
            status_subresource: scope.version.status_subresource,
        };
        let mut merged = apply_typed(live.as_deref(), &self.applied, &req, scope.shape())?;
        if let Some(m) = merged.as_object_mut() {
            m.insert("apiVersion".into(), Value::from(api_version.clone()));
            m.insert("kind".into(), Value::from(scope.version.kind));
        }
        let new = decode_tree(scope, &merged, self.validation)?.object;
        let mut new = scope.to_write_version(new)?;
        match old.zip(live.as_deref()) {
            Some((old, live)) => {
                let old = scope.admitted_old(old, live);
                self.admission.mutate(&mut new, Some(old)).await?
            }
            None => self.create_admission.mutate(&mut new, None).await?,
        }
        Ok(new)
    }
}
