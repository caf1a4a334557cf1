//! The `apiary` binary: serves every group of the generated scheme over HTTPS, with an embedded
//! store under `--data-dir` (or etcd with `--etcd-servers`), a CA, serving certificate and admin
//! kubeconfig created on first start and reused afterwards.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use apimachinery::Scheme;
use clap::Parser;
use server::genericserver::groups::{ApiGroups, authorization_modes_of, scheme_of};
use server::genericserver::options::ServerOptions;
use server::genericserver::runtime_config::RuntimeConfig;
use server::genericserver::serve::ServingOptions;
use server::genericserver::tls::{TlsOptions, TlsVersion, parse_cipher_suites};
use server::genericserver::version::{VersionInfo, go_arch};
use server::genericserver::{self, Config};
use server::pki;

/// mimalloc serves the many small per-request allocations faster than glibc malloc. It is
/// built without transparent huge pages (the `no_thp` feature): with them, the 2 MiB pages it
/// advises for its arena kept about 20 MiB more resident at idle.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kubernetes-style declarative API server generated from API definitions.
#[derive(Parser, Debug)]
#[command(name = "apiary", version)]
struct Cli {
    #[command(flatten)]
    options: ServerOptions,
}

/// The example group (`example.dev` Widgets) the binary serves beside the Kubernetes groups.
struct ExampleApis;

impl ApiGroups for ExampleApis {
    fn register(&self, scheme: &mut Scheme) {
        generated::example_dev::register(scheme);
    }
}

/// The bundles of API groups the binary serves: the Kubernetes control plane, then the example
/// group.
fn api_groups() -> Vec<Arc<dyn ApiGroups>> {
    vec![
        Arc::new(controlplane::KubernetesApis::default()),
        Arc::new(ExampleApis),
    ]
}

fn version_info() -> VersionInfo {
    let commit = env!("APIARY_GIT_COMMIT");
    VersionInfo {
        major: "1".into(),
        minor: "33".into(),
        git_version: format!("v1.33.0-apiary.{}", env!("CARGO_PKG_VERSION")),
        git_commit: commit.to_string(),
        git_tree_state: env!("APIARY_GIT_TREE_STATE").to_string(),
        build_date: env!("APIARY_BUILD_DATE").to_string(),
        go_version: env!("APIARY_RUSTC_VERSION").to_string(),
        compiler: "rustc".into(),
        platform: format!(
            "{}/{}",
            std::env::consts::OS,
            go_arch(std::env::consts::ARCH)
        ),
    }
}

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

async fn run(opts: ServerOptions, groups: Vec<Arc<dyn ApiGroups>>) -> anyhow::Result<()> {
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
    let serving = ServingOptions {
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
            let soft = server::genericserver::open_files::raise_to_hard_limit();
            let bound = server::genericserver::open_files::connection_bound(
                opts.max_open_connections,
                soft,
            );
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
        server::authn::config::AuthenticationConfig::load(&authn_options)
    })
    .await
    .context("loading the authentication configuration")??;
    let backend = open_backend(&opts).await?;
    let config = Config {
        scheme: Arc::new(scheme_of(&groups)),
        groups,
        backend,
        storage_prefix: opts.etcd_prefix.clone(),
        compaction_interval: opts.etcd_compaction_interval,
        bind: SocketAddr::new(opts.bind_address, opts.secure_port),
        tls,
        serving,
        version: version_info(),
        anonymous_auth: opts.anonymous_auth,
        request_timeout: opts.request_timeout,
        min_request_timeout: Duration::from_secs(opts.min_request_timeout),
        shutdown_delay: opts.shutdown_delay_duration,
        runtime_config: RuntimeConfig::new(opts.runtime_config_entries()),
        encryption,
        storage_media_type: opts.storage_media_type,
        admission: server::admission::AdmissionOptions {
            enable: opts.enable_admission_plugins.clone(),
            disable: opts.disable_admission_plugins.clone(),
        },
        max_requests_inflight: opts.max_requests_inflight as usize,
        max_mutating_requests_inflight: opts.max_mutating_requests_inflight as usize,
        list_memory: (opts.list_memory_per_user, opts.list_memory_total),
        authentication,
        authenticators: Vec::new(),
        authorizers: Vec::new(),
        audit: opts.audit()?,
        authorization_modes: opts.authorization_mode.clone(),
        rest_storage: Vec::new(),
    };
    let prepared = config.complete()?.new_server()?.prepare_run().await?;
    let port = prepared.local_addr().port();
    if opts.client_ca_file.is_some() {
        tracing::warn!(
            ca = %paths.ca_cert.display(),
            "--client-ca-file is set: the admin.kubeconfig client certificate is accepted only if that bundle includes apiary's CA"
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
        "kubectl --kubeconfig {} get widgets",
        paths.kubeconfig.display()
    );
    prepared.run(genericserver::shutdown_signal()).await;
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let groups = api_groups();
    let errors = cli.options.validate(&authorization_modes_of(&groups));
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
    match runtime.block_on(run(cli.options, groups)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
