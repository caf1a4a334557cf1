//! Protocol upgrades through the aggregator, against the real binary (what `kubectl exec`,
//! `attach` and `port-forward` send to an aggregated server's subresources): the upgrade goes
//! to the aggregated server with the caller's identity instead of its credentials, the
//! server's `101` is relayed and bytes flow both ways; a caller without the right is refused
//! before anything reaches the server; the server's refusal is relayed, and an answer that is
//! neither `101` nor an error is refused with apimachinery's words. After a relayed refusal the
//! caller's connection closes, as kube closes the connection it hijacked.

mod common;

use std::time::{Duration, Instant};

use common::Server;
use common::aggregated_server::{self, AggregatedServer, Identity};
use common::raw::Conn;

const GROUP: &str = "upgrades.example.com";
const PATIENCE: Duration = Duration::from_secs(60);

/// An upgrade request for `path` with bearer `token`.
fn upgrade_request(path: &str, token: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_are_relayed_with_the_callers_identity() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tokens = tmp.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "tok-admin,token-admin,uid-1,system:masters\ntok-nobody,nobody,uid-2,\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start(&[&format!("--token-auth-file={}", tokens.display())]);
    let front_proxy_ca = String::from_utf8_lossy(&server.pem("front-proxy-ca.crt")).into_owned();
    let identity = Identity::new();
    let backend = AggregatedServer::start(0, &identity, &front_proxy_ca).await;
    aggregated_server::register(
        &server,
        "wardle",
        "api",
        GROUP,
        "v1",
        backend.port,
        &identity.ca_pem,
    )
    .await;
    let name = format!("v1.{GROUP}");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let condition = aggregated_server::available(&server, &name).await;
        if condition.as_ref().is_some_and(|c| c.0 == "True") {
            break;
        }
        assert!(Instant::now() < deadline, "not available: {condition:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let things = format!("/apis/{GROUP}/v1/namespaces/default/things");

    // Upgraded: the 101 is relayed, and bytes go to the server and come back.
    let exec = format!("{things}/x/exec?command=sh");
    let mut conn = Conn::open(&server, common::tls::any_version()).await;
    conn.send(&upgrade_request(&exec, "tok-admin")).await;
    let resp = conn.response().await;
    assert_eq!(resp.status, 101, "{resp:?}");
    assert_eq!(resp.header("upgrade"), Some("SPDY/3.1"), "{resp:?}");
    assert_eq!(resp.header("connection"), Some("Upgrade"), "{resp:?}");
    assert_eq!(
        resp.header("x-stream-protocol-version"),
        Some("v4.channel.k8s.io")
    );
    for message in [&b"hello through the aggregator"[..], b"\x00\x01binary\xff"] {
        conn.send(message).await;
        assert_eq!(conn.read_bytes(message.len()).await, message);
    }
    let seen = backend
        .last(&format!("{things}/x/exec"))
        .unwrap_or_else(|| panic!("the upgrade did not reach the server"));
    let header = |name: &str| seen.get(name).map(|v| v.to_str().unwrap_or("").to_string());
    assert_eq!(header("x-remote-user").as_deref(), Some("token-admin"));
    let groups: Vec<_> = seen
        .get_all("x-remote-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(groups.contains(&"system:masters"), "{groups:?}");
    assert_eq!(
        header("authorization"),
        None,
        "the caller's credentials stay"
    );
    assert_eq!(header("upgrade").as_deref(), Some("SPDY/3.1"));
    assert_eq!(header("x-forwarded-for").as_deref(), Some("127.0.0.1"));
    assert_eq!(
        header("x-forwarded-uri"),
        None,
        "the upgrade path sets only X-Forwarded-For"
    );
    drop(conn);

    // A caller without the right is refused before anything reaches the server.
    let denied = format!("{things}/y/exec");
    let mut conn = Conn::open(&server, common::tls::any_version()).await;
    conn.send(&upgrade_request(&denied, "tok-nobody")).await;
    let resp = conn.response().await;
    assert_eq!(resp.status, 403, "{resp:?}");
    let status = resp.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    assert!(backend.last(&denied).is_none(), "reached the server");

    // The server's refusal is relayed as it is.
    let mut conn = Conn::open(&server, common::tls::any_version()).await;
    conn.send(&upgrade_request(&format!("{things}/x/denied"), "tok-admin"))
        .await;
    let resp = conn.response().await;
    assert_eq!(resp.status, 403, "{resp:?}");
    assert_eq!(resp.body, b"upgrade denied by the backend");
    assert!(
        conn.closed().await,
        "the connection stayed open after a refused upgrade"
    );

    // An answer that neither switches protocols nor is an error is refused.
    let mut conn = Conn::open(&server, common::tls::any_version()).await;
    conn.send(&upgrade_request(&format!("{things}/x/attach"), "tok-admin"))
        .await;
    let resp = conn.response().await;
    assert_eq!(resp.status, 503, "{resp:?}");
    let status = resp.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(
        status["message"],
        "invalid upgrade response: status code 200"
    );
}
