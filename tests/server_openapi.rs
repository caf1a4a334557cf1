//! `/openapi/v2` (JSON and gnostic protobuf) and `/openapi/v3` (index, hashes, caching) against
//! the real binary.

mod common;

use common::Server;
use serde_json::Value;

const V2_PB: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// A protobuf field; only length-delimited ones keep their number and bytes.
#[derive(Debug)]
enum Field<'a> {
    Varint,
    Bytes(u32, &'a [u8]),
    Fixed64,
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Parses one message level; `None` if malformed.
fn fields(buf: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let num = u32::try_from(key >> 3).ok()?;
        match key & 7 {
            0 => {
                varint(buf, &mut pos)?;
                out.push(Field::Varint);
            }
            1 => {
                pos += 8;
                out.push(Field::Fixed64);
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                out.push(Field::Bytes(num, buf.get(pos..end)?));
                pos = end;
            }
            _ => return None,
        }
    }
    (pos == buf.len()).then_some(out)
}

fn bytes_of<'a>(fs: &'a [Field<'a>], n: u32) -> Vec<&'a [u8]> {
    fs.iter()
        .filter_map(|f| {
            if let Field::Bytes(k, b) = f {
                (*k == n).then_some(*b)
            } else {
                None
            }
        })
        .collect()
}

#[tokio::test]
async fn openapi_v2_json_and_protobuf() {
    let server = Server::start(&[]);
    let c = server.admin();
    let resp = c
        .get(server.url("/openapi/v2"))
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let json: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(json["swagger"], "2.0");
    let def_count = json["definitions"]
        .as_object()
        .map(|m| m.len())
        .unwrap_or(0);
    let path_count = json["paths"].as_object().map(|m| m.len()).unwrap_or(0);

    let resp = c
        .get(server.url("/openapi/v2"))
        .header("Accept", V2_PB)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        // kube-openapi answers with the parseable spelling (Go's mime parser rejects the `@`).
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    let bytes = resp.bytes().await.unwrap_or_default();
    let doc = fields(&bytes).unwrap_or_else(|| panic!("malformed protobuf"));
    assert_eq!(bytes_of(&doc, 1), vec![b"2.0".as_slice()], "swagger field");
    let info = fields(bytes_of(&doc, 2)[0]).unwrap_or_default();
    assert_eq!(bytes_of(&info, 1), vec![b"Kubernetes".as_slice()]);
    let defs = bytes_of(&doc, 9)
        .first()
        .and_then(|b| fields(b))
        .unwrap_or_default();
    assert_eq!(
        bytes_of(&defs, 1).len(),
        def_count,
        "one NamedSchema per definition"
    );
    for named in bytes_of(&defs, 1) {
        let n = fields(named).unwrap_or_else(|| panic!("malformed NamedSchema"));
        assert!(fields(bytes_of(&n, 2).first().copied().unwrap_or_default()).is_some());
    }
    let paths = bytes_of(&doc, 8)
        .first()
        .and_then(|b| fields(b))
        .unwrap_or_default();
    assert_eq!(
        bytes_of(&paths, 2).len(),
        path_count,
        "one NamedPathItem per path"
    );

    let resp = c
        .get(server.url("/openapi/v2"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 406);
    let status: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(status["reason"], "NotAcceptable");
}

#[tokio::test]
async fn openapi_v3_index_and_hashes() {
    let server = Server::start(&[]);
    let c = server.admin();
    let index: Value = c
        .get(server.url("/openapi/v3"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    let paths = index["paths"].as_object().cloned().unwrap_or_default();
    let entry = paths
        .get("apis/example.dev/v1")
        .cloned()
        .unwrap_or_else(|| panic!("no example.dev/v1 in {index}"));
    let url = entry["serverRelativeURL"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        url.starts_with("/openapi/v3/apis/example.dev/v1?hash="),
        "{url}"
    );
    assert!(paths.contains_key("api/v1"), "core group missing: {index}");

    let resp = c
        .get(server.url(&url))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("public, immutable")
    );
    let doc: Value = resp.json().await.unwrap_or(Value::Null);
    assert!(doc["components"]["schemas"].is_object(), "{doc}");

    let no_redirect = reqwest::Client::builder()
        .use_rustls_tls()
        .redirect(reqwest::redirect::Policy::none())
        .danger_accept_invalid_certs(true)
        .identity(identity(&server))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = no_redirect
        .get(server.url("/openapi/v3/apis/example.dev/v1?hash=STALE"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 301);
    assert_eq!(
        resp.headers().get("location").and_then(|v| v.to_str().ok()),
        Some(url.as_str())
    );
}

fn identity(server: &Server) -> reqwest::Identity {
    let dir = server.data_dir.join("pki");
    let mut pem = std::fs::read(dir.join("admin.crt")).unwrap_or_default();
    pem.extend(std::fs::read(dir.join("admin.key")).unwrap_or_default());
    reqwest::Identity::from_pem(&pem).unwrap_or_else(|e| panic!("{e}"))
}
