//! A delete racing other writes (the registry's `Store::delete`).

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::*;
use crate::registry::Registry;
use kubernetes_api::core::v1::ConfigMap;

fn configmap(name: &str, value: &str) -> Box<dyn Object> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.namespace = Some("default".to_string());
    cm.data.insert("v".into(), value.into());
    Box::new(cm)
}

/// Admission that, the first time it is asked, lets another client delete the object and
/// create it again (a new uid) before the delete it admits reaches the storage; it records
/// the values it admitted.
struct Racing {
    store: Arc<Store>,
    calls: AtomicUsize,
    seen: parking_lot::Mutex<Vec<String>>,
}

#[async_trait]
impl ValidateObject for Racing {
    async fn validate(
        &self,
        _: Option<&dyn Object>,
        old: Option<&dyn Object>,
    ) -> Result<(), ApiError> {
        let old = old.and_then(|o| o.downcast_ref::<ConfigMap>());
        self.seen
            .lock()
            .push(old.map(|c| c.data["v"].clone()).unwrap_or_default());
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let key = self.store.key("default", "c")?;
            self.store
                .storage()
                .delete(&key, None, None, None)
                .await
                .map_err(|e| self.store.err(e, "c"))?;
            self.store
                .create(configmap("c", "second"), &NoAdmission, false)
                .await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_delete_racing_a_recreate_admits_and_removes_the_new_object() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backend =
        storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let registry = Registry::new(Arc::new(backend), "/registry".to_string());
    let store = registry
        .store(&kubernetes_api::core::CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .create(configmap("c", "first"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let racing = Racing {
        store: store.clone(),
        calls: AtomicUsize::new(0),
        seen: parking_lot::Mutex::new(Vec::new()),
    };
    // Without preconditions the delete removes whatever object the name holds, once
    // admission has seen that object (kube-apiserver: not a uid conflict).
    let outcome = store
        .delete("default", "c", &racing, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(outcome, DeleteOutcome::Deleted(_)));
    assert_eq!(*racing.seen.lock(), vec!["first", "second"]);
    let gone = store.get("default", "c", "").await;
    assert_eq!(gone.err().map(|e| e.code()), Some(404));

    // With the client's uid as a precondition, the recreated object is a conflict.
    let (created, _) = store
        .create(configmap("c", "first"), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let racing = Racing {
        store: store.clone(),
        calls: AtomicUsize::new(0),
        seen: parking_lot::Mutex::new(Vec::new()),
    };
    let opts = DeleteOptions {
        uid: created.metadata().uid.clone(),
        ..DeleteOptions::default()
    };
    let err = store
        .delete("default", "c", &racing, &opts)
        .await
        .err()
        .unwrap_or_else(|| panic!("the recreated object was deleted despite the uid"));
    assert_eq!(err.code(), 409, "{err:?}");
}
