//! Connection settings of the etcd backend, as given by kube-apiserver-style flags
//! (`--etcd-servers`, `--etcd-prefix`, `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`).

use std::path::PathBuf;
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};

use crate::errors::{Result, StorageError};

/// TLS material for talking to etcd. Paths are PEM files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EtcdTls {
    /// `--etcd-cafile`: the CA bundle that signed etcd's serving certificate.
    pub ca_file: Option<PathBuf>,
    /// `--etcd-certfile`: the client certificate presented to etcd.
    pub cert_file: Option<PathBuf>,
    /// `--etcd-keyfile`: the private key of the client certificate.
    pub key_file: Option<PathBuf>,
}

impl EtcdTls {
    /// True when no TLS file is configured.
    pub fn is_empty(&self) -> bool {
        self.ca_file.is_none() && self.cert_file.is_none() && self.key_file.is_none()
    }

    /// Reads the files into tonic's TLS options.
    fn load(&self) -> Result<TlsOptions> {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|e| StorageError::Internal {
                message: format!("reading etcd TLS file {}: {e}", path.display()),
            })
        };
        let mut tls = TlsOptions::new();
        if let Some(ca) = &self.ca_file {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            }
            (None, None) => {}
            _ => {
                return Err(StorageError::internal(
                    "--etcd-certfile and --etcd-keyfile must be given together",
                ));
            }
        }
        Ok(tls)
    }
}

/// Everything needed to build an [`EtcdBackend`](super::EtcdBackend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// `--etcd-servers`: client URLs (`http://` or `https://`).
    pub endpoints: Vec<String>,
    /// `--etcd-prefix`: the key prefix the server builds its keys under (for example with
    /// [`ResourceKeys::new`](crate::keys::ResourceKeys::new)). The backend stores full keys as
    /// given and does not add this prefix itself.
    pub prefix: String,
    /// TLS files; required for `https://` endpoints signed by a private CA.
    pub tls: EtcdTls,
    /// Timeout of one unary request (get, range, txn, compact).
    pub request_timeout: Duration,
    /// How long reads keep retrying while etcd is unavailable (with exponential backoff).
    pub read_retry_budget: Duration,
    /// How long a watch keeps trying to re-establish itself after the connection to etcd is
    /// lost before it ends with `Unavailable` (its consumer then relists).
    pub watch_reconnect_budget: Duration,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        Self {
            endpoints: vec!["http://127.0.0.1:2379".to_string()],
            prefix: crate::keys::DEFAULT_PREFIX.to_string(),
            tls: EtcdTls::default(),
            request_timeout: Duration::from_secs(10),
            read_retry_budget: Duration::from_secs(5),
            watch_reconnect_budget: Duration::from_secs(60),
        }
    }
}

impl EtcdConfig {
    /// A configuration for the given endpoints with default settings otherwise.
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Builds the configuration from kube-apiserver-style flag values: `servers` is the
    /// comma-separated `--etcd-servers`, `prefix` is `--etcd-prefix`, and the three paths are
    /// `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`.
    pub fn from_flags(
        servers: &str,
        prefix: &str,
        ca_file: Option<PathBuf>,
        cert_file: Option<PathBuf>,
        key_file: Option<PathBuf>,
    ) -> Self {
        Self {
            endpoints: Self::parse_endpoints(servers),
            prefix: prefix.to_string(),
            tls: EtcdTls {
                ca_file,
                cert_file,
                key_file,
            },
            ..Self::default()
        }
    }

    /// Parses a comma-separated `--etcd-servers` value.
    pub fn parse_endpoints(servers: &str) -> Vec<String> {
        servers
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Creates the client. Connections are established lazily, so this succeeds while etcd is
    /// still starting; the first request reports `Unavailable` if it cannot be reached.
    pub(crate) async fn connect(&self) -> Result<Client> {
        if self.endpoints.is_empty() {
            return Err(StorageError::internal("no etcd endpoints configured"));
        }
        let mut options = ConnectOptions::new()
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true)
            .with_connect_timeout(Duration::from_secs(3));
        let wants_tls =
            !self.tls.is_empty() || self.endpoints.iter().any(|e| e.starts_with("https://"));
        if wants_tls {
            options = options.with_tls(self.tls.load()?);
        }
        Client::connect(&self.endpoints, Some(options))
            .await
            .map_err(|e| StorageError::unavailable(format!("connecting to etcd: {e}")))
    }
}
