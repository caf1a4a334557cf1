//! x509 client-certificate authentication: the TLS layer has verified the chain against the
//! client CA; the leaf's Common Name is the user and its Organizations are the groups.

use x509_parser::prelude::{FromDer, X509Certificate};

use super::{Authenticator, AuthnOutcome, PeerCertificates, UserInfo};

/// Authenticates requests whose TLS connection presented a verified client certificate.
#[derive(Debug, Default, Clone, Copy)]
pub struct X509Authenticator;

/// Reads the user from a DER certificate: CN → name, O → groups.
pub fn user_from_certificate(der: &[u8]) -> Result<UserInfo, String> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| format!("invalid client certificate: {e}"))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        return Err("client certificate has no common name".to_string());
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

impl Authenticator for X509Authenticator {
    fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        let Some(PeerCertificates(chain)) = request.extensions.get::<PeerCertificates>() else {
            return AuthnOutcome::NoCredentials;
        };
        let Some(leaf) = chain.first() else {
            return AuthnOutcome::NoCredentials;
        };
        match user_from_certificate(leaf.as_ref()) {
            Ok(user) => AuthnOutcome::Authenticated(user),
            Err(reason) => AuthnOutcome::Failed(reason),
        }
    }
}
