//! The secure port from outside: certificates and client CAs reloaded from disk, SNI, TLS
//! versions and cipher suites, connection timeouts and bound, long request heads over HTTP/1.1
//! and h2, and a watch with a negative timeout, against the real binary.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Server;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme, SupportedProtocolVersion};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How long a test waits for something the server does within seconds.
const PATIENCE: Duration = Duration::from_secs(30);

/// Accepts any server certificate: these tests look at which certificate is served.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

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
fn client_config(
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

fn any_version() -> Arc<ClientConfig> {
    client_config(rustls::ALL_VERSIONS, None, &[b"http/1.1"])
}

fn addr(server: &Server) -> String {
    server
        .base
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("base {}", server.base))
        .to_string()
}

async fn tls_connect(
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

fn peer_leaf(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .unwrap_or_default()
}

fn pem_leaf(pem: &str) -> Vec<u8> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .map(|c| c.to_vec())
        .unwrap_or_else(|| panic!("no certificate in {pem}"))
}

/// An HTTP/1.1 client connection; the task ends when the server closes the connection.
async fn http1(
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

async fn get1(
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
struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    fn new(cn: &str) -> TestCa {
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
    fn leaf(&self, cn: &str, org: Option<&str>, sans: &[&str]) -> (String, String) {
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
        let cert = params
            .signed_by(&key, &self.issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        (cert.pem(), key.serialize_pem())
    }
}

/// Replaces a file's content at once (write then rename), as a certificate rotation does.
fn replace(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{e}"));
}

async fn wait_until<F, Fut>(what: &str, mut check: F)
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

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_certificate_and_client_ca_follow_their_files() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = dir.path().join("data");
    // The data directory's PKI first, so that the client CA bundle can hold apiary's CA.
    let localhost = std::net::IpAddr::from([127, 0, 0, 1]);
    let pki = server::pki::ensure(&data, localhost, true).unwrap_or_else(|e| panic!("{e}"));
    let apiary_ca = std::fs::read_to_string(&pki.ca_cert).unwrap_or_else(|e| panic!("{e}"));

    let ca = TestCa::new("serving-ca");
    let (cert1, key1) = ca.leaf("serving-one", None, &["127.0.0.1", "localhost"]);
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    // The chain ends with the CA, which the written kubeconfig then trusts.
    replace(&cert_path, &format!("{cert1}{}", ca.pem));
    replace(&key_path, &key1);
    let client_ca = dir.path().join("client-ca.crt");
    replace(&client_ca, &apiary_ca);

    let server = Server::start_in(
        &data,
        &[
            &format!("--tls-cert-file={}", p(&cert_path)),
            &format!("--tls-private-key-file={}", p(&key_path)),
            &format!("--client-ca-file={}", p(&client_ca)),
        ],
    );

    // A keep-alive connection made before the rotation.
    let before = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(peer_leaf(&before), pem_leaf(&cert1));
    let (mut old, old_task) = http1(before).await;
    assert_eq!(get1(&mut old, "/healthz").await.0, 200);

    // Rotation: new connections get the new certificate within seconds.
    let (cert2, key2) = ca.leaf("serving-two", None, &["127.0.0.1", "localhost"]);
    replace(&key_path, &key2);
    replace(&cert_path, &format!("{cert2}{}", ca.pem));
    let want = pem_leaf(&cert2);
    wait_until("the new serving certificate", || {
        let server = &server;
        let want = want.clone();
        async move {
            match tls_connect(server, any_version(), "localhost").await {
                Ok(s) => peer_leaf(&s) == want,
                Err(_) => false,
            }
        }
    })
    .await;
    // The connection made before keeps working.
    assert_eq!(get1(&mut old, "/healthz").await.0, 200);
    assert!(!old_task.is_finished());
    // kubectl, trusting the same CA, sees nothing of it.
    let out = server.kubectl(Path::new("kubectl"), &["get", "--raw", "/healthz"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A broken replacement keeps the certificate in use.
    replace(&cert_path, "not a certificate");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(peer_leaf(&s), want);

    // Client CA: a certificate of another CA is refused until the bundle includes it.
    let users = TestCa::new("users-ca");
    let (alice_cert, alice_key) = users.leaf("alice", Some("team"), &[]);
    let alice = server.with_identity(&alice_cert, &alice_key);
    let refused = alice.get(server.url("/api/v1/namespaces")).send().await;
    assert!(
        refused.is_err(),
        "a certificate of an unknown CA was accepted: {refused:?}"
    );
    replace(&client_ca, &format!("{apiary_ca}{}", users.pem));
    wait_until("the new client CA", || {
        let server = &server;
        let (c, k) = (alice_cert.clone(), alice_key.clone());
        async move {
            // A new client each time: a new connection.
            let alice = server.with_identity(&c, &k);
            match alice.get(server.url("/api/v1/namespaces")).send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.text().await.unwrap_or_default();
                    assert_eq!(status, 403, "{text}");
                    assert!(text.contains("User \\\"alice\\\""), "{text}");
                    true
                }
                Err(_) => false,
            }
        }
    })
    .await;
    // The admin certificate, from apiary's CA, still works.
    let resp = server
        .admin()
        .get(server.url("/api/v1/namespaces"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_chooses_the_certificate() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ca = TestCa::new("sni-ca");
    let write = |name: &str, cn: &str, sans: &[&str]| {
        let (c, k) = ca.leaf(cn, None, sans);
        let (cp, kp) = (
            dir.path().join(format!("{name}.crt")),
            dir.path().join(format!("{name}.key")),
        );
        replace(&cp, &c);
        replace(&kp, &k);
        (c, cp, kp)
    };
    let (a, a_crt, a_key) = write("a", "a.example", &["a.example", "www.a.example"]);
    let (b, b_crt, b_key) = write("b", "b", &["unused.example"]);
    let (c, c_crt, c_key) = write("c", "c", &["a.example"]);
    let server = Server::start(&[
        // Names from the certificate.
        &format!("--tls-sni-cert-key={},{}", p(&a_crt), p(&a_key)),
        // Explicit names, a wildcard among them.
        &format!(
            "--tls-sni-cert-key={},{}:*.b.example,b.example",
            p(&b_crt),
            p(&b_key)
        ),
        // A later certificate with the same name loses.
        &format!("--tls-sni-cert-key={},{}", p(&c_crt), p(&c_key)),
    ]);
    let default = pem_leaf(
        &std::fs::read_to_string(server::pki::PkiPaths::new(&server.data_dir).serving_cert)
            .unwrap_or_else(|e| panic!("{e}")),
    );
    for (name, want) in [
        ("a.example", pem_leaf(&a)),
        ("WWW.A.example", pem_leaf(&a)),
        ("x.b.example", pem_leaf(&b)),
        ("b.example", pem_leaf(&b)),
        ("unused.example", default.clone()),
        ("other.example", default.clone()),
        ("127.0.0.1", default.clone()),
    ] {
        let s = tls_connect(&server, any_version(), name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(peer_leaf(&s) == want, "{name} got the wrong certificate");
    }
    let _ = c;
    // Requests over an SNI certificate's connection are served as any other.
    let s = tls_connect(&server, any_version(), "x.b.example")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, _task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
}

/// A raw ClientHello record offering `version` and `suites`, with the extensions an ECDHE
/// handshake needs and no `supported_versions` (so `version` is the highest offered).
fn client_hello(version: u16, suites: &[u16]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(version.to_be_bytes());
    body.extend([7u8; 32]);
    body.push(0);
    body.extend(((suites.len() * 2) as u16).to_be_bytes());
    for s in suites {
        body.extend(s.to_be_bytes());
    }
    body.extend([1, 0]);
    let mut ext = Vec::new();
    // supported_groups: x25519, secp256r1.
    ext.extend([0x00, 0x0a, 0x00, 0x06, 0x00, 0x04, 0x00, 0x1d, 0x00, 0x17]);
    // ec_point_formats: uncompressed.
    ext.extend([0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]);
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256.
    ext.extend([
        0x00, 0x0d, 0x00, 0x08, 0x00, 0x06, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01,
    ]);
    body.extend((ext.len() as u16).to_be_bytes());
    body.extend(ext);
    let mut handshake = vec![1u8];
    handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend(body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

/// Sends a raw ClientHello; returns the content type of the server's first record and the
/// first bytes of its fragment (0 and nothing when the server closed without a record).
async fn first_record(server: &Server, hello: &[u8]) -> (u8, Vec<u8>) {
    let mut tcp = TcpStream::connect(addr(server))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tcp.write_all(hello).await.unwrap_or_else(|e| panic!("{e}"));
    let mut header = [0u8; 5];
    let read = tokio::time::timeout(PATIENCE, tcp.read_exact(&mut header))
        .await
        .unwrap_or_else(|_| panic!("the server did not answer the ClientHello"));
    if read.is_err() {
        return (0, Vec::new());
    }
    let len = u16::from_be_bytes([header[3], header[4]]) as usize;
    let mut fragment = vec![0u8; len.min(16)];
    let _ = tcp.read_exact(&mut fragment).await;
    (header[0], fragment)
}

const ALERT: u8 = 0x15;
const HANDSHAKE: u8 = 0x16;
const SERVER_HELLO: u8 = 2;
const ECDHE_ECDSA_AES128_GCM: u16 = 0xc02b;
const ECDHE_ECDSA_AES256_GCM: u16 = 0xc02c;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_tls12_and_up_with_strong_suites() {
    let server = Server::start(&["--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]);
    // The raw hello is well formed: with the configured suite, the server answers ServerHello.
    let (kind, fragment) =
        first_record(&server, &client_hello(0x0303, &[ECDHE_ECDSA_AES256_GCM])).await;
    assert_eq!(
        (kind, fragment.first().copied()),
        (HANDSHAKE, Some(SERVER_HELLO))
    );
    // TLS 1.0 and 1.1 are refused, whatever the suites.
    for version in [0x0301u16, 0x0302] {
        let (kind, fragment) = first_record(
            &server,
            &client_hello(version, &[ECDHE_ECDSA_AES256_GCM, 0xc009, 0xc013, 0x002f]),
        )
        .await;
        assert_eq!(kind, ALERT, "version {version:#x}: {fragment:?}");
    }
    // Weak suites (RC4, 3DES, CBC, static RSA) are refused, and so is a strong suite that is
    // not in --tls-cipher-suites.
    for suites in [
        vec![
            0x0005u16, 0x000a, 0x002f, 0x0035, 0x009c, 0xc009, 0xc013, 0xc023,
        ],
        vec![ECDHE_ECDSA_AES128_GCM],
    ] {
        let (kind, fragment) = first_record(&server, &client_hello(0x0303, &suites)).await;
        assert_eq!(kind, ALERT, "suites {suites:x?}: {fragment:?}");
    }
    // rustls clients: TLS 1.3 and TLS 1.2 with the configured suite.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    let tls12 = client_config(&[&rustls::version::TLS12], None, &[b"http/1.1"]);
    let s = tls_connect(&server, tls12, "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.get_ref().1.negotiated_cipher_suite().map(|c| c.suite()),
        Some(rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
    );
    let other = client_config(
        &[&rustls::version::TLS12],
        Some(vec![
            rustls::crypto::ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ]),
        &[b"http/1.1"],
    );
    assert!(tls_connect(&server, other, "localhost").await.is_err());

    // --tls-min-version=VersionTLS13 refuses TLS 1.2.
    let server13 = Server::start(&["--tls-min-version=VersionTLS13"]);
    let tls12 = client_config(&[&rustls::version::TLS12], None, &[b"http/1.1"]);
    assert!(tls_connect(&server13, tls12, "localhost").await.is_err());
    let s = tls_connect(&server13, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
}

#[test]
fn refused_tls_flags_stop_the_start() {
    for (args, wanted) in [
        (
            vec!["--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA,NOT_A_SUITE,TLS_AES_128_GCM_SHA256"],
            vec!["TLS_RSA_WITH_RC4_128_SHA", "NOT_A_SUITE"],
        ),
        (vec!["--tls-min-version=VersionTLS11"], vec!["VersionTLS11"]),
        (
            vec!["--tls-sni-cert-key=/nonexistent.crt,/nonexistent.key"],
            vec!["/nonexistent.crt"],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiary"))
            .arg("--data-dir")
            .arg(dir.path())
            .arg("--secure-port=0")
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.status.success(), "{args:?} started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for w in wanted {
            assert!(stderr.contains(w), "{args:?}: {stderr}");
        }
    }
}

/// Reads until the server closes the connection; returns whether it did within the patience.
async fn closed_by_server(mut s: TlsStream<TcpStream>) -> bool {
    let mut buf = [0u8; 1024];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, read).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_connections_are_closed() {
    let server = Server::start(&["--read-header-timeout=2s", "--idle-connection-timeout=3s"]);
    // A partial request line, then a partial head.
    for partial in [
        "GET /healthz HT",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ",
    ] {
        let mut s = tls_connect(&server, any_version(), "localhost")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        s.write_all(partial.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        s.flush().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(closed_by_server(s).await, "{partial:?} stayed open");
    }
    // Nothing at all.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(closed_by_server(s).await, "a silent connection stayed open");

    // An idle HTTP/1.1 keep-alive connection.
    let s = tls_connect(&server, any_version(), "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
    assert!(
        tokio::time::timeout(PATIENCE, task).await.is_ok(),
        "an idle keep-alive connection stayed open"
    );

    // An idle h2 connection: GOAWAY, then closed.
    let h2 = client_config(rustls::ALL_VERSIONS, None, &[b"h2"]);
    let s = tls_connect(&server, h2, "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(s))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = http::Request::get("https://127.0.0.1/healthz")
        .body(Empty::<Bytes>::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = send
        .send_request(req)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    drop(resp);
    assert!(
        tokio::time::timeout(PATIENCE, task).await.is_ok(),
        "an idle h2 connection stayed open"
    );

    // A watch is a request in progress: over HTTP/1.1 (where a timed-out connection is closed
    // outright) it outlives the idle and header timeouts and ends at its own timeout, with a
    // clean end of its body.
    let resp = admin_client(&server, true)
        .get(server.url("/api/v1/namespaces?watch=true&timeoutSeconds=10"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.version(), reqwest::Version::HTTP_11);
    assert_eq!(resp.status().as_u16(), 200);
    let body = resp
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("the watch was cut: {e}"));
    assert!(
        String::from_utf8_lossy(&body).contains("\"ADDED\""),
        "{body:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_bound_wait() {
    let server = Server::start(&["--max-open-connections=3"]);
    let mut held = Vec::new();
    for _ in 0..3 {
        // The readiness check's connection may still be closing: a slot frees up then.
        let s = tokio::time::timeout(PATIENCE, tls_connect(&server, any_version(), "localhost"))
            .await
            .unwrap_or_else(|_| panic!("no connection slot"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (mut send, task) = http1(s).await;
        assert_eq!(get1(&mut send, "/healthz").await.0, 200);
        held.push((send, task));
    }
    // The fourth is not accepted while three are open...
    let server_addr = addr(&server);
    let fourth = tokio::spawn(async move {
        let tcp = TcpStream::connect(server_addr).await?;
        tokio_rustls::TlsConnector::from(any_version())
            .connect(
                ServerName::try_from("localhost").unwrap_or_else(|e| panic!("{e}")),
                tcp,
            )
            .await
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !fourth.is_finished(),
        "a connection over the bound was accepted"
    );
    // ...while the open ones are answered.
    for (send, _) in &mut held {
        assert_eq!(get1(send, "/healthz").await.0, 200);
    }
    // Once one closes, the waiting one is served.
    let (send, task) = held.remove(0);
    drop(send);
    let _ = task.await;
    let s = tokio::time::timeout(PATIENCE, fourth)
        .await
        .unwrap_or_else(|_| panic!("the waiting connection was not accepted"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut send, _task) = http1(s).await;
    assert_eq!(get1(&mut send, "/healthz").await.0, 200);
}

/// A set-based label selector of about `len` bytes once URL-encoded.
fn long_selector(len: usize) -> String {
    let mut values = Vec::new();
    let mut encoded = "app+in+%28%29".len();
    let mut i = 0;
    while encoded < len {
        let v = format!("v{i:05}");
        encoded += v.len() + 3;
        values.push(v);
        i += 1;
    }
    format!("app in ({})", values.join(","))
}

fn admin_client(server: &Server, http1_only: bool) -> reqwest::Client {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_label_selectors_over_h2_and_http11() {
    let server = Server::start(&[]);
    for (http1_only, version) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let client = admin_client(&server, http1_only);
        for len in [20_000, 60_000] {
            let selector = long_selector(len);
            let resp = client
                .get(server.url("/api/v1/configmaps"))
                .query(&[("labelSelector", selector.as_str())])
                .send()
                .await
                .unwrap_or_else(|e| panic!("{version:?} {len}: {e}"));
            assert_eq!(resp.version(), version);
            let status = resp.status().as_u16();
            let body: serde_json::Value = resp
                .json()
                .await
                .unwrap_or_else(|e| panic!("{version:?} {len}: {e}"));
            assert_eq!(status, 200, "{version:?} {len}: {body}");
            assert_eq!(body["kind"], "ConfigMapList", "{version:?} {len}");
        }
        // Headers of most of a MiB are read too.
        let resp = client
            .get(server.url("/api/v1/namespaces/default"))
            .header("x-padding", "p".repeat(900 * 1024))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{version:?} padding: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{version:?} padding");
    }
    // kubectl, over h2.
    let selector = long_selector(20_000);
    let out = server.kubectl(
        Path::new("kubectl"),
        &["get", "configmaps", "-A", "-l", &selector],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("No resources found"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_negative_timeout_ends_at_once() {
    let server = Server::start(&[]);
    let admin = server.admin();
    for path in [
        "/api/v1/namespaces?watch=true&timeoutSeconds=-1",
        "/api/v1/watch/namespaces?timeoutSeconds=-5",
    ] {
        let resp = admin
            .get(server.url(path))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let body = resp
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{path}: the watch did not end: {e}"));
        assert!(body.is_empty(), "{path}: {body:?}");
    }
}
