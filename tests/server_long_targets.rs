//! HTTP/1.1 request-targets longer than the `http` crate's 64 KiB URIs, against the real binary
//! (the listener's `long_target` adapter): lists with label selectors of 100 KB and 900 KB
//! select correctly; keep-alive and pipelining (Content-Length, chunked with trailers,
//! `Expect: 100-continue`) go on around a long request; the short target the adapter gives
//! hyper means nothing when a client sends it; after framing the adapter does not follow
//! exactly it stops rewriting (hyper answers 414 as before); a head over 1 MiB is 431.

mod common;

use common::Server;
use common::raw::{Conn, admin_http1};

const LIST: &str = "/api/v1/namespaces/default/configmaps";

/// A URL-encoded set-based selector `app in (v00000, …, match-me)` of about `len` bytes.
fn selector(len: usize) -> String {
    let mut out = String::from("app+in+%28match-me");
    let mut i = 0;
    while out.len() < len {
        out.push_str(&format!("%2Cv{i:05}"));
        i += 1;
    }
    out.push_str("%29");
    out
}

fn get(target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes()
}

fn configmap(name: &str, app: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"{app}"}}}}}}"#
    )
}

/// A create with a `Content-Length` body.
fn create(name: &str, app: &str) -> Vec<u8> {
    let body = configmap(name, app);
    format!(
        "POST {LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A create with a chunked body in two chunks (one with an extension) and a trailer.
fn create_chunked(name: &str, app: &str) -> Vec<u8> {
    let body = configmap(name, app);
    let (a, b) = body.split_at(body.len() / 2);
    format!(
        "POST {LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
        a.len(),
        b.len()
    )
    .into_bytes()
}

/// The names in a list answer.
fn names(list: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {list}"))
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_selectors_over_http11_select_and_the_connection_goes_on() {
    let server = Server::start(&[]);
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    conn.send(&create("picked", "match-me")).await;
    assert_eq!(conn.response().await.status, 201);
    conn.send(&create("left-out", "other")).await;
    assert_eq!(conn.response().await.status, 201);
    for len in [100_000, 900_000] {
        let target = format!("{LIST}?labelSelector={}", selector(len));
        assert!(target.len() >= len, "{}", target.len());
        conn.send(&get(&target)).await;
        let resp = conn.response().await;
        assert_eq!(resp.status, 200, "{len}: {resp:?}");
        let list = resp.json();
        assert_eq!(list["kind"], "ConfigMapList", "{len}");
        assert_eq!(names(&list), ["picked"], "{len}");
        // Keep-alive goes on after the long request.
        conn.send(&get(&format!("{LIST}/picked"))).await;
        let next = conn.response().await;
        assert_eq!(next.status, 200, "{len}: {next:?}");
        assert_eq!(next.json()["metadata"]["name"], "picked");
    }
    // A long path and query that is not a URI's is 414 as before.
    let bad = format!("{LIST}?labelSelector={}<", selector(100_000));
    let mut other = Conn::open(&server, admin_http1(&server)).await;
    other.send(&get(&bad)).await;
    assert_eq!(other.response().await.status, 414);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_around_a_long_one() {
    let server = Server::start(&[]);
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    let long = format!("{LIST}?labelSelector={}", selector(200_000));
    let mut out = Vec::new();
    out.extend(create("sized-1", "match-me"));
    out.extend(create_chunked("chunked-1", "match-me"));
    out.extend(get(&long));
    out.extend(create_chunked("chunked-2", "match-me"));
    out.extend(create("sized-2", "other"));
    out.extend(get(&long));
    out.extend(get(&format!("{LIST}/sized-2")));
    conn.send(&out).await;
    for name in ["sized-1", "chunked-1"] {
        let resp = conn.response().await;
        assert_eq!(resp.status, 201, "{name}: {resp:?}");
        assert_eq!(resp.json()["metadata"]["name"], name);
    }
    let first = conn.response().await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(names(&first.json()), ["chunked-1", "sized-1"]);
    for name in ["chunked-2", "sized-2"] {
        let resp = conn.response().await;
        assert_eq!(resp.status, 201, "{name}: {resp:?}");
        assert_eq!(resp.json()["metadata"]["name"], name);
    }
    let second = conn.response().await;
    assert_eq!(second.status, 200, "{second:?}");
    assert_eq!(names(&second.json()), ["chunked-1", "chunked-2", "sized-1"]);
    let last = conn.response().await;
    assert_eq!(last.json()["metadata"]["labels"]["app"], "other");

    // `Expect: 100-continue` after a long request: the body follows the interim answer.
    conn.send(&get(&long)).await;
    assert_eq!(conn.response().await.status, 200);
    let body = configmap("expected", "match-me");
    conn.send(
        format!(
            "POST {LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Expect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(conn.response().await.status, 100);
    conn.send(body.as_bytes()).await;
    assert_eq!(conn.response().await.status, 201);
    conn.send(&get(&long)).await;
    let resp = conn.response().await;
    assert_eq!(
        names(&resp.json()),
        ["chunked-1", "chunked-2", "expected", "sized-1"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_short_target_and_ambiguous_framing() {
    let server = Server::start(&[]);
    let long = format!("{LIST}?labelSelector={}", selector(100_000));
    // A client that sends the adapter's short target itself gets a 404, also right before a
    // long request, which still gets its own target.
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    let mut out = get("/.apiary/long-request-target?labelSelector=app%3Dx");
    out.extend(get(&long));
    conn.send(&out).await;
    let spoofed = conn.response().await;
    assert_eq!(spoofed.status, 404, "{spoofed:?}");
    let real = conn.response().await;
    assert_eq!(real.status, 200, "{real:?}");
    assert_eq!(real.json()["kind"], "ConfigMapList");

    // Framing the adapter does not follow exactly (two Content-Lengths, which hyper takes
    // when they agree): it stops interpreting, and hyper answers the long request as it
    // always has.
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    let mut out = format!(
        "GET {LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes();
    out.extend(get(&long));
    conn.send(&out).await;
    assert_eq!(conn.response().await.status, 200);
    assert_eq!(conn.response().await.status, 414);

    // Both Content-Length and Transfer-Encoding: hyper reads the chunked body and closes.
    // It may close before it has read the long request behind it, and then the kernel resets
    // the connection under the rest of this write, so the write may fail.
    let mut conn = Conn::open(&server, admin_http1(&server)).await;
    let mut out = format!(
        "POST {LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    .into_bytes();
    out.extend(get(&long));
    conn.send_some(&out).await;
    assert_ne!(conn.response().await.status, 200);
    assert!(conn.closed().await, "the connection stayed open");

    // A head over 1 MiB is 431, long target or not.
    for target in [
        format!("{LIST}?labelSelector={}", selector(1_100_000)),
        LIST.to_string(),
    ] {
        let mut conn = Conn::open(&server, admin_http1(&server)).await;
        let padding = if target.len() > 1 << 20 {
            String::new()
        } else {
            format!("X-Padding: {}\r\n", "p".repeat(1_100_000))
        };
        conn.send_some(
            format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{padding}\r\n").as_bytes(),
        )
        .await;
        assert_eq!(conn.response().await.status, 431, "{}", target.len());
    }
}
