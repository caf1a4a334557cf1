//! REST endpoints: the handlers for every installed group, version, resource and subresource.
//!
//! Interface with the generic server (which owns the filter chain, TLS, discovery, OpenAPI and
//! health): the server builds one [`ApiContext`] at start-up with [`ApiContext::new`], runs
//! [`ApiContext::bootstrap`] as a post-start hook, and hands every request whose `RequestInfo`
//! extension has `is_resource_request == true` to [`serve`]. Requests arrive authenticated and
//! authorized: the extensions `crate::request_info::RequestInfo`, `crate::authn::UserInfo` and
//! `crate::authz::AuthorizerRef` are present (missing ones are treated as anonymous / deny).
//! A resource the scheme does not serve answers 404 `Status` so the chain can fall through.

mod delete;
mod params;
mod read;
mod request;
mod response;
mod review;
mod scale;
mod watch;
mod write;

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apimachinery::{KindOps, Scheme};
use axum::body::Body;
use parking_lot::RwLock;
use serde_json::{Value, json};
use storage::cacher::{Cacher, CacherConfig};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};

use crate::patch::SchemaNode;
use crate::registry::ResourceStore;
use crate::registry::codec::StoredObjectCodec;
use crate::registry::encoding::StorageMediaType;
pub use request::RequestContext;

/// A kind at a version: (group, version, kind).
type KindVersion = (&'static str, &'static str, &'static str);

/// How often the watch cache's upstream watch receives progress notifications.
pub const UPSTREAM_PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Everything the REST handlers share: the scheme, the storage underneath and the per-resource
/// stores built on it (each a storage `Store` behind a watch cache).
pub struct ApiContext {
    /// Every kind served.
    pub scheme: Arc<Scheme>,
    /// The revisioned key-value store all resources live in.
    pub backend: Arc<dyn storage::backend::Backend>,
    /// The key prefix of every resource (`--etcd-prefix`, `/registry` by default).
    pub prefix: String,
    /// `--min-request-timeout`: watches last this long times a random factor in [1, 2) unless
    /// the client asks for `timeoutSeconds`.
    pub min_request_timeout: Duration,
    /// `--encryption-provider-config`: the transformer of each resource's stored values.
    encryption: Option<Arc<storage::transformer::EncryptionConfig>>,
    /// `--storage-media-type`: the form objects are written in.
    storage_media_type: StorageMediaType,
    /// Flips to true when the server shuts down: open watch streams then end cleanly.
    watches_end: tokio::sync::watch::Sender<bool>,
    /// The store of each (group, resource), keyed by the scheme's own names (a fast hash: the
    /// keys never come from requests).
    stores: RwLock<FxHashMap<(&'static str, &'static str), Arc<ResourceStore>>>,
    /// The schema of each (group, version, kind), built once and shared by every request.
    schemas: RwLock<FxHashMap<KindVersion, Arc<SchemaNode>>>,
    /// Namespaces whose deletion started lately; NamespaceLifecycle reads them from storage.
    pub(crate) recent_namespace_deletions: crate::registry::namespace::RecentNamespaceDeletions,
}

impl ApiContext {
    /// Builds the context from the scheme and the storage backend.
    pub fn new(
        scheme: Arc<Scheme>,
        backend: Arc<dyn storage::backend::Backend>,
        prefix: String,
    ) -> Self {
        Self {
            scheme,
            backend,
            prefix,
            min_request_timeout: Duration::from_secs(1800),
            encryption: None,
            storage_media_type: StorageMediaType::default(),
            watches_end: tokio::sync::watch::Sender::new(false),
            stores: RwLock::new(FxHashMap::default()),
            schemas: RwLock::new(FxHashMap::default()),
            recent_namespace_deletions: Default::default(),
        }
    }

    /// Ends every open watch stream (and every watch started later) cleanly; the generic
    /// server calls it when shutdown starts so long-running requests do not hold it up.
    pub fn end_watches(&self) {
        self.watches_end.send_replace(true);
    }

    /// A receiver that turns true when watches must end.
    pub fn watches_end_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.watches_end.subscribe()
    }

    /// Sets `--min-request-timeout`.
    pub fn with_min_request_timeout(mut self, timeout: Duration) -> Self {
        self.min_request_timeout = timeout;
        self
    }

    /// Encrypts stored values as `--encryption-provider-config` says (per group and resource).
    pub fn with_encryption(mut self, config: Arc<storage::transformer::EncryptionConfig>) -> Self {
        self.encryption = Some(config);
        self
    }

    /// Writes objects in `media_type` (`--storage-media-type`); both forms are always read.
    pub fn with_storage_media_type(mut self, media_type: StorageMediaType) -> Self {
        self.storage_media_type = media_type;
        self
    }

    /// The store of a kind (created, with its watch cache, on first use).
    pub fn store(&self, ops: &Arc<dyn KindOps>) -> Result<Arc<ResourceStore>, ApiError> {
        let info = ops.storage_version();
        let id = (info.group, info.plural);
        if let Some(s) = self.stores.read().get(&id) {
            return Ok(s.clone());
        }
        let mut stores = self.stores.write();
        if let Some(s) = stores.get(&id) {
            return Ok(s.clone());
        }
        let keys =
            ResourceKeys::new(&self.prefix, info.group, info.plural).map_err(ApiError::internal)?;
        let mut fields: Vec<String> = info.field_selectors.iter().map(|s| s.to_string()).collect();
        fields.sort();
        let codec = Arc::new(StoredObjectCodec::new(ops.clone(), fields));
        // The cache's upstream watch gets progress notifications often, so consistent reads from
        // the cache rarely wait for an idle resource to catch up.
        let mut store_config = StoreConfig::new(keys.resource_prefix(), codec.clone())
            .with_bookmark_interval(UPSTREAM_PROGRESS_INTERVAL);
        if let Some(encryption) = &self.encryption {
            store_config =
                store_config.with_transformer(encryption.transformer_for(info.group, info.plural));
        }
        let store = Store::new(self.backend.clone(), store_config);
        let cacher = Cacher::new(
            Arc::new(store),
            CacherConfig::new(keys.resource_prefix(), codec.clone()),
        );
        let rs = Arc::new(
            ResourceStore::new(ops.clone(), Arc::new(cacher.clone()), keys, codec)
                .with_media_type(self.storage_media_type)
                .with_cacher(cacher),
        );
        stores.insert(id, rs.clone());
        Ok(rs)
    }

    /// The schema of a kind at a version, from the scheme's OpenAPI v3 documents (built on first
    /// use, then shared).
    pub fn schema(
        &self,
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) -> Arc<SchemaNode> {
        let id = (group, version, kind);
        if let Some(s) = self.schemas.read().get(&id) {
            return s.clone();
        }
        let doc = self
            .scheme
            .openapi()
            .iter()
            .find(|d| d.group == group && d.version == version)
            .and_then(|d| serde_json::from_str::<Value>(d.v3).ok());
        let node = Arc::new(
            doc.map(|d| SchemaNode::for_kind(&d, group, version, kind))
                .unwrap_or_else(SchemaNode::untyped),
        );
        self.schemas.write().entry(id).or_insert(node).clone()
    }

    /// Creates the namespaces every cluster has (`default`, `kube-system`, `kube-public`) if they
    /// are missing. Idempotent; run as the `apiary-bootstrap-namespaces` post-start hook.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        let Some(ops) = self.scheme.by_resource("", "namespaces").cloned() else {
            return Ok(());
        };
        let store = self.store(&ops)?;
        let version = ops.storage_version().version;
        for name in ["default", "kube-system", "kube-public"] {
            if store.try_get("", name).await?.is_some() {
                continue;
            }
            let mut obj = json!({"apiVersion": ops.storage_version().api_version(), "kind": "Namespace", "metadata": {"name": name}});
            obj = ops.default(version, obj).map_err(ApiError::internal)?;
            crate::registry::meta::prepare_create(
                &mut obj,
                ops.storage_version().tracks_generation,
            );
            crate::registry::namespace::prepare_namespace_create(&mut obj);
            crate::apply::record_update(
                None,
                &mut obj,
                "apiary",
                &ops.storage_version().api_version(),
                "",
                true,
                &SchemaNode::untyped(),
            );
            match store.create("", obj, false, None).await {
                Ok(_) => {}
                Err(e) if e.code() == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Serves one resource request (the `RequestInfo` extension says which).
pub async fn serve(ctx: Arc<ApiContext>, req: http::Request<Body>) -> http::Response<Body> {
    let ops = req
        .extensions()
        .get::<crate::request_info::RequestInfo>()
        .and_then(|info| ctx.scheme.by_resource(&info.api_group, &info.resource))
        .cloned();
    match ops {
        Some(ops) => serve_kind(ctx, ops, req).await,
        None => response::error(&ApiError::not_found_path()),
    }
}

/// Serves one resource request of the kind `ops`, which the caller already looked up from the
/// request's group and resource.
pub async fn serve_kind(
    ctx: Arc<ApiContext>,
    ops: Arc<dyn KindOps>,
    req: http::Request<Body>,
) -> http::Response<Body> {
    match dispatch(ctx, ops, req).await {
        Ok(resp) => resp,
        Err(err) => response::error(&err),
    }
}

async fn dispatch(
    ctx: Arc<ApiContext>,
    ops: Arc<dyn KindOps>,
    req: http::Request<Body>,
) -> Result<http::Response<Body>, ApiError> {
    let rc = RequestContext::from_request(&ctx, ops, req).await?;
    let verb = rc.info.verb.clone();
    let sub = rc.info.subresource.clone();
    if rc.version_info.create_only {
        return match (verb.as_str(), sub.as_str()) {
            ("create", "") => review::create(&ctx, rc).await,
            _ => Err(ApiError::method_not_supported(&rc.store.resource, &verb)),
        };
    }
    match sub.as_str() {
        "" => {}
        "status" if rc.version_info.status_subresource => {
            return match verb.as_str() {
                "get" => read::get(&ctx, rc).await,
                "update" => write::update(&ctx, rc).await,
                "patch" => write::patch(&ctx, rc).await,
                _ => Err(ApiError::method_not_supported(&rc.store.resource, &verb)),
            };
        }
        "scale" if rc.version_info.scale.is_some() => {
            return match verb.as_str() {
                "get" => scale::get(&ctx, rc).await,
                "update" => scale::update(&ctx, rc).await,
                "patch" => scale::patch(&ctx, rc).await,
                _ => Err(ApiError::method_not_supported(&rc.store.resource, &verb)),
            };
        }
        _ => return Err(ApiError::not_found_path()),
    }
    if !rc.version_info.verbs.is_empty() && !rc.version_info.verbs.contains(&verb.as_str()) {
        return Err(ApiError::method_not_supported(&rc.store.resource, &verb));
    }
    match verb.as_str() {
        "get" => read::get(&ctx, rc).await,
        "list" => read::list(&ctx, rc).await,
        "watch" => watch::watch(&ctx, rc).await,
        "create" => write::create(&ctx, rc).await,
        "update" => write::update(&ctx, rc).await,
        "patch" => write::patch(&ctx, rc).await,
        "delete" => delete::delete(&ctx, rc).await,
        "deletecollection" => delete::delete_collection(&ctx, rc).await,
        _ => Err(ApiError::method_not_supported(&rc.store.resource, &verb)),
    }
}
