//! Encryption at rest through the Store on the embedded backend: stored bytes are ciphertext,
//! key rotation keeps old objects readable, undecryptable objects are explicit errors.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt;
use storage::StorageError;
use storage::backend::Backend;
use storage::embedded::EmbeddedBackend;
use storage::interface::{GetOptions, Interface, ListOptions, WatchEvent};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{JsonTestCodec, object};
use storage::transformer::{EncryptionConfig, EncryptionConfigError, Transformer};

const PLAINTEXT_MARKER: &str = "very-secret-plaintext";

fn secret(byte: u8, len: usize) -> String {
    STANDARD.encode(vec![byte; len])
}

fn config(providers: &str) -> EncryptionConfig {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n{providers}"
    );
    EncryptionConfig::from_yaml(&text).expect("valid configuration")
}

fn provider(kind: &str, keys: &[(&str, String)]) -> String {
    let mut out = format!("      - {kind}:\n          keys:\n");
    for (name, secret) in keys {
        out.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    out
}

struct Setup {
    backend: Arc<dyn Backend>,
    keys: ResourceKeys,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open_dir(dir.path()).expect("open"));
    Setup {
        backend,
        keys: ResourceKeys::new("/registry", "", "secrets").expect("keys"),
        _dir: dir,
    }
}

fn store(setup: &Setup, transformer: Arc<dyn Transformer>) -> Store {
    Store::new(
        Arc::clone(&setup.backend),
        StoreConfig::new(setup.keys.resource_prefix(), Arc::new(JsonTestCodec))
            .with_transformer(transformer),
    )
}

#[tokio::test]
async fn stored_bytes_contain_no_plaintext() {
    for (kind, len, prefix) in [
        ("aesgcm", 32, "k8s:enc:aesgcm:v1:key1:"),
        ("aesgcm", 16, "k8s:enc:aesgcm:v1:key1:"),
        ("aescbc", 32, "k8s:enc:aescbc:v1:key1:"),
        ("secretbox", 32, "k8s:enc:secretbox:v1:key1:"),
    ] {
        let s = setup();
        let cfg = config(&provider(kind, &[("key1", secret(1, len))]));
        let st = store(&s, cfg.transformer_for("", "secrets"));
        let k = s.keys.object_key(Some("ns"), "a").expect("key");
        let data = object("ns", "a", &[], PLAINTEXT_MARKER);
        st.create(&k, data.clone(), None).await.expect("create");
        let raw = s
            .backend
            .get(&k, 0)
            .await
            .expect("raw get")
            .kv
            .expect("present")
            .value;
        assert!(raw.starts_with(prefix.as_bytes()), "{kind}: prefix");
        let raw_text = String::from_utf8_lossy(&raw);
        assert!(
            !raw_text.contains(PLAINTEXT_MARKER),
            "{kind}: plaintext leaked"
        );
        assert!(!raw_text.contains("metadata"), "{kind}: plaintext leaked");
        let got = st
            .get(&k, GetOptions::default())
            .await
            .expect("get")
            .expect("present");
        assert_eq!(got.data, data, "{kind}: round trip");
        assert!(!got.stale);
    }
}

#[tokio::test]
async fn unmatched_resources_stay_plaintext() {
    let cfg = config(&provider("aescbc", &[("key1", secret(1, 32))]));
    let t = cfg.transformer_for("", "configmaps");
    assert_eq!(
        t.transform_to_storage("/k", b"plain").expect("encode"),
        b"plain"
    );
    let t = cfg.transformer_for("", "secrets");
    assert_ne!(
        t.transform_to_storage("/k", b"plain").expect("encode"),
        b"plain"
    );
    let wild = EncryptionConfig::from_yaml(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.apps']\n    providers:\n      - identity: {}\n  - resources: ['*.*']\n    providers:\n      - secretbox:\n          keys:\n            - name: k\n              secret: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n",
    )
    .expect("wildcards");
    assert_eq!(
        wild.transformer_for("apps", "deployments")
            .transform_to_storage("/k", b"x")
            .expect("id"),
        b"x"
    );
    assert!(
        wild.transformer_for("example.dev", "widgets")
            .transform_to_storage("/k", b"x")
            .expect("enc")
            .starts_with(b"k8s:enc:secretbox:v1:k:")
    );
}

#[tokio::test]
async fn rotation_keeps_old_objects_readable() {
    let s = setup();
    let old_key = secret(1, 32);
    let new_key = secret(2, 32);
    let k_old = s.keys.object_key(Some("ns"), "old").expect("key");
    let k_plain = s.keys.object_key(Some("ns"), "plain").expect("key");
    // Before encryption: plaintext.
    let plain_store = store(
        &s,
        config("      - identity: {}\n").transformer_for("", "secrets"),
    );
    plain_store
        .create(&k_plain, object("ns", "plain", &[], "p"), None)
        .await
        .expect("create plain");
    // Step 1: key1 writes, identity still reads the plaintext object.
    let step1 = config(&format!(
        "{}      - identity: {{}}\n",
        provider("aescbc", &[("key1", old_key.clone())])
    ));
    let st1 = store(&s, step1.transformer_for("", "secrets"));
    st1.create(&k_old, object("ns", "old", &[], "o"), None)
        .await
        .expect("create old");
    let p = st1
        .get(&k_plain, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert!(
        p.stale,
        "plaintext read through identity (not first) is stale"
    );
    // Step 2: the new key first, the old key second.
    let step2 = config(&format!(
        "{}      - identity: {{}}\n",
        provider(
            "aescbc",
            &[("key2", new_key.clone()), ("key1", old_key.clone())]
        )
    ));
    let st2 = store(&s, step2.transformer_for("", "secrets"));
    let old = st2
        .get(&k_old, GetOptions::default())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(old.data, object("ns", "old", &[], "o"));
    assert!(old.stale, "an object under the old key is stale");
    let k_new = s.keys.object_key(Some("ns"), "new").expect("key");
    st2.create(&k_new, object("ns", "new", &[], "n"), None)
        .await
        .expect("create new");
    let raw = s
        .backend
        .get(&k_new, 0)
        .await
        .expect("raw")
        .kv
        .expect("present")
        .value;
    assert!(raw.starts_with(b"k8s:enc:aescbc:v1:key2:"));
    // Listing reads objects under both keys and plaintext.
    let list = st2
        .get_list(
            s.keys.resource_prefix(),
            ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .expect("list across keys");
    assert_eq!(list.items.len(), 3);
    // Rewriting a stale object re-encrypts it with the new key, even when its bytes are unchanged.
    let data = old.data.clone();
    st2.guaranteed_update(
        &k_old,
        false,
        None,
        Box::new(move |_| {
            let data = data.clone();
            Box::pin(async move { Ok(storage::interface::Update { data, ttl: None }) })
        }),
        None,
    )
    .await
    .expect("rewrite");
    let raw = s
        .backend
        .get(&k_old, 0)
        .await
        .expect("raw")
        .kv
        .expect("present")
        .value;
    assert!(
        raw.starts_with(b"k8s:enc:aescbc:v1:key2:"),
        "re-encrypted with the new key"
    );
}

#[tokio::test]
async fn undecryptable_object_is_an_explicit_error() {
    let s = setup();
    let writer = config(&provider("aesgcm", &[("key1", secret(1, 32))]));
    let st = store(&s, writer.transformer_for("", "secrets"));
    let k = s.keys.object_key(Some("ns"), "a").expect("key");
    let created = st
        .create(&k, object("ns", "a", &[], "x"), None)
        .await
        .expect("create");
    let k_b = s.keys.object_key(Some("ns"), "b").expect("key");
    st.create(&k_b, object("ns", "b", &[], "y"), None)
        .await
        .expect("create");
    // Same key name, different secret; and a configuration without the key at all.
    for reader in [
        config(&provider("aesgcm", &[("key1", secret(9, 32))])),
        config(&provider("aesgcm", &[("other", secret(1, 32))])),
        config("      - identity: {}\n"),
    ] {
        let bad = store(&s, reader.transformer_for("", "secrets"));
        let err = bad
            .get(&k, GetOptions::default())
            .await
            .expect_err("cannot decrypt");
        match &err {
            StorageError::Decrypt { key, prefix, .. } => {
                assert_eq!(key, &k);
                assert!(
                    prefix
                        .as_deref()
                        .is_some_and(|p| p.starts_with("k8s:enc:aesgcm:v1:"))
                );
            }
            other => panic!("expected Decrypt, got {other:?}"),
        }
        let err = bad
            .get_list(
                s.keys.resource_prefix(),
                ListOptions {
                    recursive: true,
                    ..ListOptions::default()
                },
            )
            .await
            .expect_err("a list never skips an undecryptable object");
        assert!(matches!(err, StorageError::Decrypt { .. }), "{err:?}");
        let mut w = bad
            .watch(
                s.keys.resource_prefix(),
                ListOptions {
                    recursive: true,
                    resource_version: "0".into(),
                    ..ListOptions::default()
                },
            )
            .await
            .expect("watch");
        match w.next().await {
            Some(WatchEvent::Error(StorageError::Decrypt { .. })) => {}
            other => panic!("expected a Decrypt watch error, got {other:?}"),
        }
    }
    // A value copied to another key fails authentication (the key is AES-GCM's AAD).
    let raw = s
        .backend
        .get(&k, 0)
        .await
        .expect("raw")
        .kv
        .expect("present")
        .value;
    let k_copy = s.keys.object_key(Some("ns"), "copy").expect("key");
    s.backend
        .put(&k_copy, raw, storage::backend::Condition::Absent, None)
        .await
        .expect("raw put");
    let err = st
        .get(&k_copy, GetOptions::default())
        .await
        .expect_err("AAD mismatch");
    assert!(matches!(err, StorageError::Decrypt { .. }), "{err:?}");
    assert!(created.resource_version > 0);
}

#[test]
fn invalid_configurations_are_rejected() {
    let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n";
    let cases = [
        format!("{head}{}", provider("aescbc", &[("k", secret(1, 16))])),
        format!("{head}{}", provider("aesgcm", &[("k", secret(1, 20))])),
        format!(
            "{head}{}",
            provider("secretbox", &[("k", "not base64!".to_string())])
        ),
        format!("{head}{}", provider("aescbc", &[("a:b", secret(1, 32))])),
        format!(
            "{head}{}",
            provider("aescbc", &[("k", secret(1, 32)), ("k", secret(2, 32))])
        ),
        format!("{head}      - kms: {{name: x}}\n"),
        format!("{head}      - identity: {{}}\n        aescbc: {{keys: []}}\n"),
        head.replace(
            "apiserver.config.k8s.io/v1",
            "apiserver.config.k8s.io/v1beta9",
        ) + "      - identity: {}\n",
        "not: [valid".to_string(),
    ];
    for case in cases {
        let err = EncryptionConfig::from_yaml(&case).expect_err(&case);
        assert!(
            matches!(
                err,
                EncryptionConfigError::Invalid(_) | EncryptionConfigError::Parse(_)
            ),
            "{err:?}"
        );
    }
}
