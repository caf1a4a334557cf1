//! `--tls-min-version` and `--tls-cipher-suites`: the names kube-apiserver accepts (Go's IANA
//! cipher suite names and `VersionTLS1x`), limited to what is strong and what rustls implements.
//!
//! As in Go, the TLS 1.3 suites are always enabled; naming them in `--tls-cipher-suites` is
//! accepted and changes nothing. The list only chooses the TLS 1.2 suites.

use rustls::SupportedCipherSuite;
use rustls::crypto::ring::cipher_suite as cs;

/// A `--tls-min-version` value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsVersion {
    /// `VersionTLS12`, the default (as kube-apiserver's).
    #[default]
    Tls12,
    /// `VersionTLS13`.
    Tls13,
}

/// Why a TLS flag value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TlsFlagError {
    /// A version that is not a `VersionTLS1x` name.
    #[error(
        "--tls-min-version: unknown tls version {0:?}; possible values: VersionTLS12, VersionTLS13"
    )]
    UnknownVersion(String),
    /// TLS 1.0 or 1.1, which apiary refuses to speak.
    #[error(
        "--tls-min-version: {0} is not supported: TLS 1.0 and 1.1 are insecure; possible values: VersionTLS12, VersionTLS13"
    )]
    InsecureVersion(String),
    /// Cipher suites that are unknown, insecure or not implemented.
    #[error("--tls-cipher-suites: {}", .0.join("; "))]
    CipherSuites(Vec<String>),
}

impl TlsVersion {
    /// Parses a `--tls-min-version` value (empty is the default).
    pub fn parse(s: &str) -> Result<Self, TlsFlagError> {
        match s {
            "" | "VersionTLS12" => Ok(Self::Tls12),
            "VersionTLS13" => Ok(Self::Tls13),
            "VersionTLS10" | "VersionTLS11" => Err(TlsFlagError::InsecureVersion(s.to_string())),
            _ => Err(TlsFlagError::UnknownVersion(s.to_string())),
        }
    }

    /// The rustls protocol versions from this one up.
    pub fn versions(self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        static FROM_TLS12: [&rustls::SupportedProtocolVersion; 2] =
            [&rustls::version::TLS13, &rustls::version::TLS12];
        static FROM_TLS13: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
        match self {
            Self::Tls12 => &FROM_TLS12,
            Self::Tls13 => &FROM_TLS13,
        }
    }
}

/// The strong suites, by Go's names, that rustls implements: every TLS 1.3 suite and the TLS 1.2
/// ECDHE suites with AEAD ciphers. Also the default set when `--tls-cipher-suites` is unset.
pub const PREFERRED: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
    ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// Suites kube-apiserver accepts (Go's secure list) that use CBC, which rustls does not
/// implement.
const UNIMPLEMENTED: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
];

/// Go's insecure suites, which kube-apiserver accepts with a warning and apiary refuses.
const INSECURE: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

/// Resolves `--tls-cipher-suites` names to the suites to enable: the TLS 1.3 suites always, and
/// the named TLS 1.2 ones. Every name that is unknown, insecure or not implemented is reported.
/// An empty list gives an empty result (the defaults).
pub fn parse_cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>, TlsFlagError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut problems = Vec::new();
    let mut suites: Vec<SupportedCipherSuite> = PREFERRED
        .iter()
        .filter(|(_, s)| s.tls13().is_some())
        .map(|(_, s)| *s)
        .collect();
    for name in names {
        let name = name.trim();
        if let Some((_, suite)) = PREFERRED.iter().find(|(n, _)| *n == name) {
            if !suites.iter().any(|s| s.suite() == suite.suite()) {
                suites.push(*suite);
            }
        } else if INSECURE.contains(&name) {
            problems.push(format!("cipher suite {name} is insecure and not allowed"));
        } else if UNIMPLEMENTED.contains(&name) {
            problems.push(format!(
                "cipher suite {name} (CBC) is not supported by this server"
            ));
        } else {
            problems.push(format!(
                "Cipher suite {name} not supported or doesn't exist"
            ));
        }
    }
    if problems.is_empty() {
        Ok(suites)
    } else {
        Err(TlsFlagError::CipherSuites(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(TlsVersion::parse(""), Ok(TlsVersion::Tls12));
        assert_eq!(TlsVersion::parse("VersionTLS13"), Ok(TlsVersion::Tls13));
        assert!(matches!(
            TlsVersion::parse("VersionTLS11"),
            Err(TlsFlagError::InsecureVersion(_))
        ));
        assert!(matches!(
            TlsVersion::parse("TLS12"),
            Err(TlsFlagError::UnknownVersion(_))
        ));
        assert_eq!(TlsVersion::Tls13.versions().len(), 1);
    }

    #[test]
    fn cipher_suites() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_cipher_suites(&[]), Ok(Vec::new()));
        let suites = parse_cipher_suites(&names(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]))
            .unwrap_or_else(|e| panic!("{e}"));
        // The three TLS 1.3 suites and the one named.
        assert_eq!(suites.len(), 4);
        assert_eq!(suites.iter().filter(|s| s.tls13().is_none()).count(), 1);

        let err = parse_cipher_suites(&names(&[
            "TLS_RSA_WITH_RC4_128_SHA",
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            "NOPE",
            "TLS_AES_128_GCM_SHA256",
        ]));
        let Err(TlsFlagError::CipherSuites(problems)) = err else {
            panic!("expected errors, got {err:?}");
        };
        assert_eq!(problems.len(), 3);
        assert!(problems[0].contains("TLS_RSA_WITH_RC4_128_SHA"));
        assert!(problems[1].contains("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"));
        assert_eq!(
            problems[2],
            "Cipher suite NOPE not supported or doesn't exist"
        );
    }
}
