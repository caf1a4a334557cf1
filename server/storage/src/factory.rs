//! Building per-resource stores from one backend, one key prefix and one encryption
//! configuration — what the server does once at startup.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::Backend;
use crate::embedded::{EmbeddedBackend, EmbeddedOptions};
use crate::errors::Result;
use crate::interface::ObjectCodec;
use crate::keys::{DEFAULT_PREFIX, ResourceKeys, normalize_prefix};
use crate::store::{Store, StoreConfig};
use crate::transformer::EncryptionConfig;

/// Creates the [`Store`] of every resource over one backend.
#[derive(Clone)]
pub struct StorageFactory {
    backend: Arc<dyn Backend>,
    prefix: String,
    encryption: Arc<EncryptionConfig>,
    bookmark_interval: Duration,
}

impl std::fmt::Debug for StorageFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageFactory")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl StorageFactory {
    /// A factory over `backend` with keys under `prefix` (for example `/registry`), no
    /// encryption and a 5 second bookmark interval.
    pub fn new(backend: Arc<dyn Backend>, prefix: &str) -> Result<Self> {
        Ok(Self {
            backend,
            prefix: normalize_prefix(prefix)?,
            encryption: Arc::new(EncryptionConfig::default()),
            bookmark_interval: Duration::from_secs(5),
        })
    }

    /// Opens the embedded backend in `data_dir` with default options, keys under
    /// [`DEFAULT_PREFIX`].
    pub fn open_embedded(data_dir: impl AsRef<Path>) -> Result<Self> {
        let backend = EmbeddedBackend::open(EmbeddedOptions::new(data_dir.as_ref()))?;
        Self::new(Arc::new(backend), DEFAULT_PREFIX)
    }

    /// Uses `config` (from `--encryption-provider-config`) for every store created afterwards.
    pub fn with_encryption(mut self, config: EncryptionConfig) -> Self {
        self.encryption = Arc::new(config);
        self
    }

    /// Sets how often idle watches that allow bookmarks receive one.
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// The backend shared by every store.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The key layout of `group`/`resource` (`""` for the core group).
    pub fn keys(&self, group: &str, resource: &str) -> Result<ResourceKeys> {
        ResourceKeys::new(&self.prefix, group, resource)
    }

    /// The store of `group`/`resource`, with the resource's transformer from the encryption
    /// configuration and `codec` to read uid, labels and fields of its objects.
    pub fn store(&self, group: &str, resource: &str, codec: Arc<dyn ObjectCodec>) -> Result<Store> {
        let keys = self.keys(group, resource)?;
        let config = StoreConfig::new(keys.resource_prefix(), codec)
            .with_transformer(self.encryption.transformer_for(group, resource))
            .with_bookmark_interval(self.bookmark_interval);
        Ok(Store::new(Arc::clone(&self.backend), config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::{GetOptions, Interface};
    use crate::testing::{JsonTestCodec, object};

    #[tokio::test]
    async fn builds_encrypted_and_plain_stores() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = EncryptionConfig::from_yaml(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aesgcm:\n          keys:\n            - name: k\n              secret: MDEyMzQ1Njc4OTAxMjM0NQ==\n",
        )
        .expect("config");
        let factory = StorageFactory::open_embedded(dir.path())
            .expect("open")
            .with_encryption(config);
        let secrets = factory
            .store("", "secrets", Arc::new(JsonTestCodec))
            .expect("store");
        let widgets = factory
            .store("example.dev", "widgets", Arc::new(JsonTestCodec))
            .expect("store");
        let ks = factory
            .keys("", "secrets")
            .expect("keys")
            .object_key(Some("ns"), "s")
            .expect("key");
        let kw = factory
            .keys("example.dev", "widgets")
            .expect("keys")
            .object_key(Some("ns"), "w")
            .expect("key");
        assert_eq!(ks, "/registry/secrets/ns/s");
        assert_eq!(kw, "/registry/example.dev/widgets/ns/w");
        secrets
            .create(&ks, object("ns", "s", &[], "x"), None)
            .await
            .expect("create");
        widgets
            .create(&kw, object("ns", "w", &[], "y"), None)
            .await
            .expect("create");
        let raw_s = factory
            .backend()
            .get(&ks, 0)
            .await
            .expect("raw")
            .kv
            .expect("present");
        let raw_w = factory
            .backend()
            .get(&kw, 0)
            .await
            .expect("raw")
            .kv
            .expect("present");
        assert!(raw_s.value.starts_with(b"k8s:enc:aesgcm:v1:k:"));
        assert!(raw_w.value.starts_with(b"{"));
        assert!(
            secrets
                .get(&ks, GetOptions::default())
                .await
                .expect("get")
                .is_some()
        );
    }
}
