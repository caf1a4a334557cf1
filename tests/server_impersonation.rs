//! Impersonation against the real binary: kubectl `--as`/`--as-group` (the one on PATH, 1.27 and
//! 1.33) and raw requests with the `Impersonate-*` headers from admin and non-admin certificates.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::each_kubectl;
use serde_json::Value;

/// The whitespace-separated cells of the table line starting with `first`.
fn row(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|cells| cells.first().is_some_and(|c| c == first))
        .unwrap_or_default()
}

#[test]
fn kubectl_as_and_as_group_act_as_the_impersonated_user() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k, c| {
        // kubectl 1.27 only knows SelfSubjectReview at v1alpha1/v1beta1 (not served).
        if k.label != "k127" {
            let who = c
                .run_ok(k, &["auth", "whoami", "--as=jane", "--as-group=devs"])
                .stdout;
            c.eq(
                "whoami --as Username",
                row(&who, "Username"),
                vec!["Username".to_string(), "jane".to_string()],
            );
            c.eq(
                "whoami --as Groups",
                row(&who, "Groups"),
                vec![
                    "Groups".to_string(),
                    "[devs".to_string(),
                    "system:authenticated]".to_string(),
                ],
            );
            let sa = c
                .run_ok(
                    k,
                    &[
                        "auth",
                        "whoami",
                        "--as=system:serviceaccount:team:builder",
                        "-o",
                        "json",
                    ],
                )
                .stdout;
            let review: Value = serde_json::from_str(&sa).unwrap_or_default();
            c.eq(
                "whoami --as service account groups",
                review["status"]["userInfo"]["groups"].clone(),
                serde_json::json!([
                    "system:serviceaccounts",
                    "system:serviceaccounts:team",
                    "system:authenticated"
                ]),
            );
        }
        let no = k.run(&["auth", "can-i", "create", "configmaps", "--as=someone"]);
        c.eq("can-i --as=someone", no.stdout.trim(), "no");
        c.eq("can-i --as=someone exit code", no.code, Some(1));
        let no = k.run(&[
            "auth",
            "can-i",
            "get",
            "widgets.example.dev",
            "-n",
            "default",
            "--as=someone",
            "--as-group=devs",
        ]);
        c.eq("can-i --as --as-group", no.stdout.trim(), "no");
        let yes = c
            .run_ok(
                k,
                &[
                    "auth",
                    "can-i",
                    "create",
                    "configmaps",
                    "--as=someone",
                    "--as-group=system:masters",
                ],
            )
            .stdout;
        c.eq("can-i as a master", yes.trim(), "yes");
        let own = c
            .run_ok(k, &["auth", "can-i", "create", "configmaps"])
            .stdout;
        c.eq("can-i without --as", own.trim(), "yes");
        let denied = k.run(&["get", "configmaps", "-n", "default", "--as=someone"]);
        c.check(!denied.success(), || denied.describe());
        c.contains(
            "get --as=someone",
            &denied.stderr,
            "configmaps is forbidden: User \"someone\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"",
        );
    });
}

async fn status_of(resp: reqwest::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (code, body)
}

#[tokio::test]
async fn impersonation_needs_permission_and_a_user() {
    let server = Server::start(&[]);
    let (cert, key) = server.user_cert("joe", "developers");
    let joe = server.with_identity(&cert, &key);
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let (code, body) = status_of(
        joe.get(&url)
            .header("Impersonate-User", "jane")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "users \"jane\" is forbidden: User \"joe\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    assert_eq!(
        body["details"],
        serde_json::json!({"name": "jane", "kind": "users"})
    );
    let (code, body) = status_of(
        joe.get(&url)
            .header("Impersonate-User", "joe")
            .header("Impersonate-Group", "system:masters")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403, "{body}");

    let admin = server.admin();
    let (code, body) = status_of(
        admin
            .get(&url)
            .header("Impersonate-Group", "devs")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "requested [{Group  devs    }] without impersonating a user"
    );
    let (code, body) = status_of(
        admin
            .get(&url)
            .header("Impersonate-User", "jane")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let resp = admin
        .get(&url)
        .header("Impersonate-User", "jane")
        .header("Impersonate-Group", "system:masters")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
}
