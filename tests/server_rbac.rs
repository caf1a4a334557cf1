//! RBAC against the real binary: users from client certificates of the server's CA, driven by
//! kubectl (the one on PATH, 1.27 and 1.33) and reqwest. Bindings grant exactly their rules,
//! `kubectl auth can-i` (and `--list`) answer what the server then does, escalation is refused
//! unless the user holds the rules or may `escalate`/`bind`, `roleRef` never changes, and a
//! cluster-scoped kind has no namespaced URL. The default policy: `server_rbac_policy.rs`.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::time::Duration;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl};
use serde_json::{Value, json};

fn forbidden_list(user: &str, resource: &str, ns: &str) -> String {
    format!(
        "{resource} is forbidden: User \"{user}\" cannot list resource \"{resource}\" in API group \"\" in the namespace \"{ns}\""
    )
}

#[test]
fn bindings_grant_exactly_their_rules_and_can_i_agrees() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("grants");
        let user = format!("alice-{}", k.label);
        k.ok(&["create", "namespace", &ns]);
        k.ok(&[
            "create",
            "configmap",
            "cm1",
            "-n",
            &ns,
            "--from-literal=a=b",
        ]);
        let alice = k.with_kubeconfig(&server.user_kubeconfig(&user, ""));

        let run = alice.run(&["get", "configmaps", "-n", &ns]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "no binding",
            &run.stderr,
            &forbidden_list(&user, "configmaps", &ns),
        );
        c.eq(
            "can-i before",
            alice
                .run(&["auth", "can-i", "list", "configmaps", "-n", &ns])
                .stdout
                .trim(),
            "no",
        );

        k.ok(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=configmaps",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "rolebinding",
            "read",
            "--role=reader",
            &format!("--user={user}"),
            "-n",
            &ns,
        ]);
        c.eq(
            "can-i list after the binding",
            alice
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        let out = c
            .run_ok(&alice, &["get", "configmaps", "-n", &ns, "-o", "name"])
            .stdout;
        c.contains("list allowed", &out, "configmap/cm1");
        c.run_ok(&alice, &["get", "configmap", "cm1", "-n", &ns]);

        for (verb, resource, where_) in [
            ("create", "configmaps", ns.as_str()),
            ("list", "configmaps", "default"),
            ("list", "secrets", ns.as_str()),
            ("delete", "configmaps", ns.as_str()),
        ] {
            c.eq(
                &format!("can-i {verb} {resource} -n {where_}"),
                alice
                    .run(&["auth", "can-i", verb, resource, "-n", where_])
                    .stdout
                    .trim(),
                "no",
            );
        }
        let run = alice.run(&["create", "configmap", "cm2", "-n", &ns]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "create refused",
            &run.stderr,
            &format!("configmaps is forbidden: User \"{user}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"{ns}\""),
        );
        let run = alice.run(&["get", "configmaps", "-n", "default"]);
        c.contains(
            "other namespace",
            &run.stderr,
            &forbidden_list(&user, "configmaps", "default"),
        );

        let list = c
            .run_ok(&alice, &["auth", "can-i", "--list", "-n", &ns])
            .stdout;
        let configmaps = list
            .lines()
            .find(|l| l.starts_with("configmaps "))
            .unwrap_or_default()
            .to_string();
        c.contains("can-i --list configmaps row", &configmaps, "[get list]");
        c.contains(
            "can-i --list basic user",
            &list,
            "selfsubjectaccessreviews.authorization.k8s.io",
        );
        c.contains("can-i --list discovery", &list, "/api/*");
        let other = c
            .run_ok(&alice, &["auth", "can-i", "--list", "-n", "default"])
            .stdout;
        c.check(!other.lines().any(|l| l.starts_with("configmaps ")), || {
            format!("configmaps listed in default:\n{other}")
        });

        // A service account subject (no namespace: the binding's) is the user
        // `system:serviceaccount:<ns>:<name>`, whatever authenticated it.
        k.ok(&[
            "create",
            "rolebinding",
            "robot",
            "--clusterrole=view",
            &format!("--serviceaccount={ns}:robot"),
            "-n",
            &ns,
        ]);
        let robot = k.with_kubeconfig(
            &server.user_kubeconfig(&format!("system:serviceaccount:{ns}:robot"), ""),
        );
        c.eq(
            "service account subject",
            robot
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        c.eq(
            "service account of another namespace",
            k.with_kubeconfig(&server.user_kubeconfig(
                &format!("system:serviceaccount:default:robot-{}", k.label),
                "",
            ))
            .run(&["auth", "can-i", "list", "configmaps", "-n", &ns])
            .stdout
            .trim(),
            "no",
        );

        // Deleting the binding takes the grant away.
        k.ok(&["delete", "rolebinding", "read", "-n", &ns]);
        c.eq(
            "can-i after the binding is gone",
            alice
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "no")
                .as_str(),
            "no",
        );
        let run = alice.run(&["get", "configmaps", "-n", &ns]);
        c.contains(
            "revoked",
            &run.stderr,
            &forbidden_list(&user, "configmaps", &ns),
        );
    });
}

#[test]
fn escalation_needs_the_rules_or_escalate_and_bind() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("esc");
        let user = format!("eve-{}", k.label);
        k.ok(&["create", "namespace", &ns]);
        k.ok(&[
            "create",
            "role",
            "rbac-writer",
            "--verb=get,list,create,update,patch",
            "--resource=roles,rolebindings",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "role",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            &ns,
        ]);
        for role in ["rbac-writer", "cm-reader"] {
            k.ok(&[
                "create",
                "rolebinding",
                role,
                &format!("--role={role}"),
                &format!("--user={user}"),
                "-n",
                &ns,
            ]);
        }
        let eve = k.with_kubeconfig(&server.user_kubeconfig(&user, "devs"));
        c.eq(
            "eve may create roles",
            eve.until(&["auth", "can-i", "get", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );

        let run = eve.run(&[
            "create",
            "role",
            "big",
            "--verb=get,list",
            "--resource=secrets",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "role escalation refused",
            &run.stderr,
            &format!(
                "roles.rbac.authorization.k8s.io \"big\" is forbidden: user \"{user}\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}}"
            ),
        );
        // Every way of writing is checked: server-side apply creating the role, and an update
        // of a role eve may hold.
        let manifest = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: applied\n  namespace: {ns}\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [delete]\n"
        );
        let run = eve.run_with(&["apply", "--server-side", "-f", "-"], &[], &manifest);
        c.check(!run.success(), || run.describe());
        c.contains(
            "server-side apply escalation refused",
            &run.stderr,
            "is attempting to grant RBAC permissions not currently held",
        );
        let run = eve.run(&[
            "patch",
            "role",
            "cm-reader",
            "-n",
            &ns,
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "patch escalation refused",
            &run.stderr,
            "{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}",
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "role",
                "small",
                "--verb=get",
                "--resource=configmaps",
                "-n",
                &ns,
            ],
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "rolebinding",
                "small",
                "--role=small",
                "--user=bob",
                "-n",
                &ns,
            ],
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "bob-view",
            "--clusterrole=view",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "binding escalation refused",
            &run.stderr,
            "rolebindings.rbac.authorization.k8s.io \"bob-view\" is forbidden: user",
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "ghost",
            "--role=missing",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.contains(
            "binding to a missing role",
            &run.stderr,
            "roles.rbac.authorization.k8s.io \"missing\" not found",
        );

        k.ok(&[
            "create",
            "role",
            "escalator",
            "--verb=escalate",
            "--resource=roles",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "role",
            "view-binder",
            "--verb=bind",
            "--resource=clusterroles.rbac.authorization.k8s.io",
            "--resource-name=view",
            "-n",
            &ns,
        ]);
        for role in ["escalator", "view-binder"] {
            k.ok(&[
                "create",
                "rolebinding",
                role,
                &format!("--role={role}"),
                &format!("--user={user}"),
                "-n",
                &ns,
            ]);
        }
        c.eq(
            "eve may escalate",
            eve.until(&["auth", "can-i", "escalate", "roles", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        eve.until(
            &["auth", "can-i", "bind", "clusterroles/view", "-n", &ns],
            "yes",
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "role",
                "big",
                "--verb=get,list",
                "--resource=secrets",
                "-n",
                &ns,
            ],
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "rolebinding",
                "bob-view",
                "--clusterrole=view",
                "--user=bob",
                "-n",
                &ns,
            ],
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "bob-edit",
            "--clusterrole=edit",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "bind is per name",
            &run.stderr,
            "is attempting to grant RBAC permissions not currently held",
        );

        let run = k.run(&[
            "patch",
            "rolebinding",
            "small",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"big"}}"#,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains("roleRef immutable", &run.stderr, "cannot change roleRef");
    });
}

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
