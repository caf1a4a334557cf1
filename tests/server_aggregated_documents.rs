//! Merged discovery and OpenAPI (issue 26, item 5) on the generic server's side: two real
//! `apiary` binaries each serve a custom resource group; their documents are fetched with
//! `server::genericserver::remote_documents::RemoteServer` (the admin client certificate) and
//! handed to an in-process server through `AggregatedApis`, which then lists them by priority
//! in `/apis`, in aggregated discovery (the second server, stopped, as `Stale`), in
//! `/openapi/v2` and `/openapi/v3`, so kubectl's `api-resources` and `explain` work from the
//! in-process server alone.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::{Value, json};
use server::genericserver::aggregated::AggregatedApis;
use server::genericserver::discovery::{Freshness, Priority};
use server::genericserver::remote_documents::RemoteServer;

use common::Server;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    server: server::ServerOptions,
}

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn priority(group: i32, version: i32) -> Priority {
    Priority {
        group_priority_minimum: group,
        version_priority: version,
    }
}

/// Starts the in-process server on `data_dir` with `apis` as its directory and remote OpenAPI
/// source; it serves until `stop` fires.
fn start_in_process(
    data_dir: &Path,
    apis: Arc<AggregatedApis>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    let cli = Cli::parse_from([
        "apiary",
        "--data-dir",
        &data_dir.display().to_string(),
        "--secure-port=0",
    ]);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let server = server::Server::new(cli.server)
            .install(controlplane::KubernetesApis::default())
            .install(generated::example_dev::register)
            .setup(move |s| {
                s.set_api_group_directory(apis.clone());
                s.add_remote_openapi_source(apis);
                Ok(())
            });
        rt.block_on(async {
            if let Err(e) = server
                .run(async {
                    let _ = stop.await;
                })
                .await
            {
                panic!("in-process server: {e:#}");
            }
        });
    })
}

/// Creates a namespaced custom resource `plural.group`/v1 of `kind` and waits until it is
/// served and in the server's OpenAPI v3 index.
async fn serve_crd(server: &Server, group: &str, plural: &str, kind: &str) {
    let client = server.admin();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "description": format!("The {kind}'s wishes."),
                                            "properties": {"size": {"type": "string",
                                                "description": format!("How big the {kind} is.")}}}}}}}]}});
    let r = client
        .post(server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))
        .json(&crd)
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating the CRD: {e}"));
    assert_eq!(
        r.status().as_u16(),
        201,
        "{}",
        r.text().await.unwrap_or_default()
    );
    let collection = server.url(&format!("/apis/{group}/v1/{plural}"));
    let index = server.url("/openapi/v3");
    let key = format!("apis/{group}/v1");
    common::tls::wait_until(&format!("{plural}.{group} served"), || async {
        let served = client
            .get(&collection)
            .send()
            .await
            .is_ok_and(|r| r.status().as_u16() == 200);
        let listed = match client.get(&index).send().await {
            Ok(r) => r
                .json::<Value>()
                .await
                .is_ok_and(|v| v["paths"].get(&key).is_some()),
            Err(_) => false,
        };
        served && listed
    })
    .await;
}

async fn get_json(server: &Server, path: &str, accept: &str) -> Value {
    let r = server
        .admin()
        .get(server.url(path))
        .header("accept", accept)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(r.status().as_u16(), 200, "GET {path}");
    r.json().await.unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn kubectl(server: &Server, args: &[&str]) -> (bool, String, String) {
    let out = server.kubectl(Path::new("kubectl"), args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_documents_are_merged_by_priority() {
    let mut gizmos = Server::start(&[]);
    let mut gadgets = Server::start(&[]);
    serve_crd(&gizmos, "remote.example.com", "gizmos", "Gizmo").await;
    serve_crd(&gadgets, "other.example.com", "gadgets", "Gadget").await;

    let apis = Arc::new(AggregatedApis::default());
    apis.set_priority("rbac.authorization.k8s.io", "v1", priority(17000, 15));
    apis.set_priority("remote.example.com", "v1", priority(2000, 200));
    apis.set_priority("other.example.com", "v1", priority(1500, 100));
    apis.set_priority("example.dev", "v1", priority(1000, 15));

    let gizmo_server = RemoteServer::new(gizmos.admin(), &gizmos.base);
    let gadget_server = RemoteServer::new(gadgets.admin(), &gadgets.base);
    let docs = gizmo_server.fetch("remote.example.com", "v1").await;
    assert!(docs.discovery.is_ok(), "{:?}", docs.discovery);
    apis.apply("remote.example.com", "v1", &docs);
    let docs = gadget_server.fetch("other.example.com", "v1").await;
    assert!(docs.openapi_v3.as_ref().is_ok_and(Option::is_some));
    apis.apply("other.example.com", "v1", &docs);
    // The gadgets' server goes away: the next round fails and the group version goes stale,
    // keeping what was fetched.
    gadgets.kill();
    let docs = gadget_server.fetch("other.example.com", "v1").await;
    assert!(docs.discovery.is_err());
    apis.apply("other.example.com", "v1", &docs);
    assert_eq!(
        apis.freshness("other.example.com", "v1"),
        Some(Freshness::Stale)
    );

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let data_dir = dir.path().join("data");
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let thread = start_in_process(&data_dir, Arc::clone(&apis), stopped);
    let front = Server::attach(&data_dir);

    // The legacy group list: the groups with priorities first, by priority.
    let groups = get_json(&front, "/apis", "application/json").await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(
        names[..4],
        [
            "rbac.authorization.k8s.io",
            "remote.example.com",
            "other.example.com",
            "example.dev"
        ],
        "{names:?}"
    );
    let example = &groups["groups"][3];
    assert_eq!(example["preferredVersion"]["version"], "v1");
    assert_eq!(example["versions"][1]["version"], "v1alpha1");

    // Aggregated discovery: the same order, the remote resources, the stale version marked.
    let aggregated = get_json(&front, "/apis", AGGREGATED_V2).await;
    let items = aggregated["items"].as_array().unwrap();
    let names: Vec<&str> = items
        .iter()
        .filter_map(|g| g["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names[..4],
        [
            "rbac.authorization.k8s.io",
            "remote.example.com",
            "other.example.com",
            "example.dev"
        ]
    );
    assert_eq!(items[1]["versions"][0]["freshness"], "Current");
    assert_eq!(
        items[1]["versions"][0]["resources"][0]["resource"],
        "gizmos"
    );
    assert_eq!(items[2]["versions"][0]["freshness"], "Stale");
    assert_eq!(
        items[2]["versions"][0]["resources"][0]["resource"],
        "gadgets"
    );

    // OpenAPI v2: the remote paths and definitions, beside the server's own.
    let v2 = get_json(&front, "/openapi/v2", "application/json").await;
    let own_v2 = get_json(&gizmos, "/openapi/v2", "application/json").await;
    let gizmo_definition = own_v2["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.ends_with(".Gizmo"))
        .expect("the Gizmo definition")
        .clone();
    assert_eq!(
        v2["definitions"][&gizmo_definition],
        own_v2["definitions"][&gizmo_definition]
    );
    assert!(
        v2["paths"]
            .get("/apis/remote.example.com/v1/namespaces/{namespace}/gizmos")
            .is_some()
    );
    // The server's own kinds stay.
    assert!(
        v2["definitions"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.ends_with(".Widget"))
    );

    // OpenAPI v3: the remote documents listed and served as fetched.
    let index = get_json(&front, "/openapi/v3", "application/json").await;
    let url = index["paths"]["apis/remote.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("listed")
        .to_string();
    assert!(index["paths"].get("apis/other.example.com/v1").is_some());
    let served = get_json(&front, &url, "application/json").await;
    let own_index = get_json(&gizmos, "/openapi/v3", "application/json").await;
    let own_url = own_index["paths"]["apis/remote.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        served,
        get_json(&gizmos, &own_url, "application/json").await
    );

    // kubectl through the front server alone.
    let (ok, stdout, stderr) = kubectl(&front, &["explain", "gizmos.spec"]);
    assert!(ok, "explain: {stdout}\n{stderr}");
    assert!(
        stdout.contains("KIND:       Gizmo") || stdout.contains("KIND:     Gizmo"),
        "{stdout}"
    );
    assert!(stdout.contains("How big the Gizmo is."), "{stdout}");
    let (ok, stdout, stderr) = kubectl(
        &front,
        &["explain", "gizmos.spec", "--output=plaintext-openapiv2"],
    );
    assert!(ok, "explain from OpenAPI v2: {stdout}\n{stderr}");
    assert!(stdout.contains("How big the Gizmo is."), "{stdout}");
    // kubectl reads a `Stale` version as failed: through its disk cache (kubectl 1.30 to 1.33)
    // it leaves the version out and carries on, as with kube-apiserver; client-go's plain and
    // memory-cached clients report "unable to retrieve the complete list of server APIs:
    // other.example.com/v1: stale GroupVersion discovery: other.example.com/v1".
    let (ok, stdout, stderr) = kubectl(&front, &["api-resources"]);
    assert!(ok, "api-resources: {stdout}\n{stderr}");
    assert!(stdout.contains("gizmos"), "{stdout}");
    assert!(stdout.contains("widgets"), "{stdout}");
    assert!(!stdout.contains("gadgets"), "{stdout}");

    // The gizmos' APIService goes: the group leaves every document.
    apis.remove("remote.example.com", "v1");
    let aggregated = get_json(&front, "/apis", AGGREGATED_V2).await;
    assert!(!aggregated.to_string().contains("remote.example.com"));
    let groups = get_json(&front, "/apis", "application/json").await;
    assert!(!groups.to_string().contains("remote.example.com"));
    let v2 = get_json(&front, "/openapi/v2", "application/json").await;
    assert!(
        v2["paths"]
            .get("/apis/remote.example.com/v1/namespaces/{namespace}/gizmos")
            .is_none()
    );
    let index = get_json(&front, "/openapi/v3", "application/json").await;
    assert!(index["paths"].get("apis/remote.example.com/v1").is_none());
    let r = front.admin().get(front.url(&url)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);

    let _ = stop.send(());
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    gizmos.terminate(Duration::from_secs(30));
}
