//! Reads in other shapes: Tables, metadata-only objects, YAML, protobuf, versions, pagination
//! and selectors.

mod rest_common;

use rest_common::*;
use serde_json::json;

const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn table_and_partial_metadata() {
    let h = Harness::new().await;
    let mut w = widget("t1", 3);
    w["spec"]["color"] = json!("blue");
    h.post(WIDGETS, &w).await;
    let r = h
        .send(
            "GET",
            &format!("{WIDGETS}?limit=500"),
            &[("accept", KUBECTL_ACCEPT)],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    );
    let t = r.json();
    assert_eq!(t["kind"], "Table");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Name", "Replicas", "Color", "Age"]);
    assert_eq!(t["rows"][0]["cells"][0], "t1");
    assert_eq!(t["rows"][0]["cells"][1], 3);
    assert_eq!(t["rows"][0]["cells"][2], "blue");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let r = h
        .send(
            "GET",
            &format!("{WIDGETS}?includeObject=Bogus"),
            &[("accept", KUBECTL_ACCEPT)],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = h
        .send(
            "GET",
            &format!("{WIDGETS}/t1"),
            &[(
                "accept",
                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            )],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "PartialObjectMetadata");
    assert!(r.json().get("spec").is_none());
    let r = h
        .send(
            "GET",
            WIDGETS,
            &[(
                "accept",
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            )],
            Vec::new(),
        )
        .await;
    assert_eq!(r.json()["kind"], "PartialObjectMetadataList");
    let r = h
        .send(
            "GET",
            &format!("{WIDGETS}/t1"),
            &[(
                "accept",
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            )],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 406);
    let r = h
        .send(
            "GET",
            &format!("{WIDGETS}/t1"),
            &[("accept", "application/yaml")],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("kind: Widget"));
}

#[tokio::test]
async fn versions_convert_both_ways() {
    let h = Harness::new().await;
    let r = h.post("/apis/example.dev/v1alpha1/namespaces/default/widgets", &json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget", "metadata": {"name": "old"}, "spec": {"size": 5}})).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"]["size"], 5);
    let r = h.get(&format!("{WIDGETS}/old")).await;
    assert_eq!(r.json()["apiVersion"], "example.dev/v1");
    assert_eq!(r.json()["spec"]["replicas"], 5);
    h.post(WIDGETS, &widget("new", 6)).await;
    let r = h
        .get("/apis/example.dev/v1alpha1/namespaces/default/widgets/new")
        .await;
    assert_eq!(r.json()["spec"]["size"], 6);
}

#[tokio::test]
async fn pagination_and_selectors() {
    let h = Harness::new().await;
    for i in 0..5 {
        let mut w = widget(&format!("p{i}"), i);
        w["metadata"]["labels"] = json!({"tier": if i % 2 == 0 { "even" } else { "odd" }});
        assert_eq!(h.post(WIDGETS, &w).await.status, 201);
    }
    let r = h.get(&format!("{WIDGETS}?limit=2")).await.json();
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    let cont = r["metadata"]["continue"].as_str().unwrap().to_string();
    assert_eq!(r["metadata"]["remainingItemCount"], 3);
    let r2 = h
        .get(&format!("{WIDGETS}?limit=2&continue={cont}"))
        .await
        .json();
    assert_eq!(r2["items"][0]["metadata"]["name"], "p2");
    let r = h
        .get(&format!("{WIDGETS}?labelSelector=tier%3Deven"))
        .await
        .json();
    assert_eq!(r["items"].as_array().unwrap().len(), 3);
    let r = h
        .get(&format!("{WIDGETS}?labelSelector=tier+in+(odd)"))
        .await
        .json();
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    let r = h
        .get(&format!("{WIDGETS}?fieldSelector=metadata.name%3Dp3"))
        .await
        .json();
    assert_eq!(r["items"].as_array().unwrap().len(), 1);
    let r = h
        .get(&format!("{WIDGETS}?fieldSelector=spec.replicas%3D3"))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        "field label not supported: spec.replicas"
    );
    let r = h.get(&format!("{WIDGETS}?labelSelector=a%20b")).await;
    assert_eq!(r.status, 400);
    let all = h.get("/apis/example.dev/v1/widgets").await.json();
    assert_eq!(all["items"].as_array().unwrap().len(), 5);
    let r = h
        .get(&format!(
            "{WIDGETS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(r.status, 504, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("Timeout: Too large resource version: 999999, current: ")
    );
}

#[tokio::test]
async fn protobuf_objects() {
    let h = Harness::new().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"}, "data": {"k": "v"}});
    assert_eq!(
        h.post("/api/v1/namespaces/default/configmaps", &cm)
            .await
            .status,
        201
    );
    let r = h
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps/pb",
            &[(
                "accept",
                "application/vnd.kubernetes.protobuf, application/json",
            )],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        "application/vnd.kubernetes.protobuf"
    );
    assert_eq!(&r.body[..4], &[0x6b, 0x38, 0x73, 0x00]);
    let unknown = apimachinery::protobuf::decode_envelope(&r.body).unwrap();
    assert_eq!(unknown.type_meta.kind, "ConfigMap");
    assert_eq!(unknown.type_meta.api_version, "v1");
    // A protobuf body is accepted for writes.
    let kind = h.ctx.scheme.by_resource("", "configmaps").unwrap();
    let object = kind
        .codec("v1")
        .unwrap()
        .decode_value(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb2"}, "data": {"x": "y"}}))
        .unwrap()
        .object;
    let mut raw = Vec::new();
    object.write_protobuf(&mut raw).unwrap();
    let body = apimachinery::protobuf::encode_envelope("v1", "ConfigMap", &raw);
    let r = h
        .send(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            body,
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = h
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &[("accept", "application/vnd.kubernetes.protobuf")],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        apimachinery::protobuf::decode_envelope(&r.body)
            .unwrap()
            .type_meta
            .kind,
        "ConfigMapList"
    );
    let r = h
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps/pb",
            &[("accept", "text/html")],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 406);
}

#[tokio::test]
async fn large_lists_are_gzipped_when_accepted() {
    let h = Harness::new().await;
    let blob = "x".repeat(4096);
    for i in 0..40 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("big{i}")}, "data": {"blob": blob}});
        assert_eq!(
            h.post("/api/v1/namespaces/default/configmaps", &cm)
                .await
                .status,
            201
        );
    }
    let plain = h.get("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(plain.header("content-encoding"), "");
    assert!(plain.body.len() > 128 * 1024);
    let r = h
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &[("accept-encoding", "gzip")],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), "gzip");
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&r.body[..]), &mut decoded)
        .unwrap();
    assert_eq!(decoded, plain.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_list_of_an_idle_resource_does_not_stall() {
    let h = Harness::new().await;
    // Warm both caches, then write to one resource and list the other.
    h.get("/api/v1/namespaces/default/configmaps").await;
    h.get(WIDGETS).await;
    for i in 0..3 {
        h.post(WIDGETS, &widget(&format!("busy{i}"), 1)).await;
        let t = std::time::Instant::now();
        let r = h.get("/api/v1/namespaces/default/configmaps").await;
        assert_eq!(r.status, 200);
        assert!(
            t.elapsed() < std::time::Duration::from_millis(600),
            "consistent list took {:?}",
            t.elapsed()
        );
    }
}

#[tokio::test]
async fn objects_stored_under_another_version_are_converted_on_read() {
    let h = Harness::new().await;
    let kind = h.ctx.scheme.by_resource("example.dev", "widgets").unwrap();
    let store = h.ctx.store(kind).unwrap();
    let old = json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget", "metadata": {"name": "legacy", "namespace": "default", "uid": "u"}, "spec": {"size": 4}});
    store
        .storage()
        .create(
            "/registry/example.dev/widgets/default/legacy",
            serde_json::to_vec(&old).unwrap().into(),
            None,
        )
        .await
        .unwrap();
    let r = h.get(&format!("{WIDGETS}/legacy")).await.json();
    assert_eq!(r["apiVersion"], "example.dev/v1");
    assert_eq!(r["spec"]["replicas"], 4);
    let list = h.get(WIDGETS).await.json();
    assert_eq!(list["items"][0]["spec"]["replicas"], 4);
}
