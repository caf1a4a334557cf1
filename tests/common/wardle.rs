//! The wardle example (`examples/wardle`) as an aggregated API server behind a main `apiary`
//! server, registered as kube's aggregator e2e test registers the sample API server: its
//! identity's delegation roles in main, a serving certificate for its Service's DNS name, an
//! ExternalName Service and the APIServices of `v1alpha1` and `v1beta1` with
//! `groupPriorityMinimum` 2000 and its CA as `caBundle`. Include it with
//! `#[path = "common/wardle.rs"] mod wardle;` next to `mod common;`, `mod crates;` and
//! `mod kubectl;`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;

use crate::common::Server;
use crate::common::tls::TestCa;
use crate::crates;
use crate::kubectl::Kubectl;

/// RBAC in main: wardle's identity may delegate authentication and authorization (kube's
/// roles for aggregated servers).
pub const DELEGATION_RBAC: &str = r#"
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
"#;

/// The Service in front of wardle: `localhost` at the APIService's port.
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

/// The port a server listens on.
pub fn port_of(server: &Server) -> u16 {
    server
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.base))
}

/// Waits until `get apiservice <name>` prints `want` in its AVAILABLE column.
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

/// A wardle server registered behind a main server, with what it takes to start it again.
pub struct Wardle {
    /// The running server, if started.
    pub server: Option<Server>,
    data_dir: PathBuf,
    kubeconfig: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    bundle: String,
    _dir: tempfile::TempDir,
}

impl Wardle {
    /// Builds the example, gives its identity the delegation roles in `main` (through `k`),
    /// starts it with a serving certificate for its Service's name, registers it, and waits
    /// until both APIServices are available and its flunders are in discovery.
    pub fn start_behind(main: &Server, k: &Kubectl) -> Wardle {
        crates::build(&crates::repo_root().join("examples/wardle"));
        k.ok_stdin(&["apply", "-f", "-"], DELEGATION_RBAC);
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
        let mut wardle = Wardle {
            server: None,
            data_dir: dir.path().join("wardle-data"),
            kubeconfig: main.user_kubeconfig("wardle-apiserver", ""),
            cert: cert_path,
            key: key_path,
            bundle: base64::engine::general_purpose::STANDARD.encode(ca.pem.as_bytes()),
            _dir: dir,
        };
        wardle.restart(k);
        wardle
    }

    /// Starts wardle (again) on its data directory, points the Service and APIServices at
    /// its port, and waits until it is available and in discovery.
    pub fn restart(&mut self, k: &Kubectl) {
        let kc = self.kubeconfig.display().to_string();
        let server = Server::start_binary_in(
            &crates::binary("wardle-apiserver"),
            &self.data_dir,
            &[
                &format!("--authentication-kubeconfig={kc}"),
                &format!("--authorization-kubeconfig={kc}"),
                &format!("--tls-cert-file={}", self.cert.display()),
                &format!("--tls-private-key-file={}", self.key.display()),
            ],
            &[],
        );
        let port = port_of(&server);
        self.server = Some(server);
        k.ok_stdin(
            &["apply", "-f", "-"],
            &format!(
                "{}---\n{}---\n{}",
                service(port),
                api_service("v1alpha1", 200, &self.bundle, port),
                api_service("v1beta1", 100, &self.bundle, port)
            ),
        );
        wait_available(k, "v1alpha1.wardle.example.com", "True");
        wait_available(k, "v1beta1.wardle.example.com", "True");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let run = k.run(&["api-resources", "--api-group=wardle.example.com"]);
            if run.success() && run.stdout.contains("flunders") {
                break;
            }
            assert!(Instant::now() < deadline, "{}", run.describe());
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Kills wardle.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
    }

    /// A kubectl talking to wardle directly, as its admin.
    pub fn kubectl(&self, kubectl: &Path) -> Kubectl {
        Kubectl::new(
            self.server
                .as_ref()
                .unwrap_or_else(|| panic!("wardle is not running")),
            kubectl,
        )
    }
}
