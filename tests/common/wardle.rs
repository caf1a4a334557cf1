//! The wardle example (`examples/wardle`) as an aggregated API server behind the main `apiary`
//! server, set up as kube's aggregator e2e test registers k8s.io/sample-apiserver: wardle's
//! identity in main with kube's RBAC for delegated authentication and authorization, a serving
//! certificate for its Service's DNS name from a CA of its own, an ExternalName Service and the
//! APIServices `v1alpha1` and `v1beta1` of `wardle.example.com` (`groupPriorityMinimum` 2000,
//! that CA as `caBundle`). Used by `tests/aggregator_wardle.rs` and `tests/aggregator_kill.rs`
//! (`#[path = "common/wardle.rs"] mod wardle;`, beside the `kubectl` and `crates` modules).

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine;

use crate::common::Server;
use crate::common::tls::TestCa;
use crate::crates;
use crate::kubectl::Kubectl;

/// RBAC in main: wardle's identity may delegate (kube's roles for aggregated servers); `jane`
/// may do anything to flunders; `bob` may only read them.
pub const RBAC: &str = r#"
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

/// The APIService of `v1alpha1` (the preferred version).
pub const V1ALPHA1: &str = "v1alpha1.wardle.example.com";

/// The APIService of `v1beta1`.
pub const V1BETA1: &str = "v1beta1.wardle.example.com";

/// wardle's ExternalName Service `wardle-system/api`, reached at `localhost:<port>`.
pub fn service(port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: api, namespace: wardle-system}}\nspec:\n  type: ExternalName\n  externalName: localhost\n  ports: [{{name: https, port: {port}}}]\n"
    )
}

/// An ExternalName Service is reached at `<externalName>:<the APIService's port>`, as
/// kube-aggregator resolves it: the APIService names wardle's port.
pub fn api_service(version: &str, version_priority: u32, ca_bundle: &str, port: u16) -> String {
    format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {version}.wardle.example.com}}\nspec:\n  group: wardle.example.com\n  version: {version}\n  groupPriorityMinimum: 2000\n  versionPriority: {version_priority}\n  caBundle: {ca_bundle}\n  service: {{namespace: wardle-system, name: api, port: {port}}}\n"
    )
}

/// The port a server listens on (from its base URL).
pub fn port_of(server: &Server) -> u16 {
    server
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.base))
}

/// Waits (up to 60 s) until `get apiservice <name>` prints `want` in its AVAILABLE column;
/// returns the row.
pub fn wait_available(k: &Kubectl, name: &str, want: &str) -> String {
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

/// How wardle is started: its flags' files and data directory.
struct Launch {
    kubeconfig: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    data: PathBuf,
}

impl Launch {
    /// Starts wardle on its data directory, on `port` (a free one when `None`).
    fn start(&self, port: Option<u16>) -> Server {
        let kc = self.kubeconfig.display().to_string();
        let authn = format!("--authentication-kubeconfig={kc}");
        let authz = format!("--authorization-kubeconfig={kc}");
        let cert = format!("--tls-cert-file={}", self.cert.display());
        let key = format!("--tls-private-key-file={}", self.key.display());
        let port = port.map(|p| format!("--secure-port={p}"));
        let mut args = vec![authn.as_str(), authz.as_str(), cert.as_str(), key.as_str()];
        args.extend(port.as_deref());
        Server::start_binary_in(&crates::binary("wardle-apiserver"), &self.data, &args, &[])
    }
}

/// The main server with wardle registered behind it (see the module).
pub struct Aggregated {
    /// The main `apiary` server (the aggregator).
    pub main: Server,
    /// kubectl (the one on PATH) as main's admin.
    pub k: Kubectl,
    /// The running wardle (replace it after a kill with [`Aggregated::start_wardle`]).
    pub wardle: Server,
    /// wardle's CA, base64 (the APIServices' `caBundle`).
    pub bundle: String,
    launch: Launch,
    _dir: tempfile::TempDir,
}

impl Aggregated {
    /// Builds wardle, starts main and wardle, registers wardle's Service and APIServices and
    /// waits until both APIServices are `Available`.
    pub fn start() -> Aggregated {
        crates::build(&crates::repo_root().join("examples/wardle"));
        let main = Server::start(&[]);
        let k = Kubectl::new(&main, &crate::common::kubectls()[0]);
        k.ok_stdin(&["apply", "-f", "-"], RBAC);

        // wardle: its identity in main, a serving certificate for its Service's DNS name.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ca = TestCa::new("wardle-ca");
        let (cert, key) = ca.leaf(
            "api.wardle-system.svc",
            None,
            &["api.wardle-system.svc", "localhost", "127.0.0.1"],
        );
        let launch = Launch {
            kubeconfig: main.user_kubeconfig("wardle-apiserver", ""),
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
            data: dir.path().join("wardle-data"),
        };
        // The chain ends with the CA, which wardle's own admin kubeconfig then trusts.
        std::fs::write(&launch.cert, format!("{cert}{}", ca.pem)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&launch.key, &key).unwrap_or_else(|e| panic!("{e}"));
        let wardle = launch.start(None);
        let setup = Aggregated {
            main,
            k,
            wardle,
            bundle: base64::engine::general_purpose::STANDARD.encode(ca.pem.as_bytes()),
            launch,
            _dir: dir,
        };
        // The Service and the APIServices, as the e2e test registers them.
        setup.register(port_of(&setup.wardle));
        wait_available(&setup.k, V1ALPHA1, "True");
        wait_available(&setup.k, V1BETA1, "True");
        setup
    }

    /// Starts wardle again on its data directory (its objects kept), on `port` (a free one
    /// when `None`).
    pub fn start_wardle(&self, port: Option<u16>) -> Server {
        self.launch.start(port)
    }

    /// Applies wardle's Service and both APIServices for wardle listening on `port`.
    pub fn register(&self, port: u16) {
        self.k.ok_stdin(
            &["apply", "-f", "-"],
            &format!(
                "{}---\n{}---\n{}",
                service(port),
                api_service("v1alpha1", 200, &self.bundle, port),
                api_service("v1beta1", 100, &self.bundle, port)
            ),
        );
    }
}
