//! Decoding as kube-apiserver decodes, against the real binary: the kind in a protobuf
//! envelope must be the resource's, duplicate JSON fields are strict-decoding errors (and
//! warnings in the default `Warn` mode, like unknown fields), `generateName` is validated, and
//! integer fields take the JSON numbers a typed Kubernetes decoder takes (`-0`, not `1.0`,
//! `1e2` or `1.5`).
//!
//! The expected answers are Kubernetes' own (read from kube-apiserver's handlers and decoders,
//! cited at each test).

mod common;

use common::Server;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.dev/v1/namespaces/default/widgets";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

async fn send(req: reqwest::RequestBuilder) -> (u16, Value, Vec<String>) {
    let r = req.send().await.unwrap_or_else(|e| panic!("request: {e}"));
    let code = r.status().as_u16();
    let warnings = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect();
    let text = r.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (code, body, warnings)
}

/// Collects every mismatch of a test, so one run lists all the answers that differ from
/// Kubernetes'; the test fails at the end if any did.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn eq<A: PartialEq<B> + std::fmt::Debug, B: std::fmt::Debug>(
        &mut self,
        what: &str,
        actual: A,
        expected: B,
    ) {
        if actual != expected {
            self.0
                .push(format!("{what}: got {actual:?}, want {expected:?}"));
        }
    }

    fn that(&mut self, what: &str, ok: bool) {
        if !ok {
            self.0.push(what.to_string());
        }
    }

    /// An answer with HTTP status `code` whose body is a `Status` failure with that code and
    /// exactly this reason and message.
    fn failure(
        &mut self,
        what: &str,
        (http, body): (u16, &Value),
        code: u16,
        reason: &str,
        message: &str,
    ) {
        self.eq(&format!("{what}: HTTP status"), http, code);
        self.eq(
            &format!("{what}: Status code"),
            body["code"].as_u64(),
            Some(u64::from(code)),
        );
        self.eq(
            &format!("{what}: reason"),
            body["reason"].as_str(),
            Some(reason),
        );
        self.eq(
            &format!("{what}: message"),
            body["message"].as_str(),
            Some(message),
        );
    }

    fn done(self) {
        assert!(
            self.0.is_empty(),
            "{} mismatches:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

// --- A minimal protobuf writer for the test bodies. ---

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(field: u64, data: &[u8], out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

/// The protobuf of `ConfigMap{metadata{name}, data{k: v}}` (core/v1 field numbers).
fn configmap_proto(name: &str) -> Vec<u8> {
    let mut meta = Vec::new();
    bytes_field(1, name.as_bytes(), &mut meta);
    let mut entry = Vec::new();
    bytes_field(1, b"k", &mut entry);
    bytes_field(2, b"v", &mut entry);
    let mut cm = Vec::new();
    bytes_field(1, &meta, &mut cm);
    bytes_field(2, &entry, &mut cm);
    cm
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    bytes_field(1, api_version.as_bytes(), &mut type_meta);
    bytes_field(2, kind.as_bytes(), &mut type_meta);
    let mut out = b"k8s\0".to_vec();
    bytes_field(1, &type_meta, &mut out);
    bytes_field(2, raw, &mut out);
    out
}

/// A body whose kind or group is not the resource's is refused whether it comes as protobuf
/// or JSON, with the same message. Kubernetes: the decoder creates the object of the
/// envelope's kind (`UseOrCreateObject`), then converting it to the resource's internal type
/// fails (`converting (v1.Secret) to (core.ConfigMap): unknown conversion`), or the kind is not
/// registered in that group version; `transformDecodeError` wraps either as
/// `<kind> in version "<version>" cannot be handled as a ConfigMap: <error>` (400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_kind_must_be_the_resources() {
    let s = Server::start(&[]);
    let c = s.admin();
    let mut checks = Checks::default();
    let secret = "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion";
    let apps = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"";
    for (name, api_version, kind, expected) in [
        ("as-secret", "v1", "Secret", secret),
        ("as-apps", "apps/v1", "ConfigMap", apps),
    ] {
        let pb = envelope(api_version, kind, &configmap_proto(name));
        let (code, body, _) = send(
            c.post(s.url(CONFIGMAPS))
                .header("content-type", PROTOBUF)
                .header("accept", "application/json")
                .body(pb),
        )
        .await;
        checks.failure(
            &format!("protobuf envelope {api_version} {kind}"),
            (code, &body),
            400,
            "BadRequest",
            expected,
        );
        let (code, _, _) = send(c.get(s.url(&format!("{CONFIGMAPS}/{name}")))).await;
        checks.eq(&format!("GET {name} after the protobuf create"), code, 404);

        let js = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name}, "data": {"k": "v"}});
        let (code, body, _) = send(c.post(s.url(CONFIGMAPS)).json(&js)).await;
        checks.failure(
            &format!("JSON {api_version} {kind}"),
            (code, &body),
            400,
            "BadRequest",
            expected,
        );
    }
    // The resource's own kind in the envelope is stored.
    let pb = envelope("v1", "ConfigMap", &configmap_proto("as-configmap"));
    let (code, body, _) = send(
        c.post(s.url(CONFIGMAPS))
            .header("content-type", PROTOBUF)
            .header("accept", "application/json")
            .body(pb),
    )
    .await;
    checks.eq("protobuf ConfigMap: status", code, 201);
    checks.eq(
        "protobuf ConfigMap: data",
        &body["data"],
        &json!({"k": "v"}),
    );
    checks.done();
}

/// Duplicate fields. Kubernetes decodes with sigs.k8s.io/json's `UnmarshalStrict`, which
/// reports each repeated member as `duplicate field "<path>"` (the path joined with `.`, map
/// keys included). With `fieldValidation=Strict` that is a 400 `ConfigMap in version "v1"
/// cannot be handled as a ConfigMap: strict decoding error: duplicate field "…"`; in the default
/// `Warn` mode each strict error (unknown and duplicate fields alike) becomes a
/// `Warning: 299 - "<error>"` header (`addStrictDecodingWarnings`) and the object is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_fields_are_strict_errors_and_warnings() {
    let s = Server::start(&[]);
    let c = s.admin();
    let mut checks = Checks::default();
    let prefix =
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: ";
    for (body, error) in [
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1"},"immutable":false,"immutable":false}"#,
            r#"duplicate field "immutable""#,
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d2","name":"d2"}}"#,
            r#"duplicate field "metadata.name""#,
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d3","labels":{"app":"a","app":"b"}}}"#,
            r#"duplicate field "metadata.labels.app""#,
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d4"},"data":{"k":"1","k":"2"},"junk":1}"#,
            r#"duplicate field "data.k", unknown field "junk""#,
        ),
    ] {
        let (code, out, _) = send(
            c.post(s.url(&format!("{CONFIGMAPS}?fieldValidation=Strict")))
                .header("content-type", "application/json")
                .body(body),
        )
        .await;
        checks.failure(
            &format!("Strict {body}"),
            (code, &out),
            400,
            "BadRequest",
            &format!("{prefix}{error}"),
        );
    }

    // Warn (the default): created, one warning per problem, in the order of the body.
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned","labels":{"app":"a","app":"b"}},"junk":1,"data":{"k":"v"}}"#;
    let (code, _, warnings) = send(
        c.post(s.url(CONFIGMAPS))
            .header("content-type", "application/json")
            .body(body),
    )
    .await;
    checks.eq("Warn: status", code, 201);
    checks.eq(
        "Warn: Warning headers",
        warnings,
        [
            r#"299 - "duplicate field \"metadata.labels.app\"""#,
            r#"299 - "unknown field \"junk\"""#,
        ],
    );
    // Ignore: no warnings.
    let body = body.replace("warned", "ignored");
    let (code, _, warnings) = send(
        c.post(s.url(&format!("{CONFIGMAPS}?fieldValidation=Ignore")))
            .header("content-type", "application/json")
            .body(body),
    )
    .await;
    checks.eq("Ignore: status", code, 201);
    checks.that(
        &format!("Ignore: no warnings, got {warnings:?}"),
        warnings.is_empty(),
    );
    checks.done();
}

/// `generateName` is validated as a name prefix (`ValidateObjectMeta` runs the kind's name
/// check on it with `prefix=true`): 300 characters are more than a DNS subdomain's 253, so the
/// create is 422, naming the generated name (the first 58 characters of the prefix plus 5
/// random ones, `names.SimpleNameGenerator`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_generate_name_is_invalid() {
    let s = Server::start(&[]);
    let c = s.admin();
    let mut checks = Checks::default();
    let prefix = "a".repeat(300);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": prefix}, "data": {"k": "v"}});
    let (code, out, _) = send(c.post(s.url(CONFIGMAPS)).json(&cm)).await;
    let name = out["details"]["name"].as_str().unwrap_or("").to_string();
    checks.eq("generated name length", name.len(), 63);
    checks.that(
        &format!("generated name {name:?} starts with the first 58 characters"),
        name.starts_with(&prefix[..58]),
    );
    checks.failure(
        "300-character generateName",
        (code, &out),
        422,
        "Invalid",
        &format!(
            "ConfigMap {name:?} is invalid: metadata.generateName: Invalid value: {prefix:?}: must be no more than 253 characters"
        ),
    );
    checks.eq("details.kind", &out["details"]["kind"], &json!("ConfigMap"));
    checks.eq(
        "details.causes",
        &out["details"]["causes"],
        &json!([{"reason": "FieldValueInvalid",
            "message": format!("Invalid value: {prefix:?}: must be no more than 253 characters"),
            "field": "metadata.generateName"}]),
    );
    // A prefix of 253 characters is valid: the name is cut to 58 + 5.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": "b".repeat(253)}});
    let (code, out, _) = send(c.post(s.url(CONFIGMAPS)).json(&cm)).await;
    checks.eq("253-character generateName: status", code, 201);
    let name = out["metadata"]["name"].as_str().unwrap_or("");
    checks.eq("253-character generateName: name length", name.len(), 63);
    checks.that(
        "253-character generateName: name starts with the first 58 characters",
        name.starts_with(&"b".repeat(58)),
    );
    checks.done();
}

/// Integer fields. apiary's kinds are compiled types, decoded as kube-apiserver decodes its
/// built-in kinds (and an aggregated server such as sample-apiserver its own): Go's
/// `encoding/json` reads `-0` into an integer field as 0, and refuses a number written with a
/// fraction or an exponent (`1.0`, `1e2`, `1.5`) with a 400 that stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_fields_take_integer_json_numbers() {
    let s = Server::start(&[]);
    let c = s.admin();
    let mut checks = Checks::default();
    let widget = |name: &str, number: &str| {
        format!(
            r#"{{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{{"name":"{name}"}},"spec":{{"replicas":{number}}}}}"#
        )
    };
    let (code, out, _) = send(
        c.post(s.url(WIDGETS))
            .header("content-type", "application/json")
            .body(widget("minus-zero", "-0")),
    )
    .await;
    checks.eq(&format!("replicas -0: create status ({out})"), code, 201);
    checks.eq("replicas -0: created", &out["spec"]["replicas"], &json!(0));
    let (code, out, _) = send(c.get(s.url(&format!("{WIDGETS}/minus-zero")))).await;
    checks.eq("replicas -0: GET status", code, 200);
    checks.eq("replicas -0: stored", &out["spec"]["replicas"], &json!(0));

    for (name, number) in [
        ("one-point-zero", "1.0"),
        ("exponent", "1e2"),
        ("fraction", "1.5"),
    ] {
        let (code, out, _) = send(
            c.post(s.url(WIDGETS))
                .header("content-type", "application/json")
                .body(widget(name, number)),
        )
        .await;
        checks.eq(&format!("replicas {number}: HTTP status"), code, 400);
        checks.eq(
            &format!("replicas {number}: reason"),
            out["reason"].as_str(),
            Some("BadRequest"),
        );
        let message = out["message"].as_str().unwrap_or("");
        checks.that(
            &format!("replicas {number}: message {message:?} names the kind and spec.replicas"),
            message.starts_with("Widget in version \"v1\" cannot be handled as a Widget: ")
                && message.contains("spec.replicas"),
        );
        let (code, _, _) = send(c.get(s.url(&format!("{WIDGETS}/{name}")))).await;
        checks.eq(&format!("replicas {number}: nothing stored"), code, 404);
    }
    checks.done();
}
