//! [`Store`]: the generic registry store of one kind (Kubernetes' `genericregistry.Store`),
//! over the storage [`Interface`] of its resource (the watch cache over the backend).
//!
//! The store works on typed objects of the kind's storage version. Every write runs the same
//! steps in one direction: the kind's rules ([`super::rest`], with its strategy), then the
//! validating admission the handler passes in ([`ValidateObject`]), then encoding and the
//! storage call. Objects are written in the [`StorageMediaType`] the store was built with and
//! read back in either stored form, converted from an older storage version when needed.

use std::sync::Arc;

use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::{GroupResource, ResourceInfo};
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use storage::cacher::Cacher;
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, Preconditions, StoredObject, Update, UpdateFn,
    ValidateDeletionFn, WatchEventStream,
};
use storage::keys::ResourceKeys;

use super::encoding::{self, StorageMediaType, StoredForm};
use super::errors::{callback, storage_error};
use super::generate_name;
use super::json_memo::JsonMemo;
use super::rest;

/// How many names `generateName` tries before giving up with 409.
pub const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Lists with at least this many objects to transcode are transcoded on several blocking
/// threads.
const PARALLEL_TRANSCODE_MIN: usize = 1024;

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

/// The generic store of one kind.
pub struct Store {
    kind: &'static Kind,
    info: &'static ResourceInfo,
    resource: GroupResource,
    storage: Arc<dyn Interface>,
    cacher: Option<Cacher>,
    keys: ResourceKeys,
    media_type: StorageMediaType,
    /// The JSON of recently read objects stored as protobuf.
    json_memo: JsonMemo,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The store of `kind` over `storage` (keys under `keys`).
    pub fn new(kind: &'static Kind, storage: Arc<dyn Interface>, keys: ResourceKeys) -> Self {
        let info = kind.storage_info();
        Self {
            kind,
            info,
            resource: GroupResource::new(info.group, info.plural),
            storage,
            cacher: None,
            keys,
            media_type: StorageMediaType::default(),
            json_memo: JsonMemo::default(),
        }
    }

    /// Sets the form objects are written in (`--storage-media-type`).
    pub fn with_media_type(mut self, media_type: StorageMediaType) -> Self {
        self.media_type = media_type;
        self
    }

    /// Records the watch cache `storage` is, so watches can use its encoding memos and
    /// consistent reads its revision.
    pub fn with_cacher(mut self, cacher: Cacher) -> Self {
        self.cacher = Some(cacher);
        self
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

    /// The watch cache, if the store has one.
    pub fn cacher(&self) -> Option<&Cacher> {
        self.cacher.as_ref()
    }

    /// The watch cache's change counter ([`Cacher::changes`]), if the store has a cache: it
    /// moves after every change to the kind's objects is visible to reads.
    pub fn changes(&self) -> Option<&Arc<std::sync::atomic::AtomicU64>> {
        self.cacher.as_ref().map(Cacher::changes)
    }

    /// The storage underneath (the watch cache).
    pub fn storage(&self) -> &Arc<dyn Interface> {
        &self.storage
    }

    fn err(&self, e: storage::StorageError, name: &str) -> ApiError {
        storage_error(e, &self.resource, name)
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        let ns = self.info.namespaced().then_some(namespace);
        self.keys
            .object_key(ns, name)
            .map_err(|e| ApiError::bad_request(e.to_string()))
    }

    /// The storage key of a collection (all namespaces when `namespace` is empty).
    pub fn collection_key(&self, namespace: &str) -> Result<String, ApiError> {
        if namespace.is_empty() || !self.info.namespaced() {
            Ok(self.keys.resource_prefix().to_string())
        } else {
            self.keys
                .namespace_prefix(namespace)
                .map_err(|e| ApiError::bad_request(e.to_string()))
        }
    }

    /// Decodes a stored object (either form) into the storage version, converting objects
    /// written under an earlier storage version, and sets its resourceVersion.
    pub fn decode(&self, stored: &StoredObject) -> Result<Box<dyn Object>, ApiError> {
        let mut object = match encoding::recognize(&stored.data).map_err(ApiError::internal)? {
            StoredForm::Protobuf(envelope) => {
                let version = apimachinery::GroupVersion::parse(envelope.api_version).version;
                let codec = self.kind.codec(&version).unwrap_or(self.kind.storage());
                codec
                    .decode_protobuf(envelope.raw)
                    .map_err(ApiError::internal)?
            }
            StoredForm::Json(json) => {
                let version = stored_json_version(json);
                let codec = version
                    .and_then(|v| self.kind.codec(&v))
                    .unwrap_or(self.kind.storage());
                codec
                    .decode_json(json)
                    .map_err(|e| ApiError::internal(format!("stored object: {e}")))?
                    .object
            }
        };
        if object.info().version != self.info.version {
            object = self
                .kind
                .convert(object, self.info.version)
                .map_err(ApiError::internal)?;
        }
        object.metadata_mut().resource_version = Some(stored.resource_version.to_string());
        Ok(object)
    }

    /// Encodes an object of the storage version for storage, without its resourceVersion (the
    /// revision is), in the store's media type. A kind without a protobuf encoding is written
    /// as JSON.
    pub fn encode(&self, object: &mut dyn Object) -> Result<Bytes, ApiError> {
        let resource_version = object.metadata_mut().resource_version.take();
        let result = self.encode_without_version(object);
        object.metadata_mut().resource_version = resource_version;
        result
    }

    fn encode_without_version(&self, object: &dyn Object) -> Result<Bytes, ApiError> {
        if self.media_type == StorageMediaType::Protobuf {
            let mut raw = Vec::with_capacity(512);
            match object.write_protobuf(&mut raw) {
                Ok(()) => {
                    return Ok(Bytes::from(apimachinery::protobuf::encode_envelope(
                        &self.info.api_version(),
                        self.info.kind,
                        &raw,
                    )));
                }
                Err(apimachinery::CodecError::Protobuf(_)) => {}
                Err(e) => return Err(ApiError::internal(e)),
            }
        }
        // `apiVersion` and `kind` lead, so reads recognise the version from the prefix.
        object
            .to_json()
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    /// Reads one object (`resource_version` as the client gave it).
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Box<dyn Object>, ApiError> {
        let stored = self.get_stored(namespace, name, resource_version).await?;
        self.decode(&stored)
    }

    /// Reads one object without decoding it.
    pub async fn get_stored(
        &self,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<StoredObject, ApiError> {
        let key = self.key(namespace, name)?;
        let opts = GetOptions {
            ignore_not_found: true,
            resource_version: resource_version.to_string(),
        };
        // A consistent get (resourceVersion "") is served by the watch cache once it has
        // reached a storage revision read after the request started (one read shared by
        // concurrent gets); otherwise the cache reads the storage.
        match self
            .storage
            .get(&key, opts)
            .await
            .map_err(|e| self.err(e, name))?
        {
            Some(o) => Ok(o),
            None => Err(ApiError::not_found(&self.resource, name)),
        }
    }

    /// Reads one object consistently, or `None`.
    pub async fn try_get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Box<dyn Object>>, ApiError> {
        match self.get(namespace, name, "").await {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists a collection without decoding it.
    pub async fn list_stored(
        &self,
        namespace: &str,
        opts: ListOptions,
    ) -> Result<ListResult, ApiError> {
        let key = self.collection_key(namespace)?;
        self.storage
            .get_list(
                &key,
                ListOptions {
                    recursive: true,
                    ..opts
                },
            )
            .await
            .map_err(|e| self.err(e, ""))
    }

    /// Lists a collection; returns the decoded items and the page facts.
    pub async fn list(
        &self,
        namespace: &str,
        opts: ListOptions,
    ) -> Result<(Vec<Box<dyn Object>>, ListResult), ApiError> {
        let mut result = self.list_stored(namespace, opts).await?;
        let items = result
            .items
            .iter()
            .map(|o| self.decode(o))
            .collect::<Result<Vec<_>, _>>()?;
        result.items.clear();
        Ok((items, result))
    }

    /// Lists a collection straight from the storage under the watch cache (a consistent read
    /// that never waits for the cache to catch up).
    pub async fn list_uncached(&self, namespace: &str) -> Result<Vec<Box<dyn Object>>, ApiError> {
        let key = self.collection_key(namespace)?;
        let storage = self
            .cacher
            .as_ref()
            .map(|c| c.storage().clone())
            .unwrap_or_else(|| self.storage.clone());
        let result = storage
            .get_list(
                &key,
                ListOptions {
                    recursive: true,
                    ..ListOptions::default()
                },
            )
            .await
            .map_err(|e| self.err(e, ""))?;
        result.items.iter().map(|o| self.decode(o)).collect()
    }

    /// Watches a collection (or one object when the key names it).
    pub async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream, ApiError> {
        self.storage
            .watch(key, opts)
            .await
            .map_err(|e| self.err(e, ""))
    }

    /// The JSON of a stored object in the storage version with its resourceVersion. JSON
    /// stored in the storage version gets the resourceVersion spliced in; anything else is
    /// decoded into its typed form and encoded.
    pub fn json_bytes(&self, stored: &StoredObject) -> Result<Vec<u8>, ApiError> {
        if let Ok(StoredForm::Json(json)) = encoding::recognize(&stored.data) {
            let prefix = format!("{{\"apiVersion\":\"{}\"", self.info.api_version());
            if json.starts_with(prefix.as_bytes())
                && let Some(b) =
                    super::codec::splice_resource_version(json, stored.resource_version)
            {
                return Ok(b);
            }
        }
        self.decode(stored)?.to_json().map_err(ApiError::internal)
    }

    /// The JSON of one object read for a GET: like [`Self::json_bytes`], but objects stored as
    /// protobuf are transcoded once per resourceVersion while they stay in the store's small
    /// memo of recently read objects.
    pub fn json_for_get(&self, stored: &StoredObject) -> Result<Bytes, ApiError> {
        if stored.data.starts_with(&apimachinery::protobuf::MAGIC) {
            self.json_memo
                .get_or_encode(&stored.key, stored.resource_version, || {
                    self.json_bytes(stored)
                })
        } else {
            self.json_bytes(stored).map(Bytes::from)
        }
    }

    /// The JSON of every object of a list ([`Self::json_bytes`] of each), in order: the
    /// inside of a JSON array, in parts to be sent one after another with a comma between
    /// them (each part's objects are separated by commas already). Large lists of protobuf
    /// objects are transcoded on Tokio's blocking threads, a part each, so no async worker is
    /// held; the parts are not joined, so the response holds each byte once.
    pub async fn json_list_items(
        self: &Arc<Self>,
        items: Vec<StoredObject>,
    ) -> Result<Vec<Vec<u8>>, ApiError> {
        fn encode(store: &Store, part: &[StoredObject]) -> Result<Vec<u8>, ApiError> {
            let mut out = Vec::with_capacity(part.iter().map(|o| o.data.len() * 3 / 2).sum());
            for (i, o) in part.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&store.json_bytes(o)?);
            }
            Ok(out)
        }
        let protobuf = items
            .first()
            .is_some_and(|o| o.data.starts_with(&apimachinery::protobuf::MAGIC));
        if items.len() < PARALLEL_TRANSCODE_MIN || !protobuf {
            return Ok(vec![encode(self, &items)?]);
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let chunk = items.len().div_ceil(threads);
        let items = Arc::new(items);
        let handles: Vec<_> = (0..items.len())
            .step_by(chunk)
            .map(|start| {
                let (store, items) = (self.clone(), items.clone());
                tokio::task::spawn_blocking(move || {
                    let end = (start + chunk).min(items.len());
                    encode(&store, &items[start..end])
                })
            })
            .collect();
        let mut parts = Vec::with_capacity(handles.len());
        for handle in handles {
            let part = handle
                .await
                .map_err(|_| ApiError::internal("a list transcoding task failed"))??;
            if !part.is_empty() {
                parts.push(part);
            }
        }
        Ok(parts)
    }

    /// Creates an object: the kind's rules and validation ([`rest::before_create`]), then
    /// `admission`, then storage (with the strategy's TTL). A generated name that is taken is
    /// generated again. Returns the stored object and the strategy's warnings.
    pub async fn create(
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
        admission.authorize(&*object, None)?;
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
        let step = |current: Option<Box<dyn Object>>| async move {
            match current {
                None if !may_create => Err(ApiError::not_found(&self.resource, name)),
                None => {
                    let mut object = info.updated_object(None).await?;
                    // A create through an update ignores the resourceVersion it may carry.
                    object.metadata_mut().resource_version = None;
                    create_admission.authorize(&*object, None)?;
                    let warnings = rest::before_create(self.kind, &mut *object)?;
                    create_admission.validate(Some(&*object), None).await?;
                    Ok((object, true, warnings))
                }
                Some(old) => {
                    let mut object = info.updated_object(Some(&*old)).await?;
                    update_admission.authorize(&*object, Some(&*old))?;
                    rest::check_update_precondition(self.kind, &mut *object, &*old)?;
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
            let (object, created, warnings) = step(current).await?;
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
                    let data = match (&current, &unchanged_old) {
                        // Nothing changed: the stored bytes stay, so storage skips the write.
                        (Some(stored), Some(old)) if object.eq_object(&**old) => {
                            stored.data.clone()
                        }
                        _ => self.encode(&mut *object)?,
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
                Ok(_) => self.kind.strategy().after_delete(&*object),
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
        let have_uid = current.metadata().uid.clone().unwrap_or_default();
        if let Some(uid) = &opts.uid
            && *uid != have_uid
        {
            return Err(ApiError::conflict(
                &self.resource,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {have_uid}"
                ),
            ));
        }
        if let Some(rv) = &opts.resource_version {
            let have = current
                .metadata()
                .resource_version
                .clone()
                .unwrap_or_default();
            if *have != *rv {
                return Err(ApiError::conflict(
                    &self.resource,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in meta: {have}"
                    ),
                ));
            }
        }
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
        Ok(DeleteOutcome::Deleted(object))
    }
}

/// The version of a stored JSON object, from its leading `apiVersion` member.
fn stored_json_version(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct TypeMeta {
        #[serde(rename = "apiVersion", default)]
        api_version: String,
    }
    let meta: TypeMeta = serde_json::from_slice(json).ok()?;
    Some(apimachinery::GroupVersion::parse(&meta.api_version).version)
}

#[cfg(test)]
#[path = "store_delete_tests.rs"]
mod delete_race_tests;
