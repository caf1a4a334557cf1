//! [`Store`]: the generic registry store of one kind (Kubernetes' `genericregistry.Store`),
//! over the storage [`Interface`] of its resource (the watch cache over the backend).
//!
//! The store works on typed objects of the kind's storage version. Every write runs the same
//! steps in one direction: the kind's rules ([`super::rest`], with its strategy), then the
//! validating admission the handler passes in ([`ValidateObject`]), then encoding and the
//! storage call. Objects are written in the [`StorageMediaType`] the store was built with and
//! read back in either stored form, converted from an older storage version when needed.
//!
//! This file holds the store itself: its construction, the storage keys of its objects, the
//! encoding and decoding of stored objects, reads, and the JSON of stored objects for
//! responses. Writes (create, update, delete), with the admission hooks and the options and
//! outcomes they take, are in `writes`; their items are re-exported here.

mod writes;

use std::sync::Arc;

use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::{GroupResource, ResourceInfo};
use bytes::Bytes;
use storage::cacher::Cacher;
use storage::interface::{
    GetOptions, Interface, ListOptions, ListResult, StoredObject, WatchEventStream,
};
use storage::keys::ResourceKeys;

use super::encoding::{self, StorageMediaType, StoredForm};
use super::errors::storage_error;
use super::json_memo::JsonMemo;

pub use writes::{
    DeleteOptions, DeleteOutcome, GENERATE_NAME_ATTEMPTS, NoAdmission, UpdateOptions, Updated,
    UpdatedObjectInfo, ValidateObject,
};

/// Lists with at least this many objects to transcode are transcoded on several blocking
/// threads.
const PARALLEL_TRANSCODE_MIN: usize = 1024;
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
    /// For a kind whose reads may change stored JSON (a custom resource's schema prunes and
    /// defaults): the resourceVersion, by key, at which a read was found to leave the stored
    /// JSON as it is, so later reads serve it as stored. The store lives as long as the
    /// schema it was checked with (a CRD change replaces the store).
    read_as_stored: parking_lot::Mutex<rustc_hash::FxHashMap<Box<str>, i64>>,
    /// What the kind's storage does around its writes ([`super::hooks`]), once a bundle set it.
    write_hooks: parking_lot::RwLock<Option<Arc<dyn super::hooks::WriteHooks>>>,
}

/// The most keys a store remembers as read as stored (emptied when full).
const READ_AS_STORED_KEYS: usize = 1 << 20;

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
            read_as_stored: Default::default(),
            write_hooks: parking_lot::RwLock::new(None),
        }
    }

    /// Sets what the kind's storage does around its writes (Kubernetes' `BeginCreate`,
    /// `BeginUpdate`, `AfterDelete`; see [`super::hooks`]), replacing any earlier hooks.
    pub fn set_write_hooks(&self, hooks: Arc<dyn super::hooks::WriteHooks>) {
        *self.write_hooks.write() = Some(hooks);
    }

    /// The kind's write hooks, if set.
    pub(crate) fn write_hooks(&self) -> Option<Arc<dyn super::hooks::WriteHooks>> {
        self.write_hooks.read().clone()
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
                .map_err(apimachinery::scheme::CodecError::into_api_error)?;
        }
        object.metadata_mut().resource_version = Some(stored.resource_version.to_string());
        Ok(object)
    }

    /// Encodes an object for storage, without its resourceVersion (the revision is), in the
    /// store's media type, converted to the storage version first when it is in another (a
    /// kind whose strategy writes in the request's version). A kind without a protobuf
    /// encoding is written as JSON.
    pub fn encode(&self, object: &mut dyn Object) -> Result<Bytes, ApiError> {
        if let Some(mut stored) = self.in_storage_version(object)? {
            return self.encode(&mut *stored);
        }
        let resource_version = object.metadata_mut().resource_version.take();
        let result = self.encode_without_version(object);
        object.metadata_mut().resource_version = resource_version;
        result
    }

    /// `object` converted to the storage version, or `None` when it is in it already.
    pub(crate) fn in_storage_version(
        &self,
        object: &dyn Object,
    ) -> Result<Option<Box<dyn Object>>, ApiError> {
        self.in_version(object, self.info.version)
    }

    /// `object` converted to `version`, or `None` when it is in it already.
    pub(crate) fn in_version(
        &self,
        object: &dyn Object,
        version: &str,
    ) -> Result<Option<Box<dyn Object>>, ApiError> {
        if object.info().version == version {
            return Ok(None);
        }
        self.kind
            .convert(object.clone_object(), version)
            .map(Some)
            .map_err(apimachinery::scheme::CodecError::into_api_error)
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
    /// stored in the storage version gets the resourceVersion spliced in (unless reading
    /// changes it: a custom resource's schema prunes and defaults on every read); anything else
    /// is decoded into its typed form and encoded.
    pub fn json_bytes(&self, stored: &StoredObject) -> Result<Vec<u8>, ApiError> {
        if let Ok(StoredForm::Json(json)) = encoding::recognize(&stored.data) {
            let prefix = format!("{{\"apiVersion\":\"{}\"", self.info.api_version());
            if json.starts_with(prefix.as_bytes())
                && let Some(b) =
                    super::codec::splice_resource_version(json, stored.resource_version)
            {
                if !self.kind.storage().changes_stored_json_on_read()
                    || self.reads_as_stored(stored)
                {
                    return Ok(b);
                }
                // Read once with the schema: when that leaves the object as stored, later
                // reads of this revision serve the stored JSON.
                let mut object = self.decode(stored)?;
                object.metadata_mut().resource_version = None;
                let read = object.to_json().map_err(ApiError::internal)?;
                if read.as_slice() == json {
                    let mut seen = self.read_as_stored.lock();
                    if seen.len() >= READ_AS_STORED_KEYS {
                        seen.clear();
                    }
                    seen.insert(stored.key.as_str().into(), stored.resource_version);
                    return Ok(b);
                }
                return match super::codec::splice_resource_version(&read, stored.resource_version) {
                    Some(with_version) => Ok(with_version),
                    None => {
                        object.metadata_mut().resource_version =
                            Some(stored.resource_version.to_string());
                        object.to_json().map_err(ApiError::internal)
                    }
                };
            }
        }
        self.decode(stored)?.to_json().map_err(ApiError::internal)
    }

    /// Whether a read of `stored` was found to leave it as stored.
    fn reads_as_stored(&self, stored: &StoredObject) -> bool {
        self.read_as_stored.lock().get(stored.key.as_str()) == Some(&stored.resource_version)
    }

    /// The JSON of one object read for a GET: like [`Self::json_bytes`], but objects stored as
    /// protobuf (or whose read changes them) are transcoded once per resourceVersion while
    /// they stay in the store's small memo of recently read objects.
    pub fn json_for_get(&self, stored: &StoredObject) -> Result<Bytes, ApiError> {
        // A store lives as long as its kind's definition (a custom resource's store is
        // replaced when its CRD changes), so a memoized read never outlives the schema it was
        // decoded with.
        if stored.data.starts_with(&apimachinery::protobuf::MAGIC)
            || self.kind.storage().changes_stored_json_on_read()
        {
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
        // Protobuf is transcoded, and JSON whose read changes it (a custom resource's schema
        // prunes and defaults) decoded and encoded again: off the async workers.
        let transcoded = self.kind.storage().changes_stored_json_on_read()
            || items
                .first()
                .is_some_and(|o| o.data.starts_with(&apimachinery::protobuf::MAGIC));
        if items.len() < PARALLEL_TRANSCODE_MIN || !transcoded {
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
}

/// The version of a stored JSON object, from its leading `apiVersion` member.
fn stored_json_version(json: &[u8]) -> Option<String> {
    // What the store writes leads with `apiVersion`: read it from the prefix, without parsing
    // the whole document.
    const LEAD: &[u8] = br#"{"apiVersion":""#;
    if let Some(rest) = json.strip_prefix(LEAD)
        && let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\')
        && rest[end] == b'"'
        && let Ok(api_version) = std::str::from_utf8(&rest[..end])
    {
        return Some(apimachinery::GroupVersion::parse(api_version).version);
    }
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

#[cfg(test)]
mod stored_version_tests {
    use super::stored_json_version;

    #[test]
    fn the_version_is_read_from_the_leading_api_version_or_the_whole_document() {
        let lead = br#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{}}"#;
        assert_eq!(stored_json_version(lead).as_deref(), Some("v1"));
        let core = br#"{"apiVersion":"v1","kind":"ConfigMap"}"#;
        assert_eq!(stored_json_version(core).as_deref(), Some("v1"));
        let later = br#"{"kind":"Widget","apiVersion":"example.dev/v2"}"#;
        assert_eq!(stored_json_version(later).as_deref(), Some("v2"));
        let escaped = br#"{"apiVersion":"example.dev\/v3","kind":"Widget"}"#;
        assert_eq!(stored_json_version(escaped).as_deref(), Some("v3"));
    }
}
