//! Paths against the real binary: what a request is authorized for is all its path can reach.
//! A cluster-scoped kind has no namespaced URL; a watch of one named object shows no other,
//! whatever its field selector says; an object's path takes no POST (a `create` grant on one
//! name creates nothing else) and a `/watch/` path is only read, as kube-apiserver's router
//! answers.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::time::Duration;

use common::Server;
use kubectl::Kubectl;
use serde_json::{Value, json};

async fn status_of(resp: reqwest::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    (code, resp.json::<Value>().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn cluster_scoped_kinds_have_no_namespaced_urls() {
    let server = Server::start(&[]);
    let admin = server.admin();
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    k.ok(&["create", "namespace", "mine"]);
    k.ok(&[
        "create",
        "role",
        "all",
        "--verb=*",
        "--resource=*.*",
        "-n",
        "mine",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "all",
        "--role=all",
        "--user=mallory",
        "-n",
        "mine",
    ]);
    let (cert, key) = server.user_cert("mallory", "");
    let mallory = server.with_identity(&cert, &key);
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "sneaky"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    });
    let namespaced = server.url("/apis/rbac.authorization.k8s.io/v1/namespaces/mine/clusterroles");
    let mut last = (0, Value::Null);
    for _ in 0..100 {
        last = status_of(
            mallory
                .get(server.url("/api/v1/namespaces/mine/configmaps"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 200, "the role binding applies: {}", last.1);
    let (code, body) = status_of(
        mallory
            .post(&namespaced)
            .json(&role)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["reason"], "NotFound");
    let (code, _) = status_of(
        mallory
            .get(format!("{namespaced}/cluster-admin"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 404);
    let (code, _) = status_of(
        admin
            .get(format!("{namespaced}/cluster-admin"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 404);
    let (code, body) = status_of(
        mallory
            .post(server.url("/apis/rbac.authorization.k8s.io/v1/clusterroles"))
            .json(&role)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "clusterroles.rbac.authorization.k8s.io is forbidden: User \"mallory\" cannot create resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\" at the cluster scope"
    );
    // The namespace object and its subresources keep their cluster-scoped paths.
    let (code, _) = status_of(
        admin
            .get(server.url("/api/v1/namespaces/mine"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = status_of(
        admin
            .get(server.url("/api/v1/namespaces/mine/namespaces/mine"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 404);
}

/// Watches `path` as `client` for at most a second: the status and the body.
async fn watch_briefly(client: &reqwest::Client, server: &Server, path: &str) -> (u16, String) {
    let resp = client
        .get(server.url(path))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let code = resp.status().as_u16();
    (code, resp.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_watch_of_one_named_object_shows_no_other() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    k.ok(&["create", "namespace", "vault"]);
    for (name, value) in [("mine", "open"), ("theirs", "TOPSECRET")] {
        k.ok(&[
            "create",
            "secret",
            "generic",
            name,
            "-n",
            "vault",
            &format!("--from-literal=v={value}"),
        ]);
    }
    k.ok(&[
        "create",
        "role",
        "one",
        "--verb=get,list,watch",
        "--resource=secrets",
        "--resource-name=mine",
        "-n",
        "vault",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "one",
        "--role=one",
        "--user=eve",
        "-n",
        "vault",
    ]);
    k.ok(&[
        "create",
        "clusterrole",
        "one-ns",
        "--verb=get,watch",
        "--resource=namespaces",
        "--resource-name=vault",
    ]);
    k.ok(&[
        "create",
        "clusterrolebinding",
        "one-ns",
        "--clusterrole=one-ns",
        "--user=eve",
    ]);
    let (cert, key) = server.user_cert("eve", "");
    let eve = server.with_identity(&cert, &key);
    let own = "/api/v1/watch/namespaces/vault/secrets/mine?timeoutSeconds=1";
    let mut last = (0, String::new());
    for _ in 0..100 {
        last = watch_briefly(&eve, &server, own).await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 200, "the role binding applies: {}", last.1);
    assert!(last.1.contains("\"name\":\"mine\""), "{}", last.1);
    assert!(!last.1.contains("theirs"), "{}", last.1);

    // A field selector naming another object than the path's is refused, as kube-apiserver does.
    for path in [
        "/api/v1/watch/namespaces/vault/secrets/mine?timeoutSeconds=1&fieldSelector=metadata.name%3Dtheirs",
        "/api/v1/watch/namespaces/vault/secrets/mine?timeoutSeconds=1&fieldSelector=metadata.name%3D%3Dtheirs",
        "/api/v1/watch/namespaces/vault?timeoutSeconds=1&fieldSelector=metadata.name%3Dkube-system",
    ] {
        let (code, body) = watch_briefly(&eve, &server, path).await;
        assert_eq!(code, 400, "{path}: {body}");
        assert!(
            !body.contains("TOPSECRET") && !body.contains("\"kube-system\""),
            "{path}: {body}"
        );
        let status: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        assert_eq!(status["reason"], "BadRequest", "{path}: {body}");
        assert_eq!(
            status["message"],
            "fieldSelector metadata.name doesn't match requested name"
        );
    }
    // A GET of the named object with `watch=1` is a get, as in kube-apiserver: the object
    // itself, whatever the selector says.
    let (code, body) = watch_briefly(
        &eve,
        &server,
        "/api/v1/namespaces/vault/secrets/mine?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dtheirs",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"name\":\"mine\"") && !body.contains("TOPSECRET"),
        "{body}"
    );
    // A selector that only narrows the path's name keeps to it.
    let (code, body) = watch_briefly(
        &eve,
        &server,
        "/api/v1/watch/namespaces/vault/secrets/mine?timeoutSeconds=1&fieldSelector=metadata.name%3Dmine,metadata.name!%3Dtheirs",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"name\":\"mine\"") && !body.contains("TOPSECRET"),
        "{body}"
    );
    // The collection's watch with the other name is authorized for that name, and refused.
    let (code, body) = watch_briefly(
        &eve,
        &server,
        "/api/v1/namespaces/vault/secrets?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dtheirs",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(!body.contains("TOPSECRET"), "{body}");
}

#[tokio::test]
async fn an_object_path_takes_no_post_and_a_watch_path_is_only_read() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    k.ok(&["create", "namespace", "team"]);
    k.ok(&["create", "serviceaccount", "robot", "-n", "team"]);
    k.ok(&[
        "create",
        "role",
        "one",
        "--verb=get,create,patch",
        "--resource=configmaps",
        "--resource-name=allowed",
        "-n",
        "team",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "one",
        "--role=one",
        "--user=alice",
        "-n",
        "team",
    ]);
    let (cert, key) = server.user_cert("alice", "");
    let alice = server.with_identity(&cert, &key);
    let admin = server.admin();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "evil"}});
    // Authorized as `create` of "allowed", then refused by the router, as kube-apiserver does:
    // the grant on one name creates nothing else.
    let item = server.url("/api/v1/namespaces/team/configmaps/allowed");
    let mut last = (0, Value::Null);
    for _ in 0..100 {
        last = status_of(
            alice
                .post(&item)
                .json(&body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        if last.0 != 403 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 405, "{}", last.1);
    assert_eq!(last.1["reason"], "MethodNotAllowed");
    assert_eq!(
        last.1["message"],
        "the server does not allow this method on the requested resource"
    );
    for client in [&alice, &admin] {
        let (code, body) = status_of(
            client
                .post(&item)
                .json(&body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        assert_eq!(code, 405, "{body}");
    }
    let (code, _) = status_of(
        admin
            .get(server.url("/api/v1/namespaces/team/configmaps/evil"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 404, "nothing was created");
    // A namespace path is an object path too.
    let (code, body) = status_of(
        admin
            .post(server.url("/api/v1/namespaces/team"))
            .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 405, "{body}");
    // Watch paths answer only GET.
    for method in [
        reqwest::Method::POST,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let (code, body) = status_of(
            admin
                .request(
                    method.clone(),
                    server.url("/api/v1/watch/namespaces/team/configmaps?timeoutSeconds=1"),
                )
                .json(&body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        assert_eq!(code, 405, "{method}: {body}");
    }
    // A collection takes no PUT or PATCH.
    for (method, media) in [
        (reqwest::Method::PUT, "application/json"),
        (reqwest::Method::PATCH, "application/merge-patch+json"),
    ] {
        let (code, body) = status_of(
            admin
                .request(
                    method.clone(),
                    server.url("/api/v1/namespaces/team/configmaps"),
                )
                .header("content-type", media)
                .body("{}")
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        assert_eq!(code, 405, "{method}: {body}");
    }
    // The collection still creates, and subresources still take POST.
    let (code, body) = status_of(
        admin
            .post(server.url("/api/v1/namespaces/team/configmaps"))
            .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = status_of(
        admin
            .post(server.url("/api/v1/namespaces/team/serviceaccounts/robot/token"))
            .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}
