//! The generic API server, shaped like Kubernetes' `genericapiserver`: [`Config`] →
//! [`CompletedConfig`] → [`GenericServer`] (add hooks, checks, delegates) → [`PreparedServer`]
//! (listener bound) → [`PreparedServer::run`] (serves until a stop signal, then shuts down
//! gracefully: `/readyz` fails, `--shutdown-delay-duration` passes, the listener closes, watches
//! end, in-flight requests finish).

pub mod aggregated;
pub mod director;
pub mod discovery;
pub mod duration;
pub mod gnostic;
pub mod groups;
pub mod health;
pub mod hooks;
pub mod lifecycle;
pub mod metrics;
pub mod mux_complete;
pub mod open_files;
pub mod openapi;
pub mod options;
pub mod remote_documents;
pub mod remote_resources;
mod run;
pub mod runtime_config;
pub mod serve;
pub mod service_network;
pub mod tls;
pub mod version;

pub use run::{App, PreparedServer, shutdown_signal};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;

use self::director::{Delegate, Director, DirectorService, HealthChecks};
use self::groups::ApiGroups;
use self::health::HealthCheck;
use self::hooks::{HookFn, PostStartHook, PreShutdownHook};
use self::lifecycle::LifecycleSignals;
use self::metrics::Metrics;
use self::options::DEFAULT_MAX_REQUEST_BODY_BYTES;
use self::runtime_config::RuntimeConfig;
use self::version::VersionInfo;
use crate::authn::config::AuthenticationConfig;
use crate::authn::requestheader::RequestHeaderAuthenticator;
use crate::authn::serviceaccount::{ServiceAccountStore, ServiceAccountTokens, oidc};
use crate::authn::x509::X509Authenticator;
use crate::authn::{Authenticator, BearerTokenAuthenticator, TokenUnion, UnionAuthenticator};
use crate::authz::{AuthorizationModeError, Authorizer};
use crate::endpoints::ApiContext;
use crate::filters::{self, ChainConfig};
use apimachinery::authentication::TokenAuthenticator;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// TLS material could not be loaded.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The audit log could not be opened.
    #[error("opening the audit log {path}: {source}")]
    AuditLog {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `--authorization-mode` names a mode no installed group provides (or none, or one twice).
    #[error(transparent)]
    AuthorizationMode(#[from] AuthorizationModeError),
    /// The admission flags name plugins no installed group provides.
    #[error(transparent)]
    Admission(#[from] crate::admission::AdmissionConfigError),
    /// The listener could not be bound.
    #[error("listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// The server's configuration, as assembled by the binary.
pub struct Config {
    /// Every kind served (usually [`groups::scheme_of`] the [`groups`](Self::groups)).
    pub scheme: Arc<Scheme>,
    /// The bundles of API groups installed, in order: their admission plugins, authorization
    /// modes, authenticators, rule resolver, hooks and checks (see [`ApiGroups`]).
    pub groups: Vec<Arc<dyn ApiGroups>>,
    /// The storage backend.
    pub backend: Arc<dyn storage::backend::Backend>,
    /// The key prefix (`--etcd-prefix`).
    pub storage_prefix: String,
    /// `--etcd-compaction-interval`: how often the storage compactor runs (zero: never).
    pub compaction_interval: Duration,
    /// Listen address.
    pub bind: SocketAddr,
    /// TLS material and settings.
    pub tls: tls::TlsOptions,
    /// Connection limits and timeouts of the secure port.
    pub serving: serve::ServingOptions,
    /// `/version`.
    pub version: VersionInfo,
    /// Whether anonymous requests are allowed through authentication.
    pub anonymous_auth: bool,
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--min-request-timeout`.
    pub min_request_timeout: Duration,
    /// `--shutdown-delay-duration`.
    pub shutdown_delay: Duration,
    /// `--runtime-config`.
    pub runtime_config: RuntimeConfig,
    /// `--encryption-provider-config`, parsed.
    pub encryption: Option<Arc<storage::transformer::EncryptionConfig>>,
    /// `--storage-media-type`: the form objects are written in.
    pub storage_media_type: crate::registry::encoding::StorageMediaType,
    /// `--enable-admission-plugins` and `--disable-admission-plugins`.
    pub admission: crate::admission::AdmissionOptions,
    /// Admission plugins of the embedder's own, beyond those the groups bring and those the
    /// definitions ship (see [`ApiContextBuilder::plugin`](crate::endpoints::ApiContextBuilder::plugin)).
    pub admission_plugins: Vec<apimachinery::admission::Plugin>,
    /// `--max-requests-inflight` (0: unlimited).
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight` (0: unlimited).
    pub max_mutating_requests_inflight: usize,
    /// The bytes large list responses may hold at once, per user and in all (see
    /// [`crate::endpoints::list_budget`]).
    pub list_memory: (u64, u64),
    /// The token file and service-account tokens (`AuthenticationConfig::default()`: neither).
    pub authentication: AuthenticationConfig,
    /// Extra authenticators, tried after x509 and bearer tokens.
    pub authenticators: Vec<Box<dyn Authenticator>>,
    /// Request-header authentication (the front proxy's identity headers), tried first;
    /// `None`: off.
    pub request_header: Option<Arc<RequestHeaderAuthenticator>>,
    /// A token authenticator tried after the token file and service-account tokens (the
    /// `TokenReview`s of a delegating server).
    pub delegated_tokens: Option<Arc<dyn TokenAuthenticator>>,
    /// Delegated authorization: when set, requests are authorized by `system:masters` then
    /// these (the always-allowed paths and the `SubjectAccessReview` authorizer), and
    /// [`authorization_modes`](Self::authorization_modes) is not used.
    pub delegated_authorization: Option<Vec<Arc<dyn Authorizer>>>,
    /// The delegated authorizer among [`delegated_authorization`](Self::delegated_authorization),
    /// whose cache the filter chain fills without blocking.
    pub delegated_authorizer: Option<Arc<crate::delegation::authorizer::DelegatedAuthorizer>>,
    /// Authorizers tried after `system:masters` and before the `--authorization-mode` ones.
    pub authorizers: Vec<Arc<dyn Authorizer>>,
    /// `--audit-policy-file` and `--audit-log-*`: `None` records nothing.
    pub audit: Option<crate::audit::AuditOptions>,
    /// `--authorization-mode`, in order: names of the generic server's modes
    /// ([`AuthorizationModes::builtin`](crate::authz::AuthorizationModes::builtin)) or of those the [`groups`](Self::groups) add.
    pub authorization_modes: Vec<String>,
    /// The kinds served from a user's storage instead of the generic store
    /// ([`crate::registry::rest_storage`]); empty for none.
    pub rest_storage: Vec<(
        &'static apimachinery::runtime::Kind,
        crate::registry::rest_storage::RestStorage,
    )>,
    /// The front proxy's credentials (request-header authentication's default CA, the
    /// aggregator's client certificate), when the server has them.
    pub front_proxy: Option<crate::pki::FrontProxy>,
    /// The Service network (`--service-cluster-ip-range`, `--service-node-port-range`,
    /// `--advertise-address`, `--enable-aggregator-routing`), for the bundle that serves
    /// Services.
    pub service_network: service_network::ServiceNetwork,
}

/// A configuration with every default filled in.
pub struct CompletedConfig {
    config: Config,
    authenticator: Arc<UnionAuthenticator>,
    authorizer: Arc<dyn Authorizer>,
    tokens: Arc<TokenUnion>,
    service_accounts: Option<Arc<ServiceAccountTokens>>,
    service_account_store: ServiceAccountStore,
}

impl Config {
    /// A configuration serving `groups` from `backend` on `bind` with `tls`, everything else at
    /// kube-apiserver's flag defaults: key prefix `/registry`, compaction every five minutes,
    /// 60 s request timeout, 1800 s minimum watch timeout, no shutdown delay, 400 and 200
    /// requests in flight, protobuf in storage, anonymous requests authenticated (as
    /// `system:anonymous`), no audit, no encryption at rest. Authorization starts closed:
    /// only `system:masters` is allowed until [`authorization_modes`](Self::authorization_modes)
    /// names modes (`AlwaysDeny` is the one set).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use server::genericserver::Config;
    /// use server::genericserver::tls::TlsOptions;
    ///
    /// fn config(backend: Arc<dyn storage::backend::Backend>, pki: &std::path::Path) -> Config {
    ///     let tls = TlsOptions::new(pki.join("apiserver.crt"), pki.join("apiserver.key"), pki.join("ca.crt"));
    ///     let groups: Vec<Arc<dyn server::ApiGroups>> = Vec::new();
    ///     Config {
    ///         authorization_modes: vec!["AlwaysAllow".into()],
    ///         ..Config::new(groups, backend, "127.0.0.1:6443".parse().unwrap(), tls)
    ///     }
    /// }
    /// ```
    pub fn new(
        groups: Vec<Arc<dyn ApiGroups>>,
        backend: Arc<dyn storage::backend::Backend>,
        bind: SocketAddr,
        tls: tls::TlsOptions,
    ) -> Config {
        Config {
            scheme: Arc::new(groups::scheme_of(&groups)),
            groups,
            backend,
            storage_prefix: "/registry".to_string(),
            compaction_interval: storage::compactor::DEFAULT_COMPACTION_INTERVAL,
            bind,
            tls,
            serving: serve::ServingOptions::default(),
            version: VersionInfo::fallback(),
            anonymous_auth: true,
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            shutdown_delay: Duration::ZERO,
            runtime_config: RuntimeConfig::default(),
            encryption: None,
            storage_media_type: Default::default(),
            admission: Default::default(),
            admission_plugins: Vec::new(),
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            list_memory: (
                crate::endpoints::list_budget::PER_USER_BYTES,
                crate::endpoints::list_budget::TOTAL_BYTES,
            ),
            authentication: AuthenticationConfig::default(),
            front_proxy: None,
            authenticators: Vec::new(),
            request_header: None,
            delegated_tokens: None,
            delegated_authorization: None,
            delegated_authorizer: None,
            authorizers: Vec::new(),
            audit: None,
            authorization_modes: vec!["AlwaysDeny".to_string()],
            rest_storage: Vec::new(),
            service_network: service_network::ServiceNetwork::default(),
        }
    }

    /// Fills in defaults: the authenticator union (request headers, x509, bearer tokens of the
    /// token file, service accounts and delegated token reviews, then the extra ones, then the groups' ones, then anonymous) and the
    /// authorizer union (`system:masters`, the extra ones, then the delegated ones or else the
    /// `--authorization-mode` ones in order, looked up among the generic server's modes and those the groups add). Fails
    /// when `--authorization-mode` names an unknown mode, none, or one twice.
    pub fn complete(mut self) -> Result<CompletedConfig, ServerError> {
        let service_account_store = ServiceAccountStore::default();
        let service_accounts = self.authentication.service_accounts.take().map(|c| {
            Arc::new(ServiceAccountTokens::new(
                c,
                Arc::clone(&service_account_store),
            ))
        });
        let mut token_authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
        if let Some(file) = &self.authentication.token_file {
            token_authenticators.push(Arc::clone(file) as Arc<dyn TokenAuthenticator>);
        }
        if let Some(sa) = &service_accounts {
            token_authenticators.push(Arc::clone(sa) as Arc<dyn TokenAuthenticator>);
        }
        if let Some(delegated) = &self.delegated_tokens {
            token_authenticators.push(Arc::clone(delegated));
        }
        let tokens = Arc::new(TokenUnion::new(token_authenticators));
        let mut authenticators: Vec<Box<dyn Authenticator>> = Vec::new();
        if let Some(request_header) = &self.request_header {
            authenticators.push(Box::new(Arc::clone(request_header)));
        }
        authenticators.push(Box::new(X509Authenticator::default()));
        if !tokens.is_empty() {
            authenticators.push(Box::new(BearerTokenAuthenticator::new(Arc::clone(&tokens))));
        }
        authenticators.append(&mut self.authenticators);
        for group in &self.groups {
            authenticators.extend(group.authenticators());
        }
        let modes = groups::authorization_modes_of(&self.groups);
        let authenticator = Arc::new(UnionAuthenticator::new(authenticators, self.anonymous_auth));
        let chosen = match self.delegated_authorization.take() {
            Some(delegated) => delegated,
            None => modes
                .parse(&self.authorization_modes)
                .map_err(|mut errors| errors.swap_remove(0))?,
        };
        let mut union = crate::authz::build(chosen);
        let extra = std::mem::take(&mut self.authorizers);
        union.0.splice(1..1, extra);
        let authorizer: Arc<dyn Authorizer> = Arc::new(union);
        Ok(CompletedConfig {
            config: self,
            authenticator,
            authorizer,
            tokens,
            service_accounts,
            service_account_store,
        })
    }
}

/// How long the `apiary-watch-caches` post-start hook waits for the watch caches' initial lists
/// before it fails (and is retried).
const WATCH_CACHE_LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// A server that can still be extended with hooks, checks and delegates.
pub struct GenericServer {
    config: CompletedConfig,
    api: Arc<ApiContext>,
    signals: LifecycleSignals,
    post_start: Vec<PostStartHook>,
    pre_shutdown: Vec<PreShutdownHook>,
    checks: Vec<HealthCheck>,
    delegates: Vec<Arc<dyn Delegate>>,
    front_delegates: Vec<Arc<dyn Delegate>>,
    kind_sources: Vec<Arc<dyn discovery::KindSource>>,
    directory: Option<Arc<dyn discovery::ApiGroupDirectory>>,
    mux_signals: mux_complete::MuxCompleteSignals,
    openapi_sources: Vec<Arc<dyn openapi::OpenApiSource>>,
    remote_openapi_sources: Vec<Arc<dyn openapi::RemoteOpenApiSource>>,
    metrics: Vec<metrics::MetricsFn>,
    serving_address: service_network::ServingAddress,
}

impl CompletedConfig {
    /// Creates the server with its own hook (the watch caches) and checks (ping, log, etcd),
    /// then lets every installed group [install](ApiGroups::install) its hooks and checks.
    /// Fails when the admission flags name unknown plugins.
    pub fn new_server(self) -> Result<GenericServer, ServerError> {
        let c = &self.config;
        let mut api = ApiContext::builder(
            Arc::clone(&c.scheme),
            Arc::clone(&c.backend),
            c.storage_prefix.clone(),
        )
        .min_request_timeout(c.min_request_timeout)
        .list_memory(c.list_memory.0, c.list_memory.1)
        .storage_media_type(c.storage_media_type)
        .admission(c.admission.clone())
        .tokens(crate::endpoints::TokenServices {
            authenticator: Some(Arc::clone(&self.tokens) as Arc<dyn TokenAuthenticator>),
            issuer: self
                .service_accounts
                .as_ref()
                .map(|sa| Arc::clone(sa) as Arc<dyn apimachinery::authentication::TokenIssuer>),
        });
        for groups in &c.groups {
            api = api.groups(Arc::clone(groups));
        }
        for plugin in &c.admission_plugins {
            api = api.plugin(plugin.clone());
        }
        if let Some(encryption) = &c.encryption {
            api = api.encryption(Arc::clone(encryption));
        }
        for (kind, storage) in &c.rest_storage {
            api = api.rest_storage(kind, storage.clone());
        }
        let api = Arc::new(api.build()?);
        let backend = Arc::clone(&c.backend);
        let etcd = HealthCheck::new("etcd", move || {
            let backend = Arc::clone(&backend);
            async move {
                match tokio::time::timeout(Duration::from_secs(2), backend.current_revision()).await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("storage did not answer within 2s".to_string()),
                }
            }
        });
        let mut server = GenericServer {
            api: Arc::clone(&api),
            config: self,
            signals: LifecycleSignals::default(),
            post_start: Vec::new(),
            pre_shutdown: Vec::new(),
            checks: vec![HealthCheck::ping(), HealthCheck::log(), etcd],
            delegates: Vec::new(),
            front_delegates: Vec::new(),
            kind_sources: Vec::new(),
            directory: None,
            mux_signals: mux_complete::MuxCompleteSignals::default(),
            openapi_sources: Vec::new(),
            remote_openapi_sources: Vec::new(),
            metrics: Vec::new(),
            serving_address: service_network::ServingAddress::default(),
        };
        // Every served kind's store and watch cache starts now; readiness waits for the caches.
        let runtime = &server.config.config.runtime_config;
        // (A kind whose keys cannot be built fails the hook, so the server never turns ready.)
        let stores = api
            .start_stores(|kind| kind.versions().any(|r| runtime.enabled(r.group, r.version)))
            .map_err(|e| e.to_string());
        server.add_post_start_hook(
            "apiary-watch-caches",
            Arc::new(move || {
                let stores = stores.clone();
                Box::pin(async move {
                    crate::endpoints::ApiContext::wait_for_caches(
                        &stores?,
                        WATCH_CACHE_LOAD_TIMEOUT,
                    )
                    .await
                })
            }),
        );
        let groups = server.config.config.groups.clone();
        for group in &groups {
            group.install(&mut server);
        }
        Ok(server)
    }
}

impl GenericServer {
    /// The lifecycle signals.
    pub fn signals(&self) -> &LifecycleSignals {
        &self.signals
    }

    /// The REST handlers' context.
    pub fn api(&self) -> &Arc<ApiContext> {
        &self.api
    }

    /// The front proxy's credentials ([`Config::front_proxy`]): the aggregator presents the
    /// client certificate to aggregated API servers.
    pub fn front_proxy(&self) -> Option<&crate::pki::FrontProxy> {
        self.config.config.front_proxy.as_ref()
    }

    /// Where the server's client CA and request-header settings come from: what the
    /// `kube-system/extension-apiserver-authentication` ConfigMap publishes.
    pub fn authentication_info(&self) -> crate::delegation::authinfo::AuthenticationInfoSource {
        crate::delegation::authinfo::AuthenticationInfoSource {
            client_ca_file: self.config.config.tls.client_ca.clone(),
            request_header: self.config.config.request_header.clone(),
        }
    }

    /// The Service network the configuration names (see [`Config::service_network`]).
    pub fn service_network(&self) -> &service_network::ServiceNetwork {
        &self.config.config.service_network
    }

    /// The configured listen address (`--bind-address`, `--secure-port`; the port may be 0).
    pub fn bind_address(&self) -> SocketAddr {
        self.config.config.bind
    }

    /// The address the server listens on, filled in once its listener is bound (before the
    /// post-start hooks run).
    pub fn serving_address(&self) -> service_network::ServingAddress {
        self.serving_address.clone()
    }

    /// Adds a post-start hook; it gets a `poststarthook/<name>` check on livez and readyz.
    pub fn add_post_start_hook(&mut self, name: &str, run: HookFn) {
        self.post_start.push(PostStartHook::new(name, run));
    }

    /// Adds a pre-shutdown hook, run after the shutdown delay and before the listener closes.
    pub fn add_pre_shutdown_hook(&mut self, name: &str, run: HookFn) {
        self.pre_shutdown.push(PreShutdownHook {
            name: name.to_string(),
            run,
        });
    }

    /// Adds a health check to healthz, livez and readyz.
    pub fn add_health_check(&mut self, check: HealthCheck) {
        self.checks.push(check);
    }

    /// Registers metrics of the installed groups with the `/metrics` registry when the server
    /// is prepared (after the request and audit metrics).
    ///
    /// ```
    /// # fn example(server: &mut server::genericserver::GenericServer) {
    /// use prometheus_client::metrics::counter::Counter;
    ///
    /// let reconciled = Counter::<u64>::default();
    /// server.add_metrics(move |registry| {
    ///     registry.register("my_reconciles", "Reconciles done", reconciled.clone());
    /// });
    /// # }
    /// ```
    pub fn add_metrics(
        &mut self,
        register: impl Fn(&mut prometheus_client::registry::Registry) + Send + Sync + 'static,
    ) {
        self.metrics.push(Arc::new(register));
    }

    /// The ServiceAccounts and Secrets that service-account tokens are checked against: the
    /// group that serves those kinds sets their stores when it installs itself.
    pub fn service_account_lookup(&self) -> &ServiceAccountStore {
        &self.config.service_account_store
    }

    /// Appends a server to the delegation chain.
    pub fn add_delegate(&mut self, delegate: Arc<dyn Delegate>) {
        self.delegates.push(delegate);
    }

    /// Puts a handler in front of this server's own: every request that passed the filter
    /// chain (authenticated, authorized, with its [`RequestInfo`](crate::request_info::RequestInfo)
    /// and user in its extensions) is offered to the front delegates first, in the order they
    /// were added, and reaches the REST handlers, the non-API paths and the delegation chain
    /// only when each handed it back. This is where the aggregator proxies the group/versions
    /// served elsewhere, even those this server also serves; a front delegate must hand back
    /// quickly what it does not serve, as it sees every request.
    pub fn add_front_delegate(&mut self, delegate: Arc<dyn Delegate>) {
        self.front_delegates.push(delegate);
    }

    /// The group/versions this server serves (`--runtime-config`).
    pub fn runtime_config(&self) -> &RuntimeConfig {
        &self.config.config.runtime_config
    }

    /// Lists the kinds `source` defines at run time in discovery, beside the scheme's (its
    /// requests reach it as a delegate, [`GenericServer::add_delegate`]).
    pub fn add_kind_source(&mut self, source: Arc<dyn discovery::KindSource>) {
        self.kind_sources.push(source);
    }

    /// Orders discovery by the priorities `directory` gives every group version and lists the
    /// group versions it says other servers serve (an aggregator's APIServices; see
    /// [`discovery::directory`] for the order and [`aggregated::AggregatedApis`] for a
    /// directory to fill). A second call replaces the first.
    ///
    /// ```
    /// # fn example(server: &mut server::genericserver::GenericServer) {
    /// use std::sync::Arc;
    /// use server::genericserver::aggregated::AggregatedApis;
    ///
    /// let apis = Arc::new(AggregatedApis::default());
    /// server.set_api_group_directory(apis.clone());
    /// server.add_remote_openapi_source(apis.clone());
    /// # }
    /// ```
    pub fn set_api_group_directory(&mut self, directory: Arc<dyn discovery::ApiGroupDirectory>) {
        self.directory = Some(directory);
    }

    /// Registers a signal that this server's paths are installed: until every registered
    /// signal is complete, a request no server handles is answered 503 (`Retry-After: 5`)
    /// instead of 404 (see [`mux_complete`]).
    pub fn add_mux_complete_signal(&mut self, name: &str) -> mux_complete::MuxCompleteSignal {
        self.mux_signals.register(name)
    }

    /// Serves the OpenAPI documents of kinds `source` defines at run time beside the scheme's.
    pub fn add_openapi_source(&mut self, source: Arc<dyn openapi::OpenApiSource>) {
        self.openapi_sources.push(source);
    }

    /// Merges the OpenAPI documents of the group versions `source` says other servers serve
    /// into `/openapi/v2` and lists them in `/openapi/v3`, as kube-aggregator does (see
    /// [`openapi::remote`]; [`aggregated::AggregatedApis`] is such a source).
    pub fn add_remote_openapi_source(&mut self, source: Arc<dyn openapi::RemoteOpenApiSource>) {
        self.remote_openapi_sources.push(source);
    }

    /// Builds the handler (director + filter chain) and binds the listener.
    pub async fn prepare_run(self) -> Result<PreparedServer, ServerError> {
        let c = &self.config.config;
        let tls_config = tls::TlsReloader::new(&c.tls)?;
        let listener = tokio::net::TcpListener::bind(c.bind)
            .await
            .map_err(|source| ServerError::Bind {
                addr: c.bind,
                source,
            })?;
        let local = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: c.bind,
            source,
        })?;
        self.serving_address.set(local);

        let mut known = Vec::new();
        for kind in c.scheme.kinds() {
            for r in kind.versions() {
                known.push((
                    r.group.to_string(),
                    r.version.to_string(),
                    r.plural.to_string(),
                ));
            }
        }
        let metrics = Arc::new(Metrics::with_extra(known, &self.metrics));
        let audit = match &c.audit {
            Some(options) => Some(Arc::new(
                crate::audit::Auditor::start(options.clone(), metrics.audit.clone()).map_err(
                    |source| ServerError::AuditLog {
                        path: options.log.path.clone(),
                        source,
                    },
                )?,
            )),
            None => None,
        };

        let mut hook_checks = Vec::new();
        for hook in &self.post_start {
            let h = hook.clone();
            hook_checks.push(HealthCheck::new(
                format!("poststarthook/{}", hook.name),
                move || {
                    let done = h.is_done();
                    async move {
                        if done {
                            Ok(())
                        } else {
                            Err("not finished".to_string())
                        }
                    }
                },
            ));
        }
        let shutdown = self.signals.shutdown_initiated.clone();
        let shutdown_check = HealthCheck::new("shutdown", move || {
            let down = shutdown.is_signaled();
            async move {
                if down {
                    Err("process is shutting down".to_string())
                } else {
                    Ok(())
                }
            }
        });
        let mut livez = self.checks.clone();
        livez.extend(hook_checks.iter().cloned());
        let mut readyz = livez.clone();
        readyz.push(shutdown_check);
        let health = HealthChecks {
            healthz: livez.clone(),
            livez,
            readyz,
        };

        let address = format!("{}:{}", local.ip(), local.port());
        let mut delegates = self.delegates.clone();
        if let Some(sa) = &self.config.service_accounts {
            let jwks_uri = sa.jwks_uri(format!("https://{address}{}", oidc::JWKS_PATH));
            delegates.insert(0, Arc::new(oidc::OidcDiscovery::new(sa, &jwks_uri)));
        }
        let director = Arc::new(Director {
            scheme: Arc::clone(&c.scheme),
            api: Arc::clone(&self.api),
            runtime: c.runtime_config.clone(),
            discovery: discovery::LiveDiscovery::new(
                Arc::clone(&c.scheme),
                c.runtime_config.clone(),
                address.clone(),
                Arc::clone(&self.api.registry),
                self.kind_sources.clone(),
                self.directory.clone(),
            ),
            openapi: {
                let (scheme, registry) = (Arc::clone(&c.scheme), Arc::clone(&self.api.registry));
                openapi::LiveOpenApi::new(
                    Arc::clone(&c.scheme),
                    c.runtime_config.clone(),
                    c.version.git_version.clone(),
                    Box::new(move |group, kind, verb| {
                        scheme
                            .by_kind(group, kind)
                            .and_then(|k| registry.custom_store(k))
                            .is_none_or(|custom| custom.serves(verb))
                    }),
                    self.openapi_sources.clone(),
                    self.remote_openapi_sources.clone(),
                )
            },
            version: c.version.clone(),
            health,
            metrics: Arc::clone(&metrics),
            delegates,
            front_delegates: self.front_delegates.clone(),
            mux_signals: self.mux_signals.clone(),
        });
        let chain = Arc::new(ChainConfig {
            authenticator: Arc::clone(&self.config.authenticator),
            authorizer: Arc::clone(&self.config.authorizer),
            request_timeout: c.request_timeout,
            min_request_timeout: c.min_request_timeout,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            signals: self.signals.clone(),
            metrics,
            in_flight: filters::max_in_flight::InFlightLimits::new(
                c.max_requests_inflight,
                c.max_mutating_requests_inflight,
            ),
            audit: audit.clone(),
            scheme: Some(Arc::clone(&c.scheme)),
            delegated_authorizer: c.delegated_authorizer.clone(),
        });
        let app = filters::build(DirectorService(director), chain);
        Ok(PreparedServer {
            server: self,
            app,
            listener,
            local,
            tls: tls_config,
            audit,
        })
    }
}
