//! The wardle example (`examples/wardle`, k8s.io/sample-apiserver's `wardle.example.com`), built
//! from its own directory as a user builds it (it is not a workspace member), started and driven
//! with kubectl: discovery shows the Kubernetes groups and wardle.example.com (and not apiary's
//! own example.dev); `BanFlunder` refuses a Flunder whose name a Fischer lists; a Flunder
//! written in v1alpha1 (`reference`) reads back in v1beta1 (`flunderReference` /
//! `fischerReference`) and the other way round, with v1alpha1's default reference type;
//! sample-apiserver's validation message; `kubectl explain`. The client example
//! (`examples/wardle-client`, the types with kube-rs and without the server) builds, pulls no
//! axum, hyper server, redb or etcd-client, and lists and creates Flunders.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::process::Command;

use common::Server;
use kubectl::Kubectl;

fn flunder(version: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: wardle.example.com/{version}\nkind: Flunder\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
    )
}

#[test]
fn wardle_example_serves_sample_apiserver_semantics() {
    let root = crates::repo_root();
    crates::build(&root.join("examples/wardle"));
    crates::build(&root.join("examples/wardle-client"));
    let server = Server::start_binary(&crates::binary("wardle-apiserver"), &[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);

    // Discovery: the Kubernetes groups and wardle.example.com, nothing of example.dev.
    let resources = k.ok(&["api-resources", "-o", "wide"]);
    for want in [
        "namespaces",
        "rbac.authorization.k8s.io/v1",
        "coordination.k8s.io/v1",
        "admissionregistration.k8s.io/v1",
        "flunders",
        "wardle.example.com/v1beta1",
        "fischers",
        "wardle.example.com/v1alpha1",
    ] {
        assert!(
            resources.contains(want),
            "api-resources lacks {want}:\n{resources}"
        );
    }
    assert!(
        !resources.contains("example.dev"),
        "api-resources shows example.dev:\n{resources}"
    );
    let versions = k.ok(&["api-versions"]);
    assert!(
        versions.contains("wardle.example.com/v1alpha1"),
        "{versions}"
    );
    assert!(
        versions.contains("wardle.example.com/v1beta1"),
        "{versions}"
    );

    // BanFlunder: a Fischer's disallowedFlunders refuse those names (403, sample-apiserver's
    // message); other names are created.
    k.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fischer-1\ndisallowedFlunders: [banned, evil]\n",
    );
    let fischers = k.ok(&["get", "fischers"]);
    assert!(
        fischers.contains("fischer-1") && fischers.contains("banned"),
        "{fischers}"
    );
    let mut refused = None;
    for _ in 0..50 {
        // The Fischer reaches the watch cache BanFlunder reads a moment after the write.
        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &flunder("v1beta1", "banned", "{}"),
        );
        if !run.success() {
            refused = Some(run);
            break;
        }
        k.ok(&["delete", "flunder", "banned", "-n", "default"]);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let refused = refused.unwrap_or_else(|| panic!("BanFlunder never refused `banned`"));
    assert!(
        refused.stderr.contains("Error from server (Forbidden)")
            && refused.stderr.contains(
                "flunders.wardle.example.com \"banned\" is forbidden: this name may not be used, please change the resource name"
            ),
        "{}",
        refused.describe()
    );
    let raw = k.run(&[
        "get",
        "--raw",
        "/apis/wardle.example.com/v1beta1/namespaces/default/flunders/banned",
    ]);
    assert!(
        !raw.success(),
        "the refused Flunder exists: {}",
        raw.describe()
    );
    k.ok_stdin(&["create", "-f", "-"], &flunder("v1beta1", "allowed", "{}"));

    // v1alpha1 → v1beta1: `reference` becomes the reference of its type; without a type it
    // defaults to Flunder.
    k.ok_stdin(
        &["create", "-f", "-"],
        &flunder(
            "v1alpha1",
            "to-fischer",
            "{reference: fischer-1, referenceType: Fischer}",
        ),
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        &flunder("v1alpha1", "defaulted", "{reference: allowed}"),
    );
    let get = |version: &str, name: &str| {
        k.json(&[
            "get",
            &format!("flunders.{version}.wardle.example.com"),
            name,
            "-n",
            "default",
            "-o",
            "json",
        ])
    };
    let beta = get("v1beta1", "to-fischer");
    assert_eq!(beta["apiVersion"], "wardle.example.com/v1beta1");
    assert_eq!(
        beta["spec"],
        serde_json::json!({"fischerReference": "fischer-1", "referenceType": "Fischer"})
    );
    let beta = get("v1beta1", "defaulted");
    assert_eq!(
        beta["spec"],
        serde_json::json!({"flunderReference": "allowed", "referenceType": "Flunder"})
    );

    // v1beta1 → v1alpha1.
    k.ok_stdin(
        &["create", "-f", "-"],
        &flunder(
            "v1beta1",
            "from-beta",
            "{flunderReference: allowed, referenceType: Flunder}",
        ),
    );
    let alpha = get("v1alpha1", "from-beta");
    assert_eq!(alpha["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(
        alpha["spec"],
        serde_json::json!({"reference": "allowed", "referenceType": "Flunder"})
    );
    let alpha = get("v1alpha1", "to-fischer");
    assert_eq!(
        alpha["spec"],
        serde_json::json!({"reference": "fischer-1", "referenceType": "Fischer"})
    );

    // The preferred version prints its column.
    let table = k.ok(&["get", "flunders", "-n", "default"]);
    assert!(
        table.contains("REFERENCE TYPE") && table.contains("from-beta"),
        "{table}"
    );

    // sample-apiserver's validation.
    let invalid = k.run_with(
        &["create", "-f", "-"],
        &[],
        &flunder(
            "v1beta1",
            "both",
            "{flunderReference: a, fischerReference: b, referenceType: Flunder}",
        ),
    );
    assert!(
        invalid.stderr.contains(
            "The Flunder \"both\" is invalid: spec.fischerReference: Invalid value: \"b\": cannot be set with flunderReference at the same time"
        ),
        "{}",
        invalid.describe()
    );
    let invalid = k.run_with(
        &["create", "-f", "-"],
        &[],
        &flunder("v1beta1", "other", "{referenceType: Other}"),
    );
    assert!(
        invalid
            .stderr
            .contains("spec.referenceType: Invalid value: \"Other\": must be Flunder or Fischer"),
        "{}",
        invalid.describe()
    );

    // kubectl explain reads the published schema.
    let explain = k.ok(&["explain", "flunders.spec"]);
    for want in [
        "GROUP:      wardle.example.com",
        "VERSION:    v1beta1",
        "flunderReference",
        "fischerReference",
        "referenceType",
    ] {
        assert!(explain.contains(want), "explain lacks {want}:\n{explain}");
    }

    // The client example: lists the Flunders and creates one, through kube-rs.
    let client = Command::new(crates::binary("wardle-client"))
        .arg(server.kubeconfig())
        .args(["default", "client-flunder"])
        .output()
        .unwrap_or_else(|e| panic!("running wardle-client: {e}"));
    let out = crates::stdout(&client);
    assert!(
        client.status.success(),
        "wardle-client failed:\n{out}\n{}",
        crates::stderr(&client)
    );
    assert!(
        out.contains("flunders in default") && out.contains("from-beta"),
        "{out}"
    );
    assert!(out.contains("created client-flunder"), "{out}");
    let created = get("v1beta1", "client-flunder");
    assert_eq!(created["spec"]["referenceType"], "Fischer");
}

/// The client of wardle's types depends on no part of the server.
#[test]
fn wardle_client_pulls_no_server() {
    let dir = crates::repo_root().join("examples/wardle-client");
    let tree = crates::cargo(&dir, &["tree", "-e", "normal,features", "--prefix", "none"]);
    assert!(
        tree.status.success(),
        "cargo tree failed:\n{}",
        crates::stderr(&tree)
    );
    let tree = crates::stdout(&tree);
    assert!(tree.lines().any(|l| l.starts_with("wardle v")), "{tree}");
    assert!(tree.lines().any(|l| l.starts_with("kube v")), "{tree}");
    for line in tree.lines() {
        for banned in [
            "axum",
            "redb",
            "etcd-client",
            "apiary-server",
            "apiary-controlplane",
            "apiary-storage",
            "tonic",
        ] {
            assert!(
                !line.starts_with(&format!("{banned} v"))
                    && !line.starts_with(&format!("{banned} feature")),
                "the client pulls {banned}: {line}"
            );
        }
        assert!(
            !line.starts_with("hyper feature \"server\""),
            "the client pulls hyper's server: {line}"
        );
    }
}
