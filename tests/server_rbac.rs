//! RBAC against the real binary: users from client certificates of the server's CA, driven by
//! kubectl (the one on PATH, 1.27 and 1.33) and reqwest. Bindings grant exactly their rules,
//! `kubectl auth can-i` (and `--list`) answer what the server then does, escalation is refused
//! unless the user holds the rules or may `escalate`/`bind`, and `roleRef` never changes. The
//! default policy: `server_rbac_policy.rs`; what a path lets through once authorized:
//! `server_paths.rs`.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl};

fn forbidden_list(user: &str, resource: &str, ns: &str) -> String {
    format!(
        "{resource} is forbidden: User \"{user}\" cannot list resource \"{resource}\" in API group \"\" in the namespace \"{ns}\""
    )
}

#[test]
fn bindings_grant_exactly_their_rules_and_can_i_agrees() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("grants");
        let user = format!("alice-{}", k.label);
        k.ok(&["create", "namespace", &ns]);
        k.ok(&[
            "create",
            "configmap",
            "cm1",
            "-n",
            &ns,
            "--from-literal=a=b",
        ]);
        let alice = k.with_kubeconfig(&server.user_kubeconfig(&user, ""));

        let run = alice.run(&["get", "configmaps", "-n", &ns]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "no binding",
            &run.stderr,
            &forbidden_list(&user, "configmaps", &ns),
        );
        c.eq(
            "can-i before",
            alice
                .run(&["auth", "can-i", "list", "configmaps", "-n", &ns])
                .stdout
                .trim(),
            "no",
        );

        k.ok(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=configmaps",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "rolebinding",
            "read",
            "--role=reader",
            &format!("--user={user}"),
            "-n",
            &ns,
        ]);
        c.eq(
            "can-i list after the binding",
            alice
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        let out = c
            .run_ok(&alice, &["get", "configmaps", "-n", &ns, "-o", "name"])
            .stdout;
        c.contains("list allowed", &out, "configmap/cm1");
        c.run_ok(&alice, &["get", "configmap", "cm1", "-n", &ns]);

        for (verb, resource, where_) in [
            ("create", "configmaps", ns.as_str()),
            ("list", "configmaps", "default"),
            ("list", "secrets", ns.as_str()),
            ("delete", "configmaps", ns.as_str()),
        ] {
            c.eq(
                &format!("can-i {verb} {resource} -n {where_}"),
                alice
                    .run(&["auth", "can-i", verb, resource, "-n", where_])
                    .stdout
                    .trim(),
                "no",
            );
        }
        let run = alice.run(&["create", "configmap", "cm2", "-n", &ns]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "create refused",
            &run.stderr,
            &format!("configmaps is forbidden: User \"{user}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"{ns}\""),
        );
        let run = alice.run(&["get", "configmaps", "-n", "default"]);
        c.contains(
            "other namespace",
            &run.stderr,
            &forbidden_list(&user, "configmaps", "default"),
        );

        let list = c
            .run_ok(&alice, &["auth", "can-i", "--list", "-n", &ns])
            .stdout;
        let configmaps = list
            .lines()
            .find(|l| l.starts_with("configmaps "))
            .unwrap_or_default()
            .to_string();
        c.contains("can-i --list configmaps row", &configmaps, "[get list]");
        c.contains(
            "can-i --list basic user",
            &list,
            "selfsubjectaccessreviews.authorization.k8s.io",
        );
        c.contains("can-i --list discovery", &list, "/api/*");
        let other = c
            .run_ok(&alice, &["auth", "can-i", "--list", "-n", "default"])
            .stdout;
        c.check(!other.lines().any(|l| l.starts_with("configmaps ")), || {
            format!("configmaps listed in default:\n{other}")
        });

        // A service account subject (no namespace: the binding's) is the user
        // `system:serviceaccount:<ns>:<name>`, whatever authenticated it.
        k.ok(&[
            "create",
            "rolebinding",
            "robot",
            "--clusterrole=view",
            &format!("--serviceaccount={ns}:robot"),
            "-n",
            &ns,
        ]);
        let robot = k.with_kubeconfig(
            &server.user_kubeconfig(&format!("system:serviceaccount:{ns}:robot"), ""),
        );
        c.eq(
            "service account subject",
            robot
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        c.eq(
            "service account of another namespace",
            k.with_kubeconfig(&server.user_kubeconfig(
                &format!("system:serviceaccount:default:robot-{}", k.label),
                "",
            ))
            .run(&["auth", "can-i", "list", "configmaps", "-n", &ns])
            .stdout
            .trim(),
            "no",
        );

        // Deleting the binding takes the grant away.
        k.ok(&["delete", "rolebinding", "read", "-n", &ns]);
        c.eq(
            "can-i after the binding is gone",
            alice
                .until(&["auth", "can-i", "list", "configmaps", "-n", &ns], "no")
                .as_str(),
            "no",
        );
        let run = alice.run(&["get", "configmaps", "-n", &ns]);
        c.contains(
            "revoked",
            &run.stderr,
            &forbidden_list(&user, "configmaps", &ns),
        );
    });
}

#[test]
fn escalation_needs_the_rules_or_escalate_and_bind() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("esc");
        let user = format!("eve-{}", k.label);
        k.ok(&["create", "namespace", &ns]);
        k.ok(&[
            "create",
            "role",
            "rbac-writer",
            "--verb=get,list,create,update,patch",
            "--resource=roles,rolebindings",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "role",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            &ns,
        ]);
        for role in ["rbac-writer", "cm-reader"] {
            k.ok(&[
                "create",
                "rolebinding",
                role,
                &format!("--role={role}"),
                &format!("--user={user}"),
                "-n",
                &ns,
            ]);
        }
        let eve = k.with_kubeconfig(&server.user_kubeconfig(&user, "devs"));
        c.eq(
            "eve may create roles",
            eve.until(&["auth", "can-i", "get", "configmaps", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );

        let run = eve.run(&[
            "create",
            "role",
            "big",
            "--verb=get,list",
            "--resource=secrets",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "role escalation refused",
            &run.stderr,
            &format!(
                "roles.rbac.authorization.k8s.io \"big\" is forbidden: user \"{user}\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}}"
            ),
        );
        // Every way of writing is checked: server-side apply creating the role, and an update
        // of a role eve may hold.
        let manifest = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: applied\n  namespace: {ns}\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [delete]\n"
        );
        let run = eve.run_with(&["apply", "--server-side", "-f", "-"], &[], &manifest);
        c.check(!run.success(), || run.describe());
        c.contains(
            "server-side apply escalation refused",
            &run.stderr,
            "is attempting to grant RBAC permissions not currently held",
        );
        let run = eve.run(&[
            "patch",
            "role",
            "cm-reader",
            "-n",
            &ns,
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "patch escalation refused",
            &run.stderr,
            "{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}",
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "role",
                "small",
                "--verb=get",
                "--resource=configmaps",
                "-n",
                &ns,
            ],
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "rolebinding",
                "small",
                "--role=small",
                "--user=bob",
                "-n",
                &ns,
            ],
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "bob-view",
            "--clusterrole=view",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "binding escalation refused",
            &run.stderr,
            "rolebindings.rbac.authorization.k8s.io \"bob-view\" is forbidden: user",
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "ghost",
            "--role=missing",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.contains(
            "binding to a missing role",
            &run.stderr,
            "roles.rbac.authorization.k8s.io \"missing\" not found",
        );

        k.ok(&[
            "create",
            "role",
            "escalator",
            "--verb=escalate",
            "--resource=roles",
            "-n",
            &ns,
        ]);
        k.ok(&[
            "create",
            "role",
            "view-binder",
            "--verb=bind",
            "--resource=clusterroles.rbac.authorization.k8s.io",
            "--resource-name=view",
            "-n",
            &ns,
        ]);
        for role in ["escalator", "view-binder"] {
            k.ok(&[
                "create",
                "rolebinding",
                role,
                &format!("--role={role}"),
                &format!("--user={user}"),
                "-n",
                &ns,
            ]);
        }
        c.eq(
            "eve may escalate",
            eve.until(&["auth", "can-i", "escalate", "roles", "-n", &ns], "yes")
                .as_str(),
            "yes",
        );
        eve.until(
            &["auth", "can-i", "bind", "clusterroles/view", "-n", &ns],
            "yes",
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "role",
                "big",
                "--verb=get,list",
                "--resource=secrets",
                "-n",
                &ns,
            ],
        );
        c.run_ok(
            &eve,
            &[
                "create",
                "rolebinding",
                "bob-view",
                "--clusterrole=view",
                "--user=bob",
                "-n",
                &ns,
            ],
        );
        let run = eve.run(&[
            "create",
            "rolebinding",
            "bob-edit",
            "--clusterrole=edit",
            "--user=bob",
            "-n",
            &ns,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains(
            "bind is per name",
            &run.stderr,
            "is attempting to grant RBAC permissions not currently held",
        );

        let run = k.run(&[
            "patch",
            "rolebinding",
            "small",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"big"}}"#,
        ]);
        c.check(!run.success(), || run.describe());
        c.contains("roleRef immutable", &run.stderr, "cannot change roleRef");
    });
}
