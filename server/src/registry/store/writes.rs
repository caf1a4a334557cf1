//! Writes through the [`Store`]: create, update and delete, with the admission hooks the
//! handler passes in ([`ValidateObject`], [`UpdatedObjectInfo`]) and the options and outcomes
//! of each write.
//!
//! Every write runs the kind's rules, then admission, then encoding and the storage call.
//! Updates, and the marking of an object whose finalizers are pending, are compare-and-swap
//! writes retried from the fresh object on conflict; admission learns whether the write it
//! admitted was stored ([`ValidateObject::committed`]).

use std::sync::Arc;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use parking_lot::Mutex;
use storage::interface::{Preconditions, StoredObject, Update, UpdateFn, ValidateDeletionFn};

use super::Store;
use crate::registry::errors::callback;
use crate::registry::hooks::Finish;
use crate::registry::{generate_name, rest};

/// How many names `generateName` tries before giving up with 409.
pub const GENERATE_NAME_ATTEMPTS: usize = 8;
/// The validating admission a write runs after the kind's own validation (Kubernetes'
/// `rest.ValidateObjectFunc`): `object` is the new object (`None` for a delete), `old` the
/// stored one (`None` for a create).
#[async_trait]
pub trait ValidateObject: Send + Sync {
    /// Lets the write proceed, or refuses it.
    async fn validate(
        &self,
        object: Option<&dyn Object>,
        old: Option<&dyn Object>,
    ) -> Result<(), ApiError>;

    /// Learns the outcome of the write it admitted: stored (`true`; for a delete, removed) or
    /// not. Plugins with side effects (quota charges) settle them here.
    async fn committed(&self, _succeeded: bool) {}

    /// Checks a create or update against what its requester may do, before the kind's rules
    /// and validation (Kubernetes' RBAC storage refuses privilege escalation there): `object`
    /// is the new object, `old` the stored one (`None` for a create).
    fn authorize(&self, _object: &dyn Object, _old: Option<&dyn Object>) -> Result<(), ApiError> {
        Ok(())
    }
}

/// No admission (the server's own writes: bootstrap objects, controllers).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAdmission;

#[async_trait]
impl ValidateObject for NoAdmission {
    async fn validate(
        &self,
        _: Option<&dyn Object>,
        _: Option<&dyn Object>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The new state of an object an update writes, computed from the stored one (Kubernetes'
/// `rest.UpdatedObjectInfo`): the request's object, a patch applied, an apply merged. It runs
/// again on the fresh object when a concurrent write wins, and may run mutating admission.
#[async_trait]
pub trait UpdatedObjectInfo: Send + Sync {
    /// The new object given the stored one (`None` when absent and the update may create).
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError>;
}

/// What an update did.
#[derive(Debug)]
pub struct Updated {
    /// The stored object.
    pub object: Box<dyn Object>,
    /// Whether the update created it.
    pub created: bool,
    /// The strategy's warnings.
    pub warnings: Vec<String>,
}

/// What one attempt of an update made: the new object, whether it creates, the warnings.
type Step = (Box<dyn Object>, bool, Vec<String>);

/// The outcome of a delete.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Deleted(Box<dyn Object>),
    /// Finalizers are pending: the object now carries `deletionTimestamp`.
    Pending(Box<dyn Object>),
}

/// The options of a delete.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// The options of an update.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpdateOptions<'a> {
    /// The subresource written through (`status`, `scale`, `finalize`), or empty.
    pub subresource: &'a str,
    /// Whether a missing object may be created even when the kind does not allow
    /// create-on-update (server-side apply).
    pub force_allow_create: bool,
    /// `dryRun=All`.
    pub dry_run: bool,
}
impl Store {
    /// Creates an object: the kind's rules and validation ([`rest::before_create`]), then
    /// `admission`, then storage (with the strategy's TTL). A generated name that is taken is
    /// generated again. Returns the stored object and the strategy's warnings.
    pub async fn create(
        &self,
        mut object: Box<dyn Object>,
        admission: &dyn ValidateObject,
        dry_run: bool,
    ) -> Result<(Box<dyn Object>, Vec<String>), ApiError> {
        admission.authorize(&*object, None)?;
        let Some(hooks) = self.write_hooks() else {
            return self.create_begun(object, admission, dry_run).await;
        };
        let finish = hooks.begin_create(&mut *object, dry_run).await?;
        let created = self.create_begun(object, admission, dry_run).await;
        finish(created.is_ok() && !dry_run).await;
        created
    }

    /// A create once the write hooks began it: the kind's rules and validation, admission,
    /// then storage.
    async fn create_begun(
        &self,
        mut object: Box<dyn Object>,
        admission: &dyn ValidateObject,
        dry_run: bool,
    ) -> Result<(Box<dyn Object>, Vec<String>), ApiError> {
        let prefix = match object.metadata().name.as_deref() {
            None | Some("") => object.metadata().generate_name.clone().unwrap_or_default(),
            Some(_) => String::new(),
        };
        let generated = !prefix.is_empty();
        let warnings = rest::before_create(self.kind, &mut *object)?;
        admission.validate(Some(&*object), None).await?;
        let namespace = object.namespace().to_string();
        let attempts = if generated { GENERATE_NAME_ATTEMPTS } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                object.metadata_mut().name = Some(generate_name::generate(&prefix));
            }
            let name = object.name().to_string();
            let key = self.key(&namespace, &name)?;
            if dry_run {
                if self.try_get(&namespace, &name).await?.is_some() {
                    if generated {
                        continue;
                    }
                    return Err(ApiError::already_exists(&self.resource, &name));
                }
                return Ok((object, warnings));
            }
            let data = match self.encode(&mut *object) {
                Ok(d) => d,
                Err(e) => {
                    admission.committed(false).await;
                    return Err(e);
                }
            };
            let ttl = self.kind.strategy().ttl(&*object, false);
            match self.storage.create(&key, data, ttl).await {
                Ok(stored) => {
                    admission.committed(true).await;
                    object.metadata_mut().resource_version =
                        Some(stored.resource_version.to_string());
                    self.kind.strategy().after_create(&*object);
                    return Ok((object, warnings));
                }
                Err(e) if e.is_exists() && generated => continue,
                Err(e) => {
                    admission.committed(false).await;
                    return Err(self.err(e, &name));
                }
            }
        }
        admission.committed(false).await;
        Err(ApiError::generate_name_conflict(
            &self.resource,
            object.name(),
            1,
        ))
    }

    /// Updates one object to what `info` makes of the stored one: the resourceVersion check,
    /// the kind's rules and validation ([`rest::before_update`]), `update_admission`, then a
    /// compare-and-swap write (retried from the fresh object on conflict). A missing object is
    /// created (with `create_admission`) when the kind allows create-on-update or
    /// `opts.force_allow_create`; otherwise it is 404. An update that changes nothing writes
    /// nothing. A deleting object whose last finalizer goes is deleted.
    pub async fn update(
        &self,
        namespace: &str,
        name: &str,
        info: &dyn UpdatedObjectInfo,
        create_admission: &dyn ValidateObject,
        update_admission: &dyn ValidateObject,
        opts: UpdateOptions<'_>,
    ) -> Result<Updated, ApiError> {
        let key = self.key(namespace, name)?;
        let may_create = opts.subresource.is_empty()
            && (self.info.allow_create_on_update || opts.force_allow_create);
        // The write hooks of the main resource; each attempt's begun write, ended with `false`
        // when a conflict makes a new attempt, and with the outcome at the end.
        let hooks = self.write_hooks().filter(|_| opts.subresource.is_empty());
        let begun: Mutex<Vec<Finish>> = Mutex::new(Vec::new());
        let (hooks_ref, begun_ref) = (&hooks, &begun);
        let step = |current: Option<Box<dyn Object>>| async move {
            let earlier: Vec<Finish> = std::mem::take(&mut *begun_ref.lock());
            for finish in earlier {
                finish(false).await;
            }
            match current {
                None if !may_create => Err(ApiError::not_found(&self.resource, name)),
                None => {
                    let mut object = info.updated_object(None).await?;
                    // A create through an update ignores the resourceVersion it may carry.
                    object.metadata_mut().resource_version = None;
                    create_admission.authorize(&*object, None)?;
                    if let Some(hooks) = hooks_ref {
                        let finish = hooks.begin_create(&mut *object, opts.dry_run).await?;
                        begun_ref.lock().push(finish);
                    }
                    let warnings = rest::before_create(self.kind, &mut *object)?;
                    create_admission.validate(Some(&*object), None).await?;
                    Ok((object, true, warnings))
                }
                Some(old) => {
                    let mut object = info.updated_object(Some(&*old)).await?;
                    // A kind that writes in the request's version sees the old object in that
                    // version too (its rules and ratcheting compare like with like).
                    let old = match self.in_version(&*old, object.info().version)? {
                        Some(converted) => converted,
                        None => old,
                    };
                    update_admission.authorize(&*object, Some(&*old))?;
                    rest::check_update_precondition(self.kind, &mut *object, &*old)?;
                    if let Some(hooks) = hooks_ref {
                        let finish = hooks
                            .begin_update(&mut *object, &*old, opts.dry_run)
                            .await?;
                        begun_ref.lock().push(finish);
                    }
                    let warnings =
                        rest::before_update(self.kind, &mut object, &*old, opts.subresource)?;
                    update_admission
                        .validate(Some(&*object), Some(&*old))
                        .await?;
                    Ok((object, false, warnings))
                }
            }
        };
        if opts.dry_run {
            let current = self.try_get(namespace, name).await?;
            let stepped = step(current).await;
            Self::finish_all(&begun, false).await;
            let (object, created, warnings) = stepped?;
            return Ok(Updated {
                object,
                created,
                warnings,
            });
        }
        let outcome: Mutex<Option<Step>> = Mutex::new(None);
        let outcome_ref = &outcome;
        let step_ref = &step;
        let try_update: UpdateFn<'_> = Box::new(move |current: Option<StoredObject>| {
            Box::pin(async move {
                let result = async {
                    let old = match &current {
                        Some(o) => Some(self.decode(o)?),
                        None => None,
                    };
                    let unchanged_old = old.as_ref().map(|o| o.clone_object());
                    let (mut object, created, warnings) = step_ref(old).await?;
                    // What is written: the object, in the storage version.
                    let mut in_storage = self.in_storage_version(&*object)?;
                    let written: &mut dyn Object = match in_storage.as_mut() {
                        Some(converted) => &mut **converted,
                        None => &mut *object,
                    };
                    let data = match (&current, &unchanged_old) {
                        // Nothing changed: the stored bytes stay, so storage skips the write.
                        (Some(stored), Some(old)) if written.eq_object(&**old) => {
                            stored.data.clone()
                        }
                        _ => self.encode(written)?,
                    };
                    let ttl = self.kind.strategy().ttl(&*object, !created);
                    *outcome_ref.lock() = Some((object, created, warnings));
                    Ok::<_, ApiError>(Update { data, ttl })
                }
                .await;
                result.map_err(callback)
            })
        });
        let stored = self
            .storage
            .guaranteed_update(&key, may_create, None, try_update, None)
            .await;
        let created = outcome.lock().as_ref().is_some_and(|o| o.1);
        let ok = stored.is_ok();
        Self::finish_all(&begun, ok).await;
        create_admission.committed(ok && created).await;
        update_admission.committed(ok && !created).await;
        let stored = stored.map_err(|e| self.err(e, name))?;
        let (mut object, created, warnings) = outcome
            .into_inner()
            .ok_or_else(|| ApiError::internal("the update produced no object"))?;
        object.metadata_mut().resource_version = Some(stored.resource_version.to_string());
        if created {
            self.kind.strategy().after_create(&*object);
        }
        if rest::is_deleting(&*object) && !rest::has_pending_finalizers(self.kind, &*object) {
            let pre = Preconditions {
                uid: None,
                resource_version: Some(stored.resource_version.to_string()),
            };
            match self.storage.delete(&key, Some(pre), None, None).await {
                Ok(_) => {
                    self.kind.strategy().after_delete(&*object);
                    if let Some(hooks) = self.write_hooks() {
                        hooks.after_delete(&*object).await;
                    }
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(self.err(e, name)),
            }
        }
        Ok(Updated {
            object,
            created,
            warnings,
        })
    }

    /// Ends every write the hooks began, told whether it was stored.
    async fn finish_all(begun: &Mutex<Vec<Finish>>, stored: bool) {
        let begun: Vec<Finish> = std::mem::take(&mut *begun.lock());
        for finish in begun {
            finish(stored).await;
        }
    }

    /// Starts the deletion of the stored object at `key` (it waits for finalizers): marks it
    /// deleting with a compare-and-swap write, unless it already is. Returns it marked.
    async fn mark_deleting(&self, key: &str, name: &str) -> Result<Box<dyn Object>, ApiError> {
        let marked: Mutex<Option<Box<dyn Object>>> = Mutex::new(None);
        let marked_ref = &marked;
        let try_update: UpdateFn<'_> = Box::new(move |current: Option<StoredObject>| {
            Box::pin(async move {
                let result = (|| {
                    let current =
                        current.ok_or_else(|| ApiError::not_found(&self.resource, name))?;
                    let mut object = self.decode(&current)?;
                    let data = if rest::is_deleting(&*object) {
                        current.data.clone()
                    } else {
                        rest::mark_deleting(self.kind, &mut *object);
                        self.encode(&mut *object)?
                    };
                    *marked_ref.lock() = Some(object);
                    Ok::<_, ApiError>(Update { data, ttl: None })
                })();
                result.map_err(callback)
            })
        });
        let stored = self
            .storage
            .guaranteed_update(key, false, None, try_update, None)
            .await
            .map_err(|e| self.err(e, name))?;
        let mut object = marked
            .into_inner()
            .ok_or_else(|| ApiError::internal("the deletion produced no object"))?;
        object.metadata_mut().resource_version = Some(stored.resource_version.to_string());
        Ok(object)
    }

    /// Deletes one object: preconditions, `admission`, then either the removal or, when
    /// finalizers are pending, the start of the deletion (`deletionTimestamp`).
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        admission: &dyn ValidateObject,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.key(namespace, name)?;
        let current = self.get(namespace, name, "").await?;
        rest::check_delete_preconditions(
            &self.resource,
            name,
            &*current,
            opts.uid.as_deref(),
            opts.resource_version.as_deref(),
        )?;
        admission.validate(None, Some(&*current)).await?;
        if rest::has_pending_finalizers(self.kind, &*current) {
            // The object stays until its finalizers are done.
            admission.committed(false).await;
            if rest::is_deleting(&*current) || opts.dry_run {
                let mut object = current;
                rest::mark_deleting(self.kind, &mut *object);
                return Ok(DeleteOutcome::Pending(object));
            }
            let object = self.mark_deleting(&key, name).await?;
            if rest::has_pending_finalizers(self.kind, &*object) {
                return Ok(DeleteOutcome::Pending(object));
            }
            return Ok(DeleteOutcome::Deleted(object));
        }
        if opts.dry_run {
            admission.committed(false).await;
            return Ok(DeleteOutcome::Deleted(current));
        }
        // The client's preconditions go to the storage, which checks them again on the object
        // it removes. When that object is not the one admitted above (a write, or a delete and
        // a create, came in between), admission runs again on it, as kube-apiserver's storage
        // validates a deletion again on every attempt; the uid read here is no precondition.
        let pre = Preconditions {
            uid: opts.uid.clone(),
            resource_version: opts.resource_version.clone(),
        };
        let admitted: Option<storage::errors::Revision> = current
            .metadata()
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok());
        let revalidate: ValidateDeletionFn<'_> = Box::new(move |stored: StoredObject| {
            Box::pin(async move {
                if Some(stored.resource_version) == admitted {
                    return Ok(());
                }
                let callback = |e: ApiError| storage::StorageError::Callback(Arc::new(e));
                let object = self.decode(&stored).map_err(callback)?;
                admission
                    .validate(None, Some(&*object))
                    .await
                    .map_err(callback)
            })
        });
        let deleted = self
            .storage
            .delete(&key, Some(pre), Some(revalidate), None)
            .await;
        admission.committed(deleted.is_ok()).await;
        let deleted = deleted.map_err(|e| self.err(e, name))?;
        let object = self.decode(&deleted).unwrap_or(current);
        self.kind.strategy().after_delete(&*object);
        if let Some(hooks) = self.write_hooks() {
            hooks.after_delete(&*object).await;
        }
        Ok(DeleteOutcome::Deleted(object))
    }
}
