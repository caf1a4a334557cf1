//! The conformance suite on [`InMemory`], for a namespaced and a cluster-scoped kind, and
//! what the in-memory storage adds: its bounded history.

use std::sync::Arc;

use apimachinery::runtime::Kind;
use apimachinery::status::StatusReason;
use futures::FutureExt;

use super::InMemory;
use crate::registry::rest_storage::conformance::{Factory, Fixture};
use crate::registry::rest_storage::{Creater, ListOptions, RestStorage, Updater, Watcher};

fn factory(kind: &'static Kind) -> Factory {
    Arc::new(move || {
        async move {
            let memory = Arc::new(InMemory::new(kind));
            let forget = memory.clone();
            Fixture::new(kind, RestStorage::read_write(memory))
                .with_compact(move || forget.compact())
        }
        .boxed()
    })
}

mod namespaced {
    crate::rest_storage_conformance_tests!(super::factory(&kubernetes_api::core::CONFIG_MAP_KIND));
}

mod cluster_scoped {
    crate::rest_storage_conformance_tests!(super::factory(&kubernetes_api::core::NAMESPACE_KIND));
}

/// A read-only storage passes too, its changes made through the writer.
#[tokio::test]
async fn read_only_storage_with_a_writer() {
    let factory: Factory = Arc::new(|| {
        async {
            let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
            let memory = Arc::new(InMemory::new(kind));
            let forget = memory.clone();
            let storage = RestStorage::read_only(memory.clone())
                .with_updater(memory.clone())
                .with_deleter(memory.clone());
            Fixture::new(kind, storage)
                .with_writer(RestStorage::read_write(memory))
                .with_compact(move || forget.compact())
        }
        .boxed()
    });
    crate::registry::rest_storage::conformance::run(&factory).await;
}

#[tokio::test]
async fn history_is_bounded_and_older_watches_are_gone() {
    let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
    let memory = InMemory::new(kind).with_history(2);
    let mut object = kind.storage().new_object();
    object.metadata_mut().name = Some("a".into());
    object.metadata_mut().namespace = Some("ns".into());
    let mut stored = memory.create(object).await.expect("create");
    for _ in 0..3 {
        stored = memory.update(stored).await.expect("update");
    }
    assert_eq!(memory.revision(), 4);
    // Changes 3 and 4 are kept: a watch from 2 resumes, one from 1 is 410 Expired.
    let from = |rv: &str| ListOptions {
        resource_version: rv.to_string(),
        ..ListOptions::default()
    };
    assert!(memory.watch(&from("2")).await.is_ok());
    let e = memory.watch(&from("1")).await.err().expect("410");
    assert_eq!((e.code(), e.reason()), (410, StatusReason::Expired));
    assert_eq!(e.message(), "too old resource version: 1 (2)");
}

#[tokio::test]
async fn lists_from_an_unreached_resource_version_time_out() {
    use crate::registry::rest_storage::Lister;
    let memory = InMemory::new(&kubernetes_api::core::CONFIG_MAP_KIND);
    let e = memory
        .list(&ListOptions {
            resource_version: "5".into(),
            ..ListOptions::default()
        })
        .await
        .expect_err("504");
    assert_eq!(e.code(), 504);
}
