//! kubectl (the one on PATH, 1.27 and 1.33) against the real binary: `version`, `api-versions`
//! and `api-resources`, each with the written kubeconfig and a fresh cache directory.

mod common;

use common::{Server, kubectls};

fn run_ok(server: &Server, kubectl: &std::path::Path, args: &[&str]) -> String {
    let out = server.kubectl(kubectl, args);
    assert!(
        out.status.success(),
        "{} {args:?} failed:\nstdout: {}\nstderr: {}",
        kubectl.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn kubectl_version_api_versions_and_api_resources() {
    let server = Server::start(&[]);
    for kubectl in kubectls() {
        let version = run_ok(&server, &kubectl, &["version", "-o", "json"]);
        let v: serde_json::Value =
            serde_json::from_str(&version).unwrap_or_else(|e| panic!("{e}: {version}"));
        assert_eq!(v["serverVersion"]["major"], "1", "{}", kubectl.display());
        assert!(
            v["serverVersion"]["gitVersion"]
                .as_str()
                .unwrap_or("")
                .starts_with("v1.33.0")
        );

        let versions = run_ok(&server, &kubectl, &["api-versions"]);
        for gv in [
            "v1",
            "example.dev/v1",
            "example.dev/v1alpha1",
            "rbac.authorization.k8s.io/v1",
        ] {
            assert!(
                versions.lines().any(|l| l == gv),
                "{}: {gv} missing from\n{versions}",
                kubectl.display()
            );
        }

        let resources = run_ok(&server, &kubectl, &["api-resources"]);
        let widget = resources
            .lines()
            .find(|l| l.starts_with("widgets "))
            .unwrap_or_else(|| panic!("{}: no widgets in\n{resources}", kubectl.display()));
        let cols: Vec<&str> = widget.split_whitespace().collect();
        assert_eq!(
            cols,
            vec!["widgets", "wd", "example.dev/v1", "true", "Widget"],
            "{}",
            kubectl.display()
        );
        assert!(
            resources.lines().any(|l| l.starts_with("configmaps ")),
            "{resources}"
        );
        assert!(
            resources.lines().any(|l| l.starts_with("namespaces ")),
            "{resources}"
        );

        let wide = run_ok(
            &server,
            &kubectl,
            &["api-resources", "--api-group=example.dev", "-o", "wide"],
        );
        assert!(wide.contains("all"), "categories missing:\n{wide}");
    }
}
