//! The default RBAC policy against the real binary: bootstrap roles and bindings exist, are
//! reconciled at every start (unless `autoupdate` is `false`) and aggregate labelled roles;
//! access reviews are answered by RBAC; `--authorization-mode` orders the authorizers after
//! `system:masters` and refuses unknown modes with kube-apiserver's words.

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

#[test]
fn bootstrap_roles_exist_and_aggregate_new_labelled_roles() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    let names = k.ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:aggregate-to-view",
    ] {
        assert!(
            names.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")),
            "{role} in\n{names}"
        );
    }
    let crb = k.json(&[
        "get",
        "clusterrolebinding",
        "system:public-info-viewer",
        "-o",
        "json",
    ]);
    assert_eq!(
        crb["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}
        ])
    );
    assert_eq!(
        crb["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    let admin = k.json(&["get", "clusterrole", "admin", "-o", "json"]);
    assert_eq!(
        admin["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]})
    );
    assert_eq!(
        admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );

    k.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: widgets-view\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-view: \"true\"\nrules:\n- apiGroups: [example.dev]\n  resources: [widgets]\n  verbs: [get, list, watch]\n",
    );
    let want = json!({"apiGroups": ["example.dev"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]});
    for role in ["view", "edit", "admin"] {
        let mut found = false;
        for _ in 0..150 {
            let r = k.json(&["get", "clusterrole", role, "-o", "json"]);
            if r["rules"]
                .as_array()
                .is_some_and(|rules| rules.contains(&want))
            {
                found = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(found, "{role} aggregates widgets-view");
    }
    k.ok(&["create", "namespace", "agg"]);
    k.ok(&[
        "create",
        "rolebinding",
        "carol-view",
        "--clusterrole=view",
        "--user=carol",
        "-n",
        "agg",
    ]);
    let carol = k.with_kubeconfig(&server.user_kubeconfig("carol", ""));
    assert_eq!(
        carol.until(
            &["auth", "can-i", "list", "widgets.example.dev", "-n", "agg"],
            "yes"
        ),
        "yes"
    );
    assert!(carol.run(&["get", "widgets", "-n", "agg"]).success());
    assert_eq!(
        carol
            .run(&["auth", "can-i", "get", "secrets", "-n", "agg"])
            .stdout
            .trim(),
        "no"
    );
    // Removing the label takes the rules away again.
    k.ok(&[
        "label",
        "clusterrole",
        "widgets-view",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ]);
    assert_eq!(
        carol.until(
            &["auth", "can-i", "list", "widgets.example.dev", "-n", "agg"],
            "no"
        ),
        "no"
    );
}

#[tokio::test]
async fn access_reviews_are_answered_by_rbac() {
    let server = Server::start(&[]);
    let admin = server.admin();
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    k.ok(&["create", "namespace", "rev"]);
    k.ok(&[
        "create",
        "rolebinding",
        "dave-edit",
        "--clusterrole=edit",
        "--user=dave",
        "-n",
        "rev",
    ]);
    let sar = |verb: &str, resource: &str, ns: &str| {
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "dave", "groups": ["system:authenticated"],
                     "resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns}}
        })
    };
    let url = server.url("/apis/authorization.k8s.io/v1/subjectaccessreviews");
    let mut last = Value::Null;
    for _ in 0..100 {
        last = status_of(
            admin
                .post(&url)
                .json(&sar("create", "secrets", "rev"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await
        .1;
        if last["status"]["allowed"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        last["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"dave-edit/rev\" of ClusterRole \"edit\" to User \"dave\""})
    );
    let (_, denied) = status_of(
        admin
            .post(&url)
            .json(&sar("create", "roles", "rev"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(denied["status"], json!({"allowed": false}));

    let (cert, key) = server.user_cert("dave", "");
    let dave = server.with_identity(&cert, &key);
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "rev"}});
    let (code, body) = status_of(
        dave.post(server.url("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"))
            .json(&rules)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["incomplete"], false);
    let resource_rules = body["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        resource_rules.iter().any(|r| r["resources"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("secrets")))
            && r["verbs"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("create")))),
        "{body}"
    );
    let no_ns = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}});
    let (code, body) = status_of(
        dave.post(server.url("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"))
            .json(&no_ns)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(body["message"], "no namespace on request");

    // A LocalSubjectAccessReview is answered in its URL's namespace; a body naming another
    // namespace is refused, as for every namespaced create.
    let local = |ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
               "metadata": {"namespace": ns},
               "spec": {"user": "dave", "resourceAttributes": {"verb": "create", "resource": "secrets", "namespace": "rev"}}})
    };
    let local_url =
        server.url("/apis/authorization.k8s.io/v1/namespaces/rev/localsubjectaccessreviews");
    let post = |body: Value| {
        let (admin, url) = (admin.clone(), local_url.clone());
        async move {
            status_of(
                admin
                    .post(&url)
                    .json(&body)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}")),
            )
            .await
        }
    };
    let (code, body) = post(local("rev")).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert_eq!(body["metadata"]["namespace"], "rev", "{body}");
    let (code, body) = post(local("other")).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[tokio::test]
async fn authorization_modes() {
    let deny = Server::start(&["--authorization-mode=AlwaysDeny"]);
    let (code, body) = status_of(
        deny.anonymous()
            .get(deny.url("/healthz"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/healthz\": Everything is forbidden."
    );
    let (code, _) = status_of(
        deny.admin()
            .get(deny.url("/api"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 200, "system:masters is allowed before the modes");
    drop(deny);

    let allow = Server::start(&["--authorization-mode=AlwaysDeny,AlwaysAllow"]);
    let (code, _) = status_of(
        allow
            .anonymous()
            .get(allow.url("/api/v1/namespaces/default/configmaps"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 200);
    drop(allow);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiary"))
        .args([
            "--data-dir",
            "/nonexistent-apiary-dir",
            "--authorization-mode=RBAC,Foo,RBAC",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("authorization-mode \"Foo\" is not a valid mode"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "authorization-mode [\"RBAC\" \"Foo\" \"RBAC\"] has mode specified more than once"
        ),
        "{stderr}"
    );
}

#[test]
fn bootstrap_reconciles_on_restart_unless_autoupdate_is_false() {
    let mut server = Server::start(&[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    let empty = r#"[{"op":"replace","path":"/rules","value":[]}]"#;
    k.ok(&[
        "patch",
        "clusterrole",
        "system:basic-user",
        "--type=json",
        "-p",
        empty,
    ]);
    k.ok(&[
        "patch",
        "clusterrole",
        "system:monitoring",
        "--type=json",
        "-p",
        empty,
    ]);
    k.ok(&[
        "annotate",
        "--overwrite",
        "clusterrole",
        "system:monitoring",
        "rbac.authorization.kubernetes.io/autoupdate=false",
    ]);
    k.ok(&[
        "patch",
        "clusterrolebinding",
        "system:discovery",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/subjects","value":[]}]"#,
    ]);
    server.terminate(Duration::from_secs(30));
    let dir = server.data_dir.clone();
    let server = Server::start_in(&dir, &[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);
    let basic = k.json(&["get", "clusterrole", "system:basic-user", "-o", "json"]);
    assert!(
        !basic["rules"].as_array().is_none_or(Vec::is_empty),
        "{basic}"
    );
    let monitoring = k.json(&["get", "clusterrole", "system:monitoring", "-o", "json"]);
    assert_eq!(monitoring["rules"], json!([]));
    let discovery = k.json(&[
        "get",
        "clusterrolebinding",
        "system:discovery",
        "-o",
        "json",
    ]);
    assert_eq!(discovery["subjects"][0]["name"], "system:authenticated");
}
