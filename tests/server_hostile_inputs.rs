//! Hostile inputs against the real binary: deeply nested bodies are refused before they are
//! parsed (and cost almost no CPU), patches cannot grow the object beyond the copy limit or
//! the process beyond a bounded size, and escaped path segments are decoded as Kubernetes
//! decodes them. Every test checks that the server keeps answering `/readyz` while and after
//! it is attacked.

mod common;

use std::time::Duration;

use common::Server;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The CPU time (user + system) the process has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/stat: {e}"));
    // The fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = &stat[stat
        .rfind(')')
        .unwrap_or_else(|| panic!("bad stat: {stat}"))
        + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap_or_else(|e| panic!("{e}"))
        + fields[12].parse::<u64>().unwrap_or_else(|e| panic!("{e}"));
    // Linux reports CPU time in USER_HZ (100 per second) ticks.
    Duration::from_millis(ticks * 10)
}

/// A `/proc/<pid>/status` value in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Asserts `/readyz` answers `ok` (within the client's five-second timeout).
async fn assert_ready(s: &Server, c: &reqwest::Client) {
    let r = c
        .get(s.url("/readyz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .unwrap_or_else(|e| panic!("/readyz: {e}"));
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().await.unwrap_or_default(), "ok");
}

/// Sends a request and returns its status code and JSON body.
async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.unwrap_or_else(|e| panic!("request: {e}"));
    let code = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (code, body)
}

fn assert_status(body: &Value, code: u16, reason: &str) {
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or("")
}

fn nest(open: &str, leaf: &str, close: &str, n: usize) -> String {
    format!("{}{leaf}{}", open.repeat(n), close.repeat(n))
}

/// Bodies nested 100,000 deep (flow sequences, flow mappings, block sequences, JSON) are
/// refused at once with the decoders' messages, cost the server almost no CPU, and `/readyz`
/// answers throughout; nesting up to the limit (100) is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_bodies_are_refused_before_parsing() {
    let s = Server::start(&[]);
    let c = s.admin();
    let deep_yaml = [
        nest("[", "", "]", 100_000),
        format!("a: {}", nest("{a: ", "1", "}", 100_000)),
        "- ".repeat(100_000),
    ];
    let cpu_before = cpu_time(s.pid());
    for body in &deep_yaml {
        let post = c
            .post(s.url(CONFIGMAPS))
            .header("content-type", "application/yaml")
            .body(body.clone());
        let (attack, ready) = tokio::join!(send(post), assert_ready(&s, &c));
        let () = ready;
        let (code, status) = attack;
        assert_eq!(code, 400, "{status}");
        assert_status(&status, 400, "BadRequest");
        // Kubernetes: `yaml: exceeded max depth of 10000` (its limit), inside the decode error.
        assert!(
            message(&status).contains("yaml: exceeded max depth of 100"),
            "{status}"
        );
    }
    let json_deep = nest("{\"a\":", "1", "}", 100_000);
    let (code, status) = send(
        c.post(s.url(CONFIGMAPS))
            .header("content-type", "application/json")
            .body(json_deep),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_status(&status, 400, "BadRequest");
    assert!(
        message(&status).contains(
            "couldn't get version/kind; json parse error: invalid character '{' exceeded max depth"
        ),
        "{status}"
    );
    let spent = cpu_time(s.pid()) - cpu_before;
    eprintln!("four bodies nested 100,000 deep cost {spent:?} of server CPU");
    assert!(
        spent < Duration::from_secs(1),
        "four hostile bodies cost {spent:?} of CPU"
    );

    // The deepest accepted document: the object is one level, `junk` (an unknown field,
    // dropped with a warning) 99 more.
    for (name, yaml) in [
        ("at-limit", true),
        ("at-limit-json", false),
        ("over-limit", true),
    ] {
        let levels = if name == "over-limit" { 100 } else { 99 };
        let junk = nest("[", "1", "]", levels);
        let (ct, body) = if yaml {
            (
                "application/yaml",
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\njunk: {junk}\n"
                ),
            )
        } else {
            (
                "application/json",
                format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"junk":{junk}}}"#
                ),
            )
        };
        let (code, out) = send(
            c.post(s.url(CONFIGMAPS))
                .header("content-type", ct)
                .body(body),
        )
        .await;
        if name == "over-limit" {
            assert_eq!(code, 400, "{out}");
            assert!(
                message(&out).contains("yaml: line 5: exceeded max depth of 100"),
                "{out}"
            );
        } else {
            assert_eq!(code, 201, "{name}: {out}");
        }
    }

    // The worst accepted YAML, about 1 MiB of nests at the limit, costs about what the same
    // size of flat YAML costs: parsing stays linear.
    let cost = |name: &str, items: String| {
        let body = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\njunk: [{items}]\n"
        );
        let c = c.clone();
        let url = s.url(CONFIGMAPS);
        let pid = s.pid();
        async move {
            let before = cpu_time(pid);
            let (code, out) = send(
                c.post(url)
                    .header("content-type", "application/yaml")
                    .body(body),
            )
            .await;
            assert_eq!(code, 201, "{out}");
            cpu_time(pid) - before
        }
    };
    let one = nest("[", "1", "]", 98);
    let mut nested = String::new();
    while nested.len() < 1024 * 1024 {
        nested.push_str(&one);
        nested.push(',');
    }
    nested.push('1');
    let flat = vec!["1"; nested.len() / 2].join(",");
    let flat_cost = cost("flat", flat).await;
    let nested_cost = cost("big-nests", nested).await;
    eprintln!("1 MiB of YAML: flat {flat_cost:?}, nests of depth 99 {nested_cost:?} of server CPU");
    assert!(
        nested_cost < flat_cost * 2 + Duration::from_millis(300),
        "1 MiB of nests cost {nested_cost:?}, 1 MiB of flat YAML {flat_cost:?}"
    );
    assert_ready(&s, &c).await;
}

/// A 2.7 KB JSON patch whose copies double a value 30 times is refused (422, as Kubernetes
/// refuses copies past its 3 MiB limit) without the process growing; copies within the limit
/// work; merge, strategic merge and apply patches of the largest accepted size keep the
/// process bounded too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_cannot_grow_the_server() {
    let s = Server::start(&[]);
    let c = s.admin();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "grow"},
        "data": {"a": "x".repeat(100)}});
    let (code, out) = send(c.post(s.url(CONFIGMAPS)).json(&cm)).await;
    assert_eq!(code, 201, "{out}");
    let url = s.url(&format!("{CONFIGMAPS}/grow"));
    let json_patch = |ops: &Value| {
        c.patch(&url)
            .header("content-type", "application/json-patch+json")
            .body(serde_json::to_vec(ops).unwrap_or_default())
    };

    // Within the limit: a copy is a copy.
    let (code, out) = send(json_patch(&json!([
        {"op": "copy", "from": "/data/a", "path": "/data/b"}
    ])))
    .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["data"]["b"], out["data"]["a"]);

    // The doubling patch.
    let mut ops = vec![json!({"op": "add", "path": "/junk", "value": ["y".repeat(80)]})];
    for _ in 0..30 {
        ops.push(json!({"op": "copy", "from": "/junk", "path": "/junk/-"}));
    }
    let ops = Value::Array(ops);
    assert!(serde_json::to_vec(&ops).unwrap_or_default().len() < 3000);
    let rss_before = status_kib(s.pid(), "VmRSS");
    let (attack, ready) = tokio::join!(send(json_patch(&ops)), assert_ready(&s, &c));
    let () = ready;
    let (code, status) = attack;
    assert_eq!(code, 422, "{status}");
    assert_status(&status, 422, "Invalid");
    assert_eq!(
        message(&status),
        "the server rejected our request due to an error in our request"
    );
    let rss_after = status_kib(s.pid(), "VmRSS");
    assert!(
        rss_after < rss_before + 200 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );

    // Large merge, strategic merge and apply patches (ConfigMaps hold at most 1 MiB of data).
    let big = "z".repeat(400 * 1024);
    for (ct, body) in [
        (
            "application/merge-patch+json",
            json!({"data": {"m": big}}).to_string(),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"data": {"s": big}}).to_string(),
        ),
    ] {
        let (code, out) = send(c.patch(&url).header("content-type", ct).body(body)).await;
        assert_eq!(code, 200, "{ct}: {}", message(&out));
        assert_ready(&s, &c).await;
    }
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"}, "data": {"k": big}});
    let (code, out) = send(
        c.patch(s.url(&format!("{CONFIGMAPS}/applied?fieldManager=hostile")))
            .header("content-type", "application/apply-patch+yaml")
            .body(applied.to_string()),
    )
    .await;
    assert_eq!(code, 201, "{}", message(&out));
    assert_ready(&s, &c).await;
    let peak = status_kib(s.pid(), "VmHWM");
    eprintln!(
        "peak RSS after the patches: {peak} KiB (before the doubling patch: {rss_before} KiB)"
    );
    assert!(peak < 1024 * 1024, "peak RSS {peak} KiB");
}

/// Escaped path segments are decoded as Go decodes `URL.Path`: `marker%2D1` names
/// `marker-1`, in the namespace and the resource too; an escaped slash separates segments
/// (so it never reaches a name) and answers 404 like any unknown path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_path_segments_are_decoded() {
    let s = Server::start(&[]);
    let c = s.admin();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "marker-1"},
        "data": {"k": "v"}});
    let (code, out) = send(c.post(s.url(CONFIGMAPS)).json(&cm)).await;
    assert_eq!(code, 201, "{out}");
    for path in [
        "/api/v1/namespaces/default/configmaps/marker%2D1",
        "/api/v1/namespaces/default/configmaps/marker%2d1",
        "/api/v1/namespaces/de%66ault/configmaps/marker-1",
        "/api/v1/namespaces/default/config%6Daps/%6Darker-1",
    ] {
        let (code, out) = send(c.get(s.url(path))).await;
        assert_eq!(code, 200, "{path}: {out}");
        assert_eq!(out["metadata"]["name"], "marker-1", "{path}");
    }
    // Writes address the decoded name too.
    let (code, out) = send(
        c.patch(s.url("/api/v1/namespaces/default/configmaps/marker%2D1"))
            .header("content-type", "application/merge-patch+json")
            .body(r#"{"data":{"k":"w"}}"#),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["data"]["k"], "w");
    // `marker%2F1` is the path `.../configmaps/marker/1`: no such subresource.
    let (code, out) = send(c.get(s.url("/api/v1/namespaces/default/configmaps/marker%2F1"))).await;
    assert_eq!(code, 404, "{out}");
    assert_status(&out, 404, "NotFound");
    assert_ready(&s, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_costly_patch_holds_up_no_other_request_and_times_out() {
    let s = Server::start(&[]);
    let c = s.admin();
    // A ConfigMap with a long list, and a JSON patch inserting at its front thousands of
    // times: each insert moves the whole list (as in Kubernetes), seconds of CPU in all.
    let items = vec!["a"; 150_000];
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "long", "finalizers": items}});
    let (code, out) = send(c.post(s.url(CONFIGMAPS)).json(&cm)).await;
    assert_eq!(code, 201, "{}", message(&out));
    let ops: Vec<Value> = (0..6_000)
        .map(|_| json!({"op": "add", "path": "/metadata/finalizers/0", "value": "z"}))
        .collect();
    let body = serde_json::to_vec(&ops).unwrap_or_default();
    // Each patch costs seconds of CPU; its timeout is a fraction of that.
    let url = s.url(&format!("{CONFIGMAPS}/long?dryRun=All&timeout=200ms"));
    let patches: Vec<_> = (0..3)
        .map(|_| {
            let request = c
                .patch(&url)
                .header("content-type", "application/json-patch+json")
                .body(body.clone());
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let (code, out) = send(request).await;
                (code, out, started.elapsed())
            })
        })
        .collect();
    // While they run, the server answers at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        assert_ready(&s, &c).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(1000),
            "/readyz took {took:?} during the patches"
        );
        let (code, _) = send(c.get(s.url(&format!("{CONFIGMAPS}/long")))).await;
        assert_eq!(code, 200);
    }
    // The request timeout answers the patches, as for any slow request.
    for patch in patches {
        let (code, out, took) = patch.await.unwrap_or_else(|e| panic!("{e}"));
        let shown: String = out.to_string().chars().take(300).collect();
        assert_eq!(code, 504, "{shown}");
        assert_status(&out, 504, "Timeout");
        assert!(took < Duration::from_secs(3), "the 504 came after {took:?}");
    }
    assert_ready(&s, &c).await;
}

#[tokio::test]
async fn an_apply_configuration_of_another_version_or_with_managed_fields_is_refused() {
    let s = Server::start(&[]);
    let c = s.admin();
    let apply = |name: &str, yaml: String| {
        c.patch(s.url(&format!("{CONFIGMAPS}/{name}?fieldManager=m")))
            .header("content-type", "application/apply-patch+yaml")
            .body(yaml)
    };
    for (name, head, want) in [
        (
            "no-version",
            "kind: ConfigMap\n".to_string(),
            "Incorrect version specified in apply patch. Specified patch version: , expected: v1",
        ),
        (
            "other-version",
            "apiVersion: apps/v1\nkind: ConfigMap\n".to_string(),
            "Incorrect version specified in apply patch. Specified patch version: apps/v1, expected: v1",
        ),
        (
            "managed",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  managedFields: [{manager: evil, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {}}]\n".to_string(),
            "metadata.managedFields must be nil",
        ),
        (
            "managed-empty",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  managedFields: []\n".to_string(),
            "metadata.managedFields must be nil",
        ),
    ] {
        let (code, out) = send(apply(name, format!("{head}data: {{a: b}}\n"))).await;
        assert_eq!(code, 400, "{name}: {out}");
        assert_status(&out, 400, "BadRequest");
        assert_eq!(message(&out), want, "{name}");
        let (code, _) = send(c.get(s.url(&format!("{CONFIGMAPS}/{name}")))).await;
        assert_eq!(code, 404, "{name} was not created");
    }
    // The right version, and a null managedFields, apply.
    let (code, out) = send(apply(
        "fine",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  managedFields: null\ndata: {a: b}\n".into(),
    ))
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["metadata"]["managedFields"][0]["manager"], "m");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_header_bomb_costs_no_memory() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start(&[]);
    let c = s.admin();
    assert_ready(&s, &c).await;
    let before = status_kib(s.pid(), "VmHWM");
    // One 4,000-byte table entry, then 60,000 one-byte references to it: 64 KB that name
    // 240 MB of headers (anonymous: nothing is authenticated before headers are read).
    let mut block = vec![0x82, 0x87, 0x84, 0x40, 6];
    block.extend_from_slice(b"x-bomb");
    block.extend_from_slice(&[0x7f, 0xa1, 0x1e]);
    block.extend(std::iter::repeat_n(b'a', 4_000));
    block.extend(std::iter::repeat_n(0xbe, 60_000));
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    common::tls::h2_frame(&mut out, 0x4, 0, 0, &[]);
    let pieces: Vec<&[u8]> = block.chunks(16_384).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let (kind, mut flags) = if i == 0 { (0x1, 0x1) } else { (0x9, 0) };
        if i + 1 == pieces.len() {
            flags |= 0x4;
        }
        common::tls::h2_frame(&mut out, kind, flags, 1, piece);
    }
    let config = common::tls::client_config(rustls::ALL_VERSIONS, None, &[b"h2"]);
    let mut tls = common::tls::tls_connect(&s, config, "localhost")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tls.write_all(&out).await.unwrap_or_else(|e| panic!("{e}"));
    let mut buf = vec![0; 65_536];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(n) = tls.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    let grew = status_kib(s.pid(), "VmHWM").saturating_sub(before);
    assert!(
        grew < 32 * 1024,
        "the server's peak memory grew by {grew} KiB"
    );
    assert_ready(&s, &c).await;
}

/// Writers with ever new field managers do not grow `managedFields` without bound: past ten
/// `Update` managers the oldest are merged into `ancient-changes`, as in Kubernetes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_managers_are_capped() {
    let server = Server::start(&[]);
    let client = server.admin();
    let (code, body) = send(
        client
            .post(server.url(CONFIGMAPS))
            .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "many"}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let mut last = Value::Null;
    for i in 0..30 {
        let (code, body) = send(
            client
                .patch(server.url(&format!("{CONFIGMAPS}/many?fieldManager=m{i}")))
                .header("content-type", "application/merge-patch+json")
                .body(json!({"data": {format!("k{i}"): "v"}}).to_string()),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        last = body;
    }
    let managers: Vec<&str> = last["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers.len(), 10, "{managers:?}");
    assert!(managers.contains(&"ancient-changes"), "{managers:?}");
    assert!(managers.contains(&"m29"), "{managers:?}");
    assert_ready(&server, &client).await;
}
