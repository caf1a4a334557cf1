//! Kinds served from a user's storage, over HTTPS through the generic server: ConfigMaps from
//! the in-memory storage with every verb, Events from a read-only one. Create, get, list,
//! watch (and its 410 after the history is trimmed), update conflicts, patch, delete and
//! deletecollection with real requests; the kind's validation and admission still apply; a
//! verb the read-only storage lacks is 405 and absent from discovery.

mod https_common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use server::genericserver::Config;
use server::genericserver::tls::TlsOptions;
use server::registry::rest_storage::memory::InMemory;
use server::registry::rest_storage::{Creater, RestStorage};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const EVENTS: &str = "/api/v1/namespaces/default/events";

/// Status and JSON body of a response.
async fn reply(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body = resp.bytes().await.unwrap_or_default();
    let value = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body));
    });
    (status, value)
}

/// Reads `n` watch events (JSON lines) from a streaming response.
async fn events(resp: &mut reqwest::Response, n: usize) -> Vec<Value> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .expect("a watch event in time")
            .expect("the watch stream")
            .expect("the watch still open");
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line).expect("event JSON"));
        }
    }
    out
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_served_from_user_storage() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let localhost = IpAddr::from([127, 0, 0, 1]);
    let paths = server::pki::ensure(dir.path(), localhost, true).unwrap_or_else(|e| panic!("{e}"));
    let backend = storage::embedded::EmbeddedBackend::open(
        storage::embedded::EmbeddedOptions::new(dir.path().join("store")),
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let configmaps =
        Arc::new(InMemory::new(&kubernetes_api::core::CONFIG_MAP_KIND).with_history(4));
    let events_kind = &kubernetes_api::core::EVENT_KIND;
    let event_log = Arc::new(InMemory::new(events_kind));
    let mut seeded = events_kind.storage().new_object();
    seeded.metadata_mut().name = Some("started".into());
    seeded.metadata_mut().namespace = Some("default".into());
    event_log
        .create(seeded)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let tls = TlsOptions::new(
        paths.serving_cert.clone(),
        paths.serving_key.clone(),
        paths.ca_cert.clone(),
    );
    let groups: Vec<Arc<dyn server::ApiGroups>> =
        vec![Arc::new(controlplane::KubernetesApis::default())];
    let config = Config {
        request_timeout: Duration::from_secs(10),
        max_requests_inflight: 0,
        max_mutating_requests_inflight: 0,
        authorization_modes: vec![controlplane::RBAC_MODE.to_string()],
        rest_storage: vec![
            (
                &kubernetes_api::core::CONFIG_MAP_KIND,
                RestStorage::read_write(configmaps.clone()),
            ),
            (events_kind, RestStorage::read_only(event_log.clone())),
        ],
        ..Config::new(
            groups,
            Arc::new(backend),
            SocketAddr::new(localhost, 0),
            tls,
        )
    };
    let server = config
        .complete()
        .and_then(|c| c.new_server())
        .unwrap_or_else(|e| panic!("{e}"));
    let signals = server.signals().clone();
    let prepared = server.prepare_run().await.unwrap_or_else(|e| panic!("{e}"));
    let base = format!("https://127.0.0.1:{}", prepared.local_addr().port());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(prepared.run(async move {
        let _ = stop_rx.await;
    }));
    signals.has_been_ready.wait().await;
    let c = https_common::admin_client(dir.path());
    let url = |path: &str| format!("{base}{path}");

    // Create, with the kind's rules: system metadata set, the name validated.
    let (status, created) = reply(
        c.post(url(CONFIGMAPS))
            .json(&configmap("settings", "one"))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["metadata"]["resourceVersion"], "1");
    assert!(
        created["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(created["metadata"]["creationTimestamp"].is_string());
    assert_eq!(configmaps.revision(), 1, "stored in the user's storage");
    let (status, invalid) = reply(
        c.post(url(CONFIGMAPS))
            .json(&configmap("Not_Valid", "x"))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(
        (status, invalid["reason"].as_str()),
        (422, Some("Invalid")),
        "{invalid}"
    );
    // Admission runs: NamespaceLifecycle refuses a namespace that does not exist.
    let (status, refused) = reply(
        c.post(url("/api/v1/namespaces/nowhere/configmaps"))
            .json(&configmap("lost", "x"))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 404, "{refused}");
    // A dry run reaches no storage.
    let (status, _) = reply(
        c.post(url(&format!("{CONFIGMAPS}?dryRun=All")))
            .json(&configmap("dry", "x"))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(configmaps.revision(), 1);
    let (status, existing) = reply(
        c.post(url(CONFIGMAPS))
            .json(&configmap("settings", "again"))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(
        (status, existing["reason"].as_str()),
        (409, Some("AlreadyExists"))
    );

    // Get, as JSON, protobuf and a Table.
    let (status, got) = reply(
        c.get(url(&format!("{CONFIGMAPS}/settings")))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(got["data"]["k"], "one");
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    let proto = c
        .get(url(&format!("{CONFIGMAPS}/settings")))
        .header("accept", "application/vnd.kubernetes.protobuf")
        .send()
        .await
        .expect("get");
    assert_eq!(proto.status(), 200);
    assert_eq!(
        proto.headers()["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    assert!(
        proto
            .bytes()
            .await
            .unwrap_or_default()
            .starts_with(b"k8s\0")
    );
    let (status, table) = reply(
        c.get(url(CONFIGMAPS))
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .send()
            .await
            .expect("table"),
    )
    .await;
    assert_eq!((status, table["kind"].as_str()), (200, Some("Table")));
    assert_eq!(table["rows"][0]["cells"][0], "settings");
    let (status, missing) = reply(
        c.get(url(&format!("{CONFIGMAPS}/missing")))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(
        (status, missing["reason"].as_str()),
        (404, Some("NotFound"))
    );

    // List, and watch from the list's resourceVersion.
    let (status, list) = reply(c.get(url(CONFIGMAPS)).send().await.expect("list")).await;
    assert_eq!(status, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(rv, "1");
    let mut watch = c
        .get(url(&format!(
            "{CONFIGMAPS}?watch=true&resourceVersion={rv}"
        )))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);

    // Update with a stale resourceVersion: 409 Conflict; then a patch and a delete.
    // The first PUT names the current resourceVersion; the same body again is stale.
    let mut edit = got.clone();
    edit["data"]["k"] = json!("two");
    let (status, updated) = reply(
        c.put(url(&format!("{CONFIGMAPS}/settings")))
            .json(&edit)
            .send()
            .await
            .expect("update"),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["metadata"]["resourceVersion"], "2");
    let (status, conflict) = reply(
        c.put(url(&format!("{CONFIGMAPS}/settings")))
            .json(&edit)
            .send()
            .await
            .expect("update"),
    )
    .await;
    assert_eq!(
        (status, conflict["reason"].as_str()),
        (409, Some("Conflict"))
    );
    assert_eq!(
        conflict["message"],
        "Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let (status, patched) = reply(
        c.patch(url(&format!("{CONFIGMAPS}/settings")))
            .header("content-type", "application/merge-patch+json")
            .body(r#"{"data":{"k":"three"}}"#)
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["data"]["k"], "three");
    assert_eq!(patched["metadata"]["resourceVersion"], "3");
    let (status, _) = reply(
        c.delete(url(&format!("{CONFIGMAPS}/settings")))
            .send()
            .await
            .expect("delete"),
    )
    .await;
    assert_eq!(status, 200);
    let seen = events(&mut watch, 3).await;
    let summary: Vec<(&str, &str)> = seen
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or(""),
                e["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [("MODIFIED", "2"), ("MODIFIED", "3"), ("DELETED", "4")]
    );
    assert_eq!(seen[1]["object"]["data"]["k"], "three");
    drop(watch);

    // deletecollection, then a watch from a resourceVersion the bounded history lost: 410.
    for name in ["a", "b", "c"] {
        let resp = c
            .post(url(CONFIGMAPS))
            .json(&configmap(name, "x"))
            .send()
            .await
            .expect("create");
        assert_eq!(resp.status(), 201);
    }
    let (status, removed) = reply(
        c.delete(url(CONFIGMAPS))
            .send()
            .await
            .expect("deletecollection"),
    )
    .await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["items"].as_array().map(Vec::len), Some(3));
    let mut gone = c
        .get(url(&format!("{CONFIGMAPS}?watch=true&resourceVersion=1")))
        .send()
        .await
        .expect("watch");
    assert_eq!(gone.status(), 200);
    let error = events(&mut gone, 1).await.remove(0);
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");

    // The read-only Events: read, watched, and 405 for writes.
    let (status, list) = reply(c.get(url(EVENTS)).send().await.expect("list")).await;
    assert_eq!(status, 200);
    assert_eq!(list["items"][0]["metadata"]["name"], "started");
    let (status, got) = reply(
        c.get(url(&format!("{EVENTS}/started")))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!((status, got["kind"].as_str()), (200, Some("Event")));
    let mut watch = c
        .get(url(&format!("{EVENTS}?watch=true")))
        .send()
        .await
        .expect("watch");
    let first = events(&mut watch, 1).await.remove(0);
    assert_eq!(
        (
            first["type"].as_str(),
            first["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("started"))
    );
    drop(watch);
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "new"},
        "involvedObject": {"kind": "ConfigMap", "name": "a"}});
    for resp in [
        c.post(url(EVENTS))
            .json(&event)
            .send()
            .await
            .expect("create"),
        c.put(url(&format!("{EVENTS}/started")))
            .json(&got)
            .send()
            .await
            .expect("update"),
        c.patch(url(&format!("{EVENTS}/started")))
            .header("content-type", "application/merge-patch+json")
            .body("{}")
            .send()
            .await
            .expect("patch"),
        c.delete(url(&format!("{EVENTS}/started")))
            .send()
            .await
            .expect("delete"),
        c.delete(url(EVENTS))
            .send()
            .await
            .expect("deletecollection"),
    ] {
        let (status, body) = reply(resp).await;
        assert_eq!(
            (status, body["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{body}"
        );
    }
    assert_eq!(event_log.revision(), 1);

    // Discovery lists the verbs each storage serves, legacy and aggregated.
    let (_, v1) = reply(c.get(url("/api/v1")).send().await.expect("discovery")).await;
    let verbs_of = |doc: &Value, key: &str, name: &str| -> Vec<String> {
        let list = doc["resources"].as_array().cloned().unwrap_or_default();
        let entry = list
            .iter()
            .find(|r| r[key] == name)
            .cloned()
            .unwrap_or_default();
        entry["verbs"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(verbs_of(&v1, "name", "events"), ["get", "list", "watch"]);
    assert_eq!(
        verbs_of(&v1, "name", "configmaps"),
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );
    let (_, aggregated) = reply(
        c.get(url("/api"))
            .header(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )
            .send()
            .await
            .expect("aggregated discovery"),
    )
    .await;
    let core_v1 = &aggregated["items"][0]["versions"][0];
    assert_eq!(
        verbs_of(core_v1, "resource", "events"),
        ["get", "list", "watch"]
    );

    // OpenAPI leaves out the operations the read-only storage lacks.
    let (_, v2) = reply(
        c.get(url("/openapi/v2"))
            .header("accept", "application/json")
            .send()
            .await
            .expect("openapi"),
    )
    .await;
    let (_, v3) = reply(
        c.get(url("/openapi/v3/api/v1"))
            .send()
            .await
            .expect("openapi v3"),
    )
    .await;
    for doc in [&v2, &v3] {
        let paths = &doc["paths"];
        let methods = |path: &str| -> Vec<String> {
            let mut m: Vec<String> = paths[path]
                .as_object()
                .map(|o| o.keys().filter(|k| *k != "parameters").cloned().collect())
                .unwrap_or_default();
            m.sort();
            m
        };
        assert_eq!(methods("/api/v1/namespaces/{namespace}/events"), ["get"]);
        assert_eq!(
            methods("/api/v1/namespaces/{namespace}/events/{name}"),
            ["get"]
        );
        assert_eq!(
            methods("/api/v1/namespaces/{namespace}/configmaps/{name}"),
            ["delete", "get", "patch", "put"]
        );
        assert_eq!(
            methods("/api/v1/namespaces/{namespace}/configmaps"),
            ["delete", "get", "post"]
        );
    }

    let _ = stop_tx.send(());
    let _ = running.await;
}
