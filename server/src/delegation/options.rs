//! The flags of request-header authentication and of delegated authentication and
//! authorization, named and defaulted as k8s.io/apiserver's `RequestHeaderAuthenticationOptions`,
//! `DelegatingAuthenticationOptions` and `DelegatingAuthorizationOptions`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::authn::requestheader::{
    DEFAULT_EXTRA_HEADERS_PREFIX, DEFAULT_GROUP_HEADER, DEFAULT_USERNAME_HEADER,
};
use crate::genericserver::duration::parse_duration;

/// The request-header and delegation flags (flattened into
/// [`ServerOptions`](crate::ServerOptions)).
#[derive(Args, Debug, Clone)]
pub struct DelegationOptions {
    /// Root certificate bundle to verify client certificates on incoming requests before
    /// trusting usernames in headers specified by --requestheader-username-headers. (Default
    /// on a server with its own CA: the front-proxy CA generated under --data-dir; on a
    /// delegating server: the extension-apiserver-authentication ConfigMap's.)
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// List of client certificate common names to allow to provide usernames in headers
    /// specified by --requestheader-username-headers. If empty, any client certificate
    /// validated by the authorities in --requestheader-client-ca-file is allowed.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// List of request headers to inspect for usernames. X-Remote-User is common.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_USERNAME_HEADER)]
    pub requestheader_username_headers: Vec<String>,
    /// List of request headers to inspect for UIDs. X-Remote-Uid is suggested.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,
    /// List of request headers to inspect for groups. X-Remote-Group is suggested.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_GROUP_HEADER)]
    pub requestheader_group_headers: Vec<String>,
    /// List of request header prefixes to inspect. X-Remote-Extra- is suggested.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_EXTRA_HEADERS_PREFIX)]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// tokenreviews.authentication.k8s.io. Makes this server a delegating (aggregated) one.
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// If false, the authentication-kubeconfig will be used to lookup missing authentication
    /// configuration from the cluster.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub authentication_skip_lookup: bool,
    /// If true, failures to look up missing authentication configuration from the cluster are
    /// not considered fatal. Note that this can result in authentication that treats all
    /// requests as anonymous.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub authentication_tolerate_lookup_failure: bool,
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// subjectaccessreviews.authorization.k8s.io. Makes authorization delegated (and
    /// --authorization-mode unused).
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// A list of HTTP paths to skip during authorization, i.e. these are authorized without
    /// contacting the 'core' kubernetes server.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
}

/// A refused delegation flag, worded as k8s.io/apiserver words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegationFlagError {
    /// A list flag has an entry of white space only.
    #[error("empty value in {0:?}")]
    Empty(&'static str),
}

impl DelegationOptions {
    /// Whether authentication is delegated (`--authentication-kubeconfig`).
    pub fn delegated_authentication(&self) -> bool {
        self.authentication_kubeconfig.is_some()
    }

    /// Whether authorization is delegated (`--authorization-kubeconfig`).
    pub fn delegated_authorization(&self) -> bool {
        self.authorization_kubeconfig.is_some()
    }

    /// Whether the server runs as an aggregated API server: either delegation flag is given.
    pub fn is_delegating(&self) -> bool {
        self.delegated_authentication() || self.delegated_authorization()
    }

    /// Checks the list flags (`checkForWhiteSpaceOnly`); every problem is returned.
    pub fn validate(&self) -> Vec<DelegationFlagError> {
        let lists: [(&'static str, &Vec<String>); 5] = [
            (
                "requestheader-username-headers",
                &self.requestheader_username_headers,
            ),
            (
                "requestheader-group-headers",
                &self.requestheader_group_headers,
            ),
            (
                "requestheader-extra-headers-prefix",
                &self.requestheader_extra_headers_prefix,
            ),
            (
                "requestheader-allowed-names",
                &self.requestheader_allowed_names,
            ),
            ("requestheader-uid-headers", &self.requestheader_uid_headers),
        ];
        lists
            .into_iter()
            .filter(|(_, values)| values.iter().any(|v| v.trim().is_empty()))
            .map(|(flag, _)| DelegationFlagError::Empty(flag))
            .collect()
    }

    /// The request-header configuration the flags give, with `client_ca` as the CA bundle.
    pub fn request_header_config(
        &self,
        client_ca: Vec<u8>,
    ) -> crate::authn::requestheader::RequestHeaderConfig {
        crate::authn::requestheader::RequestHeaderConfig {
            client_ca,
            allowed_names: self.requestheader_allowed_names.clone(),
            username_headers: self.requestheader_username_headers.clone(),
            uid_headers: self.requestheader_uid_headers.clone(),
            group_headers: self.requestheader_group_headers.clone(),
            extra_headers_prefix: self.requestheader_extra_headers_prefix.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        options: DelegationOptions,
    }

    fn parse(args: &[&str]) -> DelegationOptions {
        Cli::try_parse_from(std::iter::once("server").chain(args.iter().copied()))
            .map(|c| c.options)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn defaults_are_the_delegating_servers() {
        let o = parse(&[]);
        assert_eq!(o.requestheader_username_headers, ["X-Remote-User"]);
        assert_eq!(o.requestheader_group_headers, ["X-Remote-Group"]);
        assert_eq!(o.requestheader_extra_headers_prefix, ["X-Remote-Extra-"]);
        assert!(o.requestheader_allowed_names.is_empty() && o.requestheader_uid_headers.is_empty());
        assert_eq!(
            o.authentication_token_webhook_cache_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            o.authorization_webhook_cache_authorized_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            o.authorization_webhook_cache_unauthorized_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            o.authorization_always_allow_paths,
            ["/healthz", "/readyz", "/livez"]
        );
        assert!(!o.authentication_skip_lookup && !o.authentication_tolerate_lookup_failure);
        assert!(!o.is_delegating());
        assert!(o.validate().is_empty());
    }

    #[test]
    fn flags() {
        let o = parse(&[
            "--authentication-kubeconfig=/a",
            "--authentication-token-webhook-cache-ttl=1m",
            "--authentication-tolerate-lookup-failure",
            "--requestheader-allowed-names=front-proxy-client,other",
            "--requestheader-username-headers=X-A, ",
            "--authorization-always-allow-paths=/healthz,/debug/*",
        ]);
        assert!(o.delegated_authentication() && !o.delegated_authorization() && o.is_delegating());
        assert_eq!(
            o.authentication_token_webhook_cache_ttl,
            Duration::from_secs(60)
        );
        assert!(o.authentication_tolerate_lookup_failure);
        assert_eq!(
            o.requestheader_allowed_names,
            ["front-proxy-client", "other"]
        );
        assert_eq!(o.authorization_always_allow_paths, ["/healthz", "/debug/*"]);
        assert_eq!(
            o.validate()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["empty value in \"requestheader-username-headers\""]
        );
        let config = o.request_header_config(b"CA".to_vec());
        assert_eq!(config.allowed_names, ["front-proxy-client", "other"]);
        assert_eq!(config.client_ca, b"CA");
    }
}
