//! What every kind's writes share before they reach storage (Kubernetes' `rest.BeforeCreate`,
//! `BeforeUpdate` and the deletion bookkeeping), driven by the definition's markers and the
//! kind's [`Strategy`](apimachinery::strategy::Strategy): system metadata, generated names, generation, the status subresource,
//! then validation of the metadata, the fields and the strategy's own rules.

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::meta::Time;
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::validation::{validate_object_meta, validate_object_meta_update};

use super::generate_name;

/// The current time as `metadata` timestamps hold it (whole seconds).
pub fn now() -> Time {
    Time::now()
}

/// 422 Invalid for `errors`, or nothing.
fn invalid(kind: &Kind, name: &str, errors: &[FieldError]) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let info = kind.storage_info();
    Err(ApiError::invalid(info.group, info.kind, name, errors))
}

/// Prepares and validates an object (of the kind's storage version) for create. Returns the
/// strategy's warnings.
///
/// A client may not set the system metadata (uid, timestamps, generation, selfLink): it is
/// set here. A `generateName` without a name gets a generated name. The status of a kind with
/// a status subresource is cleared. Then the strategy prepares the object, and the metadata,
/// the definition's field checks and the strategy's checks all run; every error is reported
/// at once.
pub fn before_create(kind: &Kind, object: &mut dyn Object) -> Result<Vec<String>, ApiError> {
    let info = kind.storage_info();
    let strategy = kind.strategy();
    if object
        .metadata()
        .resource_version
        .as_deref()
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    {
        let meta = object.metadata_mut();
        meta.uid = Some(uuid::Uuid::new_v4().to_string());
        meta.creation_timestamp = Some(now());
        meta.deletion_timestamp = None;
        meta.deletion_grace_period_seconds = None;
        meta.self_link = None;
        meta.generation = info.tracks_generation.then_some(1);
        if meta.name.as_deref().is_none_or(str::is_empty)
            && let Some(prefix) = meta.generate_name.as_deref().filter(|p| !p.is_empty())
        {
            meta.name = Some(generate_name::generate(prefix));
        }
    }
    if info.status_subresource {
        object.reset_status();
    }
    strategy.prepare_for_create(object);
    let mut errors = Vec::new();
    if !info.create_only {
        validate_object_meta(
            object.metadata(),
            info.namespaced(),
            info.name_format,
            &mut errors,
        );
    }
    errors.extend(object.validate());
    errors.extend(strategy.validate(object));
    invalid(kind, object.name(), &errors)?;
    strategy.canonicalize(object);
    Ok(strategy.warnings_on_create(object))
}

/// Prepares and validates an update of `old` (both of the kind's storage version) through
/// `subresource` (empty for the main resource). Returns the strategy's warnings.
///
/// The system metadata comes from `old`. The main resource of a kind with a status
/// subresource keeps `old`'s status; `/status` keeps everything of `old` but the status (and
/// the managed fields recorded for the write). Generation moves when anything but metadata
/// (and a status with its own subresource) changed. Then the strategy prepares the object and
/// the update checks run.
pub fn before_update(
    kind: &Kind,
    object: &mut Box<dyn Object>,
    old: &dyn Object,
    subresource: &str,
) -> Result<Vec<String>, ApiError> {
    let info = kind.storage_info();
    let strategy = kind.strategy();
    if subresource == "status" {
        let mut merged = old.clone_object();
        merged.copy_status(&**object);
        merged.metadata_mut().managed_fields =
            std::mem::take(&mut object.metadata_mut().managed_fields);
        merged.metadata_mut().resource_version = object.metadata().resource_version.clone();
        *object = merged;
    } else if info.status_subresource {
        object.copy_status(old);
    }
    {
        let old_meta = old.metadata();
        let generation = old_meta.generation;
        let spec_changed = !object.spec_eq(old);
        let meta = object.metadata_mut();
        meta.uid.clone_from(&old_meta.uid);
        meta.creation_timestamp
            .clone_from(&old_meta.creation_timestamp);
        meta.deletion_timestamp
            .clone_from(&old_meta.deletion_timestamp);
        meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
        meta.self_link = None;
        // Only kinds that track generation have one (set on create).
        meta.generation = generation.map(|g| if spec_changed { g + 1 } else { g });
    }
    strategy.prepare_for_update(&mut **object, old, subresource);
    let mut errors = Vec::new();
    validate_object_meta(
        object.metadata(),
        info.namespaced(),
        info.name_format,
        &mut errors,
    );
    validate_object_meta_update(object.metadata(), old.metadata(), &mut errors);
    errors.extend(object.validate_update(old));
    errors.extend(if subresource == "status" {
        strategy.validate_status_update(&**object, old)
    } else {
        strategy.validate_update(&**object, old)
    });
    invalid(kind, object.name(), &errors)?;
    strategy.canonicalize(&mut **object);
    Ok(strategy.warnings_on_update(&**object, old))
}

/// Checks the resourceVersion of an update against the stored object's: an update must name
/// the version it replaces unless the kind allows unconditional updates (422), and a
/// different one is a conflict (409). An unconditional update takes the stored version.
pub fn check_update_precondition(
    kind: &Kind,
    object: &mut dyn Object,
    old: &dyn Object,
) -> Result<(), ApiError> {
    let info = kind.storage_info();
    let current = old.metadata().resource_version.clone().unwrap_or_default();
    let given = object
        .metadata()
        .resource_version
        .clone()
        .unwrap_or_default();
    if given.is_empty() {
        if !info.allow_unconditional_update {
            let err = FieldError::new(
                FieldErrorType::Invalid,
                "metadata.resourceVersion",
                Some("0x0".into()),
                "must be specified for an update",
            );
            return Err(ApiError::invalid(
                info.group,
                info.kind,
                object.name(),
                &[err],
            ));
        }
        object.metadata_mut().resource_version = Some(current);
        return Ok(());
    }
    if given != current {
        return Err(ApiError::conflict_stale(
            &apimachinery::GroupResource::new(info.group, info.plural),
            object.name(),
        ));
    }
    Ok(())
}

/// Checks a delete's preconditions against the stored object: a different uid or
/// resourceVersion is 409 `Conflict` with Kubernetes' messages.
pub fn check_delete_preconditions(
    resource: &apimachinery::GroupResource,
    name: &str,
    current: &dyn Object,
    uid: Option<&str>,
    resource_version: Option<&str>,
) -> Result<(), ApiError> {
    let meta = current.metadata();
    if let Some(uid) = uid {
        let have = meta.uid.as_deref().unwrap_or_default();
        if uid != have {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                ),
            ));
        }
    }
    if let Some(rv) = resource_version {
        let have = meta.resource_version.as_deref().unwrap_or_default();
        if rv != have {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in meta: {have}"
                ),
            ));
        }
    }
    Ok(())
}

/// Whether an object's deletion has started.
pub fn is_deleting(object: &dyn Object) -> bool {
    object.metadata().deletion_timestamp.is_some()
}

/// Whether an object waits for finalizers: `metadata.finalizers`, or the strategy's own.
pub fn has_pending_finalizers(kind: &Kind, object: &dyn Object) -> bool {
    !object.metadata().finalizers.is_empty() || kind.strategy().has_pending_finalizers(object)
}

/// Marks an object as being deleted (it waits for finalizers): `deletionTimestamp`, grace
/// period 0, a generation bump for kinds that track it, then the strategy's adjustments.
pub fn mark_deleting(kind: &Kind, object: &mut dyn Object) {
    let meta = object.metadata_mut();
    if meta.deletion_timestamp.is_none() {
        meta.deletion_timestamp = Some(now());
        meta.deletion_grace_period_seconds = Some(0);
        if let Some(g) = meta.generation {
            meta.generation = Some(g + 1);
        }
    }
    kind.strategy().prepare_for_delete(object);
}
