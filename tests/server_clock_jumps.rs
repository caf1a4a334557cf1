//! Wall-clock jumps of the server process, made with libfaketime (Debian's `faketime`;
//! `tools/test` installs it, and the test fails loudly without it): the server runs with
//! `LD_PRELOAD=libfaketime.so.1`, an offset read from a file on every clock read
//! (`FAKETIME_NO_CACHE=1`) and the monotonic clock left alone
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`), and the test rewrites the offset from `+0` to `+2h`, then
//! to `-1h`. The server's own timestamps (creationTimestamp) show each jump; Events (whose TTL
//! is an hour, as kube-apiserver's `--event-ttl`) do not expire when the clock leaps past their
//! TTL, since the embedded store times TTLs on the monotonic clock; resourceVersions keep
//! increasing across both jumps.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::Server;
use serde_json::{Value, json};

/// libfaketime's preload library, wherever the distribution put it.
fn libfaketime() -> PathBuf {
    let mut candidates = vec![PathBuf::from("/usr/lib/faketime/libfaketime.so.1")];
    if let Ok(dirs) = std::fs::read_dir("/usr/lib") {
        for dir in dirs.flatten() {
            candidates.push(dir.path().join("faketime/libfaketime.so.1"));
        }
    }
    candidates
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("libfaketime.so.1 is not installed (apt-get install faketime; tools/test does)")
        })
}

async fn create(server: &Server, client: &reqwest::Client, path: &str, object: Value) -> Value {
    let r = client
        .post(server.url(path))
        .json(&object)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status().as_u16(), 201, "{path}");
    r.json().await.unwrap_or_else(|e| panic!("{e}"))
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion: {object}"))
}

/// How far the server's clock is ahead of the test's, by the creationTimestamp of a new
/// ConfigMap; also returns its resourceVersion.
async fn server_clock_offset(server: &Server, client: &reqwest::Client, name: &str) -> (i64, u64) {
    let object = create(
        server,
        client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
    )
    .await;
    let created = object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .unwrap_or_else(|| panic!("no creationTimestamp: {object}"));
    let offset = created.timestamp() - chrono::Utc::now().timestamp();
    (offset, resource_version(&object))
}

/// Every Event in `names` is still there.
async fn events_present(server: &Server, client: &reqwest::Client, names: &[String], when: &str) {
    for name in names {
        let r = client
            .get(server.url(&format!("/api/v1/namespaces/default/events/{name}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200, "Event {name} expired {when}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_jumps_neither_expire_ttls_early_nor_reorder_resource_versions() {
    let library = libfaketime();
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let offset_file = tmp.path().join("faketime");
    let set_offset = |offset: &str| {
        std::fs::write(&offset_file, format!("{offset}\n")).unwrap_or_else(|e| panic!("{e}"));
    };
    set_offset("+0");
    let library = library.display().to_string();
    let offset_path = offset_file.display().to_string();
    let server = Server::start_in_with_env(
        &tmp.path().join("data"),
        &[],
        &[
            ("LD_PRELOAD", library.as_str()),
            ("FAKETIME_TIMESTAMP_FILE", offset_path.as_str()),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let client = server.admin();

    let (offset, mut last_rv) = server_clock_offset(&server, &client, "at-start").await;
    assert!(
        offset.abs() < 60,
        "the server's clock is off by {offset}s at +0"
    );
    let mut events = Vec::new();
    for i in 0..3 {
        let name = format!("ev-{i}");
        let event = create(
            &server,
            &client,
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                   "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "x"},
                   "reason": "Test", "message": "m", "type": "Normal"}),
        )
        .await;
        let rv = resource_version(&event);
        assert!(rv > last_rv, "{rv} after {last_rv}");
        last_rv = rv;
        events.push(name);
    }

    // Two hours forward: past the Events' one-hour TTL on the wall clock.
    set_offset("+2h");
    let (offset, rv) = server_clock_offset(&server, &client, "after-forward").await;
    assert!(
        (7140..7260).contains(&offset),
        "libfaketime did not move the server's clock 2h forward: {offset}s"
    );
    assert!(rv > last_rv, "{rv} after {last_rv}");
    last_rv = rv;
    // The TTL sweep runs every second; give it a few rounds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    events_present(&server, &client, &events, "after a 2h jump forward").await;

    // Back to an hour behind the real time.
    set_offset("-1h");
    let (offset, rv) = server_clock_offset(&server, &client, "after-backward").await;
    assert!(
        (-3660..-3540).contains(&offset),
        "libfaketime did not move the server's clock back: {offset}s"
    );
    assert!(rv > last_rv, "{rv} after {last_rv}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    events_present(&server, &client, &events, "after a jump back").await;
    let list: Value = client
        .get(server.url("/api/v1/namespaces/default/events"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(events.len()),
        "{list}"
    );
    assert!(resource_version(&list) >= rv);
}
