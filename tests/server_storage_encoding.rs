//! Encoding at rest (`--storage-media-type`): objects are stored as protobuf in the `k8s\0`
//! envelope by default and as JSON when asked, every stored form stays readable after the
//! setting changes, and objects stored under an older version are converted on read.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{Server, get_json};
use serde_json::{Value, json};
use storage::backend::{Backend, Condition};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::keys::ResourceKeys;

const JSON_FLAG: &str = "--storage-media-type=application/json";
const PROTOBUF_FLAG: &str = "--storage-media-type=application/vnd.kubernetes.protobuf";

fn open_store(data: &Path) -> EmbeddedBackend {
    EmbeddedBackend::open(EmbeddedOptions::new(data.join("store")))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn key(group: &str, resource: &str, name: &str) -> String {
    ResourceKeys::new("/registry", group, resource)
        .and_then(|k| k.object_key(Some("default"), name))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The stored bytes of an object, read straight from the embedded store (no server running).
async fn raw(data: &Path, group: &str, resource: &str, name: &str) -> Vec<u8> {
    let store = open_store(data);
    store
        .get(&key(group, resource, name), 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .kv
        .map(|kv| kv.value.to_vec())
        .unwrap_or_else(|| panic!("{resource}/{name} is not stored"))
}

/// Stores `value` under an object key, bypassing the server.
async fn put_raw(data: &Path, group: &str, resource: &str, name: &str, value: Vec<u8>) {
    let store = open_store(data);
    store
        .put(
            &key(group, resource, name),
            Bytes::from(value),
            Condition::Absent,
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Creates a ConfigMap and returns the object the create answered with.
async fn create_configmap(server: &Server, name: &str, value: &str) -> Value {
    let resp = server
        .admin()
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "enc"}}, "data": {"k": value}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 201, "creating {name}");
    resp.json().await.unwrap_or(Value::Null)
}

/// The names of a ConfigMap list, read as JSON and as protobuf (through the status code and
/// content type; the JSON form is checked item by item).
async fn listed_configmaps(server: &Server) -> Vec<String> {
    let list = get_json(
        server,
        "/api/v1/namespaces/default/configmaps?labelSelector=app%3Denc",
    )
    .await;
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    let resp = server
        .admin()
        .get(server.url("/api/v1/namespaces/default/configmaps"))
        .header("accept", "application/vnd.kubernetes.protobuf")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let body = resp.bytes().await.unwrap_or_default();
    assert!(body.starts_with(b"k8s\0"), "protobuf list");
    names
}

fn assert_protobuf(raw: &[u8], api_version: &str, kind: &str) {
    assert!(
        raw.starts_with(b"k8s\0"),
        "expected the protobuf envelope, stored {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(60)])
    );
    let unknown =
        apimachinery::protobuf::decode_envelope(raw).unwrap_or_else(|e| panic!("envelope: {e}"));
    assert_eq!(unknown.type_meta.api_version, api_version);
    assert_eq!(unknown.type_meta.kind, kind);
    assert!(
        !raw.windows(15).any(|w| w == b"resourceVersion"),
        "no resourceVersion at rest"
    );
}

fn assert_json(raw: &[u8], api_version: &str, kind: &str) -> Value {
    let v: Value = serde_json::from_slice(raw).unwrap_or_else(|e| {
        panic!(
            "expected JSON ({e}), stored {:?}",
            String::from_utf8_lossy(&raw[..raw.len().min(60)])
        )
    });
    assert_eq!(v["apiVersion"], api_version);
    assert_eq!(v["kind"], kind);
    assert!(v["metadata"].get("resourceVersion").is_none(), "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_by_default_json_selectable_and_both_readable_after_a_switch() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tmp.path().join("data");

    // Default: protobuf in the envelope.
    let mut server = Server::start_in(&data, &[]);
    let created = create_configmap(&server, "pb", "from-protobuf").await;
    let got = get_json(&server, "/api/v1/namespaces/default/configmaps/pb").await;
    assert_eq!(got["data"]["k"], "from-protobuf");
    // What a create answers is what reading the stored protobuf gives.
    assert_eq!(created, got);
    assert!(
        got["metadata"]["managedFields"]
            .as_array()
            .is_some_and(|m| !m.is_empty()),
        "{got}"
    );
    assert!(server.terminate(Duration::from_secs(30)).success());
    let stored = raw(&data, "", "configmaps", "pb").await;
    assert_protobuf(&stored, "v1", "ConfigMap");
    assert!(stored.windows(13).any(|w| w == b"from-protobuf"));

    // Switched to JSON: the protobuf object is read, new objects are JSON.
    let mut server = Server::start_in(&data, &[JSON_FLAG]);
    let got = get_json(&server, "/api/v1/namespaces/default/configmaps/pb").await;
    assert_eq!(got["data"]["k"], "from-protobuf", "{got}");
    assert_eq!(got["metadata"]["labels"]["app"], "enc");
    let created = create_configmap(&server, "js", "from-json").await;
    assert_eq!(
        created,
        get_json(&server, "/api/v1/namespaces/default/configmaps/js").await
    );
    assert_eq!(listed_configmaps(&server).await, ["js", "pb"]);
    assert!(server.terminate(Duration::from_secs(30)).success());
    let stored = assert_json(&raw(&data, "", "configmaps", "js").await, "v1", "ConfigMap");
    assert_eq!(stored["data"]["k"], "from-json");
    assert_protobuf(&raw(&data, "", "configmaps", "pb").await, "v1", "ConfigMap");

    // Back to protobuf: the JSON object is read and rewritten as protobuf by an update.
    let server = Server::start_in(&data, &[PROTOBUF_FLAG]);
    let got = get_json(&server, "/api/v1/namespaces/default/configmaps/js").await;
    assert_eq!(got["data"]["k"], "from-json", "{got}");
    assert_eq!(listed_configmaps(&server).await, ["js", "pb"]);
    let resp = server
        .admin()
        .patch(server.url("/api/v1/namespaces/default/configmaps/js"))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"data":{"k":"patched"}}"#)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let mut server = server;
    assert!(server.terminate(Duration::from_secs(30)).success());
    let stored = raw(&data, "", "configmaps", "js").await;
    assert_protobuf(&stored, "v1", "ConfigMap");
    assert!(stored.windows(7).any(|w| w == b"patched"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_of_an_older_storage_version_are_converted_on_read() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tmp.path().join("data");
    // Start once so the store, certificates and the default namespace exist.
    let mut server = Server::start_in(&data, &[]);
    assert!(server.terminate(Duration::from_secs(30)).success());

    // Widgets written at v1alpha1 (`spec.size`), once as protobuf and once as JSON.
    let scheme = generated::scheme();
    let kind = scheme
        .by_kind("example.dev", "Widget")
        .unwrap_or_else(|| panic!("no Widget in the scheme"));
    assert_eq!(kind.storage_info().version, "v1");
    let old = |name: &str| {
        json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"size": 4, "color": "blue"}})
    };
    let mut message = Vec::new();
    kind.codec("v1alpha1")
        .unwrap_or_else(|| panic!("no v1alpha1"))
        .decode_value(&old("old-pb"))
        .unwrap_or_else(|e| panic!("{e}"))
        .object
        .write_protobuf(&mut message)
        .unwrap_or_else(|e| panic!("{e}"));
    let enveloped =
        apimachinery::protobuf::encode_envelope("example.dev/v1alpha1", "Widget", &message);
    put_raw(&data, "example.dev", "widgets", "old-pb", enveloped).await;
    let json_bytes = serde_json::to_vec(&old("old-json")).unwrap_or_else(|e| panic!("{e}"));
    put_raw(&data, "example.dev", "widgets", "old-json", json_bytes).await;

    let server = Server::start_in(&data, &[]);
    for name in ["old-pb", "old-json"] {
        let got = get_json(
            &server,
            &format!("/apis/example.dev/v1/namespaces/default/widgets/{name}"),
        )
        .await;
        assert_eq!(got["apiVersion"], "example.dev/v1", "{got}");
        assert_eq!(got["spec"]["replicas"], 4, "{got}");
        assert_eq!(got["spec"]["color"], "blue", "{got}");
        assert!(
            got["metadata"]["resourceVersion"]
                .as_str()
                .is_some_and(|rv| !rv.is_empty()),
            "{got}"
        );
        let alpha = get_json(
            &server,
            &format!("/apis/example.dev/v1alpha1/namespaces/default/widgets/{name}"),
        )
        .await;
        assert_eq!(alpha["spec"]["size"], 4, "{alpha}");
    }
    let list = get_json(&server, "/apis/example.dev/v1/namespaces/default/widgets").await;
    let replicas: Vec<&Value> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|i| &i["spec"]["replicas"])
        .collect();
    assert_eq!(replicas, [&json!(4), &json!(4)], "{list}");
}

#[test]
fn an_unknown_storage_media_type_is_refused() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiary"))
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("--storage-media-type=application/yaml")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("storage-media-type"), "{stderr}");
}

/// A list long enough to be transcoded from protobuf in parallel parts is sent whole: every
/// item once, in name order, with a `Content-Length` equal to the body; gzipped, it is the same
/// list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_list_is_sent_whole_in_parts_and_gzipped() {
    use futures::StreamExt;
    const COUNT: usize = 1500;
    let server = Server::start(&[PROTOBUF_FLAG]);
    let client = server.admin();
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let created: Vec<u16> = futures::stream::iter(0..COUNT)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": format!("cm-{i:05}")},
                                  "data": {"i": i.to_string()}});
                let r = client.post(&url).json(&body).send().await;
                r.map_or(0, |r| r.status().as_u16())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(created.iter().all(|c| *c == 201), "{created:?}");

    let plain = client
        .get(&url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain.status().as_u16(), 200);
    let length = plain.headers().get("content-length").cloned();
    let body = plain.bytes().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        length.and_then(|v| v.to_str().ok()?.parse::<usize>().ok()),
        Some(body.len())
    );
    let list: Value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}"));
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), COUNT);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["metadata"]["name"], format!("cm-{i:05}"));
        assert_eq!(item["data"]["i"], i.to_string());
    }

    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    let gzipped = client
        .get(format!(
            "{url}?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        gzipped
            .headers()
            .get("content-encoding")
            .map(|v| v.as_bytes()),
        Some(&b"gzip"[..])
    );
    let z = gzipped.bytes().await.unwrap_or_else(|e| panic!("{e}"));
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&z[..]), &mut unzipped)
        .unwrap_or_else(|e| panic!("{e}"));
    let again: Value = serde_json::from_slice(&unzipped).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again["items"], list["items"]);
}
