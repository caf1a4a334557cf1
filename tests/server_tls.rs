//! The secure port's TLS from outside: certificates and client CAs reloaded from disk, SNI,
//! TLS versions and cipher suites (raw ClientHellos for what rustls cannot send), and refused
//! TLS flags, against the real binary.

mod common;

use std::path::Path;
use std::time::Duration;

use common::Server;
use common::tls::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

    // Client CA: a certificate of another CA is a failed credential (401, as kube-apiserver
    // answers it) until the bundle includes it; then it authenticates its user.
    let users = TestCa::new("users-ca");
    let (alice_cert, alice_key) = users.leaf("alice", Some("team"), &[]);
    let alice = server.with_identity(&alice_cert, &alice_key);
    let refused = alice
        .get(server.url("/api/v1/namespaces"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refused.status().as_u16(), 401);
    replace(&client_ca, &format!("{apiary_ca}{}", users.pem));
    wait_until("the new client CA", || {
        let server = &server;
        let (c, k) = (alice_cert.clone(), alice_key.clone());
        async move {
            // A new client each time: a new connection.
            let alice = server.with_identity(&c, &k);
            let resp = alice
                .get(server.url("/api/v1/namespaces"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            if status == 401 {
                return false;
            }
            assert_eq!(status, 403, "{text}");
            assert!(text.contains("User \\\"alice\\\""), "{text}");
            true
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
