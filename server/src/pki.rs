//! The credentials apiary creates on first start under `--data-dir`: a self-signed CA, a
//! serving certificate for the loopback names and the bind address, an admin client
//! certificate (CN `admin`, O `system:masters`) and `admin.kubeconfig`; and the front proxy's
//! credentials: a second CA (`front-proxy-ca`, which request-header authentication trusts) and
//! the client certificate the aggregator presents to aggregated API servers (CN
//! `front-proxy-client`), as kubeadm lays them out. Later starts reuse them.

use std::fs;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// Why credentials could not be created or read.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: io::Error,
    },
    /// Certificate generation or parsing failed.
    #[error("certificate {what}: {source}")]
    Cert {
        /// Which certificate.
        what: &'static str,
        /// The cause.
        source: rcgen::Error,
    },
}

/// Paths of the generated credentials.
#[derive(Debug, Clone)]
pub struct PkiPaths {
    /// The CA certificate.
    pub ca_cert: PathBuf,
    /// The CA key.
    pub ca_key: PathBuf,
    /// The serving certificate.
    pub serving_cert: PathBuf,
    /// The serving key.
    pub serving_key: PathBuf,
    /// The admin client certificate.
    pub admin_cert: PathBuf,
    /// The admin client key.
    pub admin_key: PathBuf,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// The front proxy's CA certificate.
    pub front_proxy_ca_cert: PathBuf,
    /// The front proxy's CA key.
    pub front_proxy_ca_key: PathBuf,
    /// The front proxy's client certificate.
    pub front_proxy_client_cert: PathBuf,
    /// The front proxy's client key.
    pub front_proxy_client_key: PathBuf,
}

impl PkiPaths {
    /// The layout under a data directory.
    pub fn new(data_dir: &Path) -> Self {
        let pki = data_dir.join("pki");
        Self {
            ca_cert: pki.join("ca.crt"),
            ca_key: pki.join("ca.key"),
            serving_cert: pki.join("apiserver.crt"),
            serving_key: pki.join("apiserver.key"),
            admin_cert: pki.join("admin.crt"),
            admin_key: pki.join("admin.key"),
            kubeconfig: data_dir.join("admin.kubeconfig"),
            front_proxy_ca_cert: pki.join("front-proxy-ca.crt"),
            front_proxy_ca_key: pki.join("front-proxy-ca.key"),
            front_proxy_client_cert: pki.join("front-proxy-client.crt"),
            front_proxy_client_key: pki.join("front-proxy-client.key"),
        }
    }
}

fn read(path: &Path) -> Result<String, PkiError> {
    fs::read_to_string(path).map_err(|source| PkiError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn write(path: &Path, contents: &str, private: bool) -> Result<(), PkiError> {
    let io_err = |source| PkiError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        // The directory of the CA's key: the owner's only.
        storage::private_files::create_dir(dir).map_err(io_err)?;
    }
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, contents).map_err(io_err)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600)).map_err(io_err)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    fs::rename(&tmp, path).map_err(io_err)
}

fn cert_err(what: &'static str) -> impl Fn(rcgen::Error) -> PkiError {
    move |source| PkiError::Cert { what, source }
}

/// Ensures the CA, serving (when `generate_serving`) and admin credentials exist, creating what
/// is missing. Returns their paths.
pub fn ensure(data_dir: &Path, bind: IpAddr, generate_serving: bool) -> Result<PkiPaths, PkiError> {
    let paths = PkiPaths::new(data_dir);
    let (ca_pem, ca_key) = ensure_ca(
        (&paths.ca_cert, &paths.ca_key),
        "apiary-ca",
        &[
            &paths.serving_cert,
            &paths.serving_key,
            &paths.admin_cert,
            &paths.admin_key,
        ],
    )?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, &ca_key).map_err(cert_err("ca"))?;

    if generate_serving && !(paths.serving_cert.exists() && paths.serving_key.exists()) {
        let key = KeyPair::generate().map_err(cert_err("serving key"))?;
        let mut params =
            CertificateParams::new(vec!["localhost".to_string()]).map_err(cert_err("serving"))?;
        params.distinguished_name.push(DnType::CommonName, "apiary");
        let mut ips: Vec<IpAddr> = vec![
            IpAddr::from([127, 0, 0, 1]),
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        ];
        if !bind.is_unspecified() && !ips.contains(&bind) {
            ips.push(bind);
        }
        params
            .subject_alt_names
            .extend(ips.into_iter().map(SanType::IpAddress));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(cert_err("serving"))?;
        write(&paths.serving_key, &key.serialize_pem(), true)?;
        write(
            &paths.serving_cert,
            &format!("{}{}", cert.pem(), ca_pem),
            false,
        )?;
    }

    if !(paths.admin_cert.exists() && paths.admin_key.exists()) {
        let key = KeyPair::generate().map_err(cert_err("admin key"))?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err("admin"))?;
        params.distinguished_name.push(DnType::CommonName, "admin");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &issuer).map_err(cert_err("admin"))?;
        write(&paths.admin_key, &key.serialize_pem(), true)?;
        write(&paths.admin_cert, &cert.pem(), false)?;
    }

    let (proxy_ca_pem, proxy_ca_key) = ensure_ca(
        (&paths.front_proxy_ca_cert, &paths.front_proxy_ca_key),
        "front-proxy-ca",
        &[
            &paths.front_proxy_client_cert,
            &paths.front_proxy_client_key,
        ],
    )?;
    if !(paths.front_proxy_client_cert.exists() && paths.front_proxy_client_key.exists()) {
        let issuer = Issuer::from_ca_cert_pem(&proxy_ca_pem, &proxy_ca_key)
            .map_err(cert_err("front-proxy-ca"))?;
        let key = KeyPair::generate().map_err(cert_err("front-proxy-client key"))?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(cert_err("front-proxy-client"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, FRONT_PROXY_CLIENT_NAME);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(cert_err("front-proxy-client"))?;
        write(&paths.front_proxy_client_key, &key.serialize_pem(), true)?;
        write(&paths.front_proxy_client_cert, &cert.pem(), false)?;
    }

    Ok(paths)
}

/// The common name of the generated front-proxy client certificate, which request-header
/// authentication allows by default (`--requestheader-allowed-names`).
pub const FRONT_PROXY_CLIENT_NAME: &str = "front-proxy-client";

/// Reads the CA at `(cert, key)`, or creates a self-signed one named `name`; a new CA removes
/// `signed` (what the CA it replaces had signed).
fn ensure_ca(
    (cert_path, key_path): (&Path, &Path),
    name: &'static str,
    signed: &[&PathBuf],
) -> Result<(String, KeyPair), PkiError> {
    if cert_path.exists() && key_path.exists() {
        let key = KeyPair::from_pem(&read(key_path)?).map_err(cert_err(name))?;
        return Ok((read(cert_path)?, key));
    }
    let key = KeyPair::generate().map_err(cert_err(name))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err(name))?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).map_err(cert_err(name))?;
    write(key_path, &key.serialize_pem(), true)?;
    write(cert_path, &cert.pem(), false)?;
    for p in signed {
        let _ = fs::remove_file(p);
    }
    Ok((cert.pem(), key))
}

/// The front proxy's credentials a server runs with: the CA request-header authentication
/// trusts by default, and the client certificate the aggregator presents to aggregated API
/// servers (`--proxy-client-cert-file`/`--proxy-client-key-file`, else those generated under
/// `--data-dir`).
///
/// ```
/// # fn example(server: &server::genericserver::GenericServer) {
/// if let Some(front_proxy) = server.front_proxy() {
///     assert!(front_proxy.client_cert_pem.contains("BEGIN CERTIFICATE"));
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct FrontProxy {
    /// The front proxy's CA (PEM): the default `--requestheader-client-ca-file`.
    pub ca_pem: String,
    /// The client certificate chain the aggregator presents (PEM).
    pub client_cert_pem: String,
    /// The client certificate's private key (PEM).
    pub client_key_pem: String,
}

impl std::fmt::Debug for FrontProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("FrontProxy")
            .field("ca_pem", &self.ca_pem)
            .field("client_cert_pem", &self.client_cert_pem)
            .finish_non_exhaustive()
    }
}

impl FrontProxy {
    /// Reads the generated CA and the client certificate and key: the generated ones, or
    /// `client` (`--proxy-client-cert-file`, `--proxy-client-key-file`) when given.
    pub fn load(paths: &PkiPaths, client: Option<(&Path, &Path)>) -> Result<Self, PkiError> {
        let (cert, key) = client.unwrap_or((
            paths.front_proxy_client_cert.as_path(),
            paths.front_proxy_client_key.as_path(),
        ));
        Ok(Self {
            ca_pem: read(&paths.front_proxy_ca_cert)?,
            client_cert_pem: read(cert)?,
            client_key_pem: read(key)?,
        })
    }
}

/// Writes the admin kubeconfig for `https://127.0.0.1:<port>` (or the bind address when it is
/// not a wildcard) with the CA and the admin credentials embedded.
/// `serving_chain` names a `--tls-cert-file` in use instead of the generated serving
/// certificate: its last certificate (the issuer, or the certificate itself when alone) becomes
/// the trusted CA of the kubeconfig.
pub fn write_kubeconfig(
    paths: &PkiPaths,
    bind: IpAddr,
    port: u16,
    serving_chain: Option<&Path>,
) -> Result<(), PkiError> {
    let host = if bind.is_unspecified() {
        "127.0.0.1".to_string()
    } else if bind.is_ipv6() {
        format!("[{bind}]")
    } else {
        bind.to_string()
    };
    let ca = match serving_chain {
        Some(chain) => last_certificate(&read(chain)?),
        None => read(&paths.ca_cert)?,
    };
    let kubeconfig = kubeconfig(
        &format!("https://{host}:{port}"),
        &ca,
        &read(&paths.admin_cert)?,
        &read(&paths.admin_key)?,
    );
    write(&paths.kubeconfig, &kubeconfig, true)
}

/// The last PEM certificate block of a bundle (the whole text if it has none).
fn last_certificate(pem: &str) -> String {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    match pem.rfind(BEGIN) {
        Some(start) => match pem[start..].find(END) {
            Some(end) => format!("{}\n", &pem[start..start + end + END.len()]),
            None => pem.to_string(),
        },
        None => pem.to_string(),
    }
}

/// Renders a kubeconfig with one cluster, user and context named `apiary`.
pub fn kubeconfig(server: &str, ca_pem: &str, cert_pem: &str, key_pem: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: apiary\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: apiary\n  context:\n    cluster: apiary\n    user: admin\n    namespace: default\ncurrent-context: apiary\npreferences: {{}}\n",
        b64(ca_pem),
        b64(cert_pem),
        b64(key_pem),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_then_reuses() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bind = IpAddr::from([127, 0, 0, 1]);
        let first = ensure(dir.path(), bind, true).unwrap_or_else(|e| panic!("{e}"));
        let ca1 = fs::read(&first.ca_cert).unwrap_or_default();
        let admin1 = fs::read(&first.admin_cert).unwrap_or_default();
        let second = ensure(dir.path(), bind, true).unwrap_or_else(|e| panic!("{e}"));
        write_kubeconfig(&second, bind, 6443, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fs::read(&second.ca_cert).unwrap_or_default(), ca1);
        assert_eq!(fs::read(&second.admin_cert).unwrap_or_default(), admin1);
        let der = rustls_pemfile::certs(&mut admin1.as_slice()).next();
        let der = der
            .and_then(Result::ok)
            .map(|c| c.to_vec())
            .unwrap_or_default();
        let user = crate::authn::x509::user_from_certificate(&der)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(user.name, "admin");
        assert_eq!(user.groups, vec!["system:masters".to_string()]);
        let kc = fs::read_to_string(&second.kubeconfig).unwrap_or_default();
        assert!(kc.contains("server: https://127.0.0.1:6443"));

        // With a --tls-cert-file chain, the chain's last certificate is the trusted CA.
        let chain = fs::read_to_string(&second.serving_cert).unwrap_or_default();
        assert_eq!(
            last_certificate(&chain),
            fs::read_to_string(&second.ca_cert).unwrap_or_default()
        );
    }

    #[test]
    fn the_front_proxy_has_its_own_ca_and_a_client_certificate_it_signed() {
        use x509_parser::prelude::*;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bind = IpAddr::from([127, 0, 0, 1]);
        let paths = ensure(dir.path(), bind, true).unwrap_or_else(|e| panic!("{e}"));
        let proxy = FrontProxy::load(&paths, None).unwrap_or_else(|e| panic!("{e}"));
        let der = |pem: &str| {
            rustls_pemfile::certs(&mut pem.as_bytes())
                .next()
                .and_then(Result::ok)
                .map(|c| c.to_vec())
                .unwrap_or_default()
        };
        let (ca, client) = (der(&proxy.ca_pem), der(&proxy.client_cert_pem));
        let (_, ca) = X509Certificate::from_der(&ca).unwrap_or_else(|e| panic!("{e}"));
        let (_, client) = X509Certificate::from_der(&client).unwrap_or_else(|e| panic!("{e}"));
        let cn = |c: &X509Certificate<'_>| {
            c.subject()
                .iter_common_name()
                .next()
                .and_then(|n| n.as_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(cn(&ca), "front-proxy-ca");
        assert_eq!(cn(&client), FRONT_PROXY_CLIENT_NAME);
        assert_eq!(client.issuer(), ca.subject());
        assert!(client.verify_signature(Some(ca.public_key())).is_ok());
        let main_ca = der(&fs::read_to_string(&paths.ca_cert).unwrap_or_default());
        let (_, main_ca) = X509Certificate::from_der(&main_ca).unwrap_or_else(|e| panic!("{e}"));
        assert!(client.verify_signature(Some(main_ca.public_key())).is_err());
        let usage = client
            .extended_key_usage()
            .ok()
            .flatten()
            .map(|e| (e.value.client_auth, e.value.server_auth));
        assert_eq!(usage, Some((true, false)));
        // Reused on the next start.
        let again = ensure(dir.path(), bind, true).unwrap_or_else(|e| panic!("{e}"));
        let reread = FrontProxy::load(&again, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reread.client_cert_pem, proxy.client_cert_pem);
        assert_eq!(reread.ca_pem, proxy.ca_pem);
        assert!(!format!("{reread:?}").contains("PRIVATE KEY"));
    }
}
