//! The embedded store on a full disk, against the real binary: the data directory is on a
//! 24 MiB tmpfs the test mounts (as root, as on CI; a failed mount fails the test). Large
//! ConfigMaps fill it until a create fails: that answer is a 500 `InternalError` Status naming
//! "No space left on device" (kube-apiserver's answer when etcd reports "database space
//! exceeded"), and so are the large writes that follow; reads (GET and lists) keep answering with
//! every acknowledged object. Once the tmpfs is grown (`mount -o remount,size=64m`) writes
//! succeed again without a restart, with resourceVersions above every acknowledged one, and
//! after a restart everything acknowledged is there. The store's space quota
//! (`--storage-quota-bytes`) refuses growth the same way before the disk is full.

mod common;

use std::time::{Duration, Instant};

use common::Server;
use common::tmpfs::Tmpfs;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn create(
    server: &Server,
    client: &reqwest::Client,
    name: &str,
    size: usize,
) -> (u16, Value) {
    let data = json!({"fill": "x".repeat(size)});
    post(server, client, name, data).await
}

/// POSTs a ConfigMap named `name` with `data`; returns the status code and the answer.
async fn post(server: &Server, client: &reqwest::Client, name: &str, data: Value) -> (u16, Value) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                      "data": data});
    let r = client
        .post(server.url(CONFIGMAPS))
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion: {}", object["metadata"]))
}

/// Every acknowledged ConfigMap reads back (GET and list) at its resourceVersion.
async fn check_acknowledged(
    server: &Server,
    client: &reqwest::Client,
    acknowledged: &[(String, u64)],
) {
    for (name, rv) in acknowledged {
        let r = client
            .get(server.url(&format!("{CONFIGMAPS}/{name}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200, "GET {name}");
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(resource_version(&body), *rv, "{name}");
    }
    for query in ["", "?resourceVersion=0", "?limit=3"] {
        let r = client
            .get(server.url(&format!("{CONFIGMAPS}{query}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200, "list{query}");
        let list: Value = r.json().await.unwrap_or(Value::Null);
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if query.is_empty() {
            for (name, rv) in acknowledged {
                assert!(
                    items
                        .iter()
                        .any(|i| i["metadata"]["name"] == name.as_str()
                            && resource_version(i) == *rv),
                    "the list lacks {name} at {rv}"
                );
            }
        } else {
            assert!(!items.is_empty(), "list{query}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_with_500_and_writes_resume_when_space_is_freed() {
    let fs = Tmpfs::mount("24m");
    let data = fs.path().join("data");
    let mut server = Server::start_in(&data, &[]);
    let client = server.admin();

    let mut acknowledged = Vec::new();
    let status = loop {
        let name = format!("fill-{}", acknowledged.len());
        let (code, body) = create(&server, &client, &name, 512 * 1024).await;
        if code != 201 {
            assert_eq!(code, 500, "{body}");
            break body;
        }
        acknowledged.push((name, resource_version(&body)));
        assert!(acknowledged.len() < 200, "the 24 MiB disk never filled up");
    };
    eprintln!(
        "{} ConfigMaps of 512 KiB acknowledged, then: {status}",
        acknowledged.len()
    );
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "InternalError", "{status}");
    assert_eq!(status["code"], 500, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("No space left on device"), "{status}");

    // Writes keep failing the same way; reads keep answering.
    for i in 0..3 {
        let (code, body) = create(&server, &client, &format!("more-{i}"), 512 * 1024).await;
        assert_eq!(code, 500, "{body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("No space left on device"),
            "{body}"
        );
        check_acknowledged(&server, &client, &acknowledged).await;
    }

    // More space: writes succeed again without a restart.
    fs.resize("64m");
    let deadline = Instant::now() + Duration::from_secs(15);
    let resumed = loop {
        let (code, body) = create(&server, &client, "resumed", 10).await;
        if code == 201 {
            break resource_version(&body);
        }
        assert_eq!(code, 500, "{body}");
        assert!(Instant::now() < deadline, "writes never resumed: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let last = acknowledged
        .iter()
        .map(|(_, rv)| *rv)
        .max()
        .unwrap_or_default();
    assert!(resumed > last, "resourceVersion {resumed} after {last}");
    acknowledged.push(("resumed".to_string(), resumed));
    check_acknowledged(&server, &client, &acknowledged).await;

    // After a restart everything acknowledged is there.
    assert!(server.terminate(Duration::from_secs(30)).success());
    let server = Server::start_in(&data, &[]);
    let client = server.admin();
    check_acknowledged(&server, &client, &acknowledged).await;
    drop(server);
}

/// Creates ConfigMaps of `size` bytes until one is refused; returns the acknowledged ones and
/// the refusal.
async fn fill(
    server: &Server,
    client: &reqwest::Client,
    prefix: &str,
    size: usize,
) -> (Vec<(String, u64)>, Value) {
    let mut acknowledged = Vec::new();
    for i in 0..1000 {
        let name = format!("{prefix}-{i}");
        let (code, body) = create(server, client, &name, size).await;
        if code != 201 {
            assert_eq!(code, 500, "{body}");
            return (acknowledged, body);
        }
        acknowledged.push((name, resource_version(&body)));
    }
    panic!("1000 creates of {size} bytes fit in the quota");
}

/// `--storage-quota-bytes` bounds the embedded store: creates past it get a 500 naming
/// "database space exceeded" (etcd's words at its quota), the objects already stored are read
/// and deleted as before, the bound holds after a restart, and once the deleted objects'
/// history is compacted, creates succeed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_quota_refuses_growth_and_deletes_make_room() {
    const QUOTA: usize = 8 << 20;
    const SIZE: usize = 256 << 10;
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("data");
    let args = [
        "--storage-quota-bytes=8388608",
        "--etcd-compaction-interval=1s",
    ];
    let mut server = Server::start_in(&dir, &args);
    let client = server.admin();
    // Each object counts twice (its row and its history row) until the history is compacted,
    // which the server does every second, to the revision it saw a second before and keeping
    // the history row at that revision: fill until a create is still refused after the
    // history had time to be compacted past the last big object, so that nothing but deletes
    // can make room. A small write after each round moves the revision past the last big
    // object (else its history row stays until the next write: after the restart, the new
    // server's first writes let it be compacted, and that made room for one more create).
    let mut acknowledged = Vec::new();
    let mut round = 0;
    let refusal = loop {
        let (more, refusal) = fill(&server, &client, &format!("big{round}"), SIZE).await;
        if more.is_empty() {
            break refusal;
        }
        acknowledged.extend(more);
        round += 1;
        assert!(
            round < 20,
            "compaction keeps making room: {}",
            acknowledged.len()
        );
        // Refused only when the store is within a few hundred bytes of its quota, where no
        // history row of a big object is left to free either.
        let (code, body) = create(&server, &client, &format!("small{round}"), 10).await;
        assert!(code == 201 || code == 500, "{body}");
        tokio::time::sleep(Duration::from_secs(3)).await;
    };
    assert!(round > 0, "the first create was refused: {refusal}");
    assert!(
        (QUOTA / SIZE / 2 - 2..=QUOTA / SIZE).contains(&acknowledged.len()),
        "{} objects of {SIZE} bytes under a quota of {QUOTA}",
        acknowledged.len()
    );
    assert_eq!(refusal["reason"], "InternalError", "{refusal}");
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(message.contains("database space exceeded"), "{message}");
    check_acknowledged(&server, &client, &acknowledged).await;

    // The store counts what it holds when it opens: still full after a restart.
    assert!(server.terminate(Duration::from_secs(30)).success());
    let server = Server::start_in(&dir, &args);
    let client = server.admin();
    check_acknowledged(&server, &client, &acknowledged).await;
    let (code, body) = create(&server, &client, "after-restart", SIZE).await;
    assert_eq!(code, 500, "{body}");

    // Deletes are accepted at the quota; once their history is compacted, creates fit again.
    for (name, _) in &acknowledged {
        let r = client
            .delete(server.url(&format!("{CONFIGMAPS}/{name}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200, "DELETE {name}");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = create(&server, &client, "after-deletes", SIZE).await;
        if code == 201 {
            break;
        }
        assert_eq!(code, 500, "{body}");
        assert!(Instant::now() < deadline, "no room after deletes: {body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// An object larger than etcd accepts in one write (1.5 MiB) is refused by the embedded store
/// too, as etcd's `request is too large`: here a ConfigMap within the 1 MiB of values
/// validation allows, made large by 50,000 keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_larger_than_etcd_accepts_is_refused() {
    let server = Server::start(&[]);
    let client = server.admin();
    let mut data = serde_json::Map::new();
    data.insert("big".into(), Value::from("x".repeat(1_000_000)));
    for i in 0..50_000 {
        data.insert(format!("k{i:05}"), Value::from(""));
    }
    let (code, status) = post(&server, &client, "wide", Value::Object(data)).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("request is too large"), "{message}");
    let (code, _) = create(&server, &client, "small", 100).await;
    assert_eq!(code, 201);
}
