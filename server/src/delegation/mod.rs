//! An apiary-built server as an aggregated API server: it trusts the front proxy (request-header
//! authentication, [`crate::authn::requestheader`]) and delegates the rest of authentication
//! and authorization to the main server, as k8s.io/apiserver's delegating options do.
//!
//! - [`options`]: the flags (`--requestheader-*`, `--authentication-kubeconfig`,
//!   `--authorization-kubeconfig` and their caches, `--authorization-always-allow-paths`).
//! - [`kubeconfig`]: the client of the main server a kubeconfig file describes.
//! - [`tokenreview`]: bearer tokens checked with `TokenReview`s.
//! - [`authorizer`]: requests authorized with `SubjectAccessReview`s, and the always-allowed
//!   paths.
//! - [`authinfo`]: the `kube-system/extension-apiserver-authentication` ConfigMap the main
//!   server publishes and aggregated servers read (and watch) when the flags are absent.
//! - [`cache`]: the time-to-live cache of the reviews' answers.
//!
//! [`Delegation::load`] turns the flags into what the [`Server`](crate::Server) builder
//! installs.

pub mod authinfo;
pub mod authorizer;
pub mod cache;
pub mod kubeconfig;
pub mod options;
pub mod tokenreview;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::authinfo::ClusterAuthenticationInfo;
use self::authorizer::{AlwaysAllowPaths, DelegatedAuthorizer};
use self::kubeconfig::{KubeClient, KubeClientError};
use self::options::DelegationOptions;
use self::tokenreview::TokenReviewAuthenticator;
use crate::authn::requestheader::{RequestHeaderAuthenticator, RequestHeaderConfig};
use crate::authz::Authorizer;

/// Why delegation could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    /// A kubeconfig cannot be used.
    #[error("{flag}: {source}")]
    Kubeconfig {
        /// The flag.
        flag: &'static str,
        /// The cause.
        source: KubeClientError,
    },
    /// A CA file cannot be read.
    #[error("{flag}: reading {path}: {source}")]
    Read {
        /// The flag.
        flag: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The ConfigMap could not be read (and `--authentication-tolerate-lookup-failure` is off).
    #[error(
        "unable to load configmap based request-header-client-ca-file: {0}; to fix, either grant the authentication kubeconfig's user permission to read configmap/extension-apiserver-authentication in kube-system (the extension-apiserver-authentication-reader role), or set --authentication-tolerate-lookup-failure"
    )]
    Lookup(String),
    /// The request-header CA cannot be used.
    #[error(transparent)]
    RequestHeader(#[from] crate::authn::requestheader::RequestHeaderError),
    /// The authorizer could not start.
    #[error(transparent)]
    Authorizer(#[from] authorizer::AuthorizerStartError),
    /// The client CA file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// What a delegating server's authentication and authorization are made of.
pub struct Delegation {
    /// The request-header authenticator (tried first).
    pub request_header: Arc<RequestHeaderAuthenticator>,
    /// Bearer tokens checked with `TokenReview`s (with `--authentication-kubeconfig`).
    pub tokens: Option<Arc<TokenReviewAuthenticator>>,
    /// The always-allowed paths and the `SubjectAccessReview` authorizer (with
    /// `--authorization-kubeconfig`), tried after `system:masters`; `None` when authorization
    /// is not delegated.
    pub authorizers: Option<Vec<Arc<dyn Authorizer>>>,
    /// The delegated authorizer, whose cache the filter chain fills before authorizing.
    pub delegated_authorizer: Option<Arc<DelegatedAuthorizer>>,
    /// The client CA file TLS verifies client certificates against: `--client-ca-file`, or the
    /// ConfigMap's `client-ca-file` and the server's own generated CA (which signs its admin
    /// kubeconfig) written under the data directory (kept current by [`watch`](Self::watch));
    /// `None` when neither is known.
    pub client_ca_file: Option<PathBuf>,
    /// The client of `--authentication-kubeconfig`, and whether the ConfigMap is watched.
    lookup: Option<(KubeClient, bool)>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("request_header", &self.request_header)
            .field("tokens", &self.tokens.is_some())
            .field("client_ca_file", &self.client_ca_file)
            .finish_non_exhaustive()
    }
}

/// The file the ConfigMap's client CA is written to under the data directory.
pub fn delegated_client_ca_path(data_dir: &Path) -> PathBuf {
    data_dir.join("pki").join("delegated-client-ca.crt")
}

fn read_file(flag: &'static str, path: &Path) -> Result<Vec<u8>, DelegationError> {
    std::fs::read(path).map_err(|source| DelegationError::Read {
        flag,
        path: path.display().to_string(),
        source,
    })
}

fn client(flag: &'static str, path: &Path) -> Result<KubeClient, DelegationError> {
    KubeClient::from_file(path).map_err(|source| DelegationError::Kubeconfig { flag, source })
}

impl Delegation {
    /// Request-header authentication from the flags alone (a server that does not delegate,
    /// such as the main server): `default_ca` is the request-header CA when
    /// `--requestheader-client-ca-file` is not given (the generated front-proxy CA), with
    /// `default_names` as the allowed names unless `--requestheader-allowed-names` is given.
    pub fn request_header_only(
        options: &DelegationOptions,
        default_ca: Option<(Vec<u8>, Vec<String>)>,
    ) -> Result<Arc<RequestHeaderAuthenticator>, DelegationError> {
        let config = match (&options.requestheader_client_ca_file, default_ca) {
            (Some(path), _) => {
                options.request_header_config(read_file("--requestheader-client-ca-file", path)?)
            }
            (None, Some((ca, names))) => {
                let mut config = options.request_header_config(ca);
                if options.requestheader_allowed_names.is_empty() {
                    config.allowed_names = names;
                }
                config
            }
            (None, None) => RequestHeaderConfig::default(),
        };
        Ok(Arc::new(RequestHeaderAuthenticator::new(config)?))
    }

    /// A delegating server's authentication and authorization from the flags; what they leave
    /// out is read from the ConfigMap through `--authentication-kubeconfig` (unless
    /// `--authentication-skip-lookup`), its client CA written under `data_dir`.
    pub async fn load(
        options: &DelegationOptions,
        client_ca_file: Option<&Path>,
        data_dir: &Path,
    ) -> Result<Self, DelegationError> {
        let authn_client = match &options.authentication_kubeconfig {
            Some(path) => Some(client("--authentication-kubeconfig", path)?),
            None => None,
        };
        let request_header = Self::request_header_only(options, None)?;
        let needs_lookup =
            client_ca_file.is_none() || options.requestheader_client_ca_file.is_none();
        let mut lookup = None;
        let mut client_ca = client_ca_file.map(Path::to_path_buf);
        if let Some(authn) = &authn_client
            && needs_lookup
            && !options.authentication_skip_lookup
        {
            match authn
                .get_json(&format!("{}/{}", authinfo::CONFIGMAPS, authinfo::NAME))
                .await
            {
                Ok(configmap) => {
                    let info = ClusterAuthenticationInfo::from_data(
                        &configmap.unwrap_or_default()["data"],
                    );
                    let written =
                        apply_info(options, client_ca_file, data_dir, &request_header, &info)?;
                    if client_ca.is_none() {
                        client_ca = written;
                    }
                    lookup = Some((authn.clone(), true));
                }
                Err(e) if options.authentication_tolerate_lookup_failure => {
                    tracing::warn!(error = %e, "Error looking up in-cluster authentication configuration; continuing without it");
                    lookup = Some((authn.clone(), true));
                }
                Err(e) => return Err(DelegationError::Lookup(e.to_string())),
            }
        }
        let tokens = authn_client.map(|c| {
            TokenReviewAuthenticator::new(c, options.authentication_token_webhook_cache_ttl)
        });
        let (authorizers, delegated_authorizer) = match &options.authorization_kubeconfig {
            Some(path) => {
                let always_allowed =
                    AlwaysAllowPaths::new(&options.authorization_always_allow_paths);
                let delegated = DelegatedAuthorizer::new(
                    client("--authorization-kubeconfig", path)?,
                    always_allowed.clone(),
                    options.authorization_webhook_cache_authorized_ttl,
                    options.authorization_webhook_cache_unauthorized_ttl,
                )?;
                let paths: Arc<dyn Authorizer> = Arc::new(always_allowed);
                (
                    Some(vec![paths, Arc::clone(&delegated) as Arc<dyn Authorizer>]),
                    Some(delegated),
                )
            }
            None => (None, None),
        };
        Ok(Self {
            request_header,
            tokens,
            authorizers,
            delegated_authorizer,
            client_ca_file: client_ca,
            lookup,
        })
    }

    /// Watches the ConfigMap (when it was looked up) and applies every change: a rotated
    /// request-header CA or new headers take effect for the next request, a rotated client CA
    /// for the next connection. Runs until dropped; spawn it.
    pub fn watch(
        &self,
        options: DelegationOptions,
        client_ca_file: Option<PathBuf>,
        data_dir: PathBuf,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        let (client, _) = self.lookup.clone()?;
        let request_header = Arc::clone(&self.request_header);
        Some(async move {
            client
                .watch_object(authinfo::CONFIGMAPS, authinfo::NAME, move |object| {
                    let data = object.map(|o| o["data"].clone()).unwrap_or_default();
                    let info = ClusterAuthenticationInfo::from_data(&data);
                    if let Err(e) = apply_info(
                        &options,
                        client_ca_file.as_deref(),
                        &data_dir,
                        &request_header,
                        &info,
                    ) {
                        tracing::warn!(error = %e, "applying configmap/extension-apiserver-authentication");
                    }
                })
                .await;
        })
    }
}

/// Applies what the ConfigMap says where the flags say nothing: the request-header settings,
/// and the client CA written to its file under `data_dir` (returned when written).
fn apply_info(
    options: &DelegationOptions,
    client_ca_file: Option<&Path>,
    data_dir: &Path,
    request_header: &RequestHeaderAuthenticator,
    info: &ClusterAuthenticationInfo,
) -> Result<Option<PathBuf>, DelegationError> {
    if options.requestheader_client_ca_file.is_none() {
        request_header.set(info.request_header.clone().unwrap_or_default())?;
    }
    if client_ca_file.is_some() {
        return Ok(None);
    }
    // The main server's client CA, and the server's own generated CA, so that the admin
    // kubeconfig it writes under the data directory keeps working.
    let own =
        std::fs::read_to_string(crate::pki::PkiPaths::new(data_dir).ca_cert).unwrap_or_default();
    let mut bundle = info.client_ca.clone();
    if !bundle.is_empty() && !bundle.ends_with('\n') {
        bundle.push('\n');
    }
    bundle.push_str(&own);
    if bundle.trim().is_empty() {
        return Ok(None);
    }
    let path = delegated_client_ca_path(data_dir);
    if std::fs::read(&path).ok().as_deref() != Some(bundle.as_bytes()) {
        let write_err = |source| DelegationError::Write {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        let temporary = path.with_extension("tmp");
        std::fs::write(&temporary, &bundle).map_err(write_err)?;
        std::fs::rename(&temporary, &path).map_err(write_err)?;
    }
    Ok(Some(path))
}
