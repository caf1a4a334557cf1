//! The user-facing way to build and run an API server: [`Server`], the seeds' Generic Server
//! steps behind one typed builder.
//!
//! Kubernetes builds every server the same way: options (flags) → `Config` → `Complete()` →
//! `New(name, delegate)` → `InstallAPIGroup` → post-start hooks and health checks →
//! `PrepareRun` → `Run`. [`Server`] takes the options ([`ServerOptions`], a `clap` struct to
//! flatten into a program's own command line), lets the program choose what it serves (API
//! groups, admission plugins, post-start hooks, health checks), and [`Server::run`] takes the
//! remaining steps: the data directory, the CA, serving certificate and admin kubeconfig
//! created on first start, the storage backend (the embedded store under `--data-dir`, or etcd
//! with `--etcd-servers`), the configuration, the server and its listener.
//!
//! ```no_run
//! use clap::Parser;
//!
//! /// My API server.
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     server: server::ServerOptions,
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     server::Server::new(Cli::parse().server)
//!         // A generated crate's groups: its kinds, strategies and admission plugins.
//!         .install(kubernetes_api::register_all)
//!         // With `controlplane::KubernetesApis::default()` installed instead, the Kubernetes
//!         // groups bring their controllers, admission plugins and the `RBAC` mode; without
//!         // it, authorization is one of the generic modes.
//!         .main()
//! }
//! ```
//!
//! The `apiary` binary's `src/main.rs`, `examples/wardle` and the README's "Your own API
//! server" are complete programs.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use apimachinery::admission::Plugin;

use crate::genericserver::groups::{ApiGroups, authorization_modes_of};
use crate::genericserver::health::HealthCheck;
use crate::genericserver::hooks::HookFn;
use crate::genericserver::options::ServerOptions;
use crate::genericserver::runtime_config::RuntimeConfig;
use crate::genericserver::serve::ServingOptions;
use crate::genericserver::tls::{TlsOptions, TlsVersion, parse_cipher_suites};
use crate::genericserver::version::VersionInfo;
use crate::genericserver::{self, Config, GenericServer};
use crate::pki;
use crate::registry::rest_storage::RestStorage;
use apimachinery::runtime::Kind;

/// A server being assembled: its options and what it serves. See the [module docs](self).
pub struct Server {
    options: ServerOptions,
    version: VersionInfo,
    groups: Vec<Arc<dyn ApiGroups>>,
    plugins: Vec<Plugin>,
    storage: Vec<(&'static Kind, RestStorage)>,
    setup: Vec<SetupFn>,
    hooks: Vec<(String, HookFn)>,
    checks: Vec<HealthCheck>,
    hint: String,
}

/// Work a program does on the server once it exists: see [`Server::setup`].
type SetupFn = Box<dyn FnOnce(&mut GenericServer) -> anyhow::Result<()> + Send>;

impl Server {
    /// A server with `options` that serves nothing yet; [`Server::install`] adds API groups.
    pub fn new(options: ServerOptions) -> Self {
        Self {
            options,
            version: VersionInfo::fallback(),
            groups: Vec::new(),
            plugins: Vec::new(),
            storage: Vec::new(),
            setup: Vec::new(),
            hooks: Vec::new(),
            checks: Vec::new(),
            hint: "api-resources".to_string(),
        }
    }

    /// Serves `groups`: their kinds (with their strategies and the admission plugins their
    /// definitions ship), and whatever they install beside them (admission plugins,
    /// authorization modes, controllers, post-start hooks). A generated crate's
    /// `register_all` function is such a set of groups; so is `controlplane::Kubernetes`.
    /// Groups are registered in the order they are installed.
    pub fn install(mut self, groups: impl ApiGroups) -> Self {
        self.groups.push(Arc::new(groups));
        self
    }

    /// Serves `kind` from the program's own implementation of the REST verbs instead of the
    /// generic store (a read-only or computed kind, or one kept in another database); see
    /// [`crate::registry::rest_storage`] for the semantics it must keep and the conformance
    /// suite that checks them. Verbs the storage lacks answer 405 and leave discovery.
    pub fn storage(mut self, kind: &'static Kind, storage: RestStorage) -> Self {
        self.storage.push((kind, storage));
        self
    }

    /// Runs `setup` on the server once it exists (its stores and API context are built), before
    /// it listens: the place to start a controller
    /// ([`GenericServer::add_controller`]), or add a delegate or metrics.
    ///
    /// ```no_run
    /// # use clap::Parser;
    /// # #[derive(Parser)]
    /// # struct Cli { #[command(flatten)] server: server::ServerOptions }
    /// server::Server::new(Cli::parse().server).setup(|server| {
    ///     let api = std::sync::Arc::clone(server.api());
    ///     server.add_post_start_hook(
    ///         "my-hook",
    ///         std::sync::Arc::new(move || {
    ///             let _kinds = api.scheme.kinds().len();
    ///             Box::pin(async { Ok(()) })
    ///         }),
    ///     );
    ///     Ok(())
    /// });
    /// ```
    pub fn setup(
        mut self,
        setup: impl FnOnce(&mut GenericServer) -> anyhow::Result<()> + Send + 'static,
    ) -> Self {
        self.setup.push(Box::new(setup));
        self
    }

    /// Adds an admission plugin of the program's own, enabled or not by its `default_enabled`
    /// and the `--enable-admission-plugins` / `--disable-admission-plugins` flags; it runs
    /// after the plugins the installed groups bring.
    pub fn admission_plugin(mut self, plugin: Plugin) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Adds a post-start hook: it runs once the server listens, is retried until it succeeds,
    /// and `/readyz` waits for it (`poststarthook/<name>`).
    pub fn post_start_hook(mut self, name: &str, hook: HookFn) -> Self {
        self.hooks.push((name.to_string(), hook));
        self
    }

    /// Adds a health check to `/healthz`, `/livez` and `/readyz`.
    pub fn health_check(mut self, check: HealthCheck) -> Self {
        self.checks.push(check);
        self
    }

    /// Sets what `/version` answers (by default the Kubernetes version apiary follows and the
    /// `server` crate's version; see [`crate::version_info!`] for a program's own build facts).
    pub fn version(mut self, version: VersionInfo) -> Self {
        self.version = version;
        self
    }

    /// Sets the kubectl arguments of the line printed once the server listens (by default
    /// `api-resources`): `kubectl --kubeconfig <data-dir>/admin.kubeconfig <hint>`.
    pub fn kubectl_hint(mut self, hint: &str) -> Self {
        self.hint = hint.to_string();
        self
    }

    /// The whole program: logs to standard error (filtered by `RUST_LOG`, `info` by default),
    /// checks the options (every mistake printed, exit status 2), starts a multi-threaded
    /// async runtime and [`runs`](Server::run) the server until SIGINT or SIGTERM. Errors are
    /// printed with their causes and end the process with status 1.
    pub fn main(self) -> ExitCode {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
            )
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init();
        let errors = self.options.validate(&authorization_modes_of(&self.groups));
        if !errors.is_empty() {
            for e in &errors {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("error: starting the async runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        match runtime.block_on(self.run(genericserver::shutdown_signal())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        }
    }

    /// Creates what the first start needs under `--data-dir` (the directory, owner-only; the
    /// CA, serving certificate and keys; reused afterwards), opens the storage backend, builds
    /// and prepares the server, writes the admin kubeconfig, prints the kubectl line and
    /// serves until `stop` completes, then shuts down gracefully.
    pub async fn run(self, stop: impl Future<Output = ()> + Send) -> anyhow::Result<()> {
        let opts = &self.options;
        // A new data directory is the owner's only, as etcd keeps its own (0700); one that
        // exists is left as its owner set it (the store and key directories inside are 0700).
        storage::private_files::create_dir(&opts.data_dir)
            .with_context(|| format!("creating --data-dir {}", opts.data_dir.display()))?;
        let paths = pki::ensure(
            &opts.data_dir,
            opts.bind_address,
            opts.tls_cert_file.is_none(),
        )
        .context("creating the CA and certificates")?;
        let config = self.config(&paths).await?;
        let Server {
            options: opts,
            setup,
            hooks,
            checks,
            hint,
            ..
        } = self;
        let mut server = config.complete()?.new_server()?;
        for (name, hook) in hooks {
            server.add_post_start_hook(&name, hook);
        }
        for check in checks {
            server.add_health_check(check);
        }
        for setup in setup {
            setup(&mut server)?;
        }
        let prepared = server.prepare_run().await?;
        let port = prepared.local_addr().port();
        if opts.client_ca_file.is_some() {
            tracing::warn!(
                ca = %paths.ca_cert.display(),
                "--client-ca-file is set: the admin.kubeconfig client certificate is accepted only if that bundle includes the generated CA"
            );
        }
        pki::write_kubeconfig(
            &paths,
            opts.bind_address,
            port,
            opts.tls_cert_file.as_deref(),
        )
        .context("writing the admin kubeconfig")?;
        println!(
            "kubectl --kubeconfig {} {}",
            paths.kubeconfig.display(),
            hint
        );
        prepared.run(stop).await;
        Ok(())
    }
}

impl Server {
    /// The configuration the options, the installed groups and the program's plugins say.
    async fn config(&self, paths: &pki::PkiPaths) -> anyhow::Result<Config> {
        let opts = &self.options;
        let tls = TlsOptions {
            cert: opts
                .tls_cert_file
                .clone()
                .unwrap_or_else(|| paths.serving_cert.clone()),
            key: opts
                .tls_private_key_file
                .clone()
                .unwrap_or_else(|| paths.serving_key.clone()),
            sni: opts.tls_sni_cert_key.clone(),
            client_ca: opts
                .client_ca_file
                .clone()
                .unwrap_or_else(|| paths.ca_cert.clone()),
            min_version: TlsVersion::parse(&opts.tls_min_version)?,
            cipher_suites: parse_cipher_suites(&opts.tls_cipher_suites)?,
        };
        let encryption = match &opts.encryption_provider_config {
            Some(path) => Some(Arc::new(
                storage::transformer::EncryptionConfig::from_file(path).map_err(|e| {
                    anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display())
                })?,
            )),
            None => None,
        };
        let authn_options = opts.clone();
        let authentication = tokio::task::spawn_blocking(move || {
            crate::authn::config::AuthenticationConfig::load(&authn_options)
        })
        .await
        .context("loading the authentication configuration")??;
        let front_proxy = pki::FrontProxy::load(
            paths,
            opts.proxy_client_cert_file
                .as_deref()
                .zip(opts.proxy_client_key_file.as_deref()),
        )
        .context("reading the front proxy's certificates")?;
        let bind = SocketAddr::new(opts.bind_address, opts.secure_port);
        let backend = open_backend(opts).await?;
        Ok(Config {
            storage_prefix: opts.etcd_prefix.clone(),
            compaction_interval: opts.etcd_compaction_interval,
            serving: serving_options(opts),
            version: self.version.clone(),
            anonymous_auth: opts.anonymous_auth,
            request_timeout: opts.request_timeout,
            min_request_timeout: Duration::from_secs(opts.min_request_timeout),
            shutdown_delay: opts.shutdown_delay_duration,
            runtime_config: RuntimeConfig::new(opts.runtime_config_entries()),
            encryption,
            storage_media_type: opts.storage_media_type,
            admission: crate::admission::AdmissionOptions {
                enable: opts.enable_admission_plugins.clone(),
                disable: opts.disable_admission_plugins.clone(),
            },
            max_requests_inflight: opts.max_requests_inflight as usize,
            max_mutating_requests_inflight: opts.max_mutating_requests_inflight as usize,
            list_memory: (opts.list_memory_per_user, opts.list_memory_total),
            authentication,
            audit: opts.audit()?,
            authorization_modes: opts.authorization_mode.clone(),
            admission_plugins: self.plugins.clone(),
            rest_storage: self.storage.clone(),
            front_proxy: Some(front_proxy),
            service_network: crate::genericserver::service_network::ServiceNetwork::parse(
                &opts.service_cluster_ip_range,
                &opts.service_node_port_range,
                opts.advertise_address,
                opts.enable_aggregator_routing,
            )?,
            ..Config::new(self.groups.clone(), backend, bind, tls)
        })
    }
}

/// The listener's limits and timeouts the options say; the open-connection bound is lowered
/// to fit the open-file limit (raised to its hard limit first, as Go's runtime does).
fn serving_options(opts: &ServerOptions) -> ServingOptions {
    ServingOptions {
        // As kube-apiserver, zero or less means the default.
        http2_max_streams_per_connection: u32::try_from(opts.http2_max_streams_per_connection)
            .unwrap_or(if opts.http2_max_streams_per_connection < 0 {
                0
            } else {
                u32::MAX
            }),
        read_header_timeout: opts.read_header_timeout,
        idle_timeout: opts.idle_connection_timeout,
        max_open_connections: {
            let soft = genericserver::open_files::raise_to_hard_limit();
            let bound =
                genericserver::open_files::connection_bound(opts.max_open_connections, soft);
            if bound != opts.max_open_connections {
                tracing::warn!(
                    requested = opts.max_open_connections,
                    bound,
                    open_files = soft,
                    "the open connection bound is lowered to fit the open-file limit"
                );
            }
            bound
        },
    }
}

/// The embedded store under `--data-dir`, or etcd when `--etcd-servers` names any.
async fn open_backend(opts: &ServerOptions) -> anyhow::Result<Arc<dyn storage::backend::Backend>> {
    if opts.etcd_servers.is_empty() {
        let dir = opts.data_dir.join("store");
        let mut options = storage::embedded::EmbeddedOptions::new(&dir);
        options.quota_bytes = opts.storage_quota_bytes;
        let backend = storage::embedded::EmbeddedBackend::open(options)
            .with_context(|| format!("opening the embedded store in {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), "using the embedded store");
        Ok(Arc::new(backend))
    } else {
        let mut config = storage::etcd::EtcdConfig::new(opts.etcd_servers.clone());
        config.prefix = opts.etcd_prefix.clone();
        config.tls = storage::etcd::EtcdTls {
            ca_file: opts.etcd_cafile.clone(),
            cert_file: opts.etcd_certfile.clone(),
            key_file: opts.etcd_keyfile.clone(),
        };
        let backend = storage::etcd::EtcdBackend::connect(config)
            .await
            .with_context(|| format!("connecting to etcd at {}", opts.etcd_servers.join(",")))?;
        tracing::info!(servers = %opts.etcd_servers.join(","), "using etcd");
        Ok(Arc::new(backend))
    }
}

/// The build facts of the calling crate for `/version`: its package version, and the git
/// commit, tree state, build date and rustc version when its build script exported them as
/// `APIARY_GIT_COMMIT`, `APIARY_GIT_TREE_STATE`, `APIARY_BUILD_DATE` and
/// `APIARY_RUSTC_VERSION` (apiary's own `build.rs` does).
///
/// ```no_run
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     server: server::ServerOptions,
/// }
///
/// let server = server::Server::new(Cli::parse().server).version(server::version_info!());
/// ```
#[macro_export]
macro_rules! version_info {
    () => {
        $crate::genericserver::version::VersionInfo::of_build(
            env!("CARGO_PKG_VERSION"),
            option_env!("APIARY_GIT_COMMIT"),
            option_env!("APIARY_GIT_TREE_STATE"),
            option_env!("APIARY_BUILD_DATE"),
            option_env!("APIARY_RUSTC_VERSION"),
        )
    };
}
