//! CustomResourceDefinition conversion webhooks against the real binary: a CRD with `v1`
//! (stored, `spec.cronSpec`) and `v2` (`spec.schedule`) whose conversion is a webhook started
//! here on loopback with its own CA. Objects created through either version are stored as
//! `v1` and read through both with kubectl; a list is converted in one review; webhooks that
//! answer another uid, another apiVersion or rename the object, and one that cannot be
//! reached, fail requests with kube-apiserver's messages (500, no reason) while the stored
//! version and other kinds are served as before; an edit of the CRD's webhook takes effect; a
//! watch converts each event; after the storage version moves to `v2`, objects stored as `v1`
//! and as `v2` are each read through the other version by conversion.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::sync::Arc;

use base64::Engine as _;
use common::Server;
use common::send_json as send;
use common::webhook_server;
use kubectl::Kubectl;
use serde_json::{Value, json};

const GROUP: &str = "conv.example.com";

/// Converts one object between `v1` (`spec.cronSpec`) and `v2` (`spec.schedule`); sets
/// `metadata.generation` to 42, which the server must ignore.
fn convert(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    let mut spec = out["spec"].as_object().cloned().unwrap_or_default();
    if desired.ends_with("/v2") {
        if let Some(v) = spec.remove("cronSpec") {
            spec.insert("schedule".into(), v);
        }
    } else if let Some(v) = spec.remove("schedule") {
        spec.insert("cronSpec".into(), v);
    }
    out["spec"] = Value::Object(spec);
    out["apiVersion"] = json!(desired);
    out["metadata"]["generation"] = json!(42);
    out
}

/// Answers a `ConversionReview` by path: `/convert` converts, `/wrong-uid` answers for another
/// request, `/wrong-version` leaves the objects' apiVersion alone, `/rename` renames them.
fn answer(path: &str, review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut uid = request["uid"].clone();
    let converted: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut c = convert(o, desired);
            match path {
                "/wrong-version" => c["apiVersion"] = o["apiVersion"].clone(),
                "/rename" => {
                    let name = o["metadata"]["name"].as_str().unwrap_or("");
                    c["metadata"]["name"] = json!(format!("{name}-renamed"));
                }
                _ => {}
            }
            c
        })
        .collect();
    if path == "/wrong-uid" {
        uid = json!("not-the-request");
    }
    // Answered in the review's own version (v1, or v1beta1 when the CRD lists it first).
    json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
           "response": {"uid": uid, "result": {"status": "Success"},
                        "convertedObjects": converted}})
}

/// The CRD, its conversion webhook at `url` trusted through `ca`.
fn crd(url: &str, ca: &str) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {field: {"type": "string"}, "image": {"type": "string"}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("crontabs.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("cronSpec")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("schedule")}
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": url,
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)}}}
        }
    })
}

/// Points the CRD's conversion webhook at `url`.
fn set_webhook(k: &Kubectl, url: &str) {
    let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {"url": url}}}}});
    k.ok(&[
        "patch",
        "crd",
        &format!("crontabs.{GROUP}"),
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
}

struct Fixture {
    server: Server,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Fixture {
    /// GETs `path` as the admin: status and JSON answer.
    fn get(&self, path: &str) -> (u16, Value) {
        let (code, body, _) = self.runtime.block_on(send(
            &self.client,
            reqwest::Method::GET,
            self.server.url(path),
            None,
        ));
        (code, body)
    }

    /// Waits until GET `path` answers with a message containing `want` (a CRD edit reaches
    /// the served definition a moment after the write); the status and the answer.
    fn until_message(&self, path: &str, want: &str) -> (u16, Value) {
        let mut last = (0, Value::Null);
        for _ in 0..150 {
            last = self.get(path);
            if last.1["message"].as_str().unwrap_or("").contains(want) {
                return last;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("GET {path}: no message with {want:?}; last answer {last:?}");
    }
}

fn crontab(version: &str, ns: &str, name: &str, field: &str) -> String {
    format!(
        "apiVersion: {GROUP}/{version}\nkind: CronTab\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  {field}: \"*/5 * * * *\"\n  image: img-{name}\n"
    )
}

#[test]
fn conversion_webhooks() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let webhooks = runtime.block_on(webhook_server::start(
        "conversion-webhook-ca",
        Arc::new(|path: String, review: Value| {
            Box::pin(async move { serde_json::to_vec(&answer(&path, &review)).unwrap_or_default() })
        }),
    ));
    let (base, ca, seen) = (webhooks.url, webhooks.ca, webhooks.seen);
    let server = Server::start(&[]);
    let client = server.admin();
    let f = Fixture {
        server,
        client,
        runtime,
    };
    let kubectl = common::kubectls().remove(0);
    let k = Kubectl::new(&f.server, &kubectl);
    let ns = "conversion";
    k.ok(&["create", "namespace", ns]);

    let file = k.write(
        "crd.json",
        &crd(&format!("{base}/convert"), &ca).to_string(),
    );
    k.ok(&["apply", "-f", &file]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        &format!("crd/crontabs.{GROUP}"),
    ]);
    let v1 = format!("crontabs.v1.{GROUP}");
    let v2 = format!("crontabs.v2.{GROUP}");

    // Created through v1: no conversion; read through v2: converted by the webhook, the
    // metadata the webhook changed (generation) restored.
    seen.take();
    k.ok(&[
        "create",
        "-f",
        &k.write("a.yaml", &crontab("v1", ns, "a", "cronSpec")),
    ]);
    k.ok(&[
        "create",
        "-f",
        &k.write("b.yaml", &crontab("v1", ns, "b", "cronSpec")),
    ]);
    assert!(
        seen.take().is_empty(),
        "a create in the stored version is not converted"
    );
    let a = k.json(&["get", &v2, "a", "-n", ns, "-o", "json"]);
    assert_eq!(a["apiVersion"], json!(format!("{GROUP}/v2")), "{a}");
    assert_eq!(
        a["spec"],
        json!({"schedule": "*/5 * * * *", "image": "img-a"}),
        "{a}"
    );
    assert_eq!(a["metadata"]["generation"], json!(1), "{a}");
    let reviews = seen.take();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let (path, review) = &reviews[0];
    assert_eq!(path, "/convert");
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(
        review["request"]["desiredAPIVersion"],
        json!(format!("{GROUP}/v2"))
    );
    assert!(!review["request"]["uid"].as_str().unwrap_or("").is_empty());
    assert_eq!(
        review["request"]["objects"][0]["spec"]["cronSpec"],
        "*/5 * * * *"
    );

    // Created through v2: stored as v1 (converted by the webhook), read back through v1.
    k.ok(&[
        "create",
        "-f",
        &k.write("c.yaml", &crontab("v2", ns, "c", "schedule")),
    ]);
    let c = k.json(&["get", &v1, "c", "-n", ns, "-o", "json"]);
    assert_eq!(
        c["spec"],
        json!({"cronSpec": "*/5 * * * *", "image": "img-c"}),
        "{c}"
    );
    assert_eq!(c["metadata"]["generation"], json!(1), "{c}");

    // A list through v2 is converted in one review of all its items.
    seen.take();
    let list = k.json(&["get", &v2, "-n", ns, "-o", "json"]);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 3, "{list}");
    for item in &items {
        assert_eq!(item["apiVersion"], json!(format!("{GROUP}/v2")), "{item}");
        assert_eq!(item["spec"]["schedule"], "*/5 * * * *", "{item}");
        assert!(item["spec"].get("cronSpec").is_none(), "{item}");
    }
    let reviews = seen.take();
    assert_eq!(reviews.len(), 1, "one review for the list: {reviews:?}");
    assert_eq!(
        reviews[0].1["request"]["objects"].as_array().map(Vec::len),
        Some(3)
    );
    // A CRD that lists v1beta1 first in conversionReviewVersions gets v1beta1 reviews, and
    // takes a v1beta1 answer.
    let review_versions = |versions: Value| {
        let patch =
            json!({"spec": {"conversion": {"webhook": {"conversionReviewVersions": versions}}}});
        k.ok(&[
            "patch",
            "crd",
            &format!("crontabs.{GROUP}"),
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    };
    review_versions(json!(["v1beta1", "v1"]));
    let mut sent = Value::Null;
    for _ in 0..150 {
        seen.take();
        let a = k.json(&["get", &v2, "a", "-n", ns, "-o", "json"]);
        assert_eq!(a["spec"]["schedule"], "*/5 * * * *", "{a}");
        sent = seen
            .take()
            .pop()
            .map(|(_, r)| r["apiVersion"].clone())
            .unwrap_or_default();
        if sent == "apiextensions.k8s.io/v1beta1" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(sent, "apiextensions.k8s.io/v1beta1");
    review_versions(json!(["v1"]));

    // The Table kubectl prints by default is converted too.
    let table = k.ok(&["get", &v2, "-n", ns]);
    assert!(table.contains("a ") && table.contains("c "), "{table}");

    let get_a = format!("/apis/{GROUP}/v2/namespaces/{ns}/crontabs/a");
    let list_v2 = format!("/apis/{GROUP}/v2/namespaces/{ns}/crontabs");
    let failed = format!("conversion webhook for {GROUP}/v1, Kind=CronTab failed: ");

    // A webhook answering for another request.
    set_webhook(&k, &format!("{base}/wrong-uid"));
    let (code, status) = f.until_message(&get_a, "not-the-request");
    assert_eq!(code, 500, "{status}");
    assert!(status.get("reason").is_none(), "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!("{failed}expected response.uid=\""))
            && message.ends_with("\", got \"not-the-request\""),
        "{message}"
    );
    let printed = k.fails(&["get", &v2, "a", "-n", ns]);
    assert!(printed.stderr.contains(&failed), "{}", printed.describe());
    // A create through v2 converts to the stored version first, and fails alike.
    let refused = k.fails(&[
        "create",
        "-f",
        &k.write("d.yaml", &crontab("v2", ns, "d", "schedule")),
    ]);
    assert!(
        refused.stderr.contains(&format!(
            "conversion webhook for {GROUP}/v2, Kind=CronTab failed: expected response.uid="
        )),
        "{}",
        refused.describe()
    );
    // The stored version needs no conversion.
    k.ok(&["get", &v1, "a", "-n", ns]);

    // A webhook leaving the apiVersion alone: the object's message, and the list's.
    set_webhook(&k, &format!("{base}/wrong-version"));
    let want = format!(
        "conversion webhook for {GROUP}/v1, Kind=CronTab returned invalid object at index 0: invalid groupVersion (expected {GROUP}/v2, received {GROUP}/v1)"
    );
    let (code, status) = f.until_message(&get_a, "invalid groupVersion");
    assert_eq!(
        (code, status["message"].as_str()),
        (500, Some(want.as_str()))
    );
    let (code, status) = f.get(&list_v2);
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        json!(format!(
            "conversion webhook for {GROUP}/v2, Kind=CronTabList returned invalid converted object at index 1: invalid groupVersion (expected {GROUP}/v2, received {GROUP}/v1)"
        ))
    );

    // A webhook renaming the object.
    set_webhook(&k, &format!("{base}/rename"));
    let (code, status) = f.until_message(&get_a, "must have the same name");
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        json!(format!(
            "conversion webhook for {GROUP}/v1, Kind=CronTab returned invalid object: must have the same name: a != a-renamed"
        ))
    );

    // An unreachable webhook: conversions fail, everything else is served.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = closed.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    drop(closed);
    let unreachable = format!("https://127.0.0.1:{port}/convert");
    set_webhook(&k, &unreachable);
    let (code, status) = f.until_message(&get_a, &format!("Post \"{unreachable}\""));
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .starts_with(&format!("{failed}Post \"{unreachable}\": ")),
        "{status}"
    );
    let printed = k.fails(&["get", &v2, "-n", ns]);
    assert!(
        printed.stderr.contains(&format!(
            "conversion webhook for {GROUP}/v2, Kind=CronTabList failed: Post \"{unreachable}\""
        )),
        "{}",
        printed.describe()
    );
    let stored = k.json(&["get", &v1, "-n", ns, "-o", "json"]);
    assert_eq!(
        stored["items"].as_array().map(Vec::len),
        Some(3),
        "{stored}"
    );
    k.ok(&["create", "configmap", "unaffected", "-n", ns]);
    k.ok(&["get", "configmaps", "unaffected", "-n", ns]);
    k.ok(&["get", "namespaces", ns]);

    // Back to a working webhook: the edit takes effect.
    set_webhook(&k, &format!("{base}/convert"));
    let mut converted = Value::Null;
    for _ in 0..150 {
        let (code, body) = f.get(&get_a);
        if code == 200 {
            converted = body;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(converted["spec"]["schedule"], "*/5 * * * *", "{converted}");

    // A watch through v2 converts each event (here the initial ADDED events).
    seen.take();
    let events = f.runtime.block_on(async {
        let url = f.server.url(&format!("{list_v2}?watch=1&timeoutSeconds=2"));
        let resp = f
            .client
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        resp.text().await.unwrap_or_else(|e| panic!("{e}"))
    });
    let events: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    for event in &events {
        assert_eq!(event["type"], "ADDED", "{event}");
        assert_eq!(
            event["object"]["apiVersion"],
            json!(format!("{GROUP}/v2")),
            "{event}"
        );
        assert_eq!(
            event["object"]["spec"]["schedule"], "*/5 * * * *",
            "{event}"
        );
    }
    assert_eq!(seen.take().len(), 3, "one review per watch event");

    // The storage version moves to v2: the objects stored as v1 stay so, and read through v2
    // by conversion; a new object is stored as v2, and reads through v1 by conversion.
    let mut moved = crd(&format!("{base}/convert"), &ca);
    moved["spec"]["versions"][0]["storage"] = json!(false);
    moved["spec"]["versions"][1]["storage"] = json!(true);
    k.ok(&["apply", "-f", &k.write("moved.json", &moved.to_string())]);
    let stored = k.until(
        &[
            "get",
            "crd",
            &format!("crontabs.{GROUP}"),
            "-o",
            "jsonpath={.status.storedVersions}",
        ],
        r#"["v1","v2"]"#,
    );
    assert_eq!(stored, r#"["v1","v2"]"#);
    let mut d_created = String::new();
    for _ in 0..150 {
        let run = k.run(&[
            "create",
            "-f",
            &k.write("d.yaml", &crontab("v2", ns, "d", "schedule")),
        ]);
        d_created = run.stdout.trim().to_string();
        if run.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(d_created, format!("crontab.{GROUP}/d created"));
    seen.take();
    let a = k.json(&["get", &v2, "a", "-n", ns, "-o", "json"]);
    assert_eq!(a["spec"]["schedule"], "*/5 * * * *", "{a}");
    let d = k.json(&["get", &v1, "d", "-n", ns, "-o", "json"]);
    assert_eq!(
        d["spec"],
        json!({"cronSpec": "*/5 * * * *", "image": "img-d"}),
        "{d}"
    );
    let desired: Vec<String> = seen
        .take()
        .iter()
        .map(|(_, r)| {
            r["request"]["desiredAPIVersion"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert!(
        desired.contains(&format!("{GROUP}/v2")) && desired.contains(&format!("{GROUP}/v1")),
        "a (stored as v1) converted to v2, d (stored as v2) to v1: {desired:?}"
    );

    // kube-apiserver's conversion metrics: every review by result and failure type, and the
    // CRD's conversions between versions.
    let metrics = k.ok(&["get", "--raw", "/metrics"]);
    let count = |prefix: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in /metrics"))
    };
    assert!(
        count(r#"apiserver_conversion_webhook_request_total{result="success",failure_type=""}"#)
            >= 3.0
    );
    for failure in [
        "conversion_webhook_malformed_response_failure",
        "conversion_webhook_invalid_converted_object_failure",
        "conversion_webhook_call_failure",
    ] {
        assert!(
            count(&format!(
                r#"apiserver_conversion_webhook_request_total{{result="failure",failure_type="{failure}"}}"#
            )) >= 1.0
        );
    }
    for (from, to, succeeded) in [
        ("v1", "v2", "true"),
        ("v2", "v1", "true"),
        ("v1", "v2", "false"),
    ] {
        assert!(
            count(&format!(
                r#"apiserver_crd_conversion_webhook_duration_seconds_count{{crd_name="crontabs.{GROUP}",from_version="{from}",to_version="{to}",succeeded="{succeeded}"}}"#
            )) >= 1.0
        );
    }
}
