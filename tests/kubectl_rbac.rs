//! kubectl (the one on PATH, 1.27 and 1.33) on the real binary for the rest of the everyday
//! commands: `create role|rolebinding|clusterrole|clusterrolebinding|serviceaccount` with their
//! Kubernetes tables, `describe`, `get all` (the `all` category), and client-side output
//! formats (`--sort-by`, `-o custom-columns`, `-o jsonpath`).

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, widget_v1};

/// The whitespace-separated cells of each line.
fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn rbac_objects_describe_and_output_formats() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("rbac");
        k.ok(&["create", "namespace", &ns]);

        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "role",
                    "reader",
                    "--verb=get,list,watch",
                    "--resource=widgets.example.dev,configmaps",
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq(
            "create role",
            out.trim(),
            "role.rbac.authorization.k8s.io/reader created",
        );
        let role = k.json(&["get", "role", "reader", "-n", &ns, "-o", "json"]);
        c.eq(
            "role rules",
            &role["rules"],
            &serde_json::json!([
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["example.dev"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}
            ]),
        );
        let out = c
            .run_ok(k, &["create", "serviceaccount", "robot", "-n", &ns])
            .stdout;
        c.eq(
            "create serviceaccount",
            out.trim(),
            "serviceaccount/robot created",
        );
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "rolebinding",
                    "read",
                    "--role=reader",
                    "--user=bob",
                    "--group=devs",
                    &format!("--serviceaccount={ns}:robot"),
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq(
            "create rolebinding",
            out.trim(),
            "rolebinding.rbac.authorization.k8s.io/read created",
        );
        let binding = k.json(&["get", "rolebinding", "read", "-n", &ns, "-o", "json"]);
        c.eq("rolebinding roleRef", &binding["roleRef"], &serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}));
        c.eq(
            "rolebinding subjects",
            binding["subjects"].as_array().map(Vec::len),
            Some(3),
        );

        let cluster_role = format!("{ns}-viewer");
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "clusterrole",
                    &cluster_role,
                    "--verb=get",
                    "--resource=namespaces",
                ],
            )
            .stdout;
        c.eq(
            "create clusterrole",
            out.trim(),
            &format!("clusterrole.rbac.authorization.k8s.io/{cluster_role} created"),
        );
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "clusterrolebinding",
                    &cluster_role,
                    &format!("--clusterrole={cluster_role}"),
                    "--group=devs",
                ],
            )
            .stdout;
        c.eq(
            "create clusterrolebinding",
            out.trim(),
            &format!("clusterrolebinding.rbac.authorization.k8s.io/{cluster_role} created"),
        );

        let roles = cells(&k.ok(&["get", "roles", "-n", &ns]));
        c.eq(
            "roles header",
            roles.first().cloned(),
            Some(strings(&["NAME", "CREATED", "AT"])),
        );
        c.eq(
            "roles row",
            roles.get(1).and_then(|r| r.first().cloned()),
            Some("reader".to_string()),
        );
        let bindings = cells(&k.ok(&["get", "rolebindings", "-n", &ns, "-o", "wide"]));
        c.eq(
            "rolebindings -o wide header",
            bindings.first().cloned(),
            Some(strings(&[
                "NAME",
                "ROLE",
                "AGE",
                "USERS",
                "GROUPS",
                "SERVICEACCOUNTS",
            ])),
        );
        let row = bindings.get(1).cloned().unwrap_or_default();
        c.check(
            row.first().map(String::as_str) == Some("read")
                && row.get(1).map(String::as_str) == Some("Role/reader")
                && row.get(3..).map(<[String]>::to_vec)
                    == Some(strings(&["bob", "devs", &format!("{ns}/robot")])),
            || format!("rolebindings -o wide row: {row:?}"),
        );
        let sas = cells(&k.ok(&["get", "serviceaccounts", "-n", &ns]));
        c.eq(
            "serviceaccounts header",
            sas.first().cloned(),
            Some(strings(&["NAME", "SECRETS", "AGE"])),
        );
        let crb = cells(&k.ok(&["get", "clusterrolebinding", &cluster_role]));
        c.eq(
            "clusterrolebinding ROLE",
            crb.get(1).and_then(|r| r.get(1).cloned()),
            Some(format!("ClusterRole/{cluster_role}")),
        );

        let described = c
            .run_ok(k, &["describe", "role", "reader", "-n", &ns])
            .stdout;
        c.contains("describe role", &described, "PolicyRule:");
        c.check(
            described.lines().any(|l| {
                l.split_whitespace().collect::<Vec<_>>()
                    == ["widgets.example.dev", "[]", "[]", "[get", "list", "watch]"]
            }),
            || format!("describe role lacks the widgets rule:\n{described}"),
        );

        // Widgets: describe, the `all` category and client-side formats.
        for (name, replicas) in [("small", 1), ("large", 9), ("medium", 4)] {
            k.ok_stdin(
                &["create", "-f", "-"],
                &widget_v1(name, &ns, replicas, Some("blue")),
            );
        }
        let described = c
            .run_ok(k, &["describe", "widget", "large", "-n", &ns])
            .stdout;
        for needle in [
            "Name:         large",
            &format!("Namespace:    {ns}"),
            "API Version:  example.dev/v1",
            "Kind:         Widget",
            "Replicas:  9",
            "Color:     blue",
        ] {
            c.contains("describe widget", &described, needle);
        }
        let all = k.ok(&["get", "all", "-n", &ns, "-o", "name"]);
        c.eq(
            "get all -o name",
            all.lines().collect::<Vec<_>>(),
            vec![
                "widget.example.dev/large",
                "widget.example.dev/medium",
                "widget.example.dev/small",
            ],
        );
        let sorted = cells(&k.ok(&["get", "widgets", "-n", &ns, "--sort-by=.spec.replicas"]));
        let order: Vec<String> = sorted
            .iter()
            .skip(1)
            .filter_map(|r| r.first().cloned())
            .collect();
        c.eq(
            "--sort-by=.spec.replicas",
            order,
            strings(&["small", "medium", "large"]),
        );
        let custom = cells(&k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-o",
            "custom-columns=NAME:.metadata.name,N:.spec.replicas,C:.spec.color",
        ]));
        c.eq(
            "custom-columns",
            custom,
            vec![
                strings(&["NAME", "N", "C"]),
                strings(&["large", "9", "blue"]),
                strings(&["medium", "4", "blue"]),
                strings(&["small", "1", "blue"]),
            ],
        );
        let path = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}",
        ]);
        c.eq("jsonpath", path.trim(), "large=9 medium=4 small=1");
    });
}
