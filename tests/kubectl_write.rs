//! kubectl (the one on PATH, 1.27 and 1.33) changing objects on the real binary: client-side
//! `apply` (with the last-applied annotation), `apply --server-side` (conflicts with Apply and
//! Update managers, `--force-conflicts`), `diff`, `edit` with a non-interactive editor,
//! `patch` (merge, JSON, strategic for a ConfigMap, 415 for a Widget), `label`, `annotate` and
//! `scale`.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, widget_v1};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn get(k: &Kubectl, kind: &str, name: &str, ns: &str) -> serde_json::Value {
    k.json(&[
        "get",
        kind,
        name,
        "-n",
        ns,
        "-o",
        "json",
        "--show-managed-fields",
    ])
}

/// The managedFields entry of `manager`.
fn managed(obj: &serde_json::Value, manager: &str) -> Option<serde_json::Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|m| m["manager"] == manager)
        .cloned()
}

#[test]
fn client_side_apply_diff_and_edit() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("csa");
        k.ok(&["create", "namespace", &ns]);

        let file = k.write("app.yaml", &widget_v1("app", &ns, 2, Some("blue")));
        let out = c.run_ok(k, &["apply", "-f", &file]).stdout;
        c.eq("first apply", out.trim(), "widget.example.dev/app created");
        let obj = get(k, "widget", "app", &ns);
        let last: serde_json::Value = obj["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        c.eq(
            "last-applied spec",
            &last["spec"],
            &serde_json::json!({"replicas": 2, "color": "blue"}),
        );
        c.eq("last-applied kind", last["kind"].as_str(), Some("Widget"));
        c.check(
            managed(&obj, "kubectl-client-side-apply").is_some_and(|m| m["operation"] == "Update"),
            || format!("no kubectl-client-side-apply Update entry: {obj}"),
        );

        let out = c.run_ok(k, &["apply", "-f", &file]).stdout;
        c.eq(
            "apply unchanged",
            out.trim(),
            "widget.example.dev/app unchanged",
        );

        // Change replicas and drop color: the three-way merge removes what was last applied.
        k.write("app.yaml", &widget_v1("app", &ns, 4, None));
        let out = c.run_ok(k, &["apply", "-f", &file]).stdout;
        c.eq(
            "second apply",
            out.trim(),
            "widget.example.dev/app configured",
        );
        let obj = get(k, "widget", "app", &ns);
        c.eq(
            "applied spec",
            &obj["spec"],
            &serde_json::json!({"replicas": 4}),
        );
        c.eq(
            "generation after apply",
            obj["metadata"]["generation"].as_i64(),
            Some(2),
        );
        c.check(
            obj["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .is_some_and(|s| s.contains("\"replicas\":4") && !s.contains("color")),
            || format!("last-applied not updated: {obj}"),
        );

        // A ConfigMap is patched strategically: removing a key from the file removes it.
        let cm = k.write("cm.yaml", &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n  namespace: {ns}\ndata:\n  a: \"1\"\n  b: \"2\"\n"));
        c.run_ok(k, &["apply", "-f", &cm]);
        k.write("cm.yaml", &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n  namespace: {ns}\ndata:\n  a: \"10\"\n"));
        let out = c.run_ok(k, &["apply", "-f", &cm]).stdout;
        c.eq("configmap apply", out.trim(), "configmap/conf configured");
        let conf = get(k, "configmap", "conf", &ns);
        c.eq(
            "configmap data after apply",
            &conf["data"],
            &serde_json::json!({"a": "10"}),
        );

        // diff: exit 1 with a unified diff when the file differs, 0 when it matches; nothing
        // is written (dry run).
        k.write("app.yaml", &widget_v1("app", &ns, 7, None));
        let run = c.run_code(k, &["diff", "-f", &file], 1);
        c.check(
            run.stdout.lines().any(|l| l.trim_end() == "-  replicas: 4"),
            || format!("diff lacks -  replicas: 4:\n{}", run.stdout),
        );
        c.check(
            run.stdout.lines().any(|l| l.trim_end() == "+  replicas: 7"),
            || format!("diff lacks +  replicas: 7:\n{}", run.stdout),
        );
        let live = get(k, "widget", "app", &ns);
        c.eq(
            "replicas after diff",
            live["spec"]["replicas"].as_i64(),
            Some(4),
        );
        c.eq(
            "resourceVersion after diff",
            &live["metadata"]["resourceVersion"],
            &obj["metadata"]["resourceVersion"],
        );
        let new = k.write("new.yaml", &widget_v1("fresh", &ns, 1, None));
        let run = c.run_code(k, &["diff", "-f", &new], 1);
        c.check(
            run.stdout.lines().any(|l| l.trim_end() == "+  name: fresh"),
            || format!("diff of a new object:\n{}", run.stdout),
        );
        let run = k.run(&["get", "widget", "fresh", "-n", &ns]);
        c.check(!run.success(), || {
            format!("diff created the object: {}", run.describe())
        });
        c.run_ok(k, &["apply", "-f", &file]);
        let run = c.run_code(k, &["diff", "-f", &file], 0);
        c.eq("diff of an identical file", run.stdout.as_str(), "");

        // edit with a non-interactive editor rewriting the file with sed.
        let editor = k.write(
            "editor.sh",
            "#!/bin/sh\nsed -i 's/^  replicas: .*/  replicas: 9/' \"$1\"\n",
        );
        let chmod = std::process::Command::new("chmod")
            .args(["+x", &editor])
            .status();
        assert!(chmod.is_ok_and(|s| s.success()), "chmod {editor}");
        let run = k.run_with(
            &["edit", "widget", "app", "-n", &ns],
            &[("EDITOR", editor.as_str())],
            "",
        );
        c.check(run.success(), || run.describe());
        c.eq(
            "edit output",
            run.stdout.trim(),
            "widget.example.dev/app edited",
        );
        let obj = get(k, "widget", "app", &ns);
        c.eq(
            "replicas after edit",
            obj["spec"]["replicas"].as_i64(),
            Some(9),
        );
        c.check(managed(&obj, "kubectl-edit").is_some(), || {
            format!("no kubectl-edit manager: {obj}")
        });
        let noop = k.write("noop.sh", "#!/bin/sh\ntrue\n");
        let chmod = std::process::Command::new("chmod")
            .args(["+x", &noop])
            .status();
        assert!(chmod.is_ok_and(|s| s.success()), "chmod {noop}");
        let run = k.run_with(
            &["edit", "widget", "app", "-n", &ns],
            &[("EDITOR", noop.as_str())],
            "",
        );
        c.check(run.success(), || run.describe());
        c.contains(
            "edit without changes",
            &run.stderr,
            "Edit cancelled, no changes made.",
        );
    });
}

#[test]
fn server_side_apply_and_conflicts() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("ssa");
        k.ok(&["create", "namespace", &ns]);
        let file = k.write("s.yaml", &widget_v1("s", &ns, 2, None));
        let out = c.run_ok(k, &["apply", "--server-side", "-f", &file]).stdout;
        c.eq(
            "server-side apply",
            out.trim(),
            "widget.example.dev/s serverside-applied",
        );
        let obj = get(k, "widget", "s", &ns);
        c.eq(
            "applied replicas",
            obj["spec"]["replicas"].as_i64(),
            Some(2),
        );
        let entry = managed(&obj, "kubectl").unwrap_or_default();
        c.eq(
            "kubectl manager operation",
            entry["operation"].as_str(),
            Some("Apply"),
        );
        c.eq(
            "kubectl manager apiVersion",
            entry["apiVersion"].as_str(),
            Some("example.dev/v1"),
        );
        c.eq(
            "kubectl manager fieldsType",
            entry["fieldsType"].as_str(),
            Some("FieldsV1"),
        );
        c.check(
            entry["fieldsV1"]["f:spec"]["f:replicas"].is_object(),
            || format!("kubectl does not own spec.replicas: {entry}"),
        );
        c.check(
            obj["metadata"]["annotations"][LAST_APPLIED].is_null(),
            || format!("server-side apply wrote last-applied: {obj}"),
        );

        let again = c.run_ok(k, &["apply", "--server-side", "-f", &file]).stdout;
        c.eq(
            "re-apply",
            again.trim(),
            "widget.example.dev/s serverside-applied",
        );
        let same = get(k, "widget", "s", &ns);
        c.eq(
            "re-apply keeps resourceVersion",
            &same["metadata"]["resourceVersion"],
            &obj["metadata"]["resourceVersion"],
        );

        // Another Apply manager setting the same field differently conflicts.
        k.write("s.yaml", &widget_v1("s", &ns, 4, None));
        let run = k.run(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &file,
        ]);
        c.check(!run.success(), || {
            format!("conflicting apply succeeded: {}", run.describe())
        });
        c.contains(
            "apply conflict",
            &run.stderr,
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas",
        );
        c.contains("apply conflict", &run.stderr, "--force-conflicts");
        let unchanged = get(k, "widget", "s", &ns);
        c.eq(
            "replicas after conflict",
            unchanged["spec"]["replicas"].as_i64(),
            Some(2),
        );

        let out = c
            .run_ok(
                k,
                &[
                    "apply",
                    "--server-side",
                    "--field-manager=other",
                    "--force-conflicts",
                    "-f",
                    &file,
                ],
            )
            .stdout;
        c.eq(
            "forced apply",
            out.trim(),
            "widget.example.dev/s serverside-applied",
        );
        let forced = get(k, "widget", "s", &ns);
        c.eq(
            "replicas after force",
            forced["spec"]["replicas"].as_i64(),
            Some(4),
        );
        let other = managed(&forced, "other").unwrap_or_default();
        c.check(
            other["fieldsV1"]["f:spec"]["f:replicas"].is_object(),
            || format!("other does not own spec.replicas: {forced}"),
        );
        let kubectl_owns = managed(&forced, "kubectl")
            .is_some_and(|m| m["fieldsV1"]["f:spec"]["f:replicas"].is_object());
        c.check(!kubectl_owns, || {
            format!("kubectl still owns spec.replicas after force: {forced}")
        });

        // A field last written by an Update manager conflicts with "<manager>" using <apiVersion>.
        c.run_ok(
            k,
            &[
                "patch",
                "widget",
                "s",
                "-n",
                &ns,
                "--type=merge",
                "-p",
                r#"{"spec":{"color":"green"}}"#,
            ],
        );
        k.write("c.yaml", &widget_v1("s", &ns, 4, Some("yellow")));
        let cfile = k.work_dir().join("c.yaml").to_string_lossy().into_owned();
        let run = k.run(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &cfile,
        ]);
        c.check(!run.success(), || {
            format!("apply over a patched field succeeded: {}", run.describe())
        });
        c.contains(
            "conflict with an Update manager",
            &run.stderr,
            "conflict with \"kubectl-patch\" using example.dev/v1: .spec.color",
        );
        c.run_ok(
            k,
            &[
                "apply",
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
                "-f",
                &cfile,
            ],
        );
        let colored = get(k, "widget", "s", &ns);
        c.eq(
            "color after forced apply",
            colored["spec"]["color"].as_str(),
            Some("yellow"),
        );

        // Moving from client-side to server-side apply: kubectl hands the client-side manager's
        // fields to its own with a JSON patch of managedFields, so a field later dropped from
        // the manifest is removed.
        let mig = k.write("mig.yaml", &widget_v1("mig", &ns, 2, Some("blue")));
        c.run_ok(k, &["apply", "-f", &mig]);
        let out = c.run_ok(k, &["apply", "--server-side", "-f", &mig]).stdout;
        c.eq(
            "server-side apply after client-side apply",
            out.trim(),
            "widget.example.dev/mig serverside-applied",
        );
        let migrated = get(k, "widget", "mig", &ns);
        c.check(
            managed(&migrated, "kubectl-client-side-apply").is_none(),
            || format!("client-side manager not migrated: {migrated}"),
        );
        let owns = managed(&migrated, "kubectl").is_some_and(|m| {
            m["operation"] == "Apply" && m["fieldsV1"]["f:spec"]["f:color"].is_object()
        });
        c.check(owns, || {
            format!("kubectl does not own spec.color after migration: {migrated}")
        });
        k.write("mig.yaml", &widget_v1("mig", &ns, 2, None));
        c.run_ok(k, &["apply", "--server-side", "-f", &mig]);
        let dropped = get(k, "widget", "mig", &ns);
        c.eq(
            "spec after dropping color",
            &dropped["spec"],
            &serde_json::json!({"replicas": 2}),
        );

        // Server-side apply creates, and a ConfigMap keeps fields of other managers.
        let cm = k.write("cm.yaml", &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-cm\n  namespace: {ns}\ndata:\n  a: \"1\"\n"));
        let out = c.run_ok(k, &["apply", "--server-side", "-f", &cm]).stdout;
        c.eq(
            "server-side apply of a ConfigMap",
            out.trim(),
            "configmap/ssa-cm serverside-applied",
        );
        c.run_ok(
            k,
            &[
                "patch",
                "configmap",
                "ssa-cm",
                "-n",
                &ns,
                "-p",
                r#"{"data":{"b":"2"}}"#,
            ],
        );
        c.run_ok(k, &["apply", "--server-side", "-f", &cm]);
        let conf = get(k, "configmap", "ssa-cm", &ns);
        c.eq(
            "configmap data after re-apply",
            &conf["data"],
            &serde_json::json!({"a": "1", "b": "2"}),
        );
    });
}

#[test]
fn patch_label_annotate_and_scale() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("patch");
        k.ok(&["create", "namespace", &ns]);
        k.ok_stdin(
            &["create", "-f", "-"],
            &widget_v1("p", &ns, 1, Some("blue")),
        );

        let out = c
            .run_ok(
                k,
                &[
                    "patch",
                    "widget",
                    "p",
                    "-n",
                    &ns,
                    "--type=merge",
                    "-p",
                    r#"{"spec":{"color":"green"}}"#,
                ],
            )
            .stdout;
        c.eq("merge patch", out.trim(), "widget.example.dev/p patched");
        let out = c
            .run_ok(
                k,
                &[
                    "patch",
                    "widget",
                    "p",
                    "-n",
                    &ns,
                    "--type=merge",
                    "-p",
                    r#"{"spec":{"color":"green"}}"#,
                ],
            )
            .stdout;
        c.eq(
            "no-op merge patch",
            out.trim(),
            "widget.example.dev/p patched (no change)",
        );
        let out = c
            .run_ok(
                k,
                &[
                    "patch",
                    "widget",
                    "p",
                    "-n",
                    &ns,
                    "--type=json",
                    "-p",
                    r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
                ],
            )
            .stdout;
        c.eq("json patch", out.trim(), "widget.example.dev/p patched");
        let obj = get(k, "widget", "p", &ns);
        c.eq(
            "spec after patches",
            &obj["spec"],
            &serde_json::json!({"replicas": 5, "color": "green"}),
        );
        c.eq(
            "generation after patches",
            obj["metadata"]["generation"].as_i64(),
            Some(3),
        );
        c.check(
            managed(&obj, "kubectl-patch").is_some_and(|m| m["operation"] == "Update"),
            || format!("no kubectl-patch entry: {obj}"),
        );

        let run = k.run(&[
            "patch",
            "widget",
            "p",
            "-n",
            &ns,
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/replicas","value":6}]"#,
        ]);
        c.check(!run.success(), || {
            format!("failing JSON patch test op succeeded: {}", run.describe())
        });
        let run = k.run(&[
            "patch",
            "widget",
            "p",
            "-n",
            &ns,
            "-p",
            r#"{"spec":{"color":"red"}}"#,
        ]);
        c.check(!run.success(), || {
            format!(
                "strategic merge patch of a Widget succeeded: {}",
                run.describe()
            )
        });
        c.contains(
            "strategic patch of a Widget",
            &run.stderr,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        );

        k.ok(&["create", "configmap", "pc", "-n", &ns, "--from-literal=a=1"]);
        let out = c
            .run_ok(
                k,
                &[
                    "patch",
                    "configmap",
                    "pc",
                    "-n",
                    &ns,
                    "-p",
                    r#"{"data":{"c":"3"}}"#,
                ],
            )
            .stdout;
        c.eq(
            "strategic patch of a ConfigMap",
            out.trim(),
            "configmap/pc patched",
        );
        c.run_ok(
            k,
            &[
                "patch",
                "configmap",
                "pc",
                "-n",
                &ns,
                "--type=strategic",
                "-p",
                r#"{"data":{"a":null}}"#,
            ],
        );
        let pc = get(k, "configmap", "pc", &ns);
        c.eq(
            "configmap data after strategic patches",
            &pc["data"],
            &serde_json::json!({"c": "3"}),
        );

        let out = c
            .run_ok(k, &["label", "widget", "p", "-n", &ns, "tier=gold"])
            .stdout;
        c.eq("label", out.trim(), "widget.example.dev/p labeled");
        let run = k.run(&["label", "widget", "p", "-n", &ns, "tier=silver"]);
        c.check(!run.success(), || {
            format!("relabel without --overwrite succeeded: {}", run.describe())
        });
        c.contains(
            "relabel without --overwrite",
            &run.stderr,
            "already has a value (gold)",
        );
        c.run_ok(
            k,
            &[
                "label",
                "widget",
                "p",
                "-n",
                &ns,
                "tier=silver",
                "--overwrite",
            ],
        );
        let selected = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-l",
            "tier=silver",
            "-o",
            "name",
        ]);
        c.eq(
            "selected by the new label",
            selected.trim(),
            "widget.example.dev/p",
        );
        let out = c
            .run_ok(k, &["label", "widget", "p", "-n", &ns, "tier-"])
            .stdout;
        c.eq("unlabel", out.trim(), "widget.example.dev/p unlabeled");
        let obj = get(k, "widget", "p", &ns);
        c.check(obj["metadata"]["labels"]["tier"].is_null(), || {
            format!("label not removed: {obj}")
        });

        let out = c
            .run_ok(
                k,
                &["annotate", "widget", "p", "-n", &ns, "note=hello world"],
            )
            .stdout;
        // kubectl 1.27 prints "annotate" where later versions print "annotated".
        let expected = if k.label == "k127" {
            "widget.example.dev/p annotate"
        } else {
            "widget.example.dev/p annotated"
        };
        c.eq("annotate", out.trim(), expected);
        let obj = get(k, "widget", "p", &ns);
        c.eq(
            "annotation",
            obj["metadata"]["annotations"]["note"].as_str(),
            Some("hello world"),
        );
        c.check(managed(&obj, "kubectl-annotate").is_some(), || {
            format!("no kubectl-annotate entry: {obj}")
        });
        c.run_ok(k, &["annotate", "widget", "p", "-n", &ns, "note-"]);
        let obj = get(k, "widget", "p", &ns);
        c.check(obj["metadata"]["annotations"]["note"].is_null(), || {
            format!("annotation not removed: {obj}")
        });

        let out = c
            .run_ok(k, &["scale", "widget/p", "-n", &ns, "--replicas=3"])
            .stdout;
        c.eq("scale", out.trim(), "widget.example.dev/p scaled");
        let obj = get(k, "widget", "p", &ns);
        c.eq(
            "replicas after scale",
            obj["spec"]["replicas"].as_i64(),
            Some(3),
        );
        let run = k.run(&[
            "scale",
            "widget/p",
            "-n",
            &ns,
            "--current-replicas=2",
            "--replicas=8",
        ]);
        c.check(!run.success(), || {
            format!(
                "scale with a wrong --current-replicas succeeded: {}",
                run.describe()
            )
        });
        c.run_ok(
            k,
            &[
                "scale",
                "widget/p",
                "-n",
                &ns,
                "--current-replicas=3",
                "--replicas=6",
            ],
        );
        let obj = get(k, "widget", "p", &ns);
        c.eq(
            "replicas after conditional scale",
            obj["spec"]["replicas"].as_i64(),
            Some(6),
        );
        let run = k.run(&["scale", "widget/p", "-n", &ns, "--replicas=-1"]);
        c.check(!run.success(), || {
            format!("negative scale succeeded: {}", run.describe())
        });
    });
}

#[test]
fn manifests_dry_run_replace_and_subresources() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        // A directory of manifests: a namespace, a ConfigMap and a Widget.
        let ns = k.ns("dir");
        let dir = k.work_dir().join("manifests");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let files = [
            (
                "0-namespace.yaml",
                format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"),
            ),
            (
                "1-configmap.yaml",
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n  namespace: {ns}\ndata:\n  a: \"1\"\n"
                ),
            ),
            ("2-widget.yaml", widget_v1("w", &ns, 2, None)),
        ];
        for (name, content) in &files {
            std::fs::write(dir.join(name), content).unwrap_or_else(|e| panic!("{e}"));
        }
        let dir = dir.to_string_lossy().into_owned();
        let out = c.run_ok(k, &["apply", "-f", &dir]).stdout;
        c.eq(
            "apply -f dir",
            out.lines().collect::<Vec<_>>(),
            vec![
                &format!("namespace/{ns} created") as &str,
                "configmap/conf created",
                "widget.example.dev/w created",
            ],
        );
        let out = c.run_ok(k, &["apply", "-f", &dir]).stdout;
        c.eq(
            "apply -f dir again",
            out.lines().filter(|l| l.ends_with(" unchanged")).count(),
            3,
        );

        // Server-side dry runs validate and answer, and change nothing.
        let dry = k.write("dry.yaml", &widget_v1("dry", &ns, 1, None));
        let out = c
            .run_ok(k, &["create", "-f", &dry, "--dry-run=server"])
            .stdout;
        c.eq(
            "create --dry-run=server",
            out.trim(),
            "widget.example.dev/dry created (server dry run)",
        );
        let obj = c
            .run_ok(k, &["create", "-f", &dry, "--dry-run=server", "-o", "json"])
            .stdout;
        let obj: serde_json::Value = serde_json::from_str(&obj).unwrap_or_default();
        c.check(
            obj["metadata"]["uid"].is_string() && obj["metadata"]["creationTimestamp"].is_string(),
            || format!("dry-run object: {obj}"),
        );
        let run = k.run(&["get", "widget", "dry", "-n", &ns]);
        c.check(!run.success(), || {
            format!("dry-run create persisted: {}", run.describe())
        });
        let bad = k.write("bad.yaml", &widget_v1("bad", &ns, -1, None));
        let run = k.run(&["create", "-f", &bad, "--dry-run=server"]);
        c.check(!run.success(), || {
            format!("invalid dry-run create succeeded: {}", run.describe())
        });
        c.contains(
            "invalid dry-run create",
            &run.stderr,
            "must be greater than or equal to 0",
        );
        let out = c
            .run_ok(k, &["create", "-f", &dry, "--dry-run=client"])
            .stdout;
        c.eq(
            "create --dry-run=client",
            out.trim(),
            "widget.example.dev/dry created (dry run)",
        );
        let changed = k.write("w.yaml", &widget_v1("w", &ns, 5, None));
        let out = c
            .run_ok(k, &["apply", "-f", &changed, "--dry-run=server"])
            .stdout;
        c.eq(
            "apply --dry-run=server",
            out.trim(),
            "widget.example.dev/w configured (server dry run)",
        );
        let out = c
            .run_ok(k, &["delete", "-f", &changed, "--dry-run=server"])
            .stdout;
        c.eq(
            "delete --dry-run=server",
            out.trim(),
            "widget.example.dev \"w\" deleted (server dry run)",
        );
        let live = k.json(&["get", "widget", "w", "-n", &ns, "-o", "json"]);
        c.eq(
            "replicas after dry runs",
            live["spec"]["replicas"].as_i64(),
            Some(2),
        );

        // generateName.
        let generated = format!(
            "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  generateName: gen-\n  namespace: {ns}\nspec:\n  replicas: 1\n"
        );
        let out = c
            .run_ok(k, &["create", "-f", &k.write("gen.yaml", &generated)])
            .stdout;
        let name = out
            .trim()
            .strip_prefix("widget.example.dev/")
            .and_then(|s| s.strip_suffix(" created"))
            .unwrap_or_default()
            .to_string();
        c.check(
            name.len() == 9
                && name.starts_with("gen-")
                && name[4..]
                    .chars()
                    .all(|ch| "bcdfghjklmnpqrstvwxz2456789".contains(ch)),
            || format!("generateName output: {out}"),
        );

        // replace and replace --force.
        let out = c.run_ok(k, &["replace", "-f", &changed]).stdout;
        c.eq("replace", out.trim(), "widget.example.dev/w replaced");
        let replaced = k.json(&["get", "widget", "w", "-n", &ns, "-o", "json"]);
        c.eq(
            "replicas after replace",
            replaced["spec"]["replicas"].as_i64(),
            Some(5),
        );
        let out = c.run_ok(k, &["replace", "--force", "-f", &changed]).stdout;
        c.eq(
            "replace --force",
            out.lines().collect::<Vec<_>>(),
            vec![
                "widget.example.dev \"w\" deleted",
                "widget.example.dev/w replaced",
            ],
        );
        let forced = k.json(&["get", "widget", "w", "-n", &ns, "-o", "json"]);
        c.check(
            forced["metadata"]["uid"] != replaced["metadata"]["uid"],
            || "replace --force kept the uid".to_string(),
        );

        // The status and scale subresources through kubectl.
        let out = c
            .run_ok(
                k,
                &[
                    "patch",
                    "widget",
                    "w",
                    "-n",
                    &ns,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    r#"{"status":{"replicas":3,"selector":"app=w"},"spec":{"replicas":9}}"#,
                ],
            )
            .stdout;
        c.eq(
            "patch --subresource=status",
            out.trim(),
            "widget.example.dev/w patched",
        );
        let run = c.run_ok(
            k,
            &[
                "wait",
                "--for=jsonpath={.status.replicas}=3",
                "widget/w",
                "-n",
                &ns,
                "--timeout=30s",
            ],
        );
        c.eq(
            "wait --for=jsonpath",
            run.stdout.trim(),
            "widget.example.dev/w condition met",
        );
        let status = k.json(&[
            "get",
            "widget",
            "w",
            "-n",
            &ns,
            "--subresource=status",
            "-o",
            "json",
        ]);
        c.eq(
            "status",
            &status["status"],
            &serde_json::json!({"replicas": 3, "selector": "app=w"}),
        );
        c.eq(
            "spec unchanged by a status patch",
            status["spec"]["replicas"].as_i64(),
            Some(5),
        );
        let scale = k.json(&[
            "get",
            "widget",
            "w",
            "-n",
            &ns,
            "--subresource=scale",
            "-o",
            "json",
        ]);
        c.eq("scale kind", scale["kind"].as_str(), Some("Scale"));
        c.eq(
            "scale apiVersion",
            scale["apiVersion"].as_str(),
            Some("autoscaling/v1"),
        );
        c.eq(
            "scale spec",
            &scale["spec"],
            &serde_json::json!({"replicas": 5}),
        );
        c.eq(
            "scale status",
            &scale["status"],
            &serde_json::json!({"replicas": 3, "selector": "app=w"}),
        );
        let labels = k.ok(&["get", "widgets", "-n", &ns, "--show-labels", "-L", "tier"]);
        let head: Vec<&str> = labels
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        c.eq(
            "--show-labels -L tier header",
            head,
            vec!["NAME", "REPLICAS", "AGE", "TIER", "LABELS"],
        );

        // delete -f of the manifests, contents first (deleting the namespace first would race
        // with the namespace's own cleanup of its contents).
        let file = |name: &str| format!("{dir}/{name}");
        let (w, cm, nsfile) = (
            file("2-widget.yaml"),
            file("1-configmap.yaml"),
            file("0-namespace.yaml"),
        );
        let out = c
            .run_ok(
                k,
                &[
                    "delete",
                    "-f",
                    &w,
                    "-f",
                    &cm,
                    "-f",
                    &nsfile,
                    "--timeout=60s",
                ],
            )
            .stdout;
        c.eq(
            "delete -f",
            out.lines().collect::<Vec<_>>(),
            vec![
                "widget.example.dev \"w\" deleted",
                "configmap \"conf\" deleted",
                &format!("namespace \"{ns}\" deleted") as &str,
            ],
        );
        let run = k.run(&["get", "namespace", &ns]);
        c.check(!run.success(), || {
            format!("namespace survived delete -f: {}", run.describe())
        });
    });
}
