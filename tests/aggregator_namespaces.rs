//! Namespace deletion covers aggregated APIs, as kube-controller-manager's namespace
//! controller does through kube-apiserver: with the wardle example registered behind apiary,
//!
//! - deleting a namespace deletes its flunders in wardle (through the aggregator, as the
//!   namespace controller's service account, which wardle authorizes by
//!   `SubjectAccessReview` back to main) along with its local contents, then the namespace
//!   goes;
//! - with wardle stopped, a deleted namespace loses its local contents but stays
//!   `Terminating` with `NamespaceDeletionDiscoveryFailure` (kube's reason and message) while
//!   wardle's discovery is stale; started again, wardle's objects are deleted and the
//!   namespace goes.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/wardle.rs"]
mod wardle;

use std::time::{Duration, Instant};

use kubectl::Kubectl;
use serde_json::Value;
use wardle::{Aggregated, V1ALPHA1, V1BETA1};

fn flunder(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec: {{reference: fischer-1, referenceType: Fischer}}\n"
    )
}

/// Creates namespace `namespace` with two flunders (through the aggregator) and a ConfigMap.
fn populate(k: &Kubectl, namespace: &str) {
    k.ok(&["create", "namespace", namespace]);
    for name in ["f1", "f2"] {
        k.ok_stdin(&["create", "-f", "-"], &flunder(name, namespace));
    }
    k.ok(&[
        "create",
        "configmap",
        "local",
        "-n",
        namespace,
        "--from-literal=a=b",
    ]);
}

/// The names of the flunders in `namespace`, as `k` sees them.
fn flunders(k: &Kubectl, namespace: &str) -> String {
    k.ok(&["get", "flunders", "-n", namespace, "-o", "name"])
}

/// Waits (up to `seconds`) until `check` holds, panicking with what `describe` says.
fn wait_until(seconds: u64, mut check: impl FnMut() -> bool, describe: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !check() {
        assert!(Instant::now() < deadline, "{}", describe());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The namespace condition of `kind`, if `namespace` exists and has one.
fn condition(k: &Kubectl, namespace: &str, kind: &str) -> Option<Value> {
    let run = k.run(&["get", "namespace", namespace, "-o", "json"]);
    if !run.success() {
        return None;
    }
    let ns: Value = serde_json::from_str(&run.stdout).ok()?;
    ns["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .cloned()
}

#[test]
fn namespace_deletion_reaches_aggregated_apis_and_waits_for_their_discovery() {
    let mut setup = Aggregated::start();
    let kubectl_path = common::kubectls()[0].clone();
    let k = Kubectl::new(&setup.main, &kubectl_path);

    // Deleting a namespace deletes its flunders in wardle, then the namespace goes.
    populate(&k, "doomed");
    k.ok(&["create", "namespace", "kept"]);
    k.ok_stdin(&["create", "-f", "-"], &flunder("stays", "kept"));
    let direct = Kubectl::new(&setup.wardle, &kubectl_path);
    assert_eq!(
        flunders(&direct, "doomed"),
        "flunder.wardle.example.com/f1\nflunder.wardle.example.com/f2\n"
    );
    k.ok(&["delete", "namespace", "doomed", "--timeout=120s"]);
    let gone = k.run(&["get", "namespace", "doomed"]);
    assert!(
        !gone.success() && gone.stderr.contains("NotFound"),
        "{}",
        gone.describe()
    );
    assert_eq!(flunders(&direct, "doomed"), "");
    assert_eq!(
        flunders(&direct, "kept"),
        "flunder.wardle.example.com/stays\n"
    );

    // With wardle stopped, the namespace loses its local contents but stays Terminating,
    // saying that discovery failed, as kube-controller-manager says it.
    populate(&k, "limbo");
    let port = wardle::port_of(&setup.wardle);
    setup.wardle.kill();
    wardle::wait_available(&k, V1ALPHA1, "False");
    wardle::wait_available(&k, V1BETA1, "False");
    k.ok(&["delete", "namespace", "limbo", "--wait=false"]);
    let want = "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: \
                wardle.example.com/v1alpha1: stale GroupVersion discovery: wardle.example.com/v1alpha1, \
                wardle.example.com/v1beta1: stale GroupVersion discovery: wardle.example.com/v1beta1";
    wait_until(
        60,
        || {
            condition(&k, "limbo", "NamespaceDeletionDiscoveryFailure")
                .is_some_and(|c| c["status"] == "True" && c["message"] == want)
        },
        || k.run(&["get", "namespace", "limbo", "-o", "yaml"]).stdout,
    );
    let failure = condition(&k, "limbo", "NamespaceDeletionDiscoveryFailure")
        .unwrap_or_else(|| panic!("no discovery condition"));
    assert_eq!(failure["reason"], "DiscoveryFailed", "{failure}");
    wait_until(
        30,
        || {
            k.ok(&["get", "configmaps", "-n", "limbo", "-o", "name"])
                .is_empty()
        },
        || k.run(&["get", "configmaps", "-n", "limbo"]).describe(),
    );
    std::thread::sleep(Duration::from_secs(6));
    let ns = k.json(&["get", "namespace", "limbo", "-o", "json"]);
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert_eq!(
        ns["spec"]["finalizers"],
        serde_json::json!(["kubernetes"]),
        "{ns}"
    );

    // Started again: its flunders are deleted and the namespace goes.
    setup.wardle = setup.start_wardle(Some(port));
    wardle::wait_available(&k, V1ALPHA1, "True");
    wardle::wait_available(&k, V1BETA1, "True");
    wait_until(
        90,
        || !k.run(&["get", "namespace", "limbo"]).success(),
        || k.run(&["get", "namespace", "limbo", "-o", "yaml"]).stdout,
    );
    let direct = Kubectl::new(&setup.wardle, &kubectl_path);
    assert_eq!(flunders(&direct, "limbo"), "");
    assert_eq!(
        flunders(&direct, "kept"),
        "flunder.wardle.example.com/stays\n"
    );
}
