//! Builds the authenticators' configuration from the command line: the token file and the
//! service-account keys, issuers and audiences (with the signing key generated under
//! `--data-dir` when none is given).

use std::path::Path;
use std::sync::Arc;

use super::serviceaccount::keys::{self, KeyError, PublicKey, SigningKey};
use super::serviceaccount::{DEFAULT_ISSUER, ServiceAccountConfig};
use super::tokenfile::{TokenFileAuthenticator, TokenFileError};
use crate::genericserver::options::ServerOptions;

/// What the authenticator union is built from, beyond x509 and anonymous.
#[derive(Default)]
pub struct AuthenticationConfig {
    /// `--token-auth-file`.
    pub token_file: Option<Arc<TokenFileAuthenticator>>,
    /// Service-account tokens.
    pub service_accounts: Option<ServiceAccountConfig>,
}

/// Why the authentication configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AuthnConfigError {
    /// The token file is unreadable or malformed.
    #[error("--token-auth-file: {0}")]
    TokenFile(#[from] TokenFileError),
    /// A service-account key is unreadable or malformed.
    #[error("service-account keys: {0}")]
    Keys(#[from] KeyError),
    /// A key could not be used.
    #[error("service-account keys: {0}")]
    Key(String),
}

impl AuthenticationConfig {
    /// Reads the files the options name. Blocking (it may generate an RSA key): run it off the
    /// async workers.
    pub fn load(options: &ServerOptions) -> Result<Self, AuthnConfigError> {
        let mut issuers: Vec<String> = options
            .service_account_issuer
            .iter()
            .filter(|i| !i.is_empty())
            .cloned()
            .collect();
        if issuers.is_empty() {
            issuers.push(DEFAULT_ISSUER.to_string());
        }
        let api_audiences = if options.api_audiences.is_empty() {
            issuers.clone()
        } else {
            options.api_audiences.clone()
        };
        let token_file = match &options.token_auth_file {
            Some(path) => Some(Arc::new(TokenFileAuthenticator::from_file(
                path,
                api_audiences.clone(),
            )?)),
            None => None,
        };
        let mut service_accounts = service_account_config(
            &options.data_dir,
            options.service_account_signing_key_file.as_deref(),
            &options.service_account_key_file,
            issuers,
            api_audiences,
        )?;
        service_accounts.jwks_uri = options.service_account_jwks_uri.clone();
        service_accounts.max_expiration_seconds = options
            .service_account_max_token_expiration
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let service_accounts = Some(service_accounts);
        Ok(Self {
            token_file,
            service_accounts,
        })
    }
}

/// The service-account configuration: the signing key given or generated, and the verifying
/// keys (those given, then the signing key's public half).
pub fn service_account_config(
    data_dir: &Path,
    signing_key_file: Option<&Path>,
    key_files: &[std::path::PathBuf],
    issuers: Vec<String>,
    api_audiences: Vec<String>,
) -> Result<ServiceAccountConfig, AuthnConfigError> {
    let private = match signing_key_file {
        Some(path) => keys::load_private_key(path)?,
        None => keys::ensure_generated(data_dir)?,
    };
    let signing = SigningKey::new(&private).map_err(AuthnConfigError::Key)?;
    let mut public_keys = Vec::new();
    for path in key_files {
        for key in keys::load_public_keys(path)? {
            public_keys.push(PublicKey::new(key).map_err(AuthnConfigError::Key)?);
        }
    }
    if !public_keys.iter().any(|k| k.kid == signing.kid) {
        public_keys.push(PublicKey::new(signing.public.clone()).map_err(AuthnConfigError::Key)?);
    }
    Ok(ServiceAccountConfig {
        issuers,
        api_audiences,
        signing,
        public_keys,
        jwks_uri: None,
        max_expiration_seconds: None,
    })
}
