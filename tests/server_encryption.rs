//! `--encryption-provider-config`: Secrets written through the API are stored encrypted and read
//! back decrypted, across a restart.

mod common;

use std::time::Duration;

use common::Server;
use serde_json::{Value, json};
use storage::backend::Backend;

const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
  - identity: {}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_encrypted_at_rest() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = tmp.path().join("encryption.yaml");
    std::fs::write(&config, CONFIG).unwrap_or_else(|e| panic!("{e}"));
    let flag = format!("--encryption-provider-config={}", config.display());
    let data = tmp.path().join("data");
    let mut server = Server::start_in(&data, &[&flag]);
    let c = server.admin();
    let created = c
        .post(server.url("/api/v1/namespaces/default/secrets"))
        .json(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
            "stringData": {"password": "hunter2"}}),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);
    let cm = c
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "plain"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cm.status().as_u16(), 201);
    assert!(server.terminate(Duration::from_secs(30)).success());

    {
        let store = storage::embedded::EmbeddedBackend::open(
            storage::embedded::EmbeddedOptions::new(data.join("store")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let raw = |resource: &str, name: &str| {
            let key = storage::keys::ResourceKeys::new("/registry", "", resource)
                .and_then(|k| k.object_key(Some("default"), name))
                .unwrap_or_else(|e| panic!("{e}"));
            let store = &store;
            async move {
                store
                    .get(&key, 0)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
                    .kv
                    .map(|kv| kv.value.to_vec())
            }
        };
        let secret = raw("secrets", "s1")
            .await
            .unwrap_or_else(|| panic!("secret not stored"));
        assert!(
            secret.starts_with(b"k8s:enc:secretbox:v1:key1:"),
            "{:?}",
            String::from_utf8_lossy(&secret[..40.min(secret.len())])
        );
        assert!(!secret.windows(7).any(|w| w == b"hunter2"));
        let configmap = raw("configmaps", "c1")
            .await
            .unwrap_or_else(|| panic!("configmap not stored"));
        assert!(
            !configmap.starts_with(b"k8s:enc:"),
            "configmaps are not in the configuration"
        );
    }

    let server = Server::start_in(&data, &[&flag]);
    let got: Value = server
        .admin()
        .get(server.url("/api/v1/namespaces/default/secrets/s1"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(got["data"]["password"], "aHVudGVyMg==", "{got}");
}
