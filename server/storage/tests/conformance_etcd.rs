//! The storage conformance suite against a Store on the etcd backend. Every case gets its own
//! etcd process (compaction in one case must not expire another case's reads).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use storage::backend::Backend;
use storage::etcd::process::EtcdProcess;
use storage::etcd::{EtcdBackend, EtcdConfig};
use storage::keys::ResourceKeys;
use storage::store::{Store, StoreConfig};
use storage::testing::{Factory, JsonTestCodec, TestContext};

fn factory() -> Factory {
    Arc::new(|| {
        async {
            let etcd = EtcdProcess::start().expect("etcd must be installed and start");
            let backend = EtcdBackend::connect(EtcdConfig::new([etcd.endpoint()]))
                .await
                .expect("connect to etcd");
            let backend: Arc<dyn Backend> = Arc::new(backend);
            let keys = ResourceKeys::new("/registry", "test.dev", "widgets").expect("keys");
            let config = StoreConfig::new(keys.resource_prefix(), Arc::new(JsonTestCodec))
                .with_bookmark_interval(Duration::from_millis(200));
            let store = Arc::new(Store::new(Arc::clone(&backend), config));
            TestContext {
                store,
                backend,
                keys,
                guard: Box::new(etcd),
            }
        }
        .boxed()
    })
}

storage::conformance_tests!(factory());
