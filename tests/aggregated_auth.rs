//! An apiary-built server as an aggregated API server, against the real binaries: the main
//! `apiary` server and the wardle example (`examples/wardle`) started with the delegation flags
//! only (`--authentication-kubeconfig`, `--authorization-kubeconfig`: no request-header or
//! client CA flag, so it reads both from main's `kube-system/extension-apiserver-authentication`
//! ConfigMap). The test plays the front proxy with the front-proxy client certificate from
//! main's data directory, as the aggregator does.
//!
//! - main publishes the ConfigMap (kube's keys, JSON lists) and the bootstrap roles aggregated
//!   servers are bound to (`system:auth-delegator`, `extension-apiserver-authentication-reader`);
//! - a user RBAC in main allows may create flunders through the front proxy; a second user is
//!   refused with kube's 403 message (the decision is main's, through a SubjectAccessReview);
//! - the user's name, groups and extra reach wardle (its audit log) and main accepts the front
//!   proxy too (`SelfSubjectReview`);
//! - `X-Remote-*` headers from a client without the front-proxy certificate are ignored (it is
//!   anonymous, or the user of its own certificate from main's client CA);
//! - a client certificate not signed by a CA wardle trusts is refused (401);
//! - a ServiceAccount token of main is authenticated through a TokenReview;
//! - the always-allowed paths answer anonymous requests without asking main;
//! - a request-header CA rotated in the ConfigMap takes effect in wardle, and main sets its
//!   ConfigMap right again.

mod common;
#[path = "common/crates.rs"]
mod crates;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Server;
use common::tls::TestCa;
use serde_json::{Value, json};

/// Runs kubectl against `kubeconfig` with `stdin`; panics unless it succeeds.
fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("kubectl: {e}"));
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.as_bytes())
            .unwrap_or_else(|e| panic!("kubectl stdin: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("kubectl: {e}"));
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// RBAC in main: wardle's own identity may delegate (the roles kube documents for aggregated
/// servers); `jane` may do anything to flunders in `default`; the ServiceAccount
/// `default/reader` may read them; `bob` nothing.
const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "wardle:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: wardle-apiserver}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: wardle-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: wardle-apiserver}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flunder-editor}
rules: [{apiGroups: [wardle.example.com], resources: [flunders], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flunder-reader}
rules: [{apiGroups: [wardle.example.com], resources: [flunders], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: jane-flunders, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: flunder-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-flunders, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: flunder-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: default}]
"#;

fn flunder(name: &str) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {}
    })
}

const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

/// A client of `wardle` presenting the PEM identity `cert` + `key`.
fn client_with(wardle: &Server, cert: &str, key: &str) -> reqwest::Client {
    wardle.with_identity(cert, key)
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("request: {e}"));
    let code = response.status().as_u16();
    let body = response.bytes().await.unwrap_or_default();
    (code, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Lines of the audit log at `path` that parse, once at least one matches `want`.
fn audit_event(path: &Path, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(event) = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| want(e))
        {
            return event;
        }
        assert!(Instant::now() < deadline, "no such audit event in:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wardle_behind_a_front_proxy_delegates_to_main() {
    crates::build(&crates::repo_root().join("examples/wardle"));
    let main = Server::start(&[]);
    let admin = main.kubeconfig();

    // The ConfigMap and the bootstrap roles.
    let configmap: Value = serde_json::from_str(&kubectl(
        &admin,
        &[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "extension-apiserver-authentication",
            "-o",
            "json",
        ],
        "",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let data = &configmap["data"];
    let pki = main.data_dir.join("pki");
    let read = |name: &str| {
        std::fs::read_to_string(pki.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert_eq!(data["client-ca-file"], read("ca.crt"));
    assert_eq!(
        data["requestheader-client-ca-file"],
        read("front-proxy-ca.crt")
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    assert_eq!(
        data["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        "[\"X-Remote-Extra-\"]"
    );
    let delegator: Value = serde_json::from_str(&kubectl(
        &admin,
        &["get", "clusterrole", "system:auth-delegator", "-o", "json"],
        "",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        delegator["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        ])
    );
    assert_eq!(
        delegator["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    kubectl(&admin, &["apply", "-f", "-"], RBAC);
    let token = kubectl(&admin, &["create", "token", "reader", "-n", "default"], "")
        .trim()
        .to_string();

    // wardle, with its identity in main (a certificate of main's CA) and the delegation flags.
    let wardle_kubeconfig = main.user_kubeconfig("wardle-apiserver", "");
    let kc = wardle_kubeconfig.display().to_string();
    let audit_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = audit_dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let audit_log = audit_dir.path().join("audit.log");
    let wardle = Server::start_binary(
        &crates::binary("wardle-apiserver"),
        &[
            &format!("--authentication-kubeconfig={kc}"),
            &format!("--authorization-kubeconfig={kc}"),
            &format!("--audit-policy-file={}", policy.display()),
            &format!("--audit-log-path={}", audit_log.display()),
        ],
    );
    let proxy = client_with(
        &wardle,
        &read("front-proxy-client.crt"),
        &read("front-proxy-client.key"),
    );

    // A user RBAC allows, through the front proxy, with groups and extra.
    let (code, body) = send(
        proxy
            .post(wardle.url(FLUNDERS))
            .header("X-Remote-User", "jane")
            .header("X-Remote-Group", "devs")
            .header("X-Remote-Group", "ops")
            .header("X-Remote-Extra-Scopes", "read")
            .header("X-Remote-Extra-Example.com%2fTeam", "blue")
            .json(&flunder("by-jane")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let event = audit_event(&audit_log, |e| {
        e["verb"] == "create" && e["objectRef"]["name"] == "by-jane"
    });
    assert_eq!(
        event["user"],
        json!({"username": "jane", "groups": ["devs", "ops", "system:authenticated"],
               "extra": {"scopes": ["read"], "example.com/team": ["blue"]}})
    );
    // The identity headers do not reach the handler: managedFields name jane's request only
    // by its manager, and the flunder is there.
    let (code, _) = send(
        proxy
            .get(wardle.url(&format!("{FLUNDERS}/by-jane")))
            .header("X-Remote-User", "jane"),
    )
    .await;
    assert_eq!(code, 200);

    // A second user, refused by main's RBAC with kube's message.
    let (code, body) = send(
        proxy
            .post(wardle.url(FLUNDERS))
            .header("X-Remote-User", "bob")
            .json(&flunder("by-bob")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "flunders.wardle.example.com is forbidden: User \"bob\" cannot create resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
        ),
        "{message}"
    );
    assert_eq!(body["reason"], "Forbidden");

    // Main accepts its front proxy too.
    let main_proxy = main.with_identity(
        &read("front-proxy-client.crt"),
        &read("front-proxy-client.key"),
    );
    let (code, review) = send(
        main_proxy
            .post(main.url("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
            .header("X-Remote-User", "jane")
            .header("X-Remote-Group", "devs")
            .header("X-Remote-Extra-Scopes", "read")
            .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "system:authenticated"], "extra": {"scopes": ["read"]}})
    );

    // Forged headers from a client without the front-proxy certificate are ignored: it is
    // anonymous, or the user of its own certificate (main's client CA, from the ConfigMap).
    let (code, body) = send(
        wardle
            .anonymous()
            .get(wardle.url(FLUNDERS))
            .header("X-Remote-User", "jane")
            .header("X-Remote-Group", "system:masters"),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("User \"system:anonymous\" cannot list resource \"flunders\""),
        "{body}"
    );
    let (cert, key) = main.user_cert("mallory", "");
    let (code, body) = send(
        client_with(&wardle, &cert, &key)
            .get(wardle.url(FLUNDERS))
            .header("X-Remote-User", "jane"),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("User \"mallory\" cannot list resource \"flunders\""),
        "{body}"
    );

    // A client certificate signed by no CA wardle trusts, even named as the front proxy.
    let (cert, key) = TestCa::new("evil-ca").leaf("front-proxy-client", None, &[]);
    let (code, body) = send(
        client_with(&wardle, &cert, &key)
            .get(wardle.url(FLUNDERS))
            .header("X-Remote-User", "jane"),
    )
    .await;
    assert_eq!(code, 401, "{body}");

    // A ServiceAccount token of main, authenticated by a TokenReview, authorized by main.
    let (code, body) = send(
        wardle
            .anonymous()
            .get(wardle.url(FLUNDERS))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["items"][0]["metadata"]["name"], "by-jane");
    let (code, body) = send(
        wardle
            .anonymous()
            .post(wardle.url(FLUNDERS))
            .bearer_auth(&token)
            .json(&flunder("by-reader")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap_or_default().contains(
            "User \"system:serviceaccount:default:reader\" cannot create resource \"flunders\""
        ),
        "{body}"
    );
    let (code, _) = send(
        wardle
            .anonymous()
            .get(wardle.url(FLUNDERS))
            .bearer_auth("not-a-token"),
    )
    .await;
    assert_eq!(code, 401);

    // The always-allowed paths; other paths are main's to decide (anonymous may not).
    for path in ["/healthz", "/readyz", "/livez"] {
        let (code, _) = send(wardle.anonymous().get(wardle.url(path))).await;
        assert_eq!(code, 200, "{path}");
    }
    let (code, _) = send(wardle.anonymous().get(wardle.url("/metrics"))).await;
    assert_eq!(code, 403);

    // A request-header CA rotated in the ConfigMap takes effect in wardle (it watches the
    // ConfigMap), and main sets its ConfigMap right again (then the old proxy works again).
    let rotated = TestCa::new("rotated-front-proxy-ca");
    let (cert, key) = rotated.leaf("front-proxy-client", None, &[]);
    let new_proxy = client_with(&wardle, &cert, &key);
    let patch = json!({"data": {"requestheader-client-ca-file": rotated.pem}}).to_string();
    let as_jane = |client: &reqwest::Client| {
        client
            .get(wardle.url(FLUNDERS))
            .header("X-Remote-User", "jane")
    };
    let mut took_effect = false;
    // Main may set the ConfigMap back before the check sees the rotation: patch again.
    for _ in 0..5 {
        kubectl(
            &admin,
            &[
                "patch",
                "configmap",
                "-n",
                "kube-system",
                "extension-apiserver-authentication",
                "--type=merge",
                "-p",
                &patch,
            ],
            "",
        );
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if send(as_jane(&new_proxy)).await.0 == 200 {
                took_effect = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if took_effect {
            break;
        }
    }
    assert!(
        took_effect,
        "the rotated request-header CA never took effect"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (old, new) = (
            send(as_jane(&proxy)).await.0,
            send(as_jane(&new_proxy)).await.0,
        );
        if (old, new) == (200, 401) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "main did not restore its ConfigMap: old proxy {old}, new proxy {new}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
