//! Discovery documents (legacy and aggregated), OpenAPI v2/v3 and error shapes of the non-API
//! paths, against the real binary.

mod common;

use common::Server;
use serde_json::Value;

const AGG_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGG_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
const CLIENT_GO_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

async fn get(client: &reqwest::Client, url: String, accept: &str) -> reqwest::Response {
    client
        .get(url)
        .header("Accept", accept)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn legacy_discovery_shapes() {
    let server = Server::start(&[]);
    let c = server.admin();
    let resp = get(&c, server.url("/api"), "application/json").await;
    assert_eq!(content_type(&resp), "application/json");
    let api: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], serde_json::json!(["v1"]));
    assert_eq!(
        api["serverAddressByClientCIDRs"][0]["clientCIDR"],
        "0.0.0.0/0"
    );

    let apis: Value = get(&c, server.url("/apis"), "application/json")
        .await
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(apis["kind"], "APIGroupList");
    let groups = apis["groups"].as_array().cloned().unwrap_or_default();
    let example = groups
        .iter()
        .find(|g| g["name"] == "example.dev")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        example["preferredVersion"]["groupVersion"],
        "example.dev/v1"
    );
    assert_eq!(example["versions"][0]["version"], "v1");
    assert_eq!(example["versions"][1]["version"], "v1alpha1");

    let group: Value = get(&c, server.url("/apis/example.dev"), "application/json")
        .await
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(group["kind"], "APIGroup");
    assert_eq!(group["name"], "example.dev");

    let list: Value = get(&c, server.url("/apis/example.dev/v1"), "application/json")
        .await
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(list["kind"], "APIResourceList");
    assert_eq!(list["groupVersion"], "example.dev/v1");
    let resources = list["resources"].as_array().cloned().unwrap_or_default();
    let find = |name: &str| {
        resources
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let widgets = find("widgets");
    assert_eq!(widgets["singularName"], "widget");
    assert_eq!(widgets["namespaced"], true);
    assert_eq!(widgets["kind"], "Widget");
    assert_eq!(widgets["shortNames"], serde_json::json!(["wd"]));
    assert_eq!(widgets["categories"], serde_json::json!(["all"]));
    assert_eq!(
        widgets["storageVersionHash"].as_str().map(str::len),
        Some(12)
    );
    let verbs = widgets["verbs"].as_array().cloned().unwrap_or_default();
    for v in [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ] {
        assert!(verbs.contains(&Value::from(v)), "widgets verbs lack {v}");
    }
    let scale = find("widgets/scale");
    assert_eq!(
        (
            scale["group"].as_str(),
            scale["version"].as_str(),
            scale["kind"].as_str()
        ),
        (Some("autoscaling"), Some("v1"), Some("Scale"))
    );
    assert_eq!(find("widgets/status")["kind"], "Widget");

    let core: Value = get(&c, server.url("/api/v1"), "application/json")
        .await
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(core["groupVersion"], "v1");
    let core_names: Vec<&str> = core["resources"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    for name in ["configmaps", "namespaces", "secrets"] {
        assert!(
            core_names.contains(&name),
            "/api/v1 lacks {name}: {core_names:?}"
        );
    }
}

#[tokio::test]
async fn aggregated_discovery_by_accept_with_exact_content_type() {
    let server = Server::start(&[]);
    let c = server.admin();
    for (path, accept, expected_type, api_version) in [
        ("/apis", CLIENT_GO_ACCEPT, AGG_V2, "apidiscovery.k8s.io/v2"),
        ("/api", CLIENT_GO_ACCEPT, AGG_V2, "apidiscovery.k8s.io/v2"),
        (
            "/apis",
            &format!("{AGG_V2BETA1},application/json"),
            AGG_V2BETA1,
            "apidiscovery.k8s.io/v2beta1",
        ),
    ] {
        let resp = get(&c, server.url(path), accept).await;
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(content_type(&resp), expected_type, "{path}");
        assert_eq!(
            resp.headers().get("vary").and_then(|v| v.to_str().ok()),
            Some("Accept")
        );
        assert!(resp.headers().get("etag").is_some());
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(body["kind"], "APIGroupDiscoveryList");
        assert_eq!(body["apiVersion"], api_version);
    }
    let body: Value = get(&c, server.url("/apis"), CLIENT_GO_ACCEPT)
        .await
        .json()
        .await
        .unwrap_or(Value::Null);
    let items = body["items"].as_array().cloned().unwrap_or_default();
    let example = items
        .iter()
        .find(|i| i["metadata"]["name"] == "example.dev")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(example["versions"][0]["version"], "v1");
    let widgets = example["versions"][0]["resources"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["resource"] == "widgets").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(widgets["scope"], "Namespaced");
    assert_eq!(
        widgets["responseKind"],
        serde_json::json!({"group": "example.dev", "version": "v1", "kind": "Widget"})
    );
    let subs = widgets["subresources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let scale = subs
        .iter()
        .find(|s| s["subresource"] == "scale")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        scale["responseKind"],
        serde_json::json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );

    // Plain JSON clients get the legacy document with plain application/json.
    let resp = get(&c, server.url("/apis"), "application/json, */*").await;
    assert_eq!(content_type(&resp), "application/json");

    // ETag revalidation.
    let resp = get(&c, server.url("/apis"), CLIENT_GO_ACCEPT).await;
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let again = c
        .get(server.url("/apis"))
        .header("Accept", CLIENT_GO_ACCEPT)
        .header("If-None-Match", etag)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.status().as_u16(), 304);
}

#[tokio::test]
async fn unknown_paths_are_404_status() {
    let server = Server::start(&[]);
    let c = server.admin();
    for path in [
        "/nope",
        "/apis/nope.dev/v1",
        "/apis/example.dev/v9",
        "/apis/example.dev/v1/gadgets",
        "/openapi/v3/apis/nope/v1",
    ] {
        let resp = get(&c, server.url(path), "application/json").await;
        assert_eq!(resp.status().as_u16(), 404, "{path}");
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(body["kind"], "Status", "{path}");
        assert_eq!(body["reason"], "NotFound", "{path}");
        assert_eq!(body["code"], 404, "{path}");
    }
}

#[tokio::test]
async fn bodies_over_3mib_get_413() {
    let server = Server::start(&[]);
    let c = server.admin();
    let body = vec![b' '; 4 * 1024 * 1024];
    let resp = c
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .header("Content-Type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 413);
    let status: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: limit is 3145728"
    );

    // Without Content-Length (chunked), the limit applies while the handler reads.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    let resp = c
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .header("Content-Type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 413);
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let server = Server::start(&[]);
    let c = server.admin();
    let _ = get(
        &c,
        server.url("/apis/example.dev/v1/namespaces/default/widgets"),
        "application/json",
    )
    .await;
    let text = get(&c, server.url("/metrics"), "text/plain")
        .await
        .text()
        .await
        .unwrap_or_default();
    assert!(text.contains("# TYPE apiserver_request counter"), "{text}");
    assert!(
        text.contains(r#"apiserver_request_total{verb="LIST",group="example.dev",version="v1",resource="widgets",code="#),
        "{text}"
    );
    assert!(
        text.contains("apiserver_request_duration_seconds_bucket"),
        "{text}"
    );
}
