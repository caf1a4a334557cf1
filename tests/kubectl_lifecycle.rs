//! kubectl (the one on PATH, 1.27 and 1.33) watching and deleting on the real binary:
//! `get -w` (JSON watch events of a collection, table lines of one object) seeing
//! ADDED/MODIFIED/DELETED, `delete`, `wait --for=delete` across a finalizer, and
//! `delete namespace` removing everything in it.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::time::Duration;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, widget_v1};

/// The complete JSON values printed so far (kubectl prints one event per value).
fn json_values(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .collect()
}

/// The `(type, name, replicas)` of the watch events printed so far.
fn events(text: &str) -> Vec<(String, String, i64)> {
    json_values(text)
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["object"]["spec"]["replicas"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

#[test]
fn get_watch_sees_added_modified_deleted() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("watch");
        k.ok(&["create", "namespace", &ns]);
        k.ok_stdin(&["create", "-f", "-"], &widget_v1("before", &ns, 1, None));

        let watch = k.spawn(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-w",
            "--output-watch-events",
            "-o",
            "json",
            "--request-timeout=60s",
        ]);
        let listed = watch.wait_for(Duration::from_secs(30), |out| {
            events(out)
                .iter()
                .any(|e| e.0 == "ADDED" && e.1 == "before")
        });
        assert!(
            listed,
            "the watch never printed ADDED before: {}",
            watch.describe()
        );
        // An all-namespaces watch sees this namespace's changes too.
        let everywhere = k.spawn(&[
            "get",
            "widgets",
            "-A",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
            "--request-timeout=60s",
        ]);
        let listed_all = everywhere.wait_for(Duration::from_secs(30), |out| {
            json_values(out)
                .iter()
                .any(|e| e["object"]["metadata"]["namespace"] == ns.as_str())
        });
        assert!(
            listed_all,
            "the -A watch never listed {ns}: {}",
            everywhere.describe()
        );
        // A single-object watch prints table lines: first the current state, then each change.
        let table = k.spawn(&[
            "get",
            "widget",
            "before",
            "-n",
            &ns,
            "-w",
            "--request-timeout=60s",
        ]);
        let started = table.wait_for(Duration::from_secs(30), |out| {
            out.lines().any(|l| l.starts_with("before "))
        });
        assert!(
            started,
            "the single-object watch printed nothing: {}",
            table.describe()
        );

        k.ok_stdin(&["create", "-f", "-"], &widget_v1("w", &ns, 1, None));
        k.ok(&[
            "patch",
            "widget",
            "w",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":2}}"#,
        ]);
        k.ok(&["delete", "widget", "w", "-n", &ns]);
        k.ok(&["scale", "widget", "before", "-n", &ns, "--replicas=7"]);

        let done = watch.wait_for(Duration::from_secs(30), |out| {
            events(out)
                .iter()
                .any(|e| e.0 == "MODIFIED" && e.1 == "before")
        });
        c.check(done, || {
            format!("the watch did not see all changes: {}", watch.describe())
        });
        let mine = |out: &str| {
            json_values(out)
                .into_iter()
                .filter(|e| {
                    e["object"]["metadata"]["namespace"] == ns.as_str()
                        && e["object"]["metadata"]["name"] == "w"
                })
                .filter_map(|e| e["type"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        };
        let all_done = everywhere.wait_for(Duration::from_secs(30), |out| mine(out).len() >= 3);
        c.check(all_done, || {
            format!("the -A watch missed changes: {}", everywhere.describe())
        });
        c.eq(
            "-A watch events of w",
            mine(&everywhere.stdout()),
            ["ADDED", "MODIFIED", "DELETED"].map(String::from).to_vec(),
        );
        let seen: Vec<(String, String, i64)> = events(&watch.stdout());
        let expected: Vec<(String, String, i64)> = [
            ("ADDED", "before", 1),
            ("ADDED", "w", 1),
            ("MODIFIED", "w", 2),
            ("DELETED", "w", 2),
            ("MODIFIED", "before", 7),
        ]
        .iter()
        .map(|(t, n, r)| (t.to_string(), n.to_string(), *r))
        .collect();
        c.eq("watch events (type, name, replicas)", seen, expected);
        let values = json_values(&watch.stdout());
        let kinds_ok = values.iter().all(|v| {
            v["object"]["kind"] == "Widget" && v["object"]["apiVersion"] == "example.dev/v1"
        });
        c.check(kinds_ok, || {
            format!("watch objects without kind/apiVersion: {}", watch.stdout())
        });
        let rvs: Vec<u64> = values
            .iter()
            .filter_map(|v| {
                v["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
            })
            .collect();
        c.check(
            rvs.len() == values.len() && rvs.windows(2).all(|w| w[0] < w[1]),
            || format!("resourceVersions not increasing: {rvs:?}"),
        );

        let changed = table.wait_for(Duration::from_secs(30), |out| {
            out.lines()
                .any(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["before", "7"])
        });
        c.check(changed, || {
            format!(
                "the single-object watch did not print replicas 7: {}",
                table.describe()
            )
        });
        let lines: Vec<String> = table.stdout().lines().map(str::to_string).collect();
        c.eq(
            "single-object watch header",
            lines
                .first()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")),
            Some("NAME REPLICAS AGE".to_string()),
        );
        c.check(
            lines
                .iter()
                .all(|l| l.starts_with("NAME") || l.starts_with("before ")),
            || {
                format!(
                    "single-object watch printed other objects:\n{}",
                    lines.join("\n")
                )
            },
        );
    });
}

#[test]
fn delete_wait_and_namespace_deletion() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("del");
        k.ok(&["create", "namespace", &ns]);
        k.ok_stdin(&["create", "-f", "-"], &widget_v1("gone", &ns, 1, None));
        let out = c.run_ok(k, &["delete", "widget", "gone", "-n", &ns]).stdout;
        c.eq("delete", out.trim(), "widget.example.dev \"gone\" deleted");
        let run = k.run(&["get", "widget", "gone", "-n", &ns]);
        c.eq("get after delete exit code", run.code, Some(1));
        c.contains(
            "get after delete",
            &run.stderr,
            "Error from server (NotFound): widgets.example.dev \"gone\" not found",
        );
        let run = k.run(&["delete", "widget", "gone", "-n", &ns]);
        c.contains(
            "delete of a missing object",
            &run.stderr,
            "Error from server (NotFound): widgets.example.dev \"gone\" not found",
        );
        let run = c.run_ok(
            k,
            &["delete", "widget", "gone", "-n", &ns, "--ignore-not-found"],
        );
        c.eq("delete --ignore-not-found", run.stdout.as_str(), "");

        // A finalizer holds the object after deletion until it is removed.
        let held = format!(
            "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: held\n  namespace: {ns}\n  finalizers:\n  - example.dev/hold\nspec:\n  replicas: 1\n"
        );
        k.ok_stdin(&["create", "-f", "-"], &held);
        let out = c
            .run_ok(k, &["delete", "widget", "held", "-n", &ns, "--wait=false"])
            .stdout;
        c.eq(
            "delete with a finalizer",
            out.trim(),
            "widget.example.dev \"held\" deleted",
        );
        let obj = k.json(&["get", "widget", "held", "-n", &ns, "-o", "json"]);
        c.check(obj["metadata"]["deletionTimestamp"].is_string(), || {
            format!("no deletionTimestamp: {obj}")
        });
        c.eq(
            "finalizers while deleting",
            &obj["metadata"]["finalizers"],
            &serde_json::json!(["example.dev/hold"]),
        );
        let run = k.run(&[
            "wait",
            "--for=delete",
            "widget/held",
            "-n",
            &ns,
            "--timeout=2s",
        ]);
        c.eq("wait --for=delete while held: exit code", run.code, Some(1));
        c.contains(
            "wait --for=delete while held",
            &run.stderr,
            "timed out waiting for the condition",
        );
        let mut wait = k.spawn(&[
            "wait",
            "--for=delete",
            "widget/held",
            "-n",
            &ns,
            "--timeout=60s",
        ]);
        std::thread::sleep(Duration::from_millis(500));
        c.run_ok(
            k,
            &[
                "patch",
                "widget",
                "held",
                "-n",
                &ns,
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ],
        );
        let code = wait.wait_exit(Duration::from_secs(60));
        c.eq("wait --for=delete exit code", code, Some(0));
        c.contains(
            "wait --for=delete",
            &wait.stdout(),
            "widget.example.dev/held condition met",
        );
        let run = k.run(&[
            "wait",
            "--for=delete",
            "widget/held",
            "-n",
            &ns,
            "--timeout=5s",
        ]);
        c.check(run.success(), || {
            format!("wait --for=delete of a deleted object: {}", run.describe())
        });

        // Deleting a namespace deletes what it contains.
        let doomed = k.ns("doomed");
        k.ok(&["create", "namespace", &doomed]);
        k.ok(&[
            "create",
            "configmap",
            "cm",
            "-n",
            &doomed,
            "--from-literal=a=1",
        ]);
        k.ok(&[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            &doomed,
            "--from-literal=a=1",
        ]);
        k.ok_stdin(&["create", "-f", "-"], &widget_v1("w1", &doomed, 1, None));
        k.ok_stdin(&["create", "-f", "-"], &widget_v1("w2", &doomed, 2, None));
        let out = c
            .run_ok(k, &["delete", "namespace", &doomed, "--timeout=60s"])
            .stdout;
        c.eq(
            "delete namespace",
            out.trim(),
            &format!("namespace \"{doomed}\" deleted"),
        );
        let run = k.run(&[
            "wait",
            "--for=delete",
            &format!("namespace/{doomed}"),
            "--timeout=60s",
        ]);
        c.check(run.success(), || run.describe());
        let run = k.run(&["get", "namespace", &doomed]);
        c.contains(
            "get deleted namespace",
            &run.stderr,
            &format!("Error from server (NotFound): namespaces \"{doomed}\" not found"),
        );
        let left = k.ok(&[
            "get",
            "widgets,configmaps,secrets",
            "-A",
            "-o",
            "name",
            "--field-selector",
            &format!("metadata.namespace={doomed}"),
        ]);
        c.eq("objects left in the deleted namespace", left.as_str(), "");
        let run = k.run(&[
            "create",
            "configmap",
            "late",
            "-n",
            &doomed,
            "--from-literal=a=1",
        ]);
        c.check(!run.success(), || {
            format!("created in a deleted namespace: {}", run.describe())
        });
        c.contains(
            "create in a deleted namespace",
            &run.stderr,
            &format!("namespaces \"{doomed}\" not found"),
        );
        // Recreated with the same name, the namespace is empty.
        k.ok(&["create", "namespace", &doomed]);
        let run = k.run(&[
            "get",
            "widgets,configmaps,secrets",
            "-n",
            &doomed,
            "-o",
            "name",
        ]);
        c.check(run.success() && run.stdout.is_empty(), || {
            format!("recreated namespace is not empty: {}", run.describe())
        });

        // A finalizer inside a namespace holds the namespace in Terminating; new content is
        // refused; releasing the finalizer lets the namespace go.
        let held_ns = k.ns("held");
        k.ok(&["create", "namespace", &held_ns]);
        k.ok_stdin(
            &["create", "-f", "-"],
            &held.replace(
                &format!("namespace: {ns}"),
                &format!("namespace: {held_ns}"),
            ),
        );
        c.run_ok(k, &["delete", "namespace", &held_ns, "--wait=false"]);
        let terminating = k.json(&["get", "namespace", &held_ns, "-o", "json"]);
        c.eq(
            "namespace phase while content is held",
            terminating["status"]["phase"].as_str(),
            Some("Terminating"),
        );
        c.check(
            terminating["metadata"]["deletionTimestamp"].is_string(),
            || format!("no deletionTimestamp: {terminating}"),
        );
        // The namespace controller says what holds the namespace, in Kubernetes' words.
        for (condition, want) in [
            (
                "NamespaceContentRemaining",
                "True SomeResourcesRemain Some resources are remaining: widgets.example.dev has 1 resource instances",
            ),
            (
                "NamespaceFinalizersRemaining",
                "True SomeFinalizerRemain Some finalizers are remaining: example.dev/hold in 1 resource instances",
            ),
            (
                "NamespaceDeletionContentFailure",
                "False ContentDeleted All content successfully deleted, may be waiting on finalization",
            ),
        ] {
            let jsonpath = format!(
                "jsonpath={{.status.conditions[?(@.type==\"{condition}\")].status}} {{.status.conditions[?(@.type==\"{condition}\")].reason}} {{.status.conditions[?(@.type==\"{condition}\")].message}}"
            );
            let got = k.until(&["get", "namespace", &held_ns, "-o", &jsonpath], want);
            c.eq(condition, got.as_str(), want);
        }
        let run = k.run(&[
            "create",
            "configmap",
            "late",
            "-n",
            &held_ns,
            "--from-literal=a=1",
        ]);
        c.check(!run.success(), || {
            format!("created in a terminating namespace: {}", run.describe())
        });
        c.contains(
            "create in a terminating namespace",
            &run.stderr,
            &format!("configmaps \"late\" is forbidden: unable to create new content in namespace {held_ns} because it is being terminated"),
        );
        c.run_ok(
            k,
            &[
                "patch",
                "widget",
                "held",
                "-n",
                &held_ns,
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ],
        );
        let run = k.run(&[
            "wait",
            "--for=delete",
            &format!("namespace/{held_ns}"),
            "--timeout=60s",
        ]);
        c.check(run.success(), || {
            format!(
                "the namespace stayed after its content was released: {}",
                run.describe()
            )
        });

        // A finalizer of the namespace itself holds it in Terminating until the operator's
        // recipe: `replace --raw` of the `finalize` subresource without it.
        let stuck_ns = k.ns("stuck");
        let stuck = format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{stuck_ns}\"}},\"spec\":{{\"finalizers\":[\"example.com/hold\"]}}}}"
        );
        k.ok_stdin(&["create", "-f", "-"], &stuck);
        c.run_ok(k, &["delete", "namespace", &stuck_ns, "--wait=false"]);
        let held = k.json(&["get", "namespace", &stuck_ns, "-o", "json"]);
        c.eq(
            "a namespace held by its own finalizer",
            held["status"]["phase"].as_str(),
            Some("Terminating"),
        );
        let released = stuck.replace("[\"example.com/hold\"]", "[]");
        let file = k.write("released.json", &released);
        let run = k.run(&[
            "replace",
            "--raw",
            &format!("/api/v1/namespaces/{stuck_ns}/finalize"),
            "-f",
            &file,
        ]);
        c.check(run.success(), || {
            format!("replace --raw of finalize: {}", run.describe())
        });
        let run = k.run(&[
            "wait",
            "--for=delete",
            &format!("namespace/{stuck_ns}"),
            "--timeout=60s",
        ]);
        c.check(run.success(), || {
            format!(
                "the namespace stayed after its finalizers were removed: {}",
                run.describe()
            )
        });

        // Deleting by label selector.
        for (name, tier) in [("a", "first"), ("b", "first"), ("c", "second")] {
            let manifest = format!(
                "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels:\n    tier: {tier}\nspec:\n  replicas: 1\n"
            );
            k.ok_stdin(&["create", "-f", "-"], &manifest);
        }
        let out = c
            .run_ok(k, &["delete", "widgets", "-n", &ns, "-l", "tier=first"])
            .stdout;
        c.eq("delete -l lines", out.lines().count(), 2);
        let rest = k.ok(&["get", "widgets", "-n", &ns, "-o", "name"]);
        c.eq("left after delete -l", rest.trim(), "widget.example.dev/c");

        // Propagation policies and forced deletion: with no dependents, each deletes at once.
        for name in ["fg", "orphan", "forced"] {
            k.ok_stdin(&["create", "-f", "-"], &widget_v1(name, &ns, 1, None));
        }
        let out = c
            .run_ok(
                k,
                &[
                    "delete",
                    "widget",
                    "fg",
                    "-n",
                    &ns,
                    "--cascade=foreground",
                    "--timeout=30s",
                ],
            )
            .stdout;
        c.eq(
            "delete --cascade=foreground",
            out.trim(),
            "widget.example.dev \"fg\" deleted",
        );
        let out = c
            .run_ok(
                k,
                &[
                    "delete",
                    "widget",
                    "orphan",
                    "-n",
                    &ns,
                    "--cascade=orphan",
                    "--timeout=30s",
                ],
            )
            .stdout;
        c.eq(
            "delete --cascade=orphan",
            out.trim(),
            "widget.example.dev \"orphan\" deleted",
        );
        let run = c.run_ok(
            k,
            &[
                "delete",
                "widget",
                "forced",
                "-n",
                &ns,
                "--force",
                "--grace-period=0",
            ],
        );
        c.eq(
            "delete --force --grace-period=0",
            run.stdout.trim(),
            "widget.example.dev \"forced\" force deleted",
        );
        c.contains(
            "delete --force --grace-period=0",
            &run.stderr,
            "Immediate deletion does not wait for confirmation",
        );
        let rest = k.ok(&["get", "widgets", "-n", &ns, "-o", "name"]);
        c.eq(
            "left after cascading deletes",
            rest.trim(),
            "widget.example.dev/c",
        );
        let out = c
            .run_ok(k, &["delete", "widgets", "--all", "-n", &ns])
            .stdout;
        c.eq(
            "delete --all",
            out.trim(),
            "widget.example.dev \"c\" deleted",
        );
    });
}
