//! What the admission tests share: a server with an admin client that writes
//! admissionregistration objects and waits until the watch cache has them, Widget creates, and
//! reading audit events back.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::Server;
use crate::common::send_json as send;

/// The path of admissionregistration.k8s.io/v1.
pub const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";
/// The path of admissionregistration.k8s.io/v1beta1.
pub const BETA: &str = "/apis/admissionregistration.k8s.io/v1beta1";

/// A server and its admin client.
pub struct Fixture {
    /// The server.
    pub server: Server,
    /// Its admin client.
    pub client: reqwest::Client,
}

impl Fixture {
    /// Starts a server with `args`.
    pub fn start(args: &[&str]) -> Fixture {
        let server = Server::start(args);
        let client = server.admin();
        Fixture { server, client }
    }

    /// Creates `plural/name` and waits until the watch cache has it (policies take effect
    /// once the caches have them, as in Kubernetes once the informers have them).
    pub async fn create(&self, plural: &str, body: Value) {
        self.create_in(GROUP, plural, body).await
    }

    /// [`Fixture::create`] in another version of the group.
    pub async fn create_in(&self, group: &str, plural: &str, body: Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
        let (code, resp, _) = send(
            &self.client,
            reqwest::Method::POST,
            self.server.url(&format!("{group}/{plural}")),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{resp}");
        let cached = self
            .server
            .url(&format!("{group}/{plural}/{name}?resourceVersion=0"));
        crate::common::tls::wait_until("the policy object is in the watch cache", || async {
            send(&self.client, reqwest::Method::GET, cached.clone(), None)
                .await
                .0
                == 200
        })
        .await;
    }

    /// Creates Widget `ns/name` with `replicas` replicas.
    pub async fn widget(&self, ns: &str, name: &str, replicas: i64) -> (u16, Value, Vec<String>) {
        send(
            &self.client,
            reqwest::Method::POST,
            self.server
                .url(&format!("/apis/example.dev/v1/namespaces/{ns}/widgets")),
            Some(json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                        "metadata": {"name": name}, "spec": {"replicas": replicas}})),
        )
        .await
    }
}

/// Rules matching Widget creates and updates in every version.
pub fn widget_rules() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.dev"],
                              "apiVersions": ["*"], "resources": ["widgets"]}]})
}

/// Creates `body` in the collection at `path` and waits until the watch cache has it
/// (admission extensions take effect once the caches have them, as in Kubernetes once the
/// informers have them).
pub async fn create_cached(server: &Server, client: &reqwest::Client, path: &str, body: Value) {
    let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
    let (code, resp, _) = send(client, reqwest::Method::POST, server.url(path), Some(body)).await;
    assert_eq!(code, 201, "{resp}");
    let cached = server.url(&format!("{path}/{name}?resourceVersion=0"));
    crate::common::tls::wait_until("the object is in the watch cache", || async {
        send(client, reqwest::Method::GET, cached.clone(), None)
            .await
            .0
            == 200
    })
    .await;
}

/// Server arguments logging every request at the Metadata level to `dir/audit.log`, and that
/// log's path.
pub fn audit_args(dir: &Path) -> (Vec<String>, PathBuf) {
    let policy_file = dir.join("audit-policy.yaml");
    std::fs::write(
        &policy_file,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let log = dir.join("audit.log");
    let args = vec![
        format!("--audit-policy-file={}", policy_file.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    (args, log)
}

/// The `ResponseComplete` audit events of the requests on the object named `name`, once
/// there is one (the writer thread writes them shortly after the response).
pub async fn completed_events(log: &std::path::Path, name: &str) -> Vec<Value> {
    for _ in 0..200 {
        let events: Vec<Value> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["name"] == name)
            .collect();
        if !events.is_empty() {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "no ResponseComplete event for {name} in {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}
