//! [`CachedObjects`] as admission plugins read other kinds: `cached_list` returns what a kind's
//! watch cache holds, in one namespace or all of them, and nothing for a kind the server does
//! not serve or one served from a user's storage.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::admission::ObjectReader;
use apimachinery::runtime::Object;
use kubernetes_api::core::v1::{ConfigMap, Namespace};

use super::rest_storage::RestStorage;
use super::rest_storage::memory::InMemory;
use super::{CachedObjects, NoAdmission, Registry};

fn names(objects: &[Box<dyn Object>]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            let meta = o.metadata();
            format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or(""),
                meta.name.as_deref().unwrap_or("")
            )
        })
        .collect()
}

fn config_map(namespace: &str, name: &str) -> Box<dyn Object> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.namespace = Some(namespace.to_string());
    Box::new(cm)
}

#[tokio::test]
async fn cached_list_reads_a_kinds_watch_cache() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backend =
        storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let secrets = &kubernetes_api::core::SECRET_KIND;
    let registry = Arc::new(
        Registry::new(Arc::new(backend), "/registry".to_string()).with_rest_storage(
            secrets,
            RestStorage::read_write(Arc::new(InMemory::new(secrets))),
        ),
    );
    let objects = CachedObjects::new(registry.clone(), Arc::new(kubernetes_api::scheme()));

    let config_maps = registry
        .store(&kubernetes_api::core::CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    for (namespace, name) in [
        ("default", "b"),
        ("other", "c"),
        ("default", "a"),
        ("defaults", "d"),
    ] {
        config_maps
            .create(config_map(namespace, name), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("default".to_string());
    registry
        .store(&kubernetes_api::core::NAMESPACE_KIND)
        .unwrap_or_else(|e| panic!("{e}"))
        .create(Box::new(namespace), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // The writes reach the caches a moment later.
    let all = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let all = objects.cached_list("", "ConfigMap", "");
            if all.len() == 4 && objects.cached_list("", "Namespace", "").len() == 1 {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the caches never held the objects"));

    // Every namespace, in key order; one namespace (not its prefix's neighbours).
    assert_eq!(
        names(&all),
        ["default/a", "default/b", "defaults/d", "other/c"]
    );
    assert!(all.iter().all(|o| o.downcast_ref::<ConfigMap>().is_some()));
    assert_eq!(
        names(&objects.cached_list("", "ConfigMap", "default")),
        ["default/a", "default/b"]
    );
    assert_eq!(
        names(&objects.cached_list("", "ConfigMap", "other")),
        ["other/c"]
    );
    assert!(objects.cached_list("", "ConfigMap", "none").is_empty());
    // A cluster-scoped kind.
    assert_eq!(
        names(&objects.cached_list("", "Namespace", "")),
        ["/default"]
    );
    // A kind the server does not serve, and one in a user's storage.
    assert!(objects.cached_list("example.dev", "Widget", "").is_empty());
    assert!(objects.cached_list("", "Secret", "").is_empty());
}
