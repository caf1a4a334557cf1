//! SNI certificates (`--tls-sni-cert-key`) and the choice of the certificate for a connection,
//! as kube-apiserver's `dynamiccertificates` named certificates: explicit names win over names
//! read from the certificate, earlier flags win over later ones, an exact name wins over a
//! wildcard, and a client that sends no server name gets the certificate named by the local IP
//! address it connected to, if any. Everything else gets the default serving certificate.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// One `--tls-sni-cert-key` value: `cert,key` or `cert,key:name1,name2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SniCertKey {
    /// The certificate chain file.
    pub cert: PathBuf,
    /// The key file.
    pub key: PathBuf,
    /// The domain patterns (or IP addresses) given explicitly; empty means the names of the
    /// certificate.
    pub names: Vec<String>,
}

impl std::str::FromStr for SniCertKey {
    type Err = String;

    /// Parses the flag value as kube's `NamedCertKey`.
    fn from_str(value: &str) -> Result<Self, String> {
        let (keycert, names) = match value.split_once(':') {
            Some((keycert, names)) => {
                let names = names.trim();
                if names.is_empty() {
                    return Err("empty names list is not allowed".to_string());
                }
                (
                    keycert.trim(),
                    names.split(',').map(|n| n.trim().to_string()).collect(),
                )
            }
            None => (value.trim(), Vec::new()),
        };
        let parts: Vec<&str> = keycert.split(',').collect();
        let [cert, key] = parts.as_slice() else {
            return Err("expected comma separated certificate and key file paths".to_string());
        };
        Ok(Self {
            cert: PathBuf::from(cert.trim()),
            key: PathBuf::from(key.trim()),
            names,
        })
    }
}

/// The names a certificate serves when none are given (kube's `getCertificateNames`): the
/// Common Name when it is a DNS name (possibly a wildcard) and not an IP address, then the DNS
/// and IP subject alternative names.
pub fn certificate_names(leaf_der: &[u8]) -> Vec<String> {
    let Ok((_, cert)) = X509Certificate::from_der(leaf_der) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    if let Some(cn) = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
    {
        let is_ip = cn.parse::<IpAddr>().is_ok();
        let is_domain = cn == "*"
            || apimachinery::validation::is_dns1123_subdomain(cn.strip_prefix("*.").unwrap_or(cn))
                .is_empty();
        if !is_ip && is_domain {
            names.push(cn.to_string());
        }
    }
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let GeneralName::DNSName(dns) = name {
                names.push((*dns).to_string());
            }
        }
        for name in &san.value.general_names {
            if let GeneralName::IPAddress(bytes) = name {
                let ip = match bytes.len() {
                    4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                    16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                    _ => None,
                };
                if let Some(ip) = ip {
                    names.push(ip.to_string());
                }
            }
        }
    }
    names
}

/// The certificates of the secure port: the default one and those chosen by name.
#[derive(Debug)]
pub struct CertStore {
    default: Arc<CertifiedKey>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

impl CertStore {
    /// Builds the name map from the SNI certificates in flag order, each with its explicit
    /// names (kube's `BuildNamedCertificates`).
    pub fn new(default: Arc<CertifiedKey>, sni: &[(Arc<CertifiedKey>, Vec<String>)]) -> Self {
        let mut by_name = HashMap::new();
        let mut explicit = HashMap::new();
        // Backwards, so that earlier certificates take precedence.
        for (cert, names) in sni.iter().rev() {
            if names.is_empty() {
                let leaf = cert.cert.first().map(|c| c.as_ref()).unwrap_or_default();
                for name in certificate_names(leaf) {
                    by_name.insert(name.to_ascii_lowercase(), Arc::clone(cert));
                }
            } else {
                for name in names {
                    explicit.insert(name.to_ascii_lowercase(), Arc::clone(cert));
                }
            }
        }
        // Explicit names override names read from certificates.
        by_name.extend(explicit);
        Self { default, by_name }
    }

    /// The certificate for a client that asked for `server_name` (SNI) over a connection to
    /// `local_ip`: Go's `NameToCertificate` lookup (exact, then the first label replaced by
    /// `*`), the local IP when there is no server name, else the default.
    pub fn lookup(&self, server_name: Option<&str>, local_ip: Option<IpAddr>) -> Arc<CertifiedKey> {
        let found = match server_name.filter(|n| !n.is_empty()) {
            Some(name) => {
                let name = name.to_ascii_lowercase();
                self.by_name.get(&name).or_else(|| {
                    let (_, rest) = name.split_once('.').unwrap_or(("", ""));
                    let wildcard = if rest.is_empty() {
                        "*".to_string()
                    } else {
                        format!("*.{rest}")
                    };
                    self.by_name.get(&wildcard)
                })
            }
            None => local_ip.and_then(|ip| self.by_name.get(&ip.to_string())),
        };
        Arc::clone(found.unwrap_or(&self.default))
    }
}

/// The rustls certificate resolver of connections to one local address; the store behind it is
/// swapped when a certificate file changes.
#[derive(Debug)]
pub struct SniResolver {
    /// The current certificates.
    pub store: Arc<RwLock<Arc<CertStore>>>,
    /// The local address the connection was accepted on.
    pub local_ip: Option<IpAddr>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let store = Arc::clone(&self.store.read());
        Some(store.lookup(hello.server_name(), self.local_ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(cn: &str, sans: &[&str]) -> Arc<CertifiedKey> {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let c = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        let ck = super::super::certified_key(
            c.pem().as_bytes(),
            std::path::Path::new("c"),
            key.serialize_pem().as_bytes(),
            std::path::Path::new("k"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        Arc::new(ck)
    }

    #[test]
    fn parses_flag_values() {
        let v: SniCertKey = "a.crt,a.key".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.cert, PathBuf::from("a.crt"));
        assert!(v.names.is_empty());
        let v: SniCertKey = "a.crt, a.key:*.foo.com, foo.com"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.key, PathBuf::from("a.key"));
        assert_eq!(v.names, vec!["*.foo.com", "foo.com"]);
        assert!("a.crt,a.key:".parse::<SniCertKey>().is_err());
        assert!("a.crt".parse::<SniCertKey>().is_err());
        assert!("a,b,c".parse::<SniCertKey>().is_err());
    }

    #[test]
    fn names_from_the_certificate() {
        let c = cert("www.example.com", &["example.com", "10.0.0.1"]);
        assert_eq!(
            certificate_names(c.cert[0].as_ref()),
            vec!["www.example.com", "example.com", "10.0.0.1"]
        );
        // An IP common name is not used.
        let c = cert("10.0.0.2", &["a.example"]);
        assert_eq!(certificate_names(c.cert[0].as_ref()), vec!["a.example"]);
    }

    #[test]
    fn lookup_precedence() {
        let default = cert("default", &["localhost"]);
        let wild = cert("*.foo.com", &[]);
        let exact = cert("x", &["a.foo.com"]);
        let first = cert("first", &["dup.com"]);
        let second = cert("second", &["dup.com"]);
        let explicit = cert("explicit", &["other.com"]);
        let by_ip = cert("ip", &["127.0.0.2"]);
        let store = CertStore::new(
            Arc::clone(&default),
            &[
                (Arc::clone(&wild), vec![]),
                (Arc::clone(&exact), vec![]),
                (Arc::clone(&first), vec![]),
                (Arc::clone(&second), vec![]),
                (Arc::clone(&explicit), vec!["dup.com".into()]),
                (Arc::clone(&by_ip), vec![]),
            ],
        );
        let is = |a: &Arc<CertifiedKey>, b: &Arc<CertifiedKey>| Arc::ptr_eq(a, b);
        assert!(is(&store.lookup(Some("b.foo.com"), None), &wild));
        assert!(is(&store.lookup(Some("A.FOO.com"), None), &exact));
        assert!(is(&store.lookup(Some("dup.com"), None), &explicit));
        assert!(is(&store.lookup(Some("nothing.org"), None), &default));
        assert!(is(&store.lookup(None, None), &default));
        assert!(is(
            &store.lookup(
                None,
                Some("127.0.0.2".parse().unwrap_or_else(|e| panic!("{e}")))
            ),
            &by_ip
        ));
        // Without an explicit override, the earlier certificate wins.
        let store = CertStore::new(
            Arc::clone(&default),
            &[(Arc::clone(&first), vec![]), (Arc::clone(&second), vec![])],
        );
        assert!(is(&store.lookup(Some("dup.com"), None), &first));
    }
}
