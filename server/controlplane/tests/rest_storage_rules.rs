//! A kind served from a user's storage keeps the rules every kind's writes share: Widgets in
//! the in-memory storage, through the REST handlers in-process. The status and scale
//! subresources, generation, generated names, finalizers and `deletionTimestamp`,
//! server-side apply creating an object, and the kind's validation.

mod rest_common;

use std::sync::Arc;

use rest_common::*;
use serde_json::json;
use server::registry::rest_storage::RestStorage;
use server::registry::rest_storage::memory::InMemory;

async fn harness() -> (Harness, Arc<InMemory>) {
    let kind = &demo_api::example_dev::WIDGET_KIND;
    let memory = Arc::new(InMemory::new(kind));
    let storage = RestStorage::read_write(memory.clone());
    let h = Harness::with(move |b| b.rest_storage(kind, storage)).await;
    (h, memory)
}

#[tokio::test]
async fn status_scale_and_generation() {
    let (h, memory) = harness().await;
    let mut body = widget("w", 2);
    body["status"] = json!({"replicas": 9});
    let r = h.post(WIDGETS, &body).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let created = r.json();
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created["status"].is_null(),
        "a create clears the status: {created}"
    );
    assert_eq!(memory.revision(), 1);

    // The status subresource writes only the status; the main resource keeps it.
    let mut status = created.clone();
    status["status"] = json!({"replicas": 2, "selector": "app=w"});
    status["spec"]["replicas"] = json!(50);
    let r = h.put(&format!("{WIDGETS}/w/status"), &status).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let o = r.json();
    assert_eq!(
        (
            o["status"]["replicas"].as_i64(),
            o["spec"]["replicas"].as_i64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(o["metadata"]["generation"], 1);
    let r = h.get(&format!("{WIDGETS}/w/status")).await;
    assert_eq!(r.json()["status"]["selector"], "app=w");

    // Scale reads and writes the replicas; a spec change moves the generation.
    let r = h.get(&format!("{WIDGETS}/w/scale")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["spec"]["replicas"], 2);
    assert_eq!(r.json()["status"]["selector"], "app=w");
    let r = h
        .patch(
            &format!("{WIDGETS}/w/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let o = h.get(&format!("{WIDGETS}/w")).await.json();
    assert_eq!(o["spec"]["replicas"], 5);
    assert_eq!(o["metadata"]["generation"], 2);
    assert_eq!(o["status"]["replicas"], 2);

    // An update that changes nothing writes nothing.
    let before = memory.revision();
    let r = h.put(&format!("{WIDGETS}/w"), &o).await;
    assert_eq!(r.status, 200);
    assert_eq!(memory.revision(), before);

    // The kind's validation (replicas at most 1000) and its CEL rule still apply.
    let r = h
        .patch(
            &format!("{WIDGETS}/w"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5000}}"#,
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.json());
    let r = h
        .patch(
            &format!("{WIDGETS}/w"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":200,"color":"red"}}"#,
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.json());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap_or("")
            .contains("a red widget may have at most 100 replicas")
    );
}

#[tokio::test]
async fn generated_names_finalizers_and_apply() {
    let (h, memory) = harness().await;
    let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"generateName": "gen-", "finalizers": ["example.dev/keep"]}, "spec": {"replicas": 1}});
    let r = h.post(WIDGETS, &body).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let name = r.json()["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(name.starts_with("gen-") && name.len() > 4, "{name}");

    // A finalizer holds the object: the delete marks it, and it goes with the finalizer.
    let r = h.delete(&format!("{WIDGETS}/{name}")).await;
    assert_eq!(r.status, 200);
    assert!(
        r.json()["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.json()
    );
    let r = h.get(&format!("{WIDGETS}/{name}")).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["metadata"]["deletionTimestamp"].is_string());
    let r = h
        .patch(
            &format!("{WIDGETS}/{name}"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(h.get(&format!("{WIDGETS}/{name}")).await.status, 404);

    // Server-side apply creates a missing object through the storage, then updates it.
    let apply = "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: applied\nspec:\n  replicas: 3\n";
    let r = h
        .send(
            "PATCH",
            &format!("{WIDGETS}/applied?fieldManager=test"),
            &[("content-type", "application/apply-patch+yaml")],
            apply.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let o = r.json();
    assert_eq!(o["spec"]["replicas"], 3);
    assert_eq!(o["metadata"]["managedFields"][0]["manager"], "test");
    let r = h
        .send(
            "PATCH",
            &format!("{WIDGETS}/applied?fieldManager=test"),
            &[("content-type", "application/apply-patch+yaml")],
            apply.replace("replicas: 3", "replicas: 4").into_bytes(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"]["replicas"], 4);

    // A delete with a stale resourceVersion precondition is a conflict, with Kubernetes'
    // message; a current one deletes.
    let rv = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let stale = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}});
    let r = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/applied"),
            &[("content-type", "application/json")],
            stale.to_string(),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.json());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap_or("")
            .ends_with(&format!("Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in meta: {rv}"))
    );
    let current = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": rv}});
    let r = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/applied"),
            &[("content-type", "application/json")],
            current.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["status"], "Success");
    assert!(memory.revision() > 0);
}

/// An updater that lets one concurrent write win before the next update it is given.
struct Racing {
    inner: Arc<InMemory>,
    race: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl server::registry::rest_storage::Updater for Racing {
    async fn update(
        &self,
        object: Box<dyn apimachinery::runtime::Object>,
    ) -> Result<Box<dyn apimachinery::runtime::Object>, apimachinery::status::ApiError> {
        use server::registry::rest_storage::Getter;
        if self.race.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let mut current = self.inner.get(object.namespace(), object.name()).await?;
            current
                .metadata_mut()
                .annotations
                .insert("raced".into(), "yes".into());
            self.inner.update(current).await?;
        }
        self.inner.update(object).await
    }
}

#[tokio::test]
async fn a_conflict_the_client_did_not_cause_is_retried() {
    let kind = &demo_api::example_dev::WIDGET_KIND;
    let memory = Arc::new(InMemory::new(kind));
    let racing = Arc::new(Racing {
        inner: memory.clone(),
        race: std::sync::atomic::AtomicBool::new(false),
    });
    let storage = RestStorage::read_write(memory.clone()).with_updater(racing.clone());
    let h = Harness::with(move |b| b.rest_storage(kind, storage)).await;
    assert_eq!(h.post(WIDGETS, &widget("w", 1)).await.status, 201);

    // A patch names no resourceVersion: it runs again on the fresh object.
    racing.race.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = h
        .patch(
            &format!("{WIDGETS}/w"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":7}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let o = r.json();
    assert_eq!(o["spec"]["replicas"], 7);
    assert_eq!(o["metadata"]["annotations"]["raced"], "yes");
    assert_eq!(o["metadata"]["resourceVersion"], "3");

    // A PUT names the resourceVersion it read: someone wrote since, so it is a conflict.
    racing.race.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut edit = o.clone();
    edit["spec"]["replicas"] = json!(8);
    let r = h.put(&format!("{WIDGETS}/w"), &edit).await;
    assert_eq!(r.status, 409, "{}", r.json());
    assert_eq!(r.json()["reason"], "Conflict");
    let o = h.get(&format!("{WIDGETS}/w")).await.json();
    assert_eq!(o["spec"]["replicas"], 7);
}
