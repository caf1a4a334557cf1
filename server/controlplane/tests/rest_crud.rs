//! CRUD through `endpoints::serve`: create, get, list, update, patch, delete, and the Status
//! shapes of their failures.

mod rest_common;

use rest_common::*;
use serde_json::json;

#[tokio::test]
async fn create_get_list_update_delete_widget() {
    let h = Harness::new().await;
    let r = h.post(WIDGETS, &widget("w1", 2)).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    let rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv > 0);
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Update"
    );

    let got = h.get(&format!("{WIDGETS}/w1")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["spec"]["replicas"], 2);

    let list = h.get(WIDGETS).await;
    assert_eq!(list.status, 200);
    let lj = list.json();
    assert_eq!(lj["kind"], "WidgetList");
    assert_eq!(lj["items"].as_array().unwrap().len(), 1);

    // Stale update → 409 with the exact message.
    let mut stale = created.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["spec"]["replicas"] = json!(3);
    let r = h.put(&format!("{WIDGETS}/w1"), &stale).await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on widgets.example.dev \"w1\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Missing resourceVersion → 422.
    let mut unconditional = created.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let r = h.put(&format!("{WIDGETS}/w1"), &unconditional).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "Widget.example.dev \"w1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );

    let mut good = created.clone();
    good["spec"]["replicas"] = json!(4);
    let r = h.put(&format!("{WIDGETS}/w1"), &good).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["generation"], 2);

    let r = h.delete(&format!("{WIDGETS}/w1")).await;
    assert_eq!(r.status, 200);
    let s = r.json();
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["status"], "Success");
    assert_eq!(s["details"]["name"], "w1");
    assert_eq!(s["details"]["kind"], "widgets");
    assert_eq!(s["details"]["group"], "example.dev");

    let r = h.get(&format!("{WIDGETS}/w1")).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"widgets.example.dev \"w1\" not found","reason":"NotFound","details":{"name":"w1","group":"example.dev","kind":"widgets"},"code":404})
    );
}

#[tokio::test]
async fn create_errors() {
    let h = Harness::new().await;
    assert_eq!(h.post(WIDGETS, &widget("dup", 1)).await.status, 201);
    let r = h.post(WIDGETS, &widget("dup", 1)).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["reason"], "AlreadyExists");

    let r = h.post(WIDGETS, &widget("bad", -1)).await;
    assert_eq!(r.status, 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "Invalid");

    let r = h
        .post(
            "/apis/example.dev/v1/namespaces/nope/widgets",
            &widget("x", 1),
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], "namespaces \"nope\" not found");

    let mut other_ns = widget("y", 1);
    other_ns["metadata"]["namespace"] = json!("kube-system");
    let r = h.post(WIDGETS, &other_ns).await;
    assert_eq!(r.status, 400);

    let r = h
        .send(
            "POST",
            &format!("{WIDGETS}?dryRun=Some"),
            &[("content-type", "application/json")],
            serde_json::to_vec(&widget("z", 1)).unwrap(),
        )
        .await;
    assert_eq!(r.status, 422);
}

#[tokio::test]
async fn generate_name_and_dry_run() {
    let h = Harness::new().await;
    let r = h.post(WIDGETS, &json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"generateName": "gen-"}, "spec": {}})).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let name = r.json()["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    let r = h
        .send(
            "POST",
            &format!("{WIDGETS}?dryRun=All"),
            &[("content-type", "application/json")],
            serde_json::to_vec(&widget("dry", 1)).unwrap(),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(h.get(&format!("{WIDGETS}/dry")).await.status, 404);
}

#[tokio::test]
async fn field_validation_strict_and_warn() {
    let h = Harness::new().await;
    let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "f"}, "spec": {"replicas": 1, "foo": 1}});
    let r = h
        .send(
            "POST",
            &format!("{WIDGETS}?fieldValidation=Strict"),
            &[("content-type", "application/json")],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: unknown field \"spec.foo\""),
        "{}",
        r.json()
    );
    let r = h.post(WIDGETS, &body).await;
    assert_eq!(r.status, 201);
    assert_eq!(
        r.header("warning"),
        "299 - \"unknown field \\\"spec.foo\\\"\""
    );
}

#[tokio::test]
async fn patches() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("p", 1)).await;
    let r = h
        .patch(
            &format!("{WIDGETS}/p"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"a":"b"}},"spec":{"color":"blue"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["labels"]["a"], "b");
    assert_eq!(r.json()["spec"]["color"], "blue");
    let r = h
        .patch(
            &format!("{WIDGETS}/p"),
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/spec/replicas","value":7}]"#,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["spec"]["replicas"], 7);
    let r = h
        .patch(
            &format!("{WIDGETS}/p"),
            "application/strategic-merge-patch+json",
            r#"{"spec":{"replicas":2}}"#,
        )
        .await;
    assert_eq!(r.status, 415);
    assert_eq!(
        r.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let r = h
        .patch(
            &format!("{WIDGETS}/p"),
            "application/merge-patch+json",
            r#"{"metadata":{"resourceVersion":"1"}}"#,
        )
        .await;
    assert_eq!(r.status, 409);
    // Strategic merge on a kind that supports it.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
    assert_eq!(
        h.post("/api/v1/namespaces/default/configmaps", &cm)
            .await
            .status,
        201
    );
    let r = h
        .patch(
            "/api/v1/namespaces/default/configmaps/c",
            "application/strategic-merge-patch+json",
            r#"{"data":{"b":"2"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"], json!({"a": "1", "b": "2"}));
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let h = Harness::new().await;
    let mut w = widget("fin", 1);
    w["metadata"]["finalizers"] = json!(["example.dev/hold"]);
    assert_eq!(h.post(WIDGETS, &w).await.status, 201);
    let r = h.delete(&format!("{WIDGETS}/fin")).await;
    assert_eq!(r.status, 200);
    let obj = r.json();
    assert_eq!(obj["kind"], "Widget");
    assert!(obj["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(obj["metadata"]["generation"], 2);
    let r = h
        .patch(
            &format!("{WIDGETS}/fin"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(h.get(&format!("{WIDGETS}/fin")).await.status, 404);
}

#[tokio::test]
async fn strategic_merge_uses_schema_merge_keys() {
    let h = Harness::new().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "smp", "finalizers": ["a.example/x"], "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "u1"}]}});
    assert_eq!(
        h.post("/api/v1/namespaces/default/configmaps", &cm)
            .await
            .status,
        201
    );
    let patch = r#"{"metadata":{"finalizers":["b.example/y"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o2","uid":"u2"}]}}"#;
    let r = h
        .patch(
            "/api/v1/namespaces/default/configmaps/smp",
            "application/strategic-merge-patch+json",
            patch,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let o = r.json();
    assert_eq!(
        o["metadata"]["finalizers"],
        json!(["a.example/x", "b.example/y"])
    );
    assert_eq!(
        o["metadata"]["ownerReferences"].as_array().unwrap().len(),
        2
    );
    let r = h.patch("/api/v1/namespaces/default/configmaps/smp", "application/strategic-merge-patch+json", r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example/x"],"ownerReferences":[{"uid":"u1","$patch":"delete"}]}}"#).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["b.example/y"]));
    assert_eq!(r.json()["metadata"]["ownerReferences"][0]["uid"], "u2");
}

#[tokio::test]
async fn unknown_field_validation_directive_is_422() {
    let h = Harness::new().await;
    let r = h
        .send(
            "POST",
            &format!("{WIDGETS}?fieldValidation=Loose"),
            &[("content-type", "application/json")],
            serde_json::to_vec(&widget("fv", 1)).unwrap(),
        )
        .await;
    // As kube-apiserver's `ValidateCreateOptions`.
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
    let r = h
        .send("POST", &format!("{WIDGETS}?fieldValidation=Ignore"), &[("content-type", "application/json")], serde_json::to_vec(&json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "fv"}, "spec": {"foo": 1}})).unwrap())
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.header("warning"), "");
}

#[tokio::test]
async fn kubernetes_kinds_without_generation_never_get_one() {
    let h = Harness::new().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nogen", "generation": 5}, "data": {"a": "1"}});
    let r = h.post("/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert!(created["metadata"].get("generation").is_none(), "{created}");
    let r = h
        .patch(
            "/api/v1/namespaces/default/configmaps/nogen",
            "application/merge-patch+json",
            r#"{"data":{"a":"2"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["metadata"].get("generation").is_none());
    // The namespaces apiary creates itself follow the same rule.
    let ns = h.get("/api/v1/namespaces/default").await.json();
    assert!(ns["metadata"].get("generation").is_none(), "{ns}");
}
