//! The storage conformance suite against the watch cache over a Store on the etcd backend.
//! Every case gets its own etcd process.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use parking_lot::Mutex;
use storage::backend::Backend;
use storage::cacher::{Cacher, CacherConfig};
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{Factory, JsonTestCodec, TestContext};
use support::CompactingBackend;

mod support;

fn factory() -> Factory {
    Arc::new(|| {
        async {
            let etcd = EtcdProcess::start().expect("etcd must be installed and start");
            let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
                .await
                .expect("connect to etcd");
            let backend: Arc<dyn Backend> = Arc::new(backend);
            let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
            // Upstream bookmarks follow etcd's progress notifications (100 ms for test etcds).
            let store_config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
                .with_bookmark_interval(Duration::from_millis(100));
            let store = Arc::new(Store::new(Arc::clone(&backend), store_config));
            let mut cache_config =
                CacherConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec));
            cache_config.bookmark_interval = Duration::from_millis(200);
            let cacher = Cacher::new(store, cache_config);
            assert!(
                cacher.wait_ready(Duration::from_secs(10)).await,
                "watch cache did not load"
            );
            // Compacting through the context also compacts the cache's history.
            let compacting = CompactingBackend {
                inner: backend,
                cacher: Mutex::new(Some(cacher.clone())),
            };
            TestContext {
                store: Arc::new(cacher),
                backend: Arc::new(compacting),
                keys,
                guard: Box::new(etcd),
            }
        }
        .boxed()
    })
}

storage::conformance_tests!(factory());
