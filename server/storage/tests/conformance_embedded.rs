//! The storage conformance suite against the embedded backend.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use storage::backend::Backend;
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{Factory, JsonTestCodec, TestContext};

fn factory() -> Factory {
    Arc::new(|| {
        async {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut options = EmbeddedOptions::new(dir.path());
            options.sweep_interval = Duration::from_millis(100);
            let backend: Arc<dyn Backend> =
                Arc::new(EmbeddedBackend::open(options).expect("open embedded backend"));
            let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
            let config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
                .with_bookmark_interval(Duration::from_millis(200));
            let store = Arc::new(Store::new(Arc::clone(&backend), config));
            TestContext {
                store,
                backend,
                keys,
                guard: Box::new(dir),
            }
        }
        .boxed()
    })
}

storage::conformance_tests!(factory());
