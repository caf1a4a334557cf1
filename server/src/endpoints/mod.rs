//! REST endpoints: the handlers for every installed group, version, resource and subresource.
//!
//! Interface with the generic server (which owns the filter chain, TLS, discovery, OpenAPI and
//! health): the server builds one [`ApiContext`] at start-up (with the admission plugins of the
//! installed API groups; their post-start hooks then bootstrap objects and start controllers
//! over it), and hands every request whose
//! `RequestInfo` extension has `is_resource_request == true` to [`serve`]. Requests arrive
//! authenticated and authorized: the extensions `crate::request_info::RequestInfo`,
//! `crate::authn::UserInfo` and `crate::authz::AuthorizerRef` are present (missing ones are
//! treated as anonymous / deny). A resource the scheme does not serve answers 404 `Status`.
//!
//! Every write handler reads the same way: negotiate and decode the body into the requested
//! version (`decode`), record managed fields, convert to the storage version, run mutating
//! admission, and hand the object to the kind's registry store, which applies the kind's
//! rules and strategy, runs validating admission and writes to storage; the stored object is
//! converted back and encoded as negotiated (`response`).

mod create;
mod decode;
mod delete;
mod get;
pub mod list_budget;
mod params;
mod patch;
pub(crate) mod response;
mod review;
mod scale;
mod scope;
mod subresource;
mod update;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::rbac::RuleResolver;
use apimachinery::runtime::Kind;
use apimachinery::status::ApiError;
use axum::body::Body;

use crate::admission::{AdmissionConfigError, AdmissionOptions, AdmissionOrder, Chain};
use crate::genericserver::groups::ApiGroups;
use crate::registry::encoding::StorageMediaType;
use crate::registry::{Registry, Store};
pub use scope::RequestScope;

pub use crate::registry::UPSTREAM_PROGRESS_INTERVAL;

/// Everything the REST handlers share: the scheme, the registry of stores and the admission
/// chain.
pub struct ApiContext {
    /// Every kind served.
    pub scheme: Arc<Scheme>,
    /// The store of every kind.
    pub registry: Arc<Registry>,
    /// The enabled admission plugins.
    pub admission: Arc<Chain>,
    /// `--min-request-timeout`: watches last this long times a random factor in [1, 2) unless
    /// the client asks for `timeoutSeconds`.
    pub min_request_timeout: Duration,
    /// The bearer-token authenticators and the service-account token issuer the review kinds
    /// and the `serviceaccounts/token` subresource use.
    pub tokens: TokenServices,
    /// Flips to true when the server shuts down: open watch streams then end cleanly.
    watches_end: tokio::sync::watch::Sender<bool>,
    /// The RBAC rules users hold, for the escalation checks of the RBAC kinds' strategies.
    rule_resolver: Option<Arc<dyn RuleResolver>>,
    /// The memory large list responses may hold at once.
    list_budget: Arc<list_budget::ListBudget>,
}

/// The token services handlers hand to strategies (`TokenReview`, `serviceaccounts/token`).
#[derive(Clone, Default)]
pub struct TokenServices {
    /// Authenticates bearer tokens for `TokenReview`.
    pub authenticator: Option<Arc<dyn apimachinery::authentication::TokenAuthenticator>>,
    /// Signs service-account tokens.
    pub issuer: Option<Arc<dyn apimachinery::authentication::TokenIssuer>>,
}

/// How an [`ApiContext`] is built.
pub struct ApiContextBuilder {
    scheme: Arc<Scheme>,
    backend: Arc<dyn storage::backend::Backend>,
    prefix: String,
    min_request_timeout: Duration,
    encryption: Option<Arc<storage::transformer::EncryptionConfig>>,
    media_type: StorageMediaType,
    admission: AdmissionOptions,
    plugins: Vec<apimachinery::admission::Plugin>,
    groups: Vec<Arc<dyn ApiGroups>>,
    rule_resolver: Option<Arc<dyn RuleResolver>>,
    tokens: TokenServices,
    list_memory: (u64, u64),
    rest_storage: Vec<(&'static Kind, crate::registry::rest_storage::RestStorage)>,
}

impl ApiContextBuilder {
    /// Serves `kind` from a user's storage instead of the generic store: its verbs are those
    /// `storage` implements (with the kind's own), every other verb is `405
    /// MethodNotAllowed`, and the kind gets no store or watch cache. Requests run as for any
    /// kind (negotiation, admission, the kind's strategy); see
    /// [`crate::registry::rest_storage`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use server::endpoints::ApiContext;
    /// use server::registry::rest_storage::{RestStorage, memory::InMemory};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let backend = Arc::new(storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap());
    /// let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
    /// let api = ApiContext::builder(Arc::new(kubernetes_api::scheme()), backend, "/registry".into())
    ///     .rest_storage(kind, RestStorage::read_only(Arc::new(InMemory::new(kind))))
    ///     .build()
    ///     .unwrap();
    /// assert!(api.registry.custom_store(kind).is_some());
    /// ```
    pub fn rest_storage(
        mut self,
        kind: &'static Kind,
        storage: crate::registry::rest_storage::RestStorage,
    ) -> Self {
        self.rest_storage.push((kind, storage));
        self
    }

    /// Sets the token authenticator and issuer strategies may use.
    pub fn tokens(mut self, tokens: TokenServices) -> Self {
        self.tokens = tokens;
        self
    }

    /// Adds the admission plugins and their order, and the rule resolver, of a bundle of API
    /// groups (see [`ApiGroups`]); bundles are consulted in the order they are added.
    pub fn groups(mut self, groups: Arc<dyn ApiGroups>) -> Self {
        self.groups.push(groups);
        self
    }

    /// Adds an admission plugin beyond those of the groups and those the definitions ship (an
    /// embedder's own, or a test's); unless the groups' order names it, it runs, when enabled,
    /// after those the definitions ship.
    pub fn plugin(mut self, plugin: apimachinery::admission::Plugin) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// The RBAC rules users hold, which escalation checks compare a write against (wins over
    /// the groups' resolver).
    pub fn rule_resolver(mut self, resolver: Arc<dyn RuleResolver>) -> Self {
        self.rule_resolver = Some(resolver);
        self
    }

    /// Sets the bytes large list responses may hold at once, per user and in all.
    pub fn list_memory(mut self, per_user: u64, total: u64) -> Self {
        self.list_memory = (per_user, total);
        self
    }

    /// Sets `--min-request-timeout`.
    pub fn min_request_timeout(mut self, timeout: Duration) -> Self {
        self.min_request_timeout = timeout;
        self
    }

    /// Encrypts stored values as `--encryption-provider-config` says.
    pub fn encryption(mut self, config: Arc<storage::transformer::EncryptionConfig>) -> Self {
        self.encryption = Some(config);
        self
    }

    /// Writes objects in `media_type` (`--storage-media-type`); both forms are always read.
    pub fn storage_media_type(mut self, media_type: StorageMediaType) -> Self {
        self.media_type = media_type;
        self
    }

    /// `--enable-admission-plugins` / `--disable-admission-plugins`.
    pub fn admission(mut self, options: AdmissionOptions) -> Self {
        self.admission = options;
        self
    }

    /// The context; fails when the admission flags name unknown plugins.
    pub fn build(self) -> Result<ApiContext, AdmissionConfigError> {
        let mut registry =
            Registry::new(self.backend, self.prefix).with_media_type(self.media_type);
        if let Some(encryption) = self.encryption {
            registry = registry.with_encryption(encryption);
        }
        for (kind, storage) in self.rest_storage {
            registry = registry.with_rest_storage(kind, storage);
        }
        let registry = Arc::new(registry);
        let mut order = AdmissionOrder::default();
        let mut plugins = Vec::new();
        for groups in &self.groups {
            order.extend(groups.admission_order());
            plugins.extend(groups.admission_plugins(&registry, &self.scheme));
        }
        plugins.extend(self.scheme.admission_plugins().iter().cloned());
        plugins.extend(self.plugins);
        let objects = crate::registry::CachedObjects::new(registry.clone(), self.scheme.clone());
        let admission = Arc::new(
            Chain::build(plugins, &self.admission, &order)?.with_objects(Arc::new(objects)),
        );
        let rule_resolver = self
            .rule_resolver
            .or_else(|| self.groups.iter().find_map(|g| g.rule_resolver()));
        Ok(ApiContext {
            scheme: self.scheme,
            registry,
            admission,
            min_request_timeout: self.min_request_timeout,
            tokens: self.tokens,
            watches_end: tokio::sync::watch::Sender::new(false),
            rule_resolver,
            list_budget: Arc::new(list_budget::ListBudget::new(
                self.list_memory.0,
                self.list_memory.1,
            )),
        })
    }
}

impl ApiContext {
    /// A builder over the scheme and the storage backend (keys under `prefix`).
    pub fn builder(
        scheme: Arc<Scheme>,
        backend: Arc<dyn storage::backend::Backend>,
        prefix: String,
    ) -> ApiContextBuilder {
        ApiContextBuilder {
            scheme,
            backend,
            prefix,
            min_request_timeout: Duration::from_secs(1800),
            encryption: None,
            media_type: StorageMediaType::default(),
            admission: AdmissionOptions::default(),
            plugins: Vec::new(),
            groups: Vec::new(),
            rule_resolver: None,
            tokens: TokenServices::default(),
            list_memory: (list_budget::PER_USER_BYTES, list_budget::TOTAL_BYTES),
            rest_storage: Vec::new(),
        }
    }

    /// The context with every default (no groups' admission plugins: those the definitions
    /// ship only).
    pub fn new(
        scheme: Arc<Scheme>,
        backend: Arc<dyn storage::backend::Backend>,
        prefix: String,
    ) -> Self {
        Self::builder(scheme, backend, prefix)
            .build()
            .expect("the default admission plugins are known")
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

    /// The RBAC rules users hold, if the server resolves them.
    pub fn rule_resolver(&self) -> Option<&dyn RuleResolver> {
        self.rule_resolver.as_deref()
    }

    /// The store of a kind (created, with its watch cache, on first use).
    pub fn store(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        self.registry.store(kind)
    }

    /// Creates the store and watch cache of every stored kind of the scheme that `served`
    /// accepts (and that no user's storage serves), as kube-apiserver starts every resource's
    /// cacher at boot: each cache starts its initial list in the background at once, so a
    /// watch from the resourceVersion of any list served later finds the cache's history
    /// reaching back to it (a cache started by the first request would begin after such a
    /// list, and answer the watch with 410 Gone). Returns the
    /// stores, whose caches [`Self::wait_for_caches`] waits for.
    pub fn start_stores(
        &self,
        served: impl Fn(&'static Kind) -> bool,
    ) -> Result<Vec<Arc<Store>>, ApiError> {
        self.scheme
            .kinds()
            .iter()
            .filter(|kind| {
                !kind.storage_info().create_only
                    && self.registry.custom_store(kind).is_none()
                    && served(kind)
            })
            .map(|kind| self.registry.store(kind))
            .collect()
    }

    /// Waits until the watch cache of every store in `stores` has loaded its initial list;
    /// fails naming the first still loading after `timeout`.
    pub async fn wait_for_caches(stores: &[Arc<Store>], timeout: Duration) -> Result<(), String> {
        let waits = stores.iter().filter_map(|store| {
            let cacher = store.cacher()?;
            Some(async move { (store, cacher.wait_ready(timeout).await) })
        });
        for (store, ready) in futures::future::join_all(waits).await {
            if !ready {
                return Err(format!(
                    "the watch cache of {} did not load within {timeout:?}",
                    store.resource()
                ));
            }
        }
        Ok(())
    }
}

/// Serves one resource request (the `RequestInfo` extension says which).
pub async fn serve(ctx: Arc<ApiContext>, req: http::Request<Body>) -> http::Response<Body> {
    let kind = req
        .extensions()
        .get::<crate::request_info::RequestInfo>()
        .and_then(|info| ctx.scheme.by_resource(&info.api_group, &info.resource));
    match kind {
        Some(kind) => serve_kind(ctx, kind, req).await,
        None => response::error(&ApiError::not_found_path()),
    }
}

/// Serves one resource request of `kind`, which the caller already looked up from the
/// request's group and resource.
pub async fn serve_kind(
    ctx: Arc<ApiContext>,
    kind: &'static Kind,
    req: http::Request<Body>,
) -> http::Response<Body> {
    match dispatch(&ctx, kind, req).await {
        Ok(resp) => resp,
        Err(err) => response::error(&err),
    }
}

/// Whether a resource path has a route for `method`, as kube-apiserver registers them: a
/// `POST` creates in a collection (or calls a subresource), never at an object's path, and a
/// `/watch/` path is only read. Both are authorized first (as `create` of the named object and
/// `watch`), then answered 405 by the router.
fn routed(method: &http::Method, info: &crate::request_info::RequestInfo) -> bool {
    match info.verb.as_str() {
        "create" => !info.subresource.is_empty() || info.name.is_empty(),
        // A collection takes no PUT or PATCH.
        "update" | "patch" => !info.name.is_empty(),
        "watch" => method == http::Method::GET,
        _ => true,
    }
}

async fn dispatch(
    ctx: &ApiContext,
    kind: &'static Kind,
    req: http::Request<Body>,
) -> Result<http::Response<Body>, ApiError> {
    if let Some(info) = req.extensions().get::<crate::request_info::RequestInfo>()
        && !routed(req.method(), info)
    {
        return Err(ApiError::method_not_allowed());
    }
    let scope = RequestScope::from_request(ctx, kind, req).await?;
    let verb = scope.info.verb.clone();
    let version = scope.version;
    let unsupported = || ApiError::method_not_supported(scope.storage.resource(), &verb);
    // A user's storage serves the verbs it implements; kube-apiserver installs no route for
    // the others, so they are 405 from its router. A declared subresource of the kind needs
    // the object read (and, for an update subresource, written).
    if let crate::registry::KindStorage::Custom(custom) = &scope.storage {
        let needed = match scope.subresource() {
            "" | "status" | "scale" => verb.as_str(),
            _ if verb == "update" => "update",
            _ => "get",
        };
        if !custom.serves(needed) {
            return Err(ApiError::method_not_allowed());
        }
    }
    if version.create_only {
        return match (verb.as_str(), scope.subresource()) {
            ("create", "") => review::create(ctx, scope).await,
            _ => Err(unsupported()),
        };
    }
    match scope.subresource() {
        "" => {}
        "status" if version.status_subresource => {
            return match verb.as_str() {
                "get" => get::get(ctx, scope).await,
                "update" => update::update(ctx, scope).await,
                "patch" => patch::patch(ctx, scope).await,
                _ => Err(unsupported()),
            };
        }
        "scale" if version.scale.is_some() => {
            return match verb.as_str() {
                "get" => scale::get(ctx, scope).await,
                "update" => scale::update(ctx, scope).await,
                "patch" => scale::patch(ctx, scope).await,
                _ => Err(unsupported()),
            };
        }
        sub => {
            let Some(declared) = version.subresources.iter().find(|s| s.name == sub) else {
                return Err(ApiError::not_found_path());
            };
            if !declared.verbs.contains(&verb.as_str()) {
                return Err(unsupported());
            }
            // An update subresource writes the object itself (its strategy sees the name).
            if verb == "update" {
                return update::update(ctx, scope).await;
            }
            return subresource::create(ctx, scope, declared).await;
        }
    }
    if !version.verbs.is_empty() && !version.verbs.contains(&verb.as_str()) {
        return Err(unsupported());
    }
    match verb.as_str() {
        "get" => get::get(ctx, scope).await,
        "list" => get::list(ctx, scope).await,
        "watch" => watch::watch(ctx, scope).await,
        "create" => create::create(ctx, scope).await,
        "update" => update::update(ctx, scope).await,
        "patch" => patch::patch(ctx, scope).await,
        "delete" => delete::delete(ctx, scope).await,
        "deletecollection" => delete::delete_collection(ctx, scope).await,
        _ => Err(unsupported()),
    }
}
