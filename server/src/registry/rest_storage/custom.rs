//! [`CustomStore`]: the server's side of a kind served from a user's [`RestStorage`]. It has
//! the write API of the generic [`Store`](crate::registry::Store) (create, update, delete with
//! the handler's admission), and applies the same shared rules ([`rest`]) before it calls the
//! user's verbs, so a handler writes to either the same way.

use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::{GroupResource, ResourceInfo};

use super::{EventStream, ListOptions, ObjectList, Preconditions, RestStorage};
use crate::registry::store::GENERATE_NAME_ATTEMPTS;
use crate::registry::{
    DeleteOptions, DeleteOutcome, UpdateOptions, Updated, UpdatedObjectInfo, ValidateObject,
    generate_name, rest,
};

/// How many times an update or delete is tried again from a fresh read when the object
/// changed under it.
const CONFLICT_ATTEMPTS: usize = 16;

/// A kind served from a [`RestStorage`].
pub struct CustomStore {
    kind: &'static Kind,
    info: &'static ResourceInfo,
    resource: GroupResource,
    storage: RestStorage,
}

impl std::fmt::Debug for CustomStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomStore")
            .field("resource", &self.resource)
            .field("storage", &self.storage)
            .finish()
    }
}

fn is_conflict(e: &ApiError) -> bool {
    e.code() == 409 && e.reason() == apimachinery::status::StatusReason::Conflict
}

fn is_already_exists(e: &ApiError) -> bool {
    e.code() == 409 && e.reason() == apimachinery::status::StatusReason::AlreadyExists
}

impl CustomStore {
    /// `kind` served from `storage`.
    pub fn new(kind: &'static Kind, storage: RestStorage) -> Self {
        let info = kind.storage_info();
        Self {
            kind,
            info,
            resource: GroupResource::new(info.group, info.plural),
            storage,
        }
    }

    /// The kind.
    pub fn kind(&self) -> &'static Kind {
        self.kind
    }

    /// The storage version's facts.
    pub fn info(&self) -> &'static ResourceInfo {
        self.info
    }

    /// The group and plural, for messages.
    pub fn resource(&self) -> &GroupResource {
        &self.resource
    }

    /// The user's verbs.
    pub fn storage(&self) -> &RestStorage {
        &self.storage
    }

    /// Whether `verb` is served ([`RestStorage::serves`]).
    pub fn serves(&self, verb: &str) -> bool {
        self.storage.serves(verb)
    }

    fn unsupported(&self, verb: &str) -> ApiError {
        ApiError::method_not_supported(&self.resource, verb)
    }

    /// The namespace the storage sees: none for a cluster-scoped kind.
    fn namespace<'a>(&self, namespace: &'a str) -> &'a str {
        if self.info.namespaced() {
            namespace
        } else {
            ""
        }
    }

    /// Reads one object (405 without a [`super::Getter`]).
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Box<dyn Object>, ApiError> {
        let getter = self
            .storage
            .getter()
            .ok_or_else(|| self.unsupported("get"))?;
        getter.get(self.namespace(namespace), name).await
    }

    /// Reads one object, or `None` when it does not exist.
    pub async fn try_get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Box<dyn Object>>, ApiError> {
        match self.get(namespace, name).await {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists (405 without a [`super::Lister`]).
    pub async fn list(&self, options: &ListOptions) -> Result<ObjectList, ApiError> {
        let lister = self
            .storage
            .lister()
            .ok_or_else(|| self.unsupported("list"))?;
        lister.list(options).await
    }

    /// Watches (405 without a [`super::Watcher`]).
    pub async fn watch(&self, options: &ListOptions) -> Result<EventStream, ApiError> {
        let watcher = self
            .storage
            .watcher()
            .ok_or_else(|| self.unsupported("watch"))?;
        watcher.watch(options).await
    }

    /// Creates an object as [`Store::create`](crate::registry::Store::create) does: the
    /// kind's rules and validation, then `admission`, then the storage's
    /// [`super::Creater`]; a generated name that is taken is generated again. A dry run
    /// checks the name is free (with the [`super::Getter`], when there is one).
    pub async fn create(
        &self,
        mut object: Box<dyn Object>,
        admission: &dyn ValidateObject,
        dry_run: bool,
    ) -> Result<(Box<dyn Object>, Vec<String>), ApiError> {
        let creater = self
            .storage
            .creater()
            .ok_or_else(|| self.unsupported("create"))?;
        let prefix = match object.metadata().name.as_deref() {
            None | Some("") => object.metadata().generate_name.clone().unwrap_or_default(),
            Some(_) => String::new(),
        };
        let generated = !prefix.is_empty();
        admission.authorize(&*object, None)?;
        let warnings = rest::before_create(self.kind, &mut *object)?;
        admission.validate(Some(&*object), None).await?;
        let namespace = object.namespace().to_string();
        if dry_run {
            if self.storage.getter().is_some()
                && self.try_get(&namespace, object.name()).await?.is_some()
            {
                return Err(ApiError::already_exists(&self.resource, object.name()));
            }
            return Ok((object, warnings));
        }
        if !generated {
            let result = creater.create(object).await;
            admission.committed(result.is_ok()).await;
            let stored = result?;
            self.kind.strategy().after_create(&*stored);
            return Ok((stored, warnings));
        }
        for attempt in 0..GENERATE_NAME_ATTEMPTS {
            if attempt > 0 {
                object.metadata_mut().name = Some(generate_name::generate(&prefix));
            }
            match creater.create(object.clone_object()).await {
                Ok(stored) => {
                    admission.committed(true).await;
                    self.kind.strategy().after_create(&*stored);
                    return Ok((stored, warnings));
                }
                Err(e) if is_already_exists(&e) => continue,
                Err(e) => {
                    admission.committed(false).await;
                    return Err(e);
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

    /// Updates one object as [`Store::update`](crate::registry::Store::update) does: `info`
    /// makes the new object from the one the [`super::Getter`] reads, the request's
    /// resourceVersion is checked, the kind's rules, validation and `update_admission` run,
    /// then the [`super::Updater`] writes it if the object is still at the resourceVersion
    /// read; when it is not, the update runs again from a fresh read (and a resourceVersion
    /// the client gave is then a conflict). A missing object is created through the
    /// [`super::Creater`] (with `create_admission`) when the kind allows create-on-update or
    /// `opts.force_allow_create`. An update that changes nothing writes nothing. A deleting
    /// object whose last finalizer goes is deleted.
    pub async fn update(
        &self,
        namespace: &str,
        name: &str,
        info: &dyn UpdatedObjectInfo,
        create_admission: &dyn ValidateObject,
        update_admission: &dyn ValidateObject,
        opts: UpdateOptions<'_>,
    ) -> Result<Updated, ApiError> {
        let updater = self
            .storage
            .updater()
            .filter(|_| self.storage.getter().is_some())
            .ok_or_else(|| self.unsupported("update"))?;
        let may_create = opts.subresource.is_empty()
            && (self.info.allow_create_on_update || opts.force_allow_create)
            && self.storage.creater().is_some();
        let mut last_conflict = None;
        for _ in 0..CONFLICT_ATTEMPTS {
            let Some(old) = self.try_get(namespace, name).await? else {
                if !may_create {
                    return Err(ApiError::not_found(&self.resource, name));
                }
                let mut object = info.updated_object(None).await?;
                object.metadata_mut().resource_version = None;
                create_admission.authorize(&*object, None)?;
                let warnings = rest::before_create(self.kind, &mut *object)?;
                create_admission.validate(Some(&*object), None).await?;
                if opts.dry_run {
                    return Ok(Updated {
                        object,
                        created: true,
                        warnings,
                    });
                }
                let creater = self
                    .storage
                    .creater()
                    .ok_or_else(|| self.unsupported("create"))?;
                match creater.create(object).await {
                    Ok(stored) => {
                        create_admission.committed(true).await;
                        self.kind.strategy().after_create(&*stored);
                        return Ok(Updated {
                            object: stored,
                            created: true,
                            warnings,
                        });
                    }
                    // Created meanwhile: update it.
                    Err(e) if is_already_exists(&e) => {
                        last_conflict = Some(e);
                        continue;
                    }
                    Err(e) => {
                        create_admission.committed(false).await;
                        return Err(e);
                    }
                }
            };
            let mut object = info.updated_object(Some(&*old)).await?;
            update_admission.authorize(&*object, Some(&*old))?;
            rest::check_update_precondition(self.kind, &mut *object, &*old)?;
            let warnings = rest::before_update(self.kind, &mut object, &*old, opts.subresource)?;
            update_admission
                .validate(Some(&*object), Some(&*old))
                .await?;
            if opts.dry_run || object.eq_object(&*old) {
                // Nothing to write: the stored object stays, with its resourceVersion.
                update_admission.committed(!opts.dry_run).await;
                return Ok(Updated {
                    object,
                    created: false,
                    warnings,
                });
            }
            let stored = match updater.update(object).await {
                Ok(stored) => stored,
                Err(e) if is_conflict(&e) => {
                    last_conflict = Some(e);
                    continue;
                }
                Err(e) => {
                    update_admission.committed(false).await;
                    return Err(e);
                }
            };
            update_admission.committed(true).await;
            if rest::is_deleting(&*stored)
                && !rest::has_pending_finalizers(self.kind, &*stored)
                && let Some(deleter) = self.storage.deleter()
            {
                let pre = Preconditions {
                    uid: None,
                    resource_version: stored.metadata().resource_version.clone(),
                };
                match deleter.delete(self.namespace(namespace), name, &pre).await {
                    Ok(_) => self.kind.strategy().after_delete(&*stored),
                    Err(e) if e.code() == 404 || is_conflict(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(Updated {
                object: stored,
                created: false,
                warnings,
            });
        }
        create_admission.committed(false).await;
        update_admission.committed(false).await;
        Err(last_conflict.unwrap_or_else(|| ApiError::conflict_stale(&self.resource, name)))
    }

    /// Deletes one object as [`Store::delete`](crate::registry::Store::delete) does: the
    /// preconditions against the object the [`super::Getter`] reads, `admission`, then either
    /// the [`super::Deleter`] (with the resourceVersion admitted as a precondition, so a
    /// change in between runs the delete again from a fresh read) or, while finalizers are
    /// pending and the storage has an [`super::Updater`], the start of the deletion
    /// (`deletionTimestamp`). Without an updater an object cannot wait for its finalizers,
    /// and is removed at once.
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        admission: &dyn ValidateObject,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let deleter = self
            .storage
            .deleter()
            .filter(|_| self.storage.getter().is_some())
            .ok_or_else(|| self.unsupported("delete"))?;
        let mut last_conflict = None;
        for _ in 0..CONFLICT_ATTEMPTS {
            let current = self.get(namespace, name).await?;
            rest::check_delete_preconditions(
                &self.resource,
                name,
                &*current,
                opts.uid.as_deref(),
                opts.resource_version.as_deref(),
            )?;
            admission.validate(None, Some(&*current)).await?;
            if let Some(updater) = self.storage.updater()
                && rest::has_pending_finalizers(self.kind, &*current)
            {
                admission.committed(false).await;
                let mut object = current;
                let already = rest::is_deleting(&*object);
                rest::mark_deleting(self.kind, &mut *object);
                if already || opts.dry_run {
                    return Ok(DeleteOutcome::Pending(object));
                }
                match updater.update(object).await {
                    Ok(stored) => return Ok(DeleteOutcome::Pending(stored)),
                    Err(e) if is_conflict(&e) => {
                        last_conflict = Some(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            if opts.dry_run {
                admission.committed(false).await;
                return Ok(DeleteOutcome::Deleted(current));
            }
            let pre = Preconditions {
                uid: opts.uid.clone(),
                resource_version: opts
                    .resource_version
                    .clone()
                    .or_else(|| current.metadata().resource_version.clone()),
            };
            match deleter.delete(self.namespace(namespace), name, &pre).await {
                Ok(deleted) => {
                    admission.committed(true).await;
                    self.kind.strategy().after_delete(&*deleted);
                    return Ok(DeleteOutcome::Deleted(deleted));
                }
                // Changed since it was admitted: admit it again, unless the client's own
                // precondition failed.
                Err(e) if is_conflict(&e) && opts.resource_version.is_none() => {
                    last_conflict = Some(e);
                }
                Err(e) => {
                    admission.committed(false).await;
                    return Err(e);
                }
            }
        }
        admission.committed(false).await;
        Err(last_conflict.unwrap_or_else(|| ApiError::conflict_stale(&self.resource, name)))
    }
}
