//! [`ResourceStore`]: the generic registry store of one kind over the storage
//! [`Interface`]. It works on objects in the JSON of the kind's storage version; endpoints
//! convert to and from the requested version around it. Objects are written in the
//! [`StorageMediaType`] it was built with and read back in either stored form.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apimachinery::{GroupResource, KindOps, ResourceInfo};
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;
use storage::cacher::Cacher;
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, Preconditions, StoredObject, Update, UpdateFn,
    WatchEventStream,
};
use storage::keys::ResourceKeys;

use super::codec::StoredObjectCodec;
use super::encoding::{self, StorageMediaType, StoredForm};
use super::errors::{callback, storage_error};
use super::generate_name;
use super::json_memo::JsonMemo;
use super::meta::{self, finalizers, is_deleting, meta_mut, meta_str};
use super::transcode;

/// How many names `generateName` tries before giving up with 409.
pub const GENERATE_NAME_ATTEMPTS: usize = 8;

/// The outcome of a delete.
#[derive(Clone, Debug, PartialEq)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Deleted(Value),
    /// Finalizers are pending: the object now carries `deletionTimestamp`.
    Pending(Value),
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

/// The generic store of one kind.
pub struct ResourceStore {
    /// The kind's typed operations.
    pub ops: Arc<dyn KindOps>,
    /// The storage version's facts.
    pub info: ResourceInfo,
    /// The group and plural, for messages.
    pub resource: GroupResource,
    /// The storage underneath.
    pub storage: Arc<dyn Interface>,
    /// The attribute extractor shared with storage.
    pub codec: Arc<StoredObjectCodec>,
    /// The form objects are written in.
    pub media_type: StorageMediaType,
    keys: ResourceKeys,
    cacher: Option<Cacher>,
    /// The JSON of recently read objects stored as protobuf.
    json_memo: JsonMemo,
}

/// Lists with at least this many objects to transcode are transcoded on several threads.
const PARALLEL_TRANSCODE_MIN: usize = 1024;

type UpdateClosure<'a> = Box<dyn FnMut(Option<Value>) -> Result<Value, ApiError> + Send + 'a>;

impl ResourceStore {
    /// Creates the store of one kind.
    pub fn new(
        ops: Arc<dyn KindOps>,
        storage: Arc<dyn Interface>,
        keys: ResourceKeys,
        codec: Arc<StoredObjectCodec>,
    ) -> Self {
        let info = ops.storage_version().clone();
        let resource = GroupResource::new(info.group, info.plural);
        Self {
            ops,
            info,
            resource,
            storage,
            codec,
            media_type: StorageMediaType::default(),
            keys,
            cacher: None,
            json_memo: JsonMemo::default(),
        }
    }

    /// Sets the form objects are written in (`--storage-media-type`).
    pub fn with_media_type(mut self, media_type: StorageMediaType) -> Self {
        self.media_type = media_type;
        self
    }

    /// Records the watch cache `storage` is, so watches can use its encoding memos.
    pub fn with_cacher(mut self, cacher: Cacher) -> Self {
        self.cacher = Some(cacher);
        self
    }

    /// The watch cache, if the store has one.
    pub fn cacher(&self) -> Option<&Cacher> {
        self.cacher.as_ref()
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        let ns = if self.info.namespaced() {
            Some(namespace)
        } else {
            None
        };
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

    /// Decodes a stored object (either form) into the JSON of the storage version, converting
    /// objects written under an earlier storage version, and stamps its resourceVersion.
    pub fn decode(&self, stored: &StoredObject) -> Result<Value, ApiError> {
        let (mut v, stored_version) =
            match encoding::recognize(&stored.data).map_err(ApiError::internal)? {
                StoredForm::Protobuf(envelope) => {
                    let version = apimachinery::GroupVersion::parse(envelope.api_version).version;
                    let v = self
                        .ops
                        .decode_protobuf(&version, envelope.raw)
                        .map_err(ApiError::internal)?;
                    (v, Some(version))
                }
                StoredForm::Json(json) => {
                    let v: Value = serde_json::from_slice(json).map_err(ApiError::internal)?;
                    let version = v
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .map(|av| apimachinery::GroupVersion::parse(av).version);
                    (v, version)
                }
            };
        if let Some(from) = stored_version
            && from != self.info.version
            && self.ops.version(&from).is_some()
        {
            v = self
                .ops
                .convert(v, &from, self.info.version)
                .map_err(ApiError::internal)?;
        }
        if let Some(m) = v.as_object_mut() {
            m.insert("apiVersion".into(), Value::from(self.info.api_version()));
        }
        meta_mut(&mut v).insert(
            "resourceVersion".into(),
            Value::from(stored.resource_version.to_string()),
        );
        Ok(v)
    }

    /// The object a create has just stored, as [`Self::decode`] of its stored bytes yields it
    /// (the storage version's JSON, `apiVersion` and `kind` first, the new resourceVersion
    /// set), built from the object written instead of decoding the bytes again.
    pub fn written(&self, object: Value, resource_version: storage::Revision) -> Value {
        let mut v = match object {
            // Already led by `apiVersion` and `kind` (as every decoded object is): set in place.
            Value::Object(mut src)
                if src
                    .keys()
                    .take(2)
                    .eq(["apiVersion", "kind"].iter().copied()) =>
            {
                // Replacing the values in place is what `insert` of a present key does.
                let mut members = src.values_mut();
                if let Some(v) = members.next() {
                    *v = Value::from(self.info.api_version());
                }
                if let Some(v) = members.next() {
                    *v = Value::from(self.info.kind);
                }
                Value::Object(src)
            }
            other => {
                let mut out = serde_json::Map::new();
                out.insert("apiVersion".into(), Value::from(self.info.api_version()));
                out.insert("kind".into(), Value::from(self.info.kind));
                if let Value::Object(src) = other {
                    out.extend(
                        src.into_iter()
                            .filter(|(k, _)| k != "apiVersion" && k != "kind"),
                    );
                }
                Value::Object(out)
            }
        };
        let meta = meta_mut(&mut v);
        // Only a present member needs the (hashed) removal.
        if apimachinery::json::map_get(meta, "resourceVersion").is_some() {
            meta.remove("resourceVersion");
        }
        meta.insert(
            "resourceVersion".into(),
            Value::from(resource_version.to_string()),
        );
        v
    }

    /// Encodes an object of the storage version for storage (without its resourceVersion), in
    /// the store's media type. A kind without a protobuf encoding is written as JSON.
    pub fn encode(&self, object: &Value) -> Result<Bytes, ApiError> {
        if self.media_type == StorageMediaType::Protobuf {
            match self.encode_protobuf(object) {
                Ok(bytes) => return Ok(bytes),
                Err(apimachinery::scheme::CodecError::Protobuf(_)) => {}
                Err(e) => return Err(ApiError::internal(e)),
            }
        }
        self.encode_json(object)
    }

    /// The storage version's protobuf message of `object` in the `k8s\0` envelope.
    fn encode_protobuf(&self, object: &Value) -> Result<Bytes, apimachinery::scheme::CodecError> {
        let raw = self
            .ops
            .encode_protobuf_for_storage(self.info.version, object)?;
        Ok(self.envelope(&raw))
    }

    /// The storage version's protobuf message `raw` in the `k8s\0` envelope.
    fn envelope(&self, raw: &[u8]) -> Bytes {
        Bytes::from(apimachinery::protobuf::encode_envelope(
            &self.info.api_version(),
            self.info.kind,
            raw,
        ))
    }

    /// The storage version's JSON of `object`, `apiVersion` and `kind` first.
    fn encode_json(&self, object: &Value) -> Result<Bytes, ApiError> {
        // `apiVersion` and `kind` lead, so reads can recognise the version from the prefix.
        let mut v = Value::Object(serde_json::Map::new());
        if let (Some(out), Some(src)) = (v.as_object_mut(), object.as_object()) {
            out.insert("apiVersion".into(), Value::from(self.info.api_version()));
            out.insert("kind".into(), Value::from(self.info.kind));
            for (k, val) in src {
                if k != "apiVersion" && k != "kind" {
                    out.insert(k.clone(), val.clone());
                }
            }
        }
        meta_mut(&mut v).remove("resourceVersion");
        serde_json::to_vec(&v)
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    fn err(&self, e: storage::StorageError, name: &str) -> ApiError {
        storage_error(e, &self.resource, name)
    }

    /// Reads one object (`resource_version` as the client gave it).
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Value, ApiError> {
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

    /// Reads one object, or `None`.
    pub async fn try_get(&self, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        match self.get(namespace, name, "").await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists a collection; returns the decoded items and the page facts.
    pub async fn list(
        &self,
        namespace: &str,
        opts: ListOptions,
    ) -> Result<(Vec<Value>, ListResult), ApiError> {
        let key = self.collection_key(namespace)?;
        let mut result = self
            .storage
            .get_list(
                &key,
                ListOptions {
                    recursive: true,
                    ..opts
                },
            )
            .await
            .map_err(|e| self.err(e, ""))?;
        let items = result
            .items
            .iter()
            .map(|o| self.decode(o))
            .collect::<Result<Vec<_>, _>>()?;
        result.items.clear();
        Ok((items, result))
    }

    /// Lists a collection and returns the stored objects undecoded (for responses that can
    /// be written from the stored bytes).
    pub async fn list_raw(
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

    /// The JSON of a stored object with its resourceVersion, written from the stored bytes
    /// when they are of the storage version: JSON gets the resourceVersion spliced in,
    /// protobuf is transcoded through the kind's typed form. Anything else is decoded (and
    /// converted) first.
    pub fn json_bytes(&self, stored: &StoredObject) -> Result<Vec<u8>, ApiError> {
        match encoding::recognize(&stored.data).map_err(ApiError::internal)? {
            StoredForm::Protobuf(envelope) if envelope.api_version == self.info.api_version() => {
                let rv = stored.resource_version.to_string();
                if let Some(json) = self.managed_fields_split_json(envelope.raw, &rv) {
                    return Ok(json);
                }
                return self
                    .ops
                    .protobuf_to_json(self.info.version, envelope.raw, &rv)
                    .map_err(ApiError::internal);
            }
            StoredForm::Json(json) => {
                let prefix = format!("{{\"apiVersion\":\"{}\"", self.info.api_version());
                if json.starts_with(prefix.as_bytes())
                    && let Some(b) =
                        super::codec::splice_resource_version(json, stored.resource_version)
                {
                    return Ok(b);
                }
            }
            StoredForm::Protobuf(_) => {}
        }
        serde_json::to_vec(&self.decode(stored)?).map_err(ApiError::internal)
    }

    /// The JSON of a storage-version protobuf message with managedFields transcoded directly
    /// (see [`super::transcode`]); `None` when that does not apply.
    fn managed_fields_split_json(&self, raw: &[u8], resource_version: &str) -> Option<Vec<u8>> {
        let split = transcode::split_managed_fields(raw, self.codec.metadata_field()?)?;
        let rest = self
            .ops
            .protobuf_to_json(self.info.version, &split.stripped, resource_version)
            .ok()?;
        let mut array = Vec::with_capacity(split.entries.iter().map(|e| e.len() + 32).sum());
        transcode::managed_fields_json(&split.entries, &mut array)?;
        transcode::append_to_metadata(&rest, &array)
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

    /// The JSON of every object of a list ([`Self::json_bytes`] of each), in order and
    /// separated by commas: the inside of a JSON array. Large lists are transcoded on up to as
    /// many threads as the machine has cores.
    pub fn json_list_items(&self, items: &[StoredObject]) -> Result<Vec<u8>, ApiError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let protobuf = items
            .first()
            .is_some_and(|o| o.data.starts_with(&apimachinery::protobuf::MAGIC));
        let encode = |part: &[StoredObject]| {
            let mut out = Vec::with_capacity(part.iter().map(|o| o.data.len() * 3 / 2).sum());
            for (i, o) in part.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&self.json_bytes(o)?);
            }
            Ok::<_, ApiError>(out)
        };
        if threads < 2 || items.len() < PARALLEL_TRANSCODE_MIN || !protobuf {
            return encode(items);
        }
        let chunk = items.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let mut parts = items.chunks(chunk);
            let first = parts.next().unwrap_or_default();
            let handles: Vec<_> = parts
                .map(|part| scope.spawn(move || encode(part)))
                .collect();
            let mut out = encode(first)?;
            for handle in handles {
                let part = handle
                    .join()
                    .map_err(|_| ApiError::internal("a list transcoding thread panicked"))??;
                if !part.is_empty() {
                    out.push(b',');
                    out.extend_from_slice(&part);
                }
            }
            Ok(out)
        })
    }

    /// Lists a collection straight from the storage under the watch cache (a consistent read
    /// that never waits for the cache to catch up).
    pub async fn list_uncached(&self, namespace: &str) -> Result<Vec<Value>, ApiError> {
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

    /// Creates a prepared, validated object; resolves `generateName` with retries. `ttl` is
    /// the storage TTL in seconds (Events).
    pub async fn create(
        &self,
        namespace: &str,
        object: Value,
        dry_run: bool,
        ttl: Option<u64>,
    ) -> Result<Value, ApiError> {
        self.create_encoded(namespace, object, dry_run, ttl, None)
            .await
    }

    /// [`create`](Self::create), given what [`KindOps::encode_protobuf_for_storage`] returns
    /// for `object` when the caller has it already (from
    /// [`KindOps::validate_create_and_encode`]). It is used as the stored message only when
    /// the store keeps protobuf and the name is not generated (a generated name changes the
    /// object); otherwise the object is encoded here as always.
    pub async fn create_encoded(
        &self,
        namespace: &str,
        mut object: Value,
        dry_run: bool,
        ttl: Option<u64>,
        mut encoded: Option<Vec<u8>>,
    ) -> Result<Value, ApiError> {
        let generate = meta_str(&object, "name").is_none_or(str::is_empty);
        let prefix = if generate {
            meta_str(&object, "generateName").unwrap_or("").to_string()
        } else {
            String::new()
        };
        let attempts = if generate { GENERATE_NAME_ATTEMPTS } else { 1 };
        let mut last_name = String::new();
        for _ in 0..attempts {
            // Only generated names retry, so only they need the template again.
            let mut obj = if generate {
                object.clone()
            } else {
                std::mem::take(&mut object)
            };
            if generate {
                let name = generate_name::generate(&prefix);
                meta_mut(&mut obj).insert("name".into(), Value::from(name));
            }
            let name = meta_str(&obj, "name").unwrap_or("").to_string();
            // Only generated names try again and end in the conflict that names the last one.
            if generate {
                last_name.clone_from(&name);
            }
            if let Some(e) = meta::validate_name(&name, self.info.kind == "Namespace") {
                return Err(ApiError::invalid(
                    self.info.group,
                    self.info.kind,
                    &name,
                    &[e],
                ));
            }
            let key = self.key(namespace, &name)?;
            if dry_run {
                if self.try_get(namespace, &name).await?.is_some() {
                    if generate {
                        continue;
                    }
                    return Err(ApiError::already_exists(&self.resource, &name));
                }
                return Ok(obj);
            }
            let bytes = match encoded.take() {
                Some(raw) if !generate && self.media_type == StorageMediaType::Protobuf => {
                    self.envelope(&raw)
                }
                _ => self.encode(&obj)?,
            };
            match self.storage.create(&key, bytes, ttl).await {
                Ok(stored) => return Ok(self.written(obj, stored.resource_version)),
                Err(e) if e.is_exists() && generate => continue,
                Err(e) => return Err(self.err(e, &name)),
            }
        }
        Err(ApiError::generate_name_conflict(
            &self.resource,
            &last_name,
            1,
        ))
    }

    /// Updates one object through `update`, which receives the current object (`None` when
    /// absent and `allow_create`) and returns the new one. Returns the stored object and
    /// whether it was created. A deleting object whose last finalizer is removed is deleted.
    pub async fn update<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        allow_create: bool,
        dry_run: bool,
        update: UpdateClosure<'a>,
    ) -> Result<(Value, bool), ApiError> {
        self.update_with_create_ttl(namespace, name, allow_create, dry_run, None, update)
            .await
    }

    /// [`update`](Self::update), where an object the update creates gets the storage TTL
    /// `create_ttl` in seconds (Events created by a `PUT`).
    pub async fn update_with_create_ttl<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        allow_create: bool,
        dry_run: bool,
        create_ttl: Option<u64>,
        mut update: UpdateClosure<'a>,
    ) -> Result<(Value, bool), ApiError> {
        let key = self.key(namespace, name)?;
        if dry_run {
            let current = self.try_get(namespace, name).await?;
            if current.is_none() && !allow_create {
                return Err(ApiError::not_found(&self.resource, name));
            }
            let created = current.is_none();
            return Ok((update(current)?, created));
        }
        let created = Arc::new(Mutex::new(false));
        let flag = created.clone();
        let this = self;
        let try_update: UpdateFn<'_> = Box::new(move |current: Option<StoredObject>| {
            let result = (|| {
                let cur = match &current {
                    Some(o) => Some(this.decode(o)?),
                    None => None,
                };
                *flag.lock() = cur.is_none();
                let old = cur.clone();
                let new = update(cur)?;
                // An update that changes nothing keeps the stored bytes, so storage skips the
                // write and the resourceVersion stays (JSON key order alone is no change).
                let data = match (&current, old) {
                    (Some(stored), Some(old)) if old == new => stored.data.clone(),
                    _ => this.encode(&new)?,
                };
                let ttl = if current.is_none() { create_ttl } else { None };
                Ok::<_, ApiError>(Update { data, ttl })
            })();
            Box::pin(async move { result.map_err(callback) })
        });
        let stored = self
            .storage
            .guaranteed_update(&key, allow_create, None, try_update, None)
            .await
            .map_err(|e| self.err(e, name))?;
        let obj = self.decode(&stored)?;
        let was_created = *created.lock();
        if is_deleting(&obj) && !self.has_pending_finalizers(&obj) {
            let pre = Preconditions {
                uid: None,
                resource_version: Some(stored.resource_version.to_string()),
            };
            match self.storage.delete(&key, Some(pre), None, None).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(self.err(e, name)),
            }
        }
        Ok((obj, was_created))
    }

    /// Whether an object still has finalizers to run (`metadata.finalizers`, and for
    /// namespaces `spec.finalizers`).
    pub fn has_pending_finalizers(&self, object: &Value) -> bool {
        if !finalizers(object).is_empty() {
            return true;
        }
        self.info.kind == "Namespace"
            && object
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    }

    /// Deletes one object, honouring preconditions and finalizers.
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.key(namespace, name)?;
        let current = self.get(namespace, name, "").await?;
        if let Some(uid) = &opts.uid {
            let have = meta_str(&current, "uid").unwrap_or("");
            if have != uid {
                return Err(ApiError::conflict(
                    &self.resource,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.resource_version {
            let have = meta_str(&current, "resourceVersion").unwrap_or("");
            if have != rv {
                return Err(ApiError::conflict(
                    &self.resource,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in meta: {have}"
                    ),
                ));
            }
        }
        if !finalizers(&current).is_empty() {
            if is_deleting(&current) || opts.dry_run {
                let mut obj = current;
                if !is_deleting(&obj) {
                    mark_deleting(&mut obj);
                }
                return Ok(DeleteOutcome::Pending(obj));
            }
            let (obj, _) = self
                .update(
                    namespace,
                    name,
                    false,
                    false,
                    Box::new(|cur| {
                        let mut obj =
                            cur.ok_or_else(|| ApiError::not_found(&self.resource, name))?;
                        if !is_deleting(&obj) {
                            mark_deleting(&mut obj);
                        }
                        Ok(obj)
                    }),
                )
                .await?;
            if finalizers(&obj).is_empty() {
                return Ok(DeleteOutcome::Deleted(obj));
            }
            return Ok(DeleteOutcome::Pending(obj));
        }
        if opts.dry_run {
            return Ok(DeleteOutcome::Deleted(current));
        }
        let pre = Preconditions {
            uid: meta_str(&current, "uid").map(str::to_string),
            resource_version: None,
        };
        let deleted = self
            .storage
            .delete(&key, Some(pre), None, None)
            .await
            .map_err(|e| self.err(e, name))?;
        Ok(DeleteOutcome::Deleted(
            self.decode(&deleted).unwrap_or(current),
        ))
    }
}

/// Marks an object as being deleted: `deletionTimestamp`, grace period 0 and, for kinds that
/// track generation, a generation bump.
pub fn mark_deleting(object: &mut Value) {
    let meta = meta_mut(object);
    meta.insert("deletionTimestamp".into(), Value::from(meta::now_rfc3339()));
    meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
        meta.insert("generation".into(), Value::from(generation + 1));
    }
}
