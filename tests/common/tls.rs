//! TLS helpers of the integration tests: rustls clients that accept any server certificate
//! (to look at which one is served), raw HTTP/1.1 connections over them, a test CA, and file
//! rotation.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme, SupportedProtocolVersion};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::Server;

/// How long a test waits for something the server does within seconds.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Accepts any server certificate: these tests look at which certificate is served.
#[derive(Debug)]
pub struct AcceptAny(pub Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client configuration trusting any server, speaking `versions` with `suites` (all when
/// `None`) and offering `alpn`.
pub fn client_config(
    versions: &[&'static SupportedProtocolVersion],
    suites: Option<Vec<rustls::SupportedCipherSuite>>,
    alpn: &[&[u8]],
) -> Arc<ClientConfig> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(suites) = suites {
        provider.cipher_suites = suites;
    }
    let provider = Arc::new(provider);
    let mut config = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .unwrap_or_else(|e| panic!("{e}"))
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A client of any TLS version offering `http/1.1`.
pub fn any_version() -> Arc<ClientConfig> {
    client_config(rustls::ALL_VERSIONS, None, &[b"http/1.1"])
}

/// The server's `host:port`.
pub fn addr(server: &Server) -> String {
    server
        .base
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("base {}", server.base))
        .to_string()
}

/// Connects and completes TLS, sending `name` as SNI when it is a DNS name.
pub async fn tls_connect(
    server: &Server,
    config: Arc<ClientConfig>,
    name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr(server)).await?;
    let name = ServerName::try_from(name.to_string())
        .unwrap_or_else(|e| panic!("server name {name}: {e}"));
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
}

/// The DER of the certificate the server presented.
pub fn peer_leaf(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .unwrap_or_default()
}

/// The DER of the first certificate of a PEM text.
pub fn pem_leaf(pem: &str) -> Vec<u8> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .map(|c| c.to_vec())
        .unwrap_or_else(|| panic!("no certificate in {pem}"))
}

/// An HTTP/1.1 client connection; the task ends when the server closes the connection.
pub async fn http1(
    stream: TlsStream<TcpStream>,
) -> (
    hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap_or_else(|e| panic!("http1 handshake: {e}"));
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (send, task)
}

/// Sends `GET path` on an HTTP/1.1 connection: the status and the body.
pub async fn get1(
    send: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    path: &str,
) -> (u16, Bytes) {
    let req = http::Request::get(path)
        .header("host", "127.0.0.1")
        .body(Empty::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = send
        .send_request(req)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("body of {path}: {e}"))
        .to_bytes();
    (status, body)
}

/// A CA for the test's own certificates.
pub struct TestCa {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    /// A new self-signed CA named `cn`.
    pub fn new(cn: &str) -> TestCa {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        let pem = cert.pem();
        let issuer = Issuer::new(params, key);
        TestCa { pem, issuer }
    }

    /// A leaf for `sans` with common name `cn` (and organization `org` when given): (cert, key).
    pub fn leaf(&self, cn: &str, org: Option<&str>, sans: &[&str]) -> (String, String) {
        self.leaf_with(cn, org, sans, |_| {})
    }

    /// A leaf for `sans` that expired on 2021-01-01 (valid from 2020-01-01): (cert, key).
    pub fn expired_leaf(&self, cn: &str, sans: &[&str]) -> (String, String) {
        self.leaf_with(cn, None, sans, |p| {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        })
    }

    /// A leaf as [`TestCa::leaf`] makes it, its parameters changed by `adjust` before signing.
    pub fn leaf_with(
        &self,
        cn: &str,
        org: Option<&str>,
        sans: &[&str],
        adjust: impl FnOnce(&mut CertificateParams),
    ) -> (String, String) {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{e}"));
        params.distinguished_name.push(DnType::CommonName, cn);
        if let Some(org) = org {
            params
                .distinguished_name
                .push(DnType::OrganizationName, org);
        }
        adjust(&mut params);
        let cert = params
            .signed_by(&key, &self.issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        (cert.pem(), key.serialize_pem())
    }

    /// A serving certificate for `sans` that signs itself and is a CA (`CA:TRUE`, what
    /// `openssl req -x509` makes): (cert, key), the cert being its own CA bundle.
    pub fn self_signed_ca_leaf(cn: &str, sans: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{e}"));
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        (cert.pem(), key.serialize_pem())
    }
}

/// Replaces a file's content at once (write then rename), as a certificate rotation does.
pub fn replace(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{e}"));
}

/// Retries `check` until it holds, failing after [`PATIENCE`].
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A path as a flag value.
pub fn p(path: &Path) -> String {
    path.display().to_string()
}

/// A reqwest client with the admin identity, HTTP/1.1 only or negotiating h2.
pub fn admin_client(server: &Server, http1_only: bool) -> reqwest::Client {
    let pki = server.data_dir.join("pki");
    let read = |n: &str| std::fs::read(pki.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    let mut id = read("admin.crt");
    id.extend(read("admin.key"));
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&server.kubeconfig_ca())
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .identity(reqwest::Identity::from_pem(&id).unwrap_or_else(|e| panic!("{e}")))
        .timeout(Duration::from_secs(60));
    if http1_only {
        b = b.http1_only();
    }
    b.build().unwrap_or_else(|e| panic!("{e}"))
}

/// One HTTP/2 frame as read by [`read_h2_frame`]: type, flags, stream and payload.
pub type H2Frame = (u8, u8, u32, Vec<u8>);

/// Reads the next HTTP/2 frame from `s` (for tests that read h2 by hand); panics when none
/// comes within [`PATIENCE`] or the connection ends.
#[allow(dead_code)]
pub async fn read_h2_frame(s: &mut TlsStream<TcpStream>) -> H2Frame {
    use tokio::io::AsyncReadExt;
    let mut header = [0u8; 9];
    tokio::time::timeout(PATIENCE, s.read_exact(&mut header))
        .await
        .unwrap_or_else(|_| panic!("no h2 frame"))
        .unwrap_or_else(|e| panic!("{e}"));
    let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    (header[3], header[4], stream, payload)
}

/// Appends an HTTP/2 frame (for tests that write h2 by hand).
#[allow(dead_code)]
pub fn h2_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}
