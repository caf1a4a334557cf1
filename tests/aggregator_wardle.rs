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
#[path = "common/wardle.rs"]
mod wardle;

use std::time::{Duration, Instant};

use serde_json::Value;
use wardle::{Aggregated, V1ALPHA1, V1BETA1, port_of, wait_available};

#[test]
fn wardle_registered_as_an_apiservice_is_served_through_apiary() {
    // wardle behind main: the RBAC, its certificate, the Service and the APIServices.
    let mut setup = Aggregated::start();
    let row = wait_available(&setup.k, V1ALPHA1, "True");
    assert!(row.contains("wardle-system/api"), "{row}");
    let status = setup.k.json(&["get", "apiservice", V1ALPHA1, "-o", "json"]);
    let available = &status["status"]["conditions"][0];
    assert_eq!(available["type"], "Available", "{status}");
    assert_eq!(available["reason"], "Passed", "{status}");
    let (main, k) = (&setup.main, &setup.k);
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
    let wardle_port = port_of(&setup.wardle);
    setup.wardle.kill();
    let k = &setup.k;
    let failed = k.run(&["get", "flunders", "-n", "default"]);
    assert!(!failed.success(), "{}", failed.describe());
    assert!(
        failed.stderr.contains("ServiceUnavailable"),
        "{}",
        failed.describe()
    );
    let row = wait_available(k, V1ALPHA1, "False");
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
    setup.wardle = setup.start_wardle(None);
    if port_of(&setup.wardle) != wardle_port {
        setup.register(port_of(&setup.wardle));
    }
    let k = &setup.k;
    wait_available(k, V1ALPHA1, "True");
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
    k.ok(&["delete", "apiservice", V1ALPHA1, V1BETA1]);
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
}
