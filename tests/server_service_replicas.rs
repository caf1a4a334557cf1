//! Two `apiary` replicas on one etcd allocate Services' cluster IPs from one range without ever
//! giving one address twice (a full range refused with kube-apiserver's message, a deleted
//! Service's address free again on either replica), share one `kubernetes` Service, and keep
//! its Endpoints at the advertised addresses of the replicas that run (a replica that stops
//! takes itself out). Uses `tools/etcd-test-server` (fails loudly without etcd).

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{Etcd, Server, copy_dir};
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";

async fn kubernetes_endpoint_ips(client: &reqwest::Client, server: &Server) -> Vec<String> {
    let ep: Value = client
        .get(server.url("/api/v1/namespaces/default/endpoints/kubernetes"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    ep["subsets"][0]["addresses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["ip"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Polls until the `kubernetes` Endpoints of `server` hold exactly `want`.
async fn wait_endpoints(client: &reqwest::Client, server: &Server, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = kubernetes_endpoint_ips(client, server).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "kubernetes endpoints {got:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_allocate_from_one_range() {
    let etcd = Etcd::start();
    let servers = format!("--etcd-servers={}", etcd.endpoint);
    let range = "--service-cluster-ip-range=10.0.0.0/28";
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = Server::start_in(
        &tmp.path().join("a"),
        &[&servers, range, "--advertise-address=10.20.30.40"],
    );
    copy_dir(&tmp.path().join("a/pki"), &tmp.path().join("b/pki"));
    let mut b = Server::start_in(
        &tmp.path().join("b"),
        &[&servers, range, "--advertise-address=10.20.30.41"],
    );
    let (ca, cb) = (a.admin(), b.admin());

    // Both replicas' addresses are the kubernetes Service's endpoints.
    wait_endpoints(&ca, &a, &["10.20.30.40", "10.20.30.41"]).await;

    // 14 usable addresses, one the kubernetes Service's: of 20 concurrent creates through both
    // replicas, 13 succeed, each with its own address.
    let creates = (0..20).map(|i| {
        let (client, server) = if i % 2 == 0 { (&ca, &a) } else { (&cb, &b) };
        let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("s{i}")},
            "spec": {"ports": [{"port": 80}]}});
        async move {
            let r = client.post(server.url(SERVICES)).json(&body).send().await.unwrap_or_else(|e| panic!("{e}"));
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    });
    let results = futures::future::join_all(creates).await;
    let mut ips = HashSet::new();
    let mut refused = 0;
    for (status, body) in &results {
        match status {
            201 => {
                let ip = body["spec"]["clusterIP"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                assert_ne!(ip, "10.0.0.1", "the kubernetes Service's address");
                assert!(ips.insert(ip.clone()), "{ip} given twice");
            }
            500 => {
                assert_eq!(
                    body["message"],
                    "Internal error occurred: failed to allocate a serviceIP: range is full"
                );
                refused += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((ips.len(), refused), (13, 7), "{results:?}");

    // A Service deleted through one replica frees its address for the other.
    let s0: Value = ca
        .get(a.url(&format!("{SERVICES}/s0")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let freed = s0["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        cb.delete(b.url(&format!("{SERVICES}/s0")))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let again = ca
        .post(a.url(SERVICES))
        .json(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "again"}, "spec": {"ports": [{"port": 80}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 201);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["spec"]["clusterIP"], json!(freed));

    // One kubernetes Service for both.
    let list: Value = cb
        .get(b.url(&format!("{SERVICES}?labelSelector=provider=kubernetes")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["items"][0]["spec"]["clusterIP"], "10.0.0.1");

    // The replica that stops takes itself out of the endpoints.
    b.terminate(Duration::from_secs(60));
    wait_endpoints(&ca, &a, &["10.20.30.40"]).await;
}
