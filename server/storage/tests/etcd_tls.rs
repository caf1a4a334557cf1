//! The etcd backend over TLS with client certificates (`--etcd-cafile`, `--etcd-certfile`,
//! `--etcd-keyfile`), against an etcd that requires them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
};
use storage::backend::{Backend, Condition, TxnOutcome};
use storage::etcd::process::{EtcdProcess, EtcdServerTls};
use storage::etcd::{EtcdBackend, EtcdConfig};

struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn write(dir: &Path, name: &str, contents: String) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write PEM");
    path
}

fn pki(dir: &Path) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("key")).expect("ca");
    let leaf = |sans: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(sans).expect("params");
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &ca).expect("sign");
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(
        vec!["127.0.0.1".to_string(), "localhost".to_string()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client_cert, client_key) = leaf(
        vec!["apiary".to_string()],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    Pki {
        ca: write(dir, "ca.pem", ca.pem()),
        server_cert: write(dir, "server.pem", server_cert),
        server_key: write(dir, "server-key.pem", server_key),
        client_cert: write(dir, "client.pem", client_cert),
        client_key: write(dir, "client-key.pem", client_key),
    }
}

fn config(endpoint: &str, pki: &Pki, with_client_cert: bool) -> EtcdConfig {
    let (cert, key) = if with_client_cert {
        (Some(pki.client_cert.clone()), Some(pki.client_key.clone()))
    } else {
        (None, None)
    };
    let mut config = EtcdConfig::from_flags(endpoint, "/registry", Some(pki.ca.clone()), cert, key);
    config.request_timeout = Duration::from_secs(3);
    config.read_retry_budget = Duration::from_millis(500);
    config
}

#[tokio::test]
async fn tls_with_client_certificates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pki = pki(dir.path());
    let etcd = EtcdProcess::start_tls(EtcdServerTls {
        cert_file: pki.server_cert.clone(),
        key_file: pki.server_key.clone(),
        trusted_ca_file: pki.ca.clone(),
    })
    .expect("etcd with TLS starts");
    assert!(etcd.endpoint().starts_with("https://"));

    let backend = EtcdBackend::connect(config(&etcd.endpoint(), &pki, true))
        .await
        .expect("connect");
    let outcome = backend
        .put(
            "/registry/tls/a",
            Bytes::from_static(b"v"),
            Condition::Absent,
            None,
        )
        .await
        .expect("put over TLS");
    assert!(matches!(outcome, TxnOutcome::Committed { .. }));
    let read = backend
        .get("/registry/tls/a", 0)
        .await
        .expect("get over TLS");
    assert_eq!(read.kv.expect("present").value, Bytes::from_static(b"v"));

    // Without a client certificate etcd refuses the connection.
    let anonymous = EtcdBackend::connect(config(&etcd.endpoint(), &pki, false))
        .await
        .expect("connect is lazy");
    assert!(anonymous.get("/registry/tls/a", 0).await.is_err());

    // A certificate without its key is a configuration error.
    let mut half = config(&etcd.endpoint(), &pki, true);
    half.tls.key_file = None;
    assert!(EtcdBackend::connect(half).await.is_err());
}
