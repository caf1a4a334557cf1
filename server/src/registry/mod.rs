//! The generic registry: one [`Store`] per kind over the storage interface (a watch cache over
//! the backend), the rules every kind's writes share ([`rest`]), and the encoding of objects at
//! rest ([`encoding`], [`codec`]). Per-kind behaviour comes from each kind's strategy, next to
//! its definition.

pub mod codec;
pub mod encoding;
pub mod errors;
pub mod generate_name;
pub mod hooks;
pub mod json_memo;
pub mod rest;
pub mod rest_storage;
pub mod store;

#[cfg(test)]
mod cached_objects_tests;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::{GroupResource, ResourceInfo};
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use storage::cacher::{Cacher, CacherConfig};
use storage::keys::ResourceKeys;
use storage::store::StoreConfig;

pub use store::{
    DeleteOptions, DeleteOutcome, NoAdmission, Store, UpdateOptions, Updated, UpdatedObjectInfo,
    ValidateObject,
};

use codec::StoredObjectCodec;
use encoding::StorageMediaType;

use crate::genericserver::remote_resources::RemoteResources;

/// How often the watch cache's upstream watch receives progress notifications.
pub const UPSTREAM_PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// The stores of every kind, created (with their watch caches) on first use; the server creates
/// every served kind's at start (`ApiContext::start_stores`).
pub struct Registry {
    backend: Arc<dyn storage::backend::Backend>,
    prefix: String,
    encryption: Option<Arc<storage::transformer::EncryptionConfig>>,
    media_type: StorageMediaType,
    /// Keyed by the scheme's own names (a fast hash: the keys never come from requests).
    stores: RwLock<FxHashMap<(&'static str, &'static str), Arc<Store>>>,
    /// The kinds served from a user's storage instead of a store, by the same keys; fixed
    /// once the registry is built.
    custom: FxHashMap<(&'static str, &'static str), Arc<rest_storage::CustomStore>>,
    /// Where Services are reached (webhooks, aggregated servers): the resolver of the bundle
    /// that serves Services once it is installed, else the services' DNS names.
    service_resolver: RwLock<Arc<dyn crate::webhook::ServiceResolver>>,
    /// The resources other servers serve behind this one (an aggregator's remote
    /// APIServices), once the bundle that proxies to them installs itself.
    remote_resources: RwLock<Option<Arc<dyn RemoteResources>>>,
}

impl Registry {
    /// A registry over `backend`, with resource keys under `prefix`.
    pub fn new(backend: Arc<dyn storage::backend::Backend>, prefix: String) -> Self {
        Self {
            backend,
            prefix,
            encryption: None,
            media_type: StorageMediaType::default(),
            stores: RwLock::new(FxHashMap::default()),
            custom: FxHashMap::default(),
            service_resolver: RwLock::new(Arc::new(crate::webhook::DnsServiceResolver)),
            remote_resources: RwLock::new(None),
        }
    }

    /// The resolver every caller of a `service` reference uses (admission and conversion
    /// webhooks, the aggregator's proxy): see [`crate::webhook::ServiceResolver`].
    pub fn service_resolver(&self) -> Arc<dyn crate::webhook::ServiceResolver> {
        Arc::clone(&self.service_resolver.read())
    }

    /// Replaces the service resolver (the bundle that serves Services installs its own when
    /// the server is built).
    pub fn set_service_resolver(&self, resolver: Arc<dyn crate::webhook::ServiceResolver>) {
        *self.service_resolver.write() = resolver;
    }

    /// The resources other servers serve behind this one, and the way to reach them (see
    /// [`crate::genericserver::remote_resources`]); `None` until a bundle that proxies to
    /// other servers (the aggregator) installs itself.
    pub fn remote_resources(&self) -> Option<Arc<dyn RemoteResources>> {
        self.remote_resources.read().clone()
    }

    /// Sets the remote resources (the aggregator installs its APIServices' when the server is
    /// built).
    pub fn set_remote_resources(&self, remote: Arc<dyn RemoteResources>) {
        *self.remote_resources.write() = Some(remote);
    }

    /// Serves `kind` from `storage` instead of a [`Store`] (see [`rest_storage`]).
    pub fn with_rest_storage(
        mut self,
        kind: &'static Kind,
        storage: rest_storage::RestStorage,
    ) -> Self {
        let info = kind.storage_info();
        self.custom.insert(
            (info.group, info.plural),
            Arc::new(rest_storage::CustomStore::new(kind, storage)),
        );
        self
    }

    /// The user's storage of `kind`, when it is served from one.
    pub fn custom_store(&self, kind: &Kind) -> Option<&Arc<rest_storage::CustomStore>> {
        if self.custom.is_empty() {
            return None;
        }
        let info = kind.storage_info();
        self.custom.get(&(info.group, info.plural))
    }

    /// The verbs served for `kind`'s main resource, when it is served from a user's storage
    /// (the verbs both the kind and the storage have); `None` for a kind served from a store,
    /// whose verbs are the kind's.
    pub fn custom_verbs(
        &self,
        kind: &Kind,
        declared: &[&'static str],
    ) -> Option<Vec<&'static str>> {
        let custom = self.custom_store(kind)?;
        let verbs = custom.storage().verbs();
        Some(if declared.is_empty() {
            verbs
        } else {
            verbs.into_iter().filter(|v| declared.contains(v)).collect()
        })
    }

    /// What serves `kind`: its user's storage, else its store.
    pub fn kind_storage(&self, kind: &'static Kind) -> Result<KindStorage, ApiError> {
        if let Some(custom) = self.custom_store(kind) {
            return Ok(KindStorage::Custom(custom.clone()));
        }
        self.store(kind).map(KindStorage::Store)
    }

    /// Encrypts stored values as `--encryption-provider-config` says (per group and resource).
    pub fn with_encryption(mut self, config: Arc<storage::transformer::EncryptionConfig>) -> Self {
        self.encryption = Some(config);
        self
    }

    /// Writes objects in `media_type` (`--storage-media-type`); both forms are always read.
    pub fn with_media_type(mut self, media_type: StorageMediaType) -> Self {
        self.media_type = media_type;
        self
    }

    /// The backend every store writes to.
    pub fn backend(&self) -> &Arc<dyn storage::backend::Backend> {
        &self.backend
    }

    /// The key prefix of every resource.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Discards the watch caches' history below `revision` once storage was compacted there,
    /// so a watch from an older revision is 410 Gone from the cache as from storage.
    pub fn compact_caches(&self, revision: storage::errors::Revision) {
        for store in self.stores.read().values() {
            if let Some(cacher) = store.cacher() {
                cacher.compact(revision);
            }
        }
    }

    /// Every store created so far: those of the served kinds (created at start) and those of
    /// kinds defined at run time ([`Registry::install_store`]).
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.stores.read().values().cloned().collect()
    }

    /// The number of watchers each started watch cache serves, with its kind's storage version.
    pub fn watcher_counts(&self) -> Vec<(&'static apimachinery::resource::ResourceInfo, usize)> {
        self.stores
            .read()
            .values()
            .filter_map(|store| {
                let count = store.cacher()?.watcher_count();
                Some((store.kind().storage_info(), count))
            })
            .collect()
    }

    /// The store of a kind. A kind defined at run time is served by the store
    /// [`Registry::install_store`] made for that definition: a request that still holds an
    /// earlier definition of the resource is refused with 503 (clients retry) rather than served
    /// by the store of another definition.
    pub fn store(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        let info = kind.storage_info();
        let id = (info.group, info.plural);
        if let Some(s) = self.stores.read().get(&id) {
            return Self::same_definition(s, kind);
        }
        let mut stores = self.stores.write();
        if let Some(s) = stores.get(&id) {
            return Self::same_definition(s, kind);
        }
        let store = self.new_store(kind)?;
        stores.insert(id, store.clone());
        Ok(store)
    }

    /// The store serving `kind`'s resource for a request that resolved `kind`: the same store,
    /// or, when the resource's definition was replaced while the request was on its way (a CRD
    /// update), the new definition's store, as long as the objects still live at the same
    /// scope. The request keeps what it decoded with the old definition (as kube-apiserver
    /// serves an in-flight request with the storage it started with); a change of scope
    /// answers 503 and the client retries against the new definition.
    fn same_definition(store: &Arc<Store>, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        if std::ptr::eq(store.kind(), kind)
            || store.kind().storage_info().scope == kind.storage_info().scope
        {
            Ok(store.clone())
        } else {
            Err(ApiError::service_unavailable(format!(
                "the definition of {} changed while the request was served",
                store.resource()
            )))
        }
    }

    /// Creates the store and watch cache of a kind defined at run time (a custom resource's),
    /// replacing the store of an earlier definition of the same group and resource, whose watch
    /// cache stops: its open watches end and clients watch again, as kube-apiserver does when a
    /// CustomResourceDefinition changes. Objects in storage are kept.
    pub fn install_store(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        let info = kind.storage_info();
        let store = self.new_store(kind)?;
        let old = self
            .stores
            .write()
            .insert((info.group, info.plural), store.clone());
        if let Some(cacher) = old.as_ref().and_then(|s| s.cacher()) {
            cacher.stop();
        }
        Ok(store)
    }

    /// Removes the store of a kind defined at run time whose definition went away; its watch
    /// cache stops (its watches end). Objects in storage are kept.
    pub fn remove_store(&self, group: &str, resource: &str) -> Option<Arc<Store>> {
        let mut stores = self.stores.write();
        let id = *stores.keys().find(|(g, r)| *g == group && *r == resource)?;
        let store = stores.remove(&id)?;
        if let Some(cacher) = store.cacher() {
            cacher.stop();
        }
        Some(store)
    }

    fn new_store(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        let info = kind.storage_info();
        let keys =
            ResourceKeys::new(&self.prefix, info.group, info.plural).map_err(ApiError::internal)?;
        let codec = Arc::new(StoredObjectCodec::new(kind));
        // The cache's upstream watch gets progress notifications often, so consistent reads from
        // the cache rarely wait for an idle resource to catch up.
        let mut config = StoreConfig::new(keys.resource_prefix(), codec.clone())
            .with_bookmark_interval(UPSTREAM_PROGRESS_INTERVAL);
        if let Some(encryption) = &self.encryption {
            config = config.with_transformer(encryption.transformer_for(info.group, info.plural));
        }
        let backing = storage::store::Store::new(self.backend.clone(), config);
        let cacher = Cacher::new(
            Arc::new(backing),
            CacherConfig::new(keys.resource_prefix(), codec.clone()),
        );
        Ok(Arc::new(
            Store::new(kind, Arc::new(cacher.clone()), keys)
                .with_media_type(self.media_type)
                .with_cacher(cacher),
        ))
    }
}

/// What serves one kind: the generic [`Store`] or a user's storage
/// ([`rest_storage::CustomStore`]). Handlers read and write through it; the reads with fast
/// paths over stored bytes (get, list, watch) branch on it.
#[derive(Clone, Debug)]
pub enum KindStorage {
    /// The generic store (the default).
    Store(Arc<Store>),
    /// A user's storage.
    Custom(Arc<rest_storage::CustomStore>),
}

impl KindStorage {
    /// The group and plural, for messages.
    pub fn resource(&self) -> &GroupResource {
        match self {
            Self::Store(s) => s.resource(),
            Self::Custom(c) => c.resource(),
        }
    }

    /// The storage version's facts.
    pub fn info(&self) -> &'static ResourceInfo {
        match self {
            Self::Store(s) => s.info(),
            Self::Custom(c) => c.info(),
        }
    }

    /// The store, when the kind is served from one.
    pub fn store(&self) -> Option<&Arc<Store>> {
        match self {
            Self::Store(s) => Some(s),
            Self::Custom(_) => None,
        }
    }

    /// Reads one object (`resource_version` as the client gave it; a user's storage serves
    /// its most recent state).
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Box<dyn Object>, ApiError> {
        match self {
            Self::Store(s) => s.get(namespace, name, resource_version).await,
            Self::Custom(c) => c.get(namespace, name).await,
        }
    }

    /// Creates an object ([`Store::create`]).
    pub async fn create(
        &self,
        object: Box<dyn Object>,
        admission: &dyn ValidateObject,
        dry_run: bool,
    ) -> Result<(Box<dyn Object>, Vec<String>), ApiError> {
        match self {
            Self::Store(s) => s.create(object, admission, dry_run).await,
            Self::Custom(c) => c.create(object, admission, dry_run).await,
        }
    }

    /// Updates an object ([`Store::update`]).
    pub async fn update(
        &self,
        namespace: &str,
        name: &str,
        info: &dyn UpdatedObjectInfo,
        create_admission: &dyn ValidateObject,
        update_admission: &dyn ValidateObject,
        opts: UpdateOptions<'_>,
    ) -> Result<Updated, ApiError> {
        match self {
            Self::Store(s) => {
                s.update(
                    namespace,
                    name,
                    info,
                    create_admission,
                    update_admission,
                    opts,
                )
                .await
            }
            Self::Custom(c) => {
                c.update(
                    namespace,
                    name,
                    info,
                    create_admission,
                    update_admission,
                    opts,
                )
                .await
            }
        }
    }

    /// Deletes an object ([`Store::delete`]).
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        admission: &dyn ValidateObject,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        match self {
            Self::Store(s) => s.delete(namespace, name, admission, opts).await,
            Self::Custom(c) => c.delete(namespace, name, admission, opts).await,
        }
    }
}

/// The server's kinds and the objects its watch caches hold, for strategy checks that read
/// other objects ([`apimachinery::admission::ObjectReader`]).
pub struct CachedObjects {
    registry: Arc<Registry>,
    scheme: Arc<apimachinery::Scheme>,
}

impl CachedObjects {
    /// Reads `registry`'s caches of `scheme`'s kinds.
    pub fn new(registry: Arc<Registry>, scheme: Arc<apimachinery::Scheme>) -> Self {
        Self { registry, scheme }
    }

    /// The store of `kind` in `group` when it has a watch cache to read (a kind in a user's
    /// storage has none).
    fn cached_store(&self, group: &str, kind: &str) -> Option<Arc<Store>> {
        let kind = self.scheme.by_kind(group, kind)?;
        if self.registry.custom_store(kind).is_some() {
            return None;
        }
        self.registry.store(kind).ok()
    }
}

impl apimachinery::admission::ObjectReader for CachedObjects {
    fn resolve(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<&'static apimachinery::resource::ResourceInfo> {
        self.scheme.by_kind(group, kind)?.info(version)
    }

    fn cached(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Box<dyn apimachinery::runtime::Object>> {
        let store = self.cached_store(group, kind)?;
        let stored = store
            .cacher()?
            .cached_object(&store.key(namespace, name).ok()?)?;
        store.decode(&stored).ok()
    }

    fn cached_resource_version(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<u64> {
        let store = self.cached_store(group, kind)?;
        let version = store
            .cacher()?
            .cached_resource_version(&store.key(namespace, name).ok()?)?;
        u64::try_from(version).ok()
    }

    fn cached_list(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
    ) -> Vec<Box<dyn apimachinery::runtime::Object>> {
        let Some(store) = self.cached_store(group, kind) else {
            return Vec::new();
        };
        let (Some(cacher), Ok(prefix)) = (store.cacher(), store.collection_key(namespace)) else {
            return Vec::new();
        };
        cacher
            .cached_objects(&storage::keys::collection_prefix(&prefix))
            .iter()
            .filter_map(|stored| store.decode(stored).ok())
            .collect()
    }
}
