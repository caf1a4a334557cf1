//! CustomResourceDefinitions through kubectl (the one on PATH, 1.27 and 1.33) on the real
//! binary, each version with a CRD of its own group: the CRD is established and its resource
//! discovered with its short name and category; custom resources are created, applied (client-
//! and server-side), patched, scaled, read as Tables from the printer columns, selected by a
//! selectable field, and written through `/status`; an update of the CRD (a new column) is
//! served at once; a deleted CRD takes its objects with it and its resource goes away.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl};

/// A CronTab CRD in `group` with status and scale subresources, printer columns (with the
/// `Age` column written out, as most CRDs do), a short name, the `all` category and a
/// selectable field; `extra_column` adds an `Image` column.
fn crd(group: &str, short: &str, extra_column: bool) -> String {
    let image = if extra_column {
        "\n      - name: Image\n        type: string\n        jsonPath: .spec.image"
    } else {
        ""
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [{short}]
    categories: [all]
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-validations:
              - rule: "!has(self.replicas) || self.replicas <= 10"
                message: replicas must be at most 10
              properties:
                cronSpec:
                  type: string
                image:
                  type: string
                  default: busybox
                replicas:
                  type: integer
                ports:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [port]
                  items:
                    type: object
                    required: [port]
                    properties:
                      port:
                        type: integer
                      name:
                        type: string
            status:
              type: object
              properties:
                replicas:
                  type: integer
      subresources:
        status: {{}}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
      selectableFields:
      - jsonPath: .spec.image
      additionalPrinterColumns:
      - name: Spec
        type: string
        jsonPath: .spec.cronSpec
      - name: Replicas
        type: integer
        jsonPath: .spec.replicas
      - name: Age
        type: date
        jsonPath: .metadata.creationTimestamp{image}
"#
    )
}

fn crontab(group: &str, ns: &str, name: &str, image: &str) -> String {
    format!(
        r#"apiVersion: {group}/v1
kind: CronTab
metadata:
  name: {name}
  namespace: {ns}
spec:
  cronSpec: "* * * * */5"
  image: {image}
  replicas: 2
"#
    )
}

fn journey(k: &Kubectl, c: &mut Checks) {
    let group = format!("{}.stable.example.com", k.label);
    let name = format!("crontabs.{group}");
    let resource = format!("crontabs.{group}");
    let ns = k.ns("crs");
    k.ok(&["create", "namespace", &ns]);

    // Each kubectl's CRD has a short name of its own (they run side by side).
    let short = format!("ct{}", k.label);
    let file = k.write("crd.yaml", &crd(&group, &short, false));
    c.run_ok(k, &["apply", "-f", &file]);
    c.run_ok(
        k,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            &format!("crd/{name}"),
        ],
    );
    let status = k.json(&["get", "crd", &name, "-o", "json"]);
    c.eq(
        "accepted names",
        status["status"]["acceptedNames"]["shortNames"].clone(),
        serde_json::json!([short]),
    );
    c.eq(
        "NamesAccepted reason",
        status["status"]["conditions"][0]["reason"].as_str(),
        Some("NoConflicts"),
    );
    let resources = k.run(&["api-resources", "--api-group", &group]);
    c.contains("api-resources", &resources.stdout, "crontabs");
    c.contains(
        "api-resources short name",
        &resources.stdout,
        &format!("{short} "),
    );

    // Create two, one with kubectl create and one with a server-side apply.
    let a = k.write("a.yaml", &crontab(&group, &ns, "a", "nginx"));
    c.run_ok(k, &["create", "-f", &a]);
    let b = k.write("b.yaml", &crontab(&group, &ns, "b", "redis"));
    c.run_ok(k, &["apply", "--server-side", "-f", &b]);
    let table = k.until(
        &[
            "get",
            &resource,
            "-n",
            &ns,
            "--no-headers",
            "-o",
            "custom-columns=N:.metadata.name",
        ],
        "a\nb",
    );
    c.eq("both created", table.as_str(), "a\nb");
    let table = k.run(&["get", &short, "-n", &ns]).stdout;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    c.eq("columns", header, vec!["NAME", "SPEC", "REPLICAS", "AGE"]);
    c.contains("row", &table, "* * * * */5");

    // Server-side apply merges a list-type map by its keys: two managers' entries live side
    // by side, each owned by its manager.
    for (manager, port) in [("first", 80), ("second", 443)] {
        let ports = k.write(
            "ports.yaml",
            &format!(
                "apiVersion: {group}/v1\nkind: CronTab\nmetadata:\n  name: b\n  namespace: {ns}\nspec:\n  ports:\n  - port: {port}\n    name: {manager}\n"
            ),
        );
        c.run_ok(
            k,
            &[
                "apply",
                "--server-side",
                "--field-manager",
                manager,
                "-f",
                &ports,
            ],
        );
    }
    let b_now = k.json(&[
        "get",
        &resource,
        "b",
        "-n",
        &ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    c.eq(
        "list-map entries of two managers",
        b_now["spec"]["ports"].clone(),
        serde_json::json!([{"port": 80, "name": "first"}, {"port": 443, "name": "second"}]),
    );
    let second = b_now["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["manager"] == "second")
        .cloned()
        .unwrap_or_default();
    c.check(
        second["fieldsV1"]["f:spec"]["f:ports"]
            .get("k:{\"port\":443}")
            .is_some(),
        || format!("the second manager owns its entry by key: {second}"),
    );

    // The schema: unknown fields are refused by a strict request and pruned otherwise,
    // defaults are applied, wrong types are refused with kube-apiserver's messages.
    let unknown = k.write(
        "unknown.yaml",
        &format!(
            "apiVersion: {group}/v1\nkind: CronTab\nmetadata:\n  name: unknown\n  namespace: {ns}\nspec:\n  cronSpec: x\n  bogus: 1\n"
        ),
    );
    let strict = k.run(&["create", "-f", &unknown]);
    c.contains(
        "strict",
        &strict.stderr,
        r#"CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.bogus""#,
    );
    c.run_ok(k, &["create", "--validate=false", "-f", &unknown]);
    let pruned = k.json(&["get", &resource, "unknown", "-n", &ns, "-o", "json"]);
    c.eq(
        "pruned and defaulted",
        pruned["spec"].clone(),
        serde_json::json!({"cronSpec": "x", "image": "busybox"}),
    );
    let wrong = k.write(
        "wrong.yaml",
        &format!(
            "apiVersion: {group}/v1\nkind: CronTab\nmetadata:\n  name: wrong\n  namespace: {ns}\nspec:\n  replicas: two\n"
        ),
    );
    let refused = k.run(&["create", "-f", &wrong]);
    c.contains(
        "invalid",
        &refused.stderr,
        r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
    );
    c.run_ok(k, &["delete", &resource, "unknown", "-n", &ns]);
    let too_many = k.run(&[
        "patch",
        &resource,
        "b",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":11}}"#,
    ]);
    c.contains(
        "CEL rule",
        &too_many.stderr,
        r#"spec: Invalid value: "object": replicas must be at most 10"#,
    );

    // RBAC: a Role on the custom resource lets its user read them and nothing more.
    let reader = format!("reader-{}", k.label);
    c.run_ok(
        k,
        &[
            "create",
            "role",
            "crontab-reader",
            "-n",
            &ns,
            "--verb=get,list",
            &format!("--resource=crontabs.{group}"),
        ],
    );
    c.run_ok(
        k,
        &[
            "create",
            "rolebinding",
            "crontab-reader",
            "-n",
            &ns,
            "--role=crontab-reader",
            &format!("--user={reader}"),
        ],
    );
    let as_reader = format!("--as={reader}");
    let read = k.run(&["get", &resource, "a", "-n", &ns, &as_reader, "-o", "name"]);
    c.eq(
        "read by the reader",
        read.stdout.trim(),
        format!("crontab.{group}/a").as_str(),
    );
    let denied = k.run(&["delete", &resource, "a", "-n", &ns, &as_reader]);
    c.contains(
        "RBAC",
        &denied.stderr,
        &format!(
            r#"crontabs.{group} "a" is forbidden: User "{reader}" cannot delete resource "crontabs" in API group "{group}" in the namespace "{ns}""#
        ),
    );

    // The category: `kubectl get all` lists them. The other kubectls' journeys run beside
    // this one with CRDs of the same category that come and go; a list of one that went away
    // between kubectl's discovery and its list fails the whole command (as against
    // kube-apiserver), so it is tried again.
    let want = format!("crontab.{group}/a");
    let mut all = k.run(&["get", "all", "-n", &ns]);
    for _ in 0..50 {
        if all.stdout.contains(&want) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        all = k.run(&["get", "all", "-n", &ns]);
    }
    c.contains("get all", &all.describe(), &want);

    // A selectable field.
    let selected = k.run(&[
        "get",
        &resource,
        "-n",
        &ns,
        "--field-selector",
        "spec.image=redis",
        "-o",
        "name",
    ]);
    c.eq(
        "field selector",
        selected.stdout.trim(),
        format!("crontab.{group}/b").as_str(),
    );

    // Patch (merge), scale, status.
    c.run_ok(
        k,
        &[
            "patch",
            &resource,
            "a",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"image":"httpd"}}"#,
        ],
    );
    c.run_ok(k, &["scale", &resource, "a", "-n", &ns, "--replicas=5"]);
    let a_now = k.json(&["get", &resource, "a", "-n", &ns, "-o", "json"]);
    c.eq("scaled", a_now["spec"]["replicas"].as_i64(), Some(5));
    c.eq("patched", a_now["spec"]["image"].as_str(), Some("httpd"));
    c.eq(
        "generation",
        a_now["metadata"]["generation"].as_i64(),
        Some(3),
    );
    let status_patch = k.run(&[
        "patch",
        &resource,
        "a",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":4}}"#,
    ]);
    c.check(status_patch.success(), || status_patch.describe());
    let a_now = k.json(&["get", &resource, "a", "-n", &ns, "-o", "json"]);
    c.eq(
        "status written",
        a_now["status"]["replicas"].as_i64(),
        Some(4),
    );
    c.eq(
        "status leaves the generation",
        a_now["metadata"]["generation"].as_i64(),
        Some(3),
    );

    // Deleting a namespace deletes the custom resources in it.
    let doomed = k.ns("crs-doomed");
    k.ok(&["create", "namespace", &doomed]);
    let in_doomed = k.write("doomed.yaml", &crontab(&group, &doomed, "d", "nginx"));
    c.run_ok(k, &["create", "-f", &in_doomed]);
    c.run_ok(k, &["delete", "namespace", &doomed, "--timeout=60s"]);
    k.ok(&["create", "namespace", &doomed]);
    let left = k.run(&["get", &resource, "-n", &doomed, "-o", "name"]);
    c.eq(
        "the namespace's objects went with it",
        left.stdout.trim(),
        "",
    );

    // A new column is served as soon as the CRD changes.
    let updated = k.write("crd2.yaml", &crd(&group, &short, true));
    c.run_ok(k, &["apply", "-f", &updated]);
    let mut header = String::new();
    for _ in 0..100 {
        header = k
            .run(&["get", &short, "-n", &ns])
            .stdout
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        if header.contains("IMAGE") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    c.contains("new column", &header, "IMAGE");

    // Deleting the CRD deletes its objects, then the resource is gone.
    c.run_ok(k, &["delete", "crd", &name, "--timeout=60s"]);
    let gone = k.run(&["get", "crd", &name]);
    c.check(!gone.success(), || {
        format!("the CRD is gone: {}", gone.describe())
    });
    let mut after = k.run(&["get", &resource, "-n", &ns]);
    for _ in 0..50 {
        if !after.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = k.run(&["get", &resource, "-n", &ns]);
    }
    c.check(!after.success(), || {
        format!("the resource is no longer served: {}", after.describe())
    });
    // Re-created, it starts empty.
    c.run_ok(k, &["apply", "-f", &file]);
    c.run_ok(
        k,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            &format!("crd/{name}"),
        ],
    );
    let listed = k.until(&["get", &resource, "-n", &ns, "-o", "name"], "");
    c.eq("re-created empty", listed.as_str(), "");
}

#[test]
fn custom_resources_through_kubectl() {
    let server = Server::start(&[]);
    each_kubectl(&server, journey);
}
