//! Kubernetes' aggregator scenario (its e2e "should be able to support the sample API server")
//! replayed with apiary on both sides: the wardle example (`examples/wardle`) runs as an
//! aggregated API server (only the delegation flags, a serving certificate for its Service's
//! name), registered behind the main `apiary` server by an ExternalName Service and APIServices
//! with `groupPriorityMinimum` 2000 and `versionPriority` 200 and its CA as `caBundle`, with the
//! RBAC kube documents for delegated authentication and authorization; then driven with kubectl
//! through the aggregator:
//!
//! - the APIService turns `Available` (`Passed`), wardle's group is in discovery (legacy and
//!   aggregated) and OpenAPI, `kubectl api-resources` and `kubectl explain` show it;
//! - CRUD and a watch of flunders through the aggregator, in both versions;
//! - main's RBAC decides what a second user may do (403 with kube's message), and the user's
//!   identity reaches wardle (its managedFields manager and the audit of who created what);
//! - a client's forged `X-Remote-User` is not trusted (it stays anonymous);
//! - wardle stopped: 503, `Available=False` with kube's reason, the rest of discovery whole;
//!   started again: available again, its objects still there;
//! - the APIServices deleted: the group is gone from discovery and OpenAPI.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use common::Server;
use common::tls::TestCa;
use kubectl::Kubectl;
use serde_json::Value;

/// RBAC in main: wardle's identity may delegate (kube's roles for aggregated servers); `jane`
/// may do anything to flunders; `bob` may only read them.
const RBAC: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: wardle-system}
---
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
metadata: {name: wardler}
rules:
- {apiGroups: [wardle.example.com], resources: [flunders, fischers], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: jane-wardler}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wardler}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flunder-reader}
rules:
- {apiGroups: [wardle.example.com], resources: [flunders], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-reads-flunders}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: flunder-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

fn service(port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: api, namespace: wardle-system}}\nspec:\n  type: ExternalName\n  externalName: localhost\n  ports: [{{name: https, port: {port}}}]\n"
    )
}

/// An ExternalName Service is reached at `<externalName>:<the APIService's port>`, as
/// kube-aggregator resolves it: the APIService names wardle's port.
fn api_service(version: &str, version_priority: u32, ca_bundle: &str, port: u16) -> String {
    format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {version}.wardle.example.com}}\nspec:\n  group: wardle.example.com\n  version: {version}\n  groupPriorityMinimum: 2000\n  versionPriority: {version_priority}\n  caBundle: {ca_bundle}\n  service: {{namespace: wardle-system, name: api, port: {port}}}\n"
    )
}

fn port_of(server: &Server) -> u16 {
    server
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.base))
}

/// Waits until `get apiservice <name>` prints `want` in its AVAILABLE column.
fn wait_available(k: &Kubectl, name: &str, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = k.run(&["get", "apiservice", name, "--no-headers"]);
        if run.success() && run.stdout.contains(want) {
            return run.stdout;
        }
        assert!(
            Instant::now() < deadline,
            "apiservice {name} never showed {want:?}: {}\n{}",
            run.describe(),
            k.run(&["get", "apiservice", name, "-o", "yaml"]).stdout
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn start_wardle(data_dir: &Path, kubeconfig: &Path, cert: &Path, key: &Path) -> Server {
    let kc = kubeconfig.display().to_string();
    Server::start_binary_in(
        &crates::binary("wardle-apiserver"),
        data_dir,
        &[
            &format!("--authentication-kubeconfig={kc}"),
            &format!("--authorization-kubeconfig={kc}"),
            &format!("--tls-cert-file={}", cert.display()),
            &format!("--tls-private-key-file={}", key.display()),
        ],
        &[],
    )
}

#[test]
fn wardle_registered_as_an_apiservice_is_served_through_apiary() {
    crates::build(&crates::repo_root().join("examples/wardle"));
    let main = Server::start(&[]);
    let kubectl_path = common::kubectls()[0].clone();
    let k = Kubectl::new(&main, &kubectl_path);
    k.ok_stdin(&["apply", "-f", "-"], RBAC);

    // wardle: its identity in main, a serving certificate for its Service's DNS name.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ca = TestCa::new("wardle-ca");
    let (cert, key) = ca.leaf(
        "api.wardle-system.svc",
        None,
        &["api.wardle-system.svc", "localhost", "127.0.0.1"],
    );
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    // The chain ends with the CA, which wardle's own admin kubeconfig then trusts.
    std::fs::write(&cert_path, format!("{cert}{}", ca.pem)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&key_path, &key).unwrap_or_else(|e| panic!("{e}"));
    let wardle_kubeconfig = main.user_kubeconfig("wardle-apiserver", "");
    let wardle_data = dir.path().join("wardle-data");
    let mut wardle = start_wardle(&wardle_data, &wardle_kubeconfig, &cert_path, &key_path);

    // The Service and the APIServices, as the e2e test registers them.
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca.pem.as_bytes());
    k.ok_stdin(&["apply", "-f", "-"], &service(port_of(&wardle)));
    k.ok_stdin(
        &["apply", "-f", "-"],
        &format!(
            "{}---\n{}",
            api_service("v1alpha1", 200, &bundle, port_of(&wardle)),
            api_service("v1beta1", 100, &bundle, port_of(&wardle))
        ),
    );
    let row = wait_available(&k, "v1alpha1.wardle.example.com", "True");
    assert!(row.contains("wardle-system/api"), "{row}");
    wait_available(&k, "v1beta1.wardle.example.com", "True");
    let status = k.json(&[
        "get",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "-o",
        "json",
    ]);
    let available = &status["status"]["conditions"][0];
    assert_eq!(available["type"], "Available", "{status}");
    assert_eq!(available["reason"], "Passed", "{status}");

    // Discovery: the group, its preferred version by versionPriority; kubectl's views.
    let deadline = Instant::now() + Duration::from_secs(30);
    let resources = loop {
        let run = k.run(&["api-resources", "--api-group=wardle.example.com"]);
        if run.success() && run.stdout.contains("flunders") {
            break run.stdout;
        }
        assert!(Instant::now() < deadline, "{}", run.describe());
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(resources.contains("fischers"), "{resources}");
    let groups: Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/apis"])).unwrap_or_else(|e| panic!("{e}"));
    let wardle_group = groups["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "wardle.example.com"))
        .unwrap_or_else(|| panic!("no wardle group in {groups}"));
    assert_eq!(
        wardle_group["preferredVersion"]["version"], "v1alpha1",
        "{wardle_group}"
    );
    let explain = k.ok(&["explain", "flunders.spec"]);
    assert!(explain.contains("reference"), "{explain}");

    // CRUD and a watch through the aggregator.
    let watch = k.spawn(&["get", "flunders", "-n", "default", "--watch", "-o", "name"]);
    k.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: rest-flunder, namespace: default, labels: {sample-label: \"true\"}}\nspec: {reference: fischer-1, referenceType: Fischer}\n",
    );
    assert!(
        watch.wait_for(Duration::from_secs(20), |out| out
            .contains("flunder.wardle.example.com/rest-flunder")),
        "the watch through the aggregator saw nothing: {}",
        watch.describe()
    );
    let got = k.json(&[
        "get",
        "flunders.v1beta1.wardle.example.com",
        "rest-flunder",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    assert_eq!(got["spec"]["fischerReference"], "fischer-1", "{got}");
    let list = k.ok(&["get", "flunders", "-n", "default"]);
    assert!(list.contains("rest-flunder"), "{list}");
    k.ok(&[
        "label",
        "flunder",
        "rest-flunder",
        "-n",
        "default",
        "patched=yes",
    ]);
    let labels = k.ok(&[
        "get",
        "flunder",
        "rest-flunder",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.labels.patched}",
    ]);
    assert_eq!(labels, "yes");

    // Main's RBAC decides for the caller; the caller's identity reaches wardle.
    k.ok_stdin(
        &["create", "--as=jane", "-f", "-"],
        "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata: {name: by-jane, namespace: default}\nspec: {}\n",
    );
    let managers = k.ok(&[
        "get",
        "flunder",
        "by-jane",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert!(managers.contains("kubectl"), "{managers}");
    let denied = k.run_with(
        &["create", "--as=bob", "-f", "-"],
        &[],
        "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata: {name: by-bob, namespace: default}\nspec: {}\n",
    );
    assert!(!denied.success(), "{}", denied.describe());
    assert!(
        denied.stderr.contains(
            "flunders.wardle.example.com is forbidden: User \"bob\" cannot create resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
        ),
        "{}",
        denied.describe()
    );
    let bob_reads = k.ok(&["get", "flunders", "-n", "default", "--as=bob"]);
    assert!(bob_reads.contains("by-jane"), "{bob_reads}");

    // A forged identity header from a client is not trusted: it stays anonymous.
    let runtime = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let (code, body) = runtime.block_on(async {
        let response = main
            .anonymous()
            .get(main.url("/apis/wardle.example.com/v1beta1/namespaces/default/flunders"))
            .header("X-Remote-User", "jane")
            .header("X-Remote-Group", "system:masters")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let code = response.status().as_u16();
        (code, response.text().await.unwrap_or_default())
    });
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("system:anonymous"), "{body}");

    // wardle stopped: 503 for its group, Available=False, the rest whole.
    let wardle_port = port_of(&wardle);
    wardle.kill();
    let failed = k.run(&["get", "flunders", "-n", "default"]);
    assert!(!failed.success(), "{}", failed.describe());
    assert!(
        failed.stderr.contains("ServiceUnavailable"),
        "{}",
        failed.describe()
    );
    let row = wait_available(&k, "v1alpha1.wardle.example.com", "False");
    assert!(row.contains("FailedDiscoveryCheck"), "{row}");
    let namespaces = k.ok(&["get", "namespaces"]);
    assert!(namespaces.contains("wardle-system"), "{namespaces}");
    let resources = k.run(&["api-resources"]);
    assert!(
        resources.stdout.contains("namespaces"),
        "{}",
        resources.describe()
    );
    assert!(
        resources.stdout.contains("apiservices"),
        "{}",
        resources.describe()
    );

    // Started again (on another port: the Service follows): available, its objects kept.
    let wardle = start_wardle(&wardle_data, &wardle_kubeconfig, &cert_path, &key_path);
    if port_of(&wardle) != wardle_port {
        let port = port_of(&wardle);
        k.ok_stdin(
            &["apply", "-f", "-"],
            &format!(
                "{}---\n{}---\n{}",
                service(port),
                api_service("v1alpha1", 200, &bundle, port),
                api_service("v1beta1", 100, &bundle, port)
            ),
        );
    }
    wait_available(&k, "v1alpha1.wardle.example.com", "True");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = k.run(&["get", "flunders", "-n", "default"]);
        if run.success() && run.stdout.contains("rest-flunder") {
            break;
        }
        assert!(Instant::now() < deadline, "{}", run.describe());
        std::thread::sleep(Duration::from_millis(250));
    }
    k.ok(&["delete", "flunder", "rest-flunder", "-n", "default"]);

    // The APIServices deleted: the group leaves discovery and OpenAPI.
    k.ok(&[
        "delete",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "v1beta1.wardle.example.com",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let apis = k.ok(&["get", "--raw", "/apis"]);
        let v2 = k.ok(&["get", "--raw", "/openapi/v2"]);
        if !apis.contains("wardle.example.com") && !v2.contains("/apis/wardle.example.com/") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "wardle still in discovery or OpenAPI"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let gone = k.run(&["get", "flunders", "-n", "default"]);
    assert!(!gone.success(), "{}", gone.describe());
    drop(wardle);
}
