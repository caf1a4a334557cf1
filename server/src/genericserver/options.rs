//! Command-line options, named like kube-apiserver's flags, and their validation.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::duration::parse_duration;
use super::tls::SniCertKey;
use super::tls::ciphers::{TlsFlagError, TlsVersion, parse_cipher_suites};

/// The maximum request body size (Kubernetes' `MaxRequestBodyBytes`, 3 MiB).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Every option of the server, as flags.
#[derive(Args, Debug, Clone)]
pub struct ServerOptions {
    /// Directory of the embedded store and of the generated CA, certificates and admin kubeconfig.
    #[arg(long, default_value = "./apiary-data")]
    pub data_dir: PathBuf,
    /// The port to serve HTTPS on (0 picks a free port).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// The IP address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// File with the serving certificate (PEM, leaf first). Generated under --data-dir if unset.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,
    /// File with the serving certificate's private key (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA bundle (PEM) that client certificates are verified against. Defaults to the generated CA.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// The client certificate (PEM) the aggregator presents to aggregated API servers, which
    /// trust it through request-header authentication. Generated under --data-dir (with its
    /// CA, `pki/front-proxy-ca.crt`) if unset.
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --proxy-client-cert-file.
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,
    /// A certificate and key served to clients asking for certain names (SNI), as
    /// `cert,key` (names read from the certificate) or `cert,key:name1,*.name2`; repeatable.
    #[arg(long, value_name = "CERT,KEY[:NAMES]")]
    pub tls_sni_cert_key: Vec<SniCertKey>,
    /// The minimum TLS version: `VersionTLS12` (the default) or `VersionTLS13`.
    #[arg(long, default_value = "")]
    pub tls_min_version: String,
    /// Comma-separated TLS 1.2 cipher suites by IANA name (the TLS 1.3 suites are always
    /// enabled); unset means every strong suite.
    #[arg(long, value_delimiter = ',')]
    pub tls_cipher_suites: Vec<String>,
    /// The limit of concurrent streams the server gives HTTP/2 clients (0 or less: 100).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub http2_max_streams_per_connection: i64,
    /// apiary-only: how long a request head may take from its first byte (kube-apiserver: 32s).
    #[arg(long, hide = true, default_value = "32s", value_parser = parse_duration)]
    pub read_header_timeout: Duration,
    /// apiary-only: how long a connection may stay without a request (kube-apiserver: 90s).
    #[arg(long, hide = true, default_value = "1m30s", value_parser = parse_duration)]
    pub idle_connection_timeout: Duration,
    /// apiary-only: the most connections open at once (0: unbounded); at the bound a connection
    /// without an authenticated user, or else one of the user holding the most, makes room, or
    /// new ones wait to be accepted.
    #[arg(long, hide = true, default_value_t = super::serve::DEFAULT_MAX_OPEN_CONNECTIONS)]
    pub max_open_connections: usize,
    /// apiary-only: the bytes one user's large list responses may hold at once.
    #[arg(long, hide = true, default_value_t = crate::endpoints::list_budget::PER_USER_BYTES)]
    pub list_memory_per_user: u64,
    /// apiary-only: the bytes all large list responses may hold at once.
    #[arg(long, hide = true, default_value_t = crate::endpoints::list_budget::TOTAL_BYTES)]
    pub list_memory_total: u64,
    /// Whether requests without credentials are served as `system:anonymous`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub anonymous_auth: bool,
    /// CSV file of static bearer tokens: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// PEM files of public keys (or certificates, or private keys) that verify service-account
    /// tokens; repeatable or comma-separated. The signing key's public half always verifies.
    #[arg(long, value_delimiter = ',')]
    pub service_account_key_file: Vec<PathBuf>,
    /// PEM file of the RSA private key that signs service-account tokens. Generated under
    /// --data-dir (pki/sa.key) if unset.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// The issuer (`iss`) of service-account tokens; repeatable: the first signs, every one is
    /// accepted.
    #[arg(long, default_value = crate::authn::serviceaccount::DEFAULT_ISSUER)]
    pub service_account_issuer: Vec<String>,
    /// The longest validity of a requested service-account token, such as `48h`; longer
    /// requests get this validity (unset: no maximum).
    #[arg(long, value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,
    /// The `jwks_uri` the issuer's discovery document announces (default:
    /// `https://<the serving address>/openid/v1/jwks`).
    #[arg(long)]
    pub service_account_jwks_uri: Option<String>,
    /// The audiences of the API server: tokens must be valid for one of them (default: the
    /// issuers).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// Comma-separated etcd endpoints; when empty the embedded store under --data-dir is used.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// The most bytes the embedded store's objects and retained history may take (0:
    /// unbounded). At the quota, writes that would grow it are refused with a 500 `database
    /// space exceeded` while deletes go on, as etcd does at its `--quota-backend-bytes` (with
    /// etcd, etcd's own quota applies).
    #[arg(long, default_value_t = storage::embedded::DEFAULT_QUOTA_BYTES)]
    pub storage_quota_bytes: u64,
    /// The key prefix of every object in storage.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// CA bundle to verify etcd's serving certificate.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd.
    #[arg(long)]
    pub etcd_certfile: Option<PathBuf>,
    /// Client key for etcd.
    #[arg(long)]
    pub etcd_keyfile: Option<PathBuf>,
    /// The interval of compaction requests: every interval the storage history older than the
    /// previous interval is compacted (with etcd, by one of the replicas sharing it). `0`
    /// disables compaction.
    #[arg(long, default_value = "5m0s", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// EncryptionConfiguration file for encryption at rest.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,
    /// The media type objects are written to storage in: `application/vnd.kubernetes.protobuf`
    /// or `application/json`. Objects stored in either are always readable.
    #[arg(long, default_value = "application/vnd.kubernetes.protobuf")]
    pub storage_media_type: crate::registry::encoding::StorageMediaType,
    /// How long to keep serving (with /readyz failing) after a termination signal, such as `10s`.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay_duration: Duration,
    /// The longest a non-long-running request may take before it gets 504, such as `1m0s`.
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// The minimum timeout (seconds) of long-running requests such as watches; the default watch
    /// timeout is a random duration between this and twice this.
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,
    /// Admission plugins to enable beyond the default ones, such as `WidgetColorLabel`.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// Admission plugins to disable, even default ones, such as `NamespaceLifecycle`.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
    /// Group versions to enable or disable, such as `example.dev/v1alpha1=false,api/all=true`.
    #[arg(long, value_delimiter = ',')]
    pub runtime_config: Vec<String>,
    /// Ordered list of plug-ins to do authorization on the secure port, comma-delimited:
    /// `RBAC`, `AlwaysAllow`, `AlwaysDeny` (members of `system:masters` are always allowed
    /// first).
    #[arg(long, value_delimiter = ',', default_value = "RBAC")]
    pub authorization_mode: Vec<String>,
    /// The maximum number of non-mutating requests in flight (0 means unlimited).
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: u32,
    /// The maximum number of mutating requests in flight (0 means unlimited).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: u32,
    /// An audit.k8s.io/v1 Policy file (YAML or JSON); with --audit-log-path, requests its rules
    /// select are recorded.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,
    /// The file audit events are written to as JSON lines; `-` means standard output.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// The size in megabytes at which the audit log is rotated (0: 100, as in Kubernetes).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,
    /// The number of rotated audit log files kept (0: all).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,
    /// The number of days rotated audit log files are kept (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,
    /// The address the `kubernetes` Service's endpoints point at (unset: --bind-address, or the
    /// host's first non-loopback address when that is unspecified).
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,
    /// The CIDR range cluster IPs of Services are allocated from; its first address is the
    /// `kubernetes` Service's.
    #[arg(long, default_value = super::service_network::DEFAULT_SERVICE_CLUSTER_IP_RANGE)]
    pub service_cluster_ip_range: String,
    /// The port range node ports of `NodePort` and `LoadBalancer` Services are allocated from.
    #[arg(long, default_value = super::service_network::DEFAULT_SERVICE_NODE_PORT_RANGE)]
    pub service_node_port_range: String,
    /// Route requests to a Service (aggregated APIs, webhooks) to its endpoints' addresses
    /// instead of its cluster IP.
    #[arg(long)]
    pub enable_aggregator_routing: bool,
}

/// A problem with the options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Exactly one of a certificate/key pair was given.
    #[error("--tls-cert-file and --tls-private-key-file must be given together")]
    TlsPair,
    /// etcd client certificate without key or the reverse.
    #[error("--etcd-certfile and --etcd-keyfile must be given together")]
    EtcdPair,
    /// A proxy client certificate without key or the reverse.
    #[error("--proxy-client-cert-file and --proxy-client-key-file must be given together")]
    ProxyClientPair,
    /// A flag names a file that does not exist.
    #[error("{flag}: file {path} does not exist")]
    MissingFile {
        /// The flag.
        flag: &'static str,
        /// The path given.
        path: String,
    },
    /// An etcd endpoint is not a URL.
    #[error("--etcd-servers: {0:?} is not an http:// or https:// URL")]
    EtcdUrl(String),
    /// The storage prefix is empty or relative.
    #[error("--etcd-prefix: {0:?} must start with '/'")]
    EtcdPrefix(String),
    /// The request timeout is zero.
    #[error("--request-timeout must be greater than 0")]
    RequestTimeout,
    /// The minimum request timeout is zero.
    #[error("--min-request-timeout must be greater than 0")]
    MinRequestTimeout,
    /// A TLS flag has a refused value.
    #[error(transparent)]
    Tls(#[from] TlsFlagError),
    /// A header or idle timeout is zero.
    #[error("{0} must be greater than 0")]
    ZeroTimeout(&'static str),
    /// The audit policy file cannot be used.
    #[error("--audit-policy-file: {0}")]
    AuditPolicy(String),
    /// A `--runtime-config` entry is malformed.
    #[error(
        "--runtime-config: {0:?} is not of the form <group>/<version>=true|false, api/all=true|false or api/ga|beta|alpha=true|false"
    )]
    RuntimeConfig(String),
    /// `--authorization-mode` is refused.
    #[error(transparent)]
    AuthorizationMode(#[from] crate::authz::AuthorizationModeError),
    /// `--service-account-max-token-expiration` is out of range.
    #[error("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds")]
    MaxTokenExpiration,
}

impl ServerOptions {
    /// Checks the options; every problem found is returned. `modes` are the authorization
    /// modes `--authorization-mode` may name (the generic server's and the installed groups').
    pub fn validate(&self, modes: &crate::authz::AuthorizationModes) -> Vec<OptionsError> {
        let mut errs = Vec::new();
        if self.tls_cert_file.is_some() != self.tls_private_key_file.is_some() {
            errs.push(OptionsError::TlsPair);
        }
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            errs.push(OptionsError::EtcdPair);
        }
        if self.proxy_client_cert_file.is_some() != self.proxy_client_key_file.is_some() {
            errs.push(OptionsError::ProxyClientPair);
        }
        for path in &self.service_account_key_file {
            if !path.exists() {
                errs.push(OptionsError::MissingFile {
                    flag: "--service-account-key-file",
                    path: path.display().to_string(),
                });
            }
        }
        let files: [(&'static str, &Option<PathBuf>); 12] = [
            ("--token-auth-file", &self.token_auth_file),
            (
                "--service-account-signing-key-file",
                &self.service_account_signing_key_file,
            ),
            ("--tls-cert-file", &self.tls_cert_file),
            ("--tls-private-key-file", &self.tls_private_key_file),
            ("--client-ca-file", &self.client_ca_file),
            ("--proxy-client-cert-file", &self.proxy_client_cert_file),
            ("--proxy-client-key-file", &self.proxy_client_key_file),
            ("--etcd-cafile", &self.etcd_cafile),
            ("--etcd-certfile", &self.etcd_certfile),
            ("--etcd-keyfile", &self.etcd_keyfile),
            (
                "--encryption-provider-config",
                &self.encryption_provider_config,
            ),
            ("--audit-policy-file", &self.audit_policy_file),
        ];
        for (flag, path) in files {
            if let Some(p) = path
                && !p.exists()
            {
                errs.push(OptionsError::MissingFile {
                    flag,
                    path: p.display().to_string(),
                });
            }
        }
        for sni in &self.tls_sni_cert_key {
            for path in [&sni.cert, &sni.key] {
                if !path.exists() {
                    errs.push(OptionsError::MissingFile {
                        flag: "--tls-sni-cert-key",
                        path: path.display().to_string(),
                    });
                }
            }
        }
        if let Err(e) = TlsVersion::parse(&self.tls_min_version) {
            errs.push(e.into());
        }
        if let Err(e) = parse_cipher_suites(&self.tls_cipher_suites) {
            errs.push(e.into());
        }
        if self.read_header_timeout.is_zero() {
            errs.push(OptionsError::ZeroTimeout("--read-header-timeout"));
        }
        if self.idle_connection_timeout.is_zero() {
            errs.push(OptionsError::ZeroTimeout("--idle-connection-timeout"));
        }
        for url in &self.etcd_servers {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                errs.push(OptionsError::EtcdUrl(url.clone()));
            }
        }
        if !self.etcd_prefix.starts_with('/') {
            errs.push(OptionsError::EtcdPrefix(self.etcd_prefix.clone()));
        }
        if self.request_timeout.is_zero() {
            errs.push(OptionsError::RequestTimeout);
        }
        if self.min_request_timeout == 0 {
            errs.push(OptionsError::MinRequestTimeout);
        }
        if let Some(path) = &self.audit_policy_file
            && path.exists()
            && let Err(e) = crate::audit::policy::Policy::from_file(path)
        {
            errs.push(OptionsError::AuditPolicy(e.to_string()));
        }
        if let Some(max) = self.service_account_max_token_expiration
            && (max < Duration::from_secs(3600) || max > Duration::from_secs(1 << 32))
        {
            errs.push(OptionsError::MaxTokenExpiration);
        }
        for entry in &self.runtime_config {
            if parse_runtime_config_entry(entry).is_none() {
                errs.push(OptionsError::RuntimeConfig(entry.clone()));
            }
        }
        if let Err(modes) = modes.parse(&self.authorization_mode) {
            errs.extend(modes.into_iter().map(OptionsError::AuthorizationMode));
        }
        errs
    }

    /// The audit configuration: `None` unless both `--audit-policy-file` and
    /// `--audit-log-path` are set (Kubernetes records nothing without a policy). Errors are
    /// those [`validate`](Self::validate) reports.
    pub fn audit(&self) -> Result<Option<crate::audit::AuditOptions>, OptionsError> {
        let (Some(policy), Some(path)) = (&self.audit_policy_file, &self.audit_log_path) else {
            return Ok(None);
        };
        let policy = crate::audit::policy::Policy::from_file(policy)
            .map_err(|e| OptionsError::AuditPolicy(e.to_string()))?;
        Ok(Some(crate::audit::AuditOptions {
            policy,
            log: crate::audit::log::LogOptions {
                path: path.clone(),
                max_size_mb: self.audit_log_maxsize,
                max_backups: self.audit_log_maxbackup,
                max_age_days: self.audit_log_maxage,
            },
        }))
    }

    /// The parsed `--runtime-config` entries: (`group/version` or `api/all|ga|beta|alpha`, enabled).
    pub fn runtime_config_entries(&self) -> Vec<(String, bool)> {
        self.runtime_config
            .iter()
            .filter_map(|e| parse_runtime_config_entry(e))
            .collect()
    }
}

fn parse_runtime_config_entry(entry: &str) -> Option<(String, bool)> {
    let (key, value) = entry.split_once('=').unwrap_or((entry, "true"));
    let enabled = match value {
        "true" | "" => true,
        "false" => false,
        _ => return None,
    };
    let key = key.trim();
    if key.is_empty() || key.split('/').count() > 2 || key.split('/').any(str::is_empty) {
        return None;
    }
    // The core group is written `v1` or `api/v1`.
    let key = if key == "v1" {
        "api/v1".to_string()
    } else {
        key.to_string()
    };
    Some((key, enabled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The modes of the binary: the generic server's and a stand-in for the control plane's
    /// `RBAC`.
    fn modes() -> crate::authz::AuthorizationModes {
        let mut modes = crate::authz::AuthorizationModes::builtin();
        modes.add(
            "RBAC",
            std::sync::Arc::new(crate::authz::AlwaysDenyAuthorizer),
        );
        modes
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        opts: ServerOptions,
    }

    #[test]
    fn defaults_and_validation() {
        let cli = Cli::try_parse_from(["apiary"]).map_err(|e| e.to_string());
        let opts = cli.map(|c| c.opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(opts.secure_port, 6443);
        assert_eq!(opts.request_timeout, Duration::from_secs(60));
        assert!(opts.validate(&modes()).is_empty());

        let cli = Cli::try_parse_from([
            "apiary",
            "--tls-cert-file=/nonexistent",
            "--etcd-servers=localhost:2379",
            "--etcd-prefix=registry",
            "--runtime-config=example.dev/v1=maybe",
        ]);
        let opts = cli.map(|c| c.opts).unwrap_or_else(|e| panic!("{e}"));
        let errs = opts.validate(&modes());
        assert!(errs.contains(&OptionsError::TlsPair));
        assert!(errs.contains(&OptionsError::EtcdUrl("localhost:2379".into())));
        assert!(errs.contains(&OptionsError::EtcdPrefix("registry".into())));
        assert!(errs.contains(&OptionsError::RuntimeConfig("example.dev/v1=maybe".into())));
        assert_eq!(errs.len(), 5);
    }

    #[test]
    fn anonymous_auth_flag_forms() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(args)
                .map(|c| c.opts.anonymous_auth)
                .ok()
        };
        assert_eq!(parse(&["apiary"]), Some(true));
        assert_eq!(parse(&["apiary", "--anonymous-auth"]), Some(true));
        assert_eq!(parse(&["apiary", "--anonymous-auth=false"]), Some(false));
    }

    #[test]
    fn tls_flags() {
        let cli = Cli::try_parse_from([
            "apiary",
            "--tls-min-version=VersionTLS10",
            "--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "--tls-sni-cert-key=/nonexistent.crt,/nonexistent.key:a.example",
            "--tls-sni-cert-key=/nonexistent2.crt,/nonexistent2.key",
        ]);
        let opts = cli.map(|c| c.opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(opts.tls_sni_cert_key.len(), 2);
        assert_eq!(opts.tls_sni_cert_key[0].names, vec!["a.example"]);
        let errs = opts.validate(&modes());
        assert_eq!(errs.len(), 6, "{errs:?}");
        assert!(
            errs.contains(&OptionsError::Tls(TlsFlagError::InsecureVersion(
                "VersionTLS10".into()
            )))
        );
        assert!(
            errs.iter()
                .any(|e| e.to_string().contains("TLS_RSA_WITH_RC4_128_SHA")),
            "{errs:?}"
        );
        assert!(Cli::try_parse_from(["apiary", "--tls-sni-cert-key=only-one"]).is_err());
        let streams = Cli::try_parse_from(["apiary", "--http2-max-streams-per-connection=-1"])
            .map(|c| c.opts.http2_max_streams_per_connection)
            .ok();
        assert_eq!(streams, Some(-1));
    }

    #[test]
    fn audit_needs_a_policy_and_a_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let policy_flag = format!("--audit-policy-file={}", policy.display());
        let parse = |args: &[&str]| {
            Cli::try_parse_from(args)
                .map(|c| c.opts)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let opts = parse(&["apiary", &policy_flag]);
        assert!(opts.validate(&modes()).is_empty());
        assert!(matches!(opts.audit(), Ok(None)), "no log path: no audit");
        let opts = parse(&[
            "apiary",
            &policy_flag,
            "--audit-log-path=-",
            "--audit-log-maxsize=5",
            "--audit-log-maxbackup=3",
            "--audit-log-maxage=7",
        ]);
        let audit = opts
            .audit()
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("audit expected"));
        assert_eq!(audit.log.path, PathBuf::from("-"));
        assert_eq!(
            (
                audit.log.max_size_mb,
                audit.log.max_backups,
                audit.log.max_age_days
            ),
            (5, 3, 7)
        );
        std::fs::write(&policy, "kind: Policy\n").unwrap_or_else(|e| panic!("{e}"));
        let opts = parse(&["apiary", &policy_flag, "--audit-log-path=-"]);
        assert!(matches!(
            opts.validate(&modes()).as_slice(),
            [OptionsError::AuditPolicy(_)]
        ));
    }

    #[test]
    fn authentication_flags() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(args)
                .map(|c| c.opts)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let opts = parse(&["apiary"]);
        assert_eq!(
            opts.service_account_issuer,
            vec![crate::authn::serviceaccount::DEFAULT_ISSUER.to_string()]
        );
        assert!(opts.service_account_key_file.is_empty());
        assert!(opts.api_audiences.is_empty());
        let opts = parse(&[
            "apiary",
            "--service-account-issuer=https://a",
            "--service-account-issuer=https://b",
            "--service-account-key-file=/k1,/k2",
            "--service-account-key-file=/k3",
            "--api-audiences=x,y",
            "--token-auth-file=/nonexistent.csv",
        ]);
        assert_eq!(opts.service_account_issuer, vec!["https://a", "https://b"]);
        assert_eq!(
            opts.service_account_key_file,
            vec![
                PathBuf::from("/k1"),
                PathBuf::from("/k2"),
                PathBuf::from("/k3")
            ]
        );
        assert_eq!(opts.api_audiences, vec!["x", "y"]);
        assert!(
            parse(&["apiary", "--service-account-max-token-expiration=30m"])
                .validate(&modes())
                .contains(&OptionsError::MaxTokenExpiration)
        );
        assert!(
            parse(&["apiary", "--service-account-max-token-expiration=48h"])
                .validate(&modes())
                .is_empty()
        );
        let errs = opts.validate(&modes());
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs.contains(&OptionsError::MissingFile {
            flag: "--token-auth-file",
            path: "/nonexistent.csv".to_string()
        }));
    }

    #[test]
    fn etcd_compaction_interval() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(args)
                .map(|c| c.opts.etcd_compaction_interval)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse(&["apiary"]), Ok(Duration::from_secs(300)));
        assert_eq!(
            parse(&["apiary", "--etcd-compaction-interval=2s"]),
            Ok(Duration::from_secs(2))
        );
        assert_eq!(
            parse(&["apiary", "--etcd-compaction-interval=0"]),
            Ok(Duration::ZERO)
        );
        let err = parse(&["apiary", "--etcd-compaction-interval=-1m"]).unwrap_err();
        assert!(err.contains("can not be negative value"), "{err}");
        let err = parse(&["apiary", "--etcd-compaction-interval=5"]).unwrap_err();
        assert!(err.contains("time: missing unit in duration"), "{err}");
    }

    #[test]
    fn bad_duration_is_a_parse_error() {
        assert!(Cli::try_parse_from(["apiary", "--request-timeout=10"]).is_err());
    }
}
