//! Read-your-writes through `endpoints::serve`: a GET without resourceVersion right after a
//! write sees the write (whether the watch cache or the storage answers it), and a create in a
//! namespace created just before is admitted.

mod rest_common;

use rest_common::*;
use serde_json::json;

#[tokio::test]
async fn gets_see_the_write_just_made() {
    let h = Harness::new().await;
    for i in 0..40 {
        let name = format!("w{i}");
        let path = format!("{WIDGETS}/{name}");
        let created = h.post(WIDGETS, &widget(&name, 1)).await;
        assert_eq!(
            created.status,
            201,
            "{}",
            String::from_utf8_lossy(&created.body)
        );
        let got = h.get(&path).await;
        assert_eq!(got.status, 200, "GET right after create of {name}");
        assert_eq!(
            got.json()["metadata"]["resourceVersion"],
            created.json()["metadata"]["resourceVersion"]
        );

        let mut changed = got.json();
        changed["spec"]["replicas"] = json!(2);
        let updated = h.put(&path, &changed).await;
        assert_eq!(
            updated.status,
            200,
            "{}",
            String::from_utf8_lossy(&updated.body)
        );
        let got = h.get(&path).await;
        assert_eq!(
            got.json()["spec"]["replicas"],
            2,
            "GET right after update of {name}"
        );
        assert_eq!(
            got.json()["metadata"]["resourceVersion"],
            updated.json()["metadata"]["resourceVersion"]
        );

        assert_eq!(h.delete(&path).await.status, 200);
        assert_eq!(
            h.get(&path).await.status,
            404,
            "GET right after delete of {name}"
        );
    }
}

#[tokio::test]
async fn creates_in_a_namespace_created_just_before_are_admitted() {
    let h = Harness::new().await;
    for i in 0..20 {
        let ns = format!("fresh-{i}");
        let r = h
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let widgets = format!("/apis/example.dev/v1/namespaces/{ns}/widgets");
        let r = h.post(&widgets, &widget("w", 1)).await;
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let r = h
        .post(
            "/apis/example.dev/v1/namespaces/absent/widgets",
            &widget("w", 1),
        )
        .await;
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
}
