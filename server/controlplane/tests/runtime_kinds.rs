//! Kinds defined while the server runs, served by `server::runtime_kinds::RuntimeKinds` as a
//! delegate behind the main server, over HTTPS: a resource is 404 until it is served, then
//! every verb works through the generic handlers with its schema pruning, defaulting and
//! validating (JSON, no protobuf); a new definition replaces the store (open watches end,
//! objects stay); a terminating kind refuses creates with kube-apiserver's 403; a withdrawn one
//! is 404 again.

mod https_common;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apimachinery::errors::FieldError;
use apimachinery::resource::{ResourceInfo, Scope};
use apimachinery::runtime::unstructured::{
    Unstructured, UnstructuredCodec, UnstructuredSchema, UnstructuredVersion,
};
use apimachinery::runtime::{Kind, VersionCodec, no_selectable_fields};
use serde_json::{Value, json};
use server::genericserver::tls::TlsOptions;
use server::genericserver::{Config, GenericServer};
use server::runtime_kinds::{RuntimeKinds, intern, keep, keep_slice};

const GADGETS: &str = "/apis/example.dev/v1/namespaces/default/gadgets";

async fn reply(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body = resp.bytes().await.unwrap_or_default();
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, value)
}

/// `spec.size` defaults to 1 and may not be negative; only `spec` and `status` are kept.
#[derive(Debug)]
struct GadgetSchema;

impl UnstructuredSchema for GadgetSchema {
    fn prune(&self, fields: &mut Value, pruned: &mut Vec<String>) {
        let Value::Object(fields) = fields else {
            return;
        };
        fields.retain(|k, _| {
            let keep = k == "spec" || k == "status";
            if !keep {
                pruned.push(k.clone());
            }
            keep
        });
    }

    fn default(&self, fields: &mut Value) {
        if let Some(Value::Object(spec)) = fields.get_mut("spec") {
            spec.entry("size").or_insert(Value::from(1));
        }
    }

    fn validate(&self, object: &Unstructured) -> Vec<FieldError> {
        match object.fields().get("spec").and_then(|s| s.get("size")) {
            Some(size) if size.as_i64().is_some_and(|n| n < 0) => vec![FieldError::invalid(
                "spec.size",
                size,
                "spec.size in body should be greater than or equal to 0",
            )],
            _ => Vec::new(),
        }
    }

    fn validate_update(&self, object: &Unstructured, _old: &Unstructured) -> Vec<FieldError> {
        self.validate(object)
    }
}

/// A definition of `gadgets.example.dev` (namespaced, `v1`, with a status subresource and a
/// printer column), made as the extension server makes one from a CRD.
fn gadget_kind(column: &str) -> &'static Kind {
    let info: &'static ResourceInfo = keep(ResourceInfo {
        group: intern("example.dev"),
        version: intern("v1"),
        kind: intern("Gadget"),
        list_kind: intern("GadgetList"),
        plural: intern("gadgets"),
        singular: intern("gadget"),
        scope: Scope::Namespaced,
        short_names: &[],
        categories: &[],
        verbs: &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        status_subresource: true,
        scale: None,
        subresources: &[],
        printer_columns: keep_slice(vec![apimachinery::resource::PrinterColumn {
            name: intern(column),
            type_: "integer",
            format: "",
            description: "",
            priority: 0,
            json_path: ".spec.size",
        }]),
        field_selectors: &[],
        storage_version: true,
        strategic_merge_patch: false,
        allow_unconditional_update: false,
        allow_create_on_update: false,
        tracks_generation: true,
        create_only: false,
        proto_package: "",
        name_format: "dns1123-subdomain",
    });
    let codec: &'static UnstructuredCodec = keep(UnstructuredCodec::new(Arc::new(
        UnstructuredVersion::new(info, Some(Arc::new(GadgetSchema))),
    )));
    let codecs: &'static [&'static dyn VersionCodec] = keep_slice(vec![codec as _]);
    keep(Kind::new(
        codecs,
        &apimachinery::strategy::DefaultStrategy,
        no_selectable_fields,
    ))
}

/// Installs the run-time kinds as a delegate and hands them to the test.
struct Extensions(Arc<OnceLock<Arc<RuntimeKinds>>>);

impl server::ApiGroups for Extensions {
    fn register(&self, _: &mut apimachinery::Scheme) {}

    fn install(&self, server: &mut GenericServer) {
        let kinds = Arc::new(RuntimeKinds::new(server.api().clone()));
        server.add_delegate(kinds.clone());
        server.add_kind_source(kinds.clone());
        let _ = self.0.set(kinds);
    }
}

/// The collection at `url` as a `meta.k8s.io/v1` Table (which must be served).
async fn table_of(c: &reqwest::Client, url: &str) -> Value {
    let resp = c
        .get(url)
        .header(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .send()
        .await
        .expect("table");
    let (status, table) = reply(resp).await;
    assert_eq!(status, 200, "{table}");
    table
}

async fn watch_line(resp: &mut reqwest::Response, buf: &mut Vec<u8>) -> Option<Value> {
    loop {
        if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            return Some(serde_json::from_slice(&line).expect("event JSON"));
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .expect("the watch moves in time")
            .expect("the watch stream");
        buf.extend_from_slice(&chunk?);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_defined_at_run_time_are_served_behind_the_main_server() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let localhost = IpAddr::from([127, 0, 0, 1]);
    let paths = server::pki::ensure(dir.path(), localhost, true).unwrap_or_else(|e| panic!("{e}"));
    let backend = storage::embedded::EmbeddedBackend::open(
        storage::embedded::EmbeddedOptions::new(dir.path().join("store")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tls = TlsOptions::new(
        paths.serving_cert.clone(),
        paths.serving_key.clone(),
        paths.ca_cert.clone(),
    );
    let slot = Arc::new(OnceLock::new());
    let groups: Vec<Arc<dyn server::ApiGroups>> = vec![
        Arc::new(controlplane::KubernetesApis::default()),
        Arc::new(Extensions(slot.clone())),
    ];
    let config = Config {
        request_timeout: Duration::from_secs(10),
        authorization_modes: vec![controlplane::RBAC_MODE.to_string()],
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
    let kinds = slot.get().expect("installed").clone();
    let c = https_common::admin_client(dir.path());
    let url = |path: &str| format!("{base}{path}");
    let gadget = |name: &str, spec: Value| {
        json!({"apiVersion": "example.dev/v1", "kind": "Gadget",
               "metadata": {"name": name}, "spec": spec, "extra": 1})
    };

    let (status, _) = reply(c.get(url(GADGETS)).send().await.expect("list")).await;
    assert_eq!(status, 404, "not served before it is defined");

    let (_, groups) = reply(c.get(url("/apis")).send().await.expect("discovery")).await;
    assert!(
        !groups.to_string().contains("example.dev"),
        "not discovered before it is defined: {groups}"
    );
    kinds.serve(gadget_kind("Size")).expect("serve");
    let (_, groups) = reply(c.get(url("/apis")).send().await.expect("discovery")).await;
    assert!(
        groups["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g["name"] == "example.dev")),
        "{groups}"
    );
    let (status, resources) = reply(
        c.get(url("/apis/example.dev/v1"))
            .send()
            .await
            .expect("discovery"),
    )
    .await;
    assert_eq!(status, 200, "{resources}");
    assert_eq!(resources["resources"][0]["name"], "gadgets", "{resources}");
    assert_eq!(resources["resources"][1]["name"], "gadgets/status");
    let (_, aggregated) = reply(
        c.get(url("/apis"))
            .header(
                "Accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )
            .send()
            .await
            .expect("discovery"),
    )
    .await;
    assert!(
        aggregated["items"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g["metadata"]["name"] == "example.dev")),
        "{aggregated}"
    );
    let (status, created) = reply(
        c.post(url(GADGETS))
            .json(&gadget("a", json!({})))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["spec"]["size"], 1, "defaulted: {created}");
    assert_eq!(created.get("extra"), None, "pruned: {created}");
    assert_eq!(created["metadata"]["generation"], 1);
    let resp = c
        .post(url(&format!("{GADGETS}?fieldValidation=Strict")))
        .json(&gadget("b", json!({})))
        .send()
        .await
        .expect("create");
    let (status, strict) = reply(resp).await;
    assert_eq!(status, 400, "{strict}");
    assert!(
        strict["message"]
            .as_str()
            .is_some_and(|m| m.contains(r#"unknown field "extra""#)),
        "{strict}"
    );
    let (status, invalid) = reply(
        c.post(url(GADGETS))
            .json(&gadget("c", json!({"size": -1})))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 422, "{invalid}");
    assert_eq!(
        invalid["message"],
        "Gadget.example.dev \"c\" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0"
    );

    // Reads: JSON, a Table from the printer columns; protobuf is not offered.
    let (status, got) = reply(
        c.get(url(&format!("{GADGETS}/a")))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!((status, &got["spec"]["size"]), (200, &json!(1)));
    let table = table_of(&c, &url(GADGETS)).await;
    assert_eq!(table["columnDefinitions"][1]["name"], "Size", "{table}");
    assert_eq!(table["rows"][0]["cells"][1], 1, "{table}");

    // The status subresource: the main resource ignores status, /status the rest.
    let mut with_status = got.clone();
    with_status["status"] = json!({"ready": true});
    with_status["spec"]["size"] = json!(2);
    let (status, updated) = reply(
        c.put(url(&format!("{GADGETS}/a")))
            .json(&with_status)
            .send()
            .await
            .expect("update"),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated.get("status"), None, "{updated}");
    assert_eq!(updated["metadata"]["generation"], 2);
    let mut status_write = updated.clone();
    status_write["status"] = json!({"ready": true});
    let (status, written) = reply(
        c.put(url(&format!("{GADGETS}/a/status")))
            .json(&status_write)
            .send()
            .await
            .expect("update status"),
    )
    .await;
    assert_eq!(status, 200, "{written}");
    assert_eq!(written["status"]["ready"], true);
    assert_eq!(written["metadata"]["generation"], 2);

    // A watch, then a new definition of the resource: the watch ends, the objects stay, and
    // the new definition's column is served.
    let rv = written["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let mut watch = c
        .get(url(&format!("{GADGETS}?watch=1&resourceVersion={rv}")))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status().as_u16(), 200);
    let mut buf = Vec::new();
    let (status, _) = reply(
        c.post(url(GADGETS))
            .json(&gadget("d", json!({"size": 5})))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 201);
    let event = watch_line(&mut watch, &mut buf).await.expect("an event");
    assert_eq!(
        (&event["type"], &event["object"]["metadata"]["name"]),
        (&json!("ADDED"), &json!("d"))
    );
    kinds.serve(gadget_kind("Replicas")).expect("serve again");
    let mut ended = false;
    for _ in 0..10 {
        if watch_line(&mut watch, &mut buf).await.is_none() {
            ended = true;
            break;
        }
    }
    assert!(ended, "the watch of the replaced definition ends");
    let table = table_of(&c, &url(GADGETS)).await;
    assert_eq!(table["columnDefinitions"][1]["name"], "Replicas");
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(2), "{table}");

    // Terminating: creates refused, the rest served.
    kinds.terminate("example.dev", "gadgets");
    let (status, refused) = reply(
        c.post(url(GADGETS))
            .json(&gadget("e", json!({})))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "gadgets.example.dev is forbidden: create not allowed while custom resource definition is terminating"
    );
    let (status, _) = reply(
        c.delete(url(&format!("{GADGETS}/d")))
            .send()
            .await
            .expect("delete"),
    )
    .await;
    assert_eq!(status, 200);
    let (_, resources) = reply(
        c.get(url("/apis/example.dev/v1"))
            .send()
            .await
            .expect("discovery"),
    )
    .await;
    assert_eq!(
        resources["resources"][0]["verbs"],
        json!(["delete", "deletecollection", "get", "list", "watch"])
    );

    // Withdrawn: 404 again.
    assert!(kinds.withdraw("example.dev", "gadgets").is_some());
    let (status, _) = reply(
        c.get(url(&format!("{GADGETS}/a")))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = reply(
        c.get(url("/apis/example.dev/v1"))
            .send()
            .await
            .expect("discovery"),
    )
    .await;
    assert_eq!(status, 404, "no longer discovered");

    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), running).await;
}
