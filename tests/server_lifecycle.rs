//! Lifecycle of the real binary: graceful shutdown on SIGTERM (readyz fails first during the
//! shutdown delay, in-flight watches end cleanly) and restarts that reuse credentials and data.

mod common;

use std::time::{Duration, Instant};

use common::Server;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_readyz_then_exits_cleanly() {
    let mut server = Server::start(&["--shutdown-delay-duration=3s"]);
    let anon = server.anonymous();
    let ready = anon
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ready.status().as_u16(), 200);

    // An open watch must end when the server stops accepting requests.
    let admin = server.admin();
    let watch = admin
        .get(server.url("/api/v1/namespaces/default/configmaps?watch=true"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watch.status().as_u16(), 200);

    let pid = server.pid();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    assert!(status.is_ok_and(|s| s.success()));
    tokio::time::sleep(Duration::from_millis(500)).await;

    let resp = anon
        .get(server.url("/readyz?verbose"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        resp.status().as_u16(),
        500,
        "readyz must fail during the shutdown delay"
    );
    let text = resp.text().await.unwrap_or_default();
    assert!(
        text.contains("[-]shutdown failed: reason withheld"),
        "{text}"
    );
    assert!(text.contains("readyz check failed"), "{text}");
    let live = anon
        .get(server.url("/livez"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        live.status().as_u16(),
        200,
        "livez stays healthy during the delay"
    );

    let started = Instant::now();
    let body = tokio::time::timeout(Duration::from_secs(30), watch.bytes()).await;
    assert!(body.is_ok(), "the watch did not end after shutdown");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the watch ended before the shutdown delay"
    );
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "apiary exited with {exit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_reuses_credentials_and_data() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("data");
    let mut first = Server::start_in(&dir, &[]);
    assert!(
        first.stdout[0].starts_with("kubectl --kubeconfig "),
        "{:?}",
        first.stdout
    );
    assert!(
        first.stdout[0].ends_with("admin.kubeconfig get widgets"),
        "{:?}",
        first.stdout
    );
    let ca = std::fs::read(dir.join("pki/ca.crt")).unwrap_or_default();
    let admin_cert = std::fs::read(dir.join("pki/admin.crt")).unwrap_or_default();
    let client = first.admin();
    let created = client
        .post(first.url("/api/v1/namespaces"))
        .json(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kept"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status().as_u16(), 201);
    assert!(first.terminate(Duration::from_secs(30)).success());

    let second = Server::start_in(&dir, &[]);
    assert_eq!(
        std::fs::read(dir.join("pki/ca.crt")).unwrap_or_default(),
        ca,
        "CA regenerated"
    );
    assert_eq!(
        std::fs::read(dir.join("pki/admin.crt")).unwrap_or_default(),
        admin_cert,
        "admin cert regenerated"
    );
    let client = second.admin();
    for ns in ["kept", "default", "kube-system", "kube-public"] {
        let resp = client
            .get(second.url(&format!("/api/v1/namespaces/{ns}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.status().as_u16(), 200, "namespace {ns}");
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(body["metadata"]["name"], ns);
    }
}

/// The permission bits of `path`.
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_store_and_the_keys_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fresh = tmp.path().join("fresh");
    let server = Server::start_in(&fresh, &[]);
    for (path, want) in [
        ("", 0o700),
        ("store", 0o700),
        ("store/storage.redb", 0o600),
        ("pki", 0o700),
        ("pki/ca.key", 0o600),
        ("admin.kubeconfig", 0o600),
    ] {
        assert_eq!(mode(&fresh.join(path)), want, "{path:?}");
    }
    drop(server);

    // A store directory an earlier version left open to everyone is restricted at start.
    let old = tmp.path().join("old");
    std::fs::create_dir_all(old.join("store")).unwrap_or_else(|e| panic!("{e}"));
    for dir in [&old, &old.join("store")] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let server = Server::start_in(&old, &[]);
    assert_eq!(mode(&old.join("store")), 0o700);
    assert_eq!(mode(&old.join("store/storage.redb")), 0o600);
    // The data directory itself is the operator's: left as they set it.
    assert_eq!(mode(&old), 0o755);
    drop(server);
}

/// The server raises its soft open-file limit to the hard limit, as Go's runtime does for
/// kube-apiserver: started with a soft limit of 1024 (which 10,000 connections would exhaust),
/// it runs with the hard one.
#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit
        .maximum
        .unwrap_or_else(|| panic!("no hard open-file limit"));
    assert!(
        hard > 1024,
        "the hard open-file limit {hard} leaves nothing to raise"
    );
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(1024),
            maximum: Some(hard),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start(&[]);
    setrlimit(Resource::Nofile, limit).unwrap_or_else(|e| panic!("{e}"));
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid()))
        .unwrap_or_else(|e| panic!("{e}"));
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("{limits}"));
    let values: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(values, [hard.to_string(), hard.to_string()], "{line}");
}
