//! kubectl (the one on PATH, 1.27 and 1.33) and the two Widget versions on the real binary:
//! written at `example.dev/v1alpha1` (`spec.size`) and read at `v1` (`spec.replicas`) and the
//! other way round; validation errors with Kubernetes' messages (minimum, maximum, pattern,
//! the CEL rule); unknown fields under `--validate=strict|warn|false`.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, widget_v1};

fn widget_v1alpha1(name: &str, ns: &str, size: i64) -> String {
    format!(
        "apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  size: {size}\n  color: green\n"
    )
}

#[test]
fn widget_versions_convert() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("versions");
        k.ok(&["create", "namespace", &ns]);

        // Written at v1alpha1, read at v1.
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "-f",
                    &k.write("alpha.yaml", &widget_v1alpha1("alpha", &ns, 5)),
                ],
            )
            .stdout;
        c.eq(
            "create v1alpha1",
            out.trim(),
            "widget.example.dev/alpha created",
        );
        let v1 = k.json(&[
            "get",
            "widgets.v1.example.dev",
            "alpha",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1 apiVersion",
            v1["apiVersion"].as_str(),
            Some("example.dev/v1"),
        );
        c.eq(
            "v1 spec",
            &v1["spec"],
            &serde_json::json!({"replicas": 5, "color": "green"}),
        );
        let preferred = k.json(&["get", "widgets", "alpha", "-n", &ns, "-o", "json"]);
        c.eq(
            "preferred version",
            preferred["apiVersion"].as_str(),
            Some("example.dev/v1"),
        );
        let back = k.json(&[
            "get",
            "widgets.v1alpha1.example.dev",
            "alpha",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1alpha1 apiVersion",
            back["apiVersion"].as_str(),
            Some("example.dev/v1alpha1"),
        );
        c.eq(
            "v1alpha1 spec",
            &back["spec"],
            &serde_json::json!({"size": 5, "color": "green"}),
        );
        c.eq(
            "same uid at both versions",
            &back["metadata"]["uid"],
            &v1["metadata"]["uid"],
        );

        // Written at v1, read at v1alpha1.
        k.ok_stdin(
            &["create", "-f", "-"],
            &widget_v1("stable", &ns, 7, Some("blue")),
        );
        let alpha = k.json(&[
            "get",
            "widgets.v1alpha1.example.dev",
            "stable",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1alpha1 of a v1 write",
            &alpha["spec"],
            &serde_json::json!({"size": 7, "color": "blue"}),
        );
        c.eq("v1alpha1 kind", alpha["kind"].as_str(), Some("Widget"));
        let list = k.json(&[
            "get",
            "widgets.v1alpha1.example.dev",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        let sizes: Vec<i64> = kubectl::items(&list)
            .iter()
            .filter_map(|i| i["spec"]["size"].as_i64())
            .collect();
        c.eq("v1alpha1 list sizes", sizes, vec![5, 7]);

        // Tables at v1alpha1 use its printer columns.
        let table = k.ok(&["get", "widgets.v1alpha1.example.dev", "-n", &ns]);
        let head: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        c.eq("v1alpha1 table header", head, vec!["NAME", "SIZE", "AGE"]);

        // Changes through one version show in the other.
        c.run_ok(
            k,
            &[
                "patch",
                "widgets.v1alpha1.example.dev",
                "stable",
                "-n",
                &ns,
                "--type=merge",
                "-p",
                r#"{"spec":{"size":9}}"#,
            ],
        );
        let v1 = k.json(&[
            "get",
            "widgets.v1.example.dev",
            "stable",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1 after a v1alpha1 patch",
            v1["spec"]["replicas"].as_i64(),
            Some(9),
        );
        c.run_ok(
            k,
            &[
                "scale",
                "widgets.v1alpha1.example.dev/stable",
                "-n",
                &ns,
                "--replicas=4",
            ],
        );
        let v1 = k.json(&[
            "get",
            "widgets.v1.example.dev",
            "stable",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1 after a v1alpha1 scale",
            v1["spec"]["replicas"].as_i64(),
            Some(4),
        );

        // Applying a v1alpha1 manifest and changing it.
        let file = k.write("applied.yaml", &widget_v1alpha1("applied", &ns, 2));
        c.run_ok(k, &["apply", "-f", &file]);
        k.write("applied.yaml", &widget_v1alpha1("applied", &ns, 3));
        let out = c.run_ok(k, &["apply", "-f", &file]).stdout;
        c.eq(
            "re-apply v1alpha1",
            out.trim(),
            "widget.example.dev/applied configured",
        );
        let v1 = k.json(&[
            "get",
            "widgets.v1.example.dev",
            "applied",
            "-n",
            &ns,
            "-o",
            "json",
        ]);
        c.eq(
            "v1 of an applied v1alpha1 manifest",
            v1["spec"]["replicas"].as_i64(),
            Some(3),
        );
        let out = c.run_ok(k, &["apply", "--server-side", "-f", &file]).stdout;
        c.eq(
            "server-side apply v1alpha1",
            out.trim(),
            "widget.example.dev/applied serverside-applied",
        );
    });
}

#[test]
fn widget_validation_errors() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("invalid");
        k.ok(&["create", "namespace", &ns]);

        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1("neg", &ns, -1, None),
        );
        c.eq("replicas -1 exit code", run.code, Some(1));
        c.eq(
            "replicas -1 message",
            run.stderr.trim(),
            "The Widget \"neg\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        );
        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1("big", &ns, 1001, None),
        );
        c.eq("replicas 1001 exit code", run.code, Some(1));
        c.eq(
            "replicas 1001 message",
            run.stderr.trim(),
            "The Widget \"big\" is invalid: spec.replicas: Invalid value: 1001: must be less than or equal to 1000",
        );
        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1("caps", &ns, 1, Some("Blue")),
        );
        c.eq("color Blue exit code", run.code, Some(1));
        c.contains(
            "color Blue",
            &run.stderr,
            "The Widget \"caps\" is invalid: spec.color: Invalid value: \"Blue\": ",
        );
        c.contains("color Blue", &run.stderr, "^[a-z]+$");

        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1("red", &ns, 200, Some("red")),
        );
        c.eq("red with 200 replicas exit code", run.code, Some(1));
        c.contains(
            "red with 200 replicas",
            &run.stderr,
            "The Widget \"red\" is invalid: ",
        );
        c.contains(
            "red with 200 replicas",
            &run.stderr,
            "Invalid value: \"object\": a red widget may have at most 100 replicas",
        );
        k.ok_stdin(
            &["create", "-f", "-"],
            &widget_v1("red", &ns, 100, Some("red")),
        );
        let run = k.run(&["scale", "widget/red", "-n", &ns, "--replicas=101"]);
        c.check(!run.success(), || {
            format!(
                "scaling a red widget over 100 succeeded: {}",
                run.describe()
            )
        });
        c.contains(
            "scale red to 101",
            &run.stderr,
            "a red widget may have at most 100 replicas",
        );
        let run = k.run(&[
            "patch",
            "widget",
            "red",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":-5}}"#,
        ]);
        c.eq("patch to -5 exit code", run.code, Some(1));
        c.contains(
            "patch to -5",
            &run.stderr,
            "spec.replicas: Invalid value: -5: must be greater than or equal to 0",
        );
        let obj = k.json(&["get", "widget", "red", "-n", &ns, "-o", "json"]);
        c.eq(
            "replicas after rejected writes",
            obj["spec"]["replicas"].as_i64(),
            Some(100),
        );

        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1alpha1("alphaneg", &ns, -1),
        );
        c.eq("v1alpha1 size -1 exit code", run.code, Some(1));
        c.contains(
            "v1alpha1 size -1",
            &run.stderr,
            "The Widget \"alphaneg\" is invalid: ",
        );
        c.contains(
            "v1alpha1 size -1",
            &run.stderr,
            "Invalid value: -1: must be greater than or equal to 0",
        );

        // Object names and labels are validated with Kubernetes' messages.
        let run = k.run(&["create", "namespace", "Bad_Name"]);
        c.eq("invalid namespace name exit code", run.code, Some(1));
        c.contains(
            "invalid namespace name",
            &run.stderr,
            "The Namespace \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        );
        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget_v1("Bad_Name", &ns, 1, None),
        );
        c.eq("invalid widget name exit code", run.code, Some(1));
        c.contains(
            "invalid widget name",
            &run.stderr,
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        );
        let run = k.run(&["label", "widget", "red", "-n", &ns, "bad label=x"]);
        c.check(!run.success(), || {
            format!("an invalid label key was accepted: {}", run.describe())
        });
        c.contains("invalid label key", &run.stderr, "metadata.labels: Invalid value: \"bad label\": name part must consist of alphanumeric characters");

        // Defaulting: replicas defaults to 1.
        let defaulted = format!(
            "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: dflt\n  namespace: {ns}\nspec: {{}}\n"
        );
        k.ok_stdin(&["create", "-f", "-"], &defaulted);
        let obj = k.json(&["get", "widget", "dflt", "-n", &ns, "-o", "json"]);
        c.eq(
            "defaulted replicas",
            obj["spec"]["replicas"].as_i64(),
            Some(1),
        );

        // Unknown fields.
        let unknown = format!(
            "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: unknown\n  namespace: {ns}\nspec:\n  replicas: 1\n  foo: 1\n"
        );
        let file = k.write("unknown.yaml", &unknown);
        let run = k.run(&["create", "-f", &file, "--validate=strict"]);
        c.eq("--validate=strict exit code", run.code, Some(1));
        c.contains(
            "--validate=strict",
            &run.stderr,
            "unknown field \"spec.foo\"",
        );
        let run = k.run(&["create", "-f", &file]);
        c.eq("default validation exit code", run.code, Some(1));
        c.contains(
            "default validation (strict)",
            &run.stderr,
            "unknown field \"spec.foo\"",
        );
        let run = k.run(&["get", "widget", "unknown", "-n", &ns]);
        c.check(!run.success(), || {
            format!("a strictly rejected object exists: {}", run.describe())
        });
        let run = k.run(&["create", "-f", &file, "--validate=warn"]);
        c.check(run.success(), || run.describe());
        c.contains(
            "--validate=warn",
            &run.stderr,
            "Warning: unknown field \"spec.foo\"",
        );
        let obj = k.json(&["get", "widget", "unknown", "-n", &ns, "-o", "json"]);
        c.eq(
            "unknown field dropped",
            &obj["spec"],
            &serde_json::json!({"replicas": 1}),
        );
        let file2 = k.write(
            "unknown2.yaml",
            &unknown.replace("name: unknown", "name: unknown2"),
        );
        let run = k.run(&["create", "-f", &file2, "--validate=false"]);
        c.check(run.success(), || run.describe());
        let run = k.run(&[
            "apply",
            "--server-side",
            "-f",
            &k.write(
                "unknown3.yaml",
                &unknown.replace("name: unknown", "name: unknown3"),
            ),
        ]);
        c.check(!run.success(), || {
            format!(
                "server-side apply with an unknown field succeeded: {}",
                run.describe()
            )
        });
        c.contains(
            "server-side apply --validate=strict",
            &run.stderr,
            "unknown field \"spec.foo\"",
        );
    });
}
