//! Admission through kubectl (the one on PATH, 1.27 and 1.33) on the real binary: the
//! `WidgetColorLabel` plugin labels Widgets with their color, a ResourceQuota made with
//! `kubectl create quota` refuses the create over its limit with Kubernetes' message, and the
//! plugins follow `--disable-admission-plugins`.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::time::{Duration, Instant};

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, widget_v1};

/// Waits until the quota has counted `resource`.
fn wait_counted(k: &Kubectl, ns: &str, quota: &str, resource: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let q = k.json(&["get", "quota", quota, "-n", ns, "-o", "json"]);
        if q["status"]["used"].get(resource).is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn widget_color_label_and_quota() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("admission");
        k.ok(&["create", "namespace", &ns]);
        c.run_ok(
            k,
            &[
                "create",
                "-f",
                &k.write("blue.yaml", &widget_v1("blue", &ns, 1, Some("blue"))),
            ],
        );
        let w = k.json(&["get", "widget", "blue", "-n", &ns, "-o", "json"]);
        c.eq(
            "color label",
            w["metadata"]["labels"]["example.dev/color"].as_str(),
            Some("blue"),
        );
        let selected = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-l",
            "example.dev/color=blue",
            "-o",
            "name",
        ]);
        c.eq(
            "selected by color",
            selected.trim(),
            "widget.example.dev/blue",
        );
        // The label follows the color.
        c.run_ok(
            k,
            &[
                "patch",
                "widget",
                "blue",
                "-n",
                &ns,
                "--type=merge",
                "-p",
                r#"{"spec":{"color":"green"}}"#,
            ],
        );
        let w = k.json(&["get", "widget", "blue", "-n", &ns, "-o", "json"]);
        c.eq(
            "label follows",
            w["metadata"]["labels"]["example.dev/color"].as_str(),
            Some("green"),
        );

        c.run_ok(
            k,
            &[
                "create",
                "quota",
                "widgets",
                "-n",
                &ns,
                "--hard=count/widgets.example.dev=2",
            ],
        );
        c.check(
            wait_counted(k, &ns, "widgets", "count/widgets.example.dev"),
            || "the quota was never counted".into(),
        );
        c.run_ok(
            k,
            &[
                "create",
                "-f",
                &k.write("two.yaml", &widget_v1("two", &ns, 1, None)),
            ],
        );
        let refused = c.run_code(
            k,
            &[
                "create",
                "-f",
                &k.write("three.yaml", &widget_v1("three", &ns, 1, None)),
            ],
            1,
        );
        c.contains(
            "quota message",
            &refused.stderr,
            "widgets.example.dev \"three\" is forbidden: exceeded quota: widgets, requested: count/widgets.example.dev=1, used: count/widgets.example.dev=2, limited: count/widgets.example.dev=2",
        );
        let q = k.json(&["get", "quota", "widgets", "-n", &ns, "-o", "json"]);
        c.eq(
            "used",
            q["status"]["used"]["count/widgets.example.dev"].as_str(),
            Some("2"),
        );
        c.run_ok(k, &["delete", "widget", "two", "-n", &ns]);
        c.run_ok(
            k,
            &[
                "create",
                "-f",
                &k.write("four.yaml", &widget_v1("four", &ns, 1, None)),
            ],
        );
    });
}

#[test]
fn plugins_follow_the_flags() {
    let server = Server::start(&["--disable-admission-plugins=WidgetColorLabel"]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("noplugin");
        k.ok(&["create", "namespace", &ns]);
        c.run_ok(
            k,
            &[
                "create",
                "-f",
                &k.write("red.yaml", &widget_v1("red", &ns, 1, Some("red"))),
            ],
        );
        let w = k.json(&["get", "widget", "red", "-n", &ns, "-o", "json"]);
        c.check(
            w["metadata"]["labels"].get("example.dev/color").is_none(),
            || format!("the disabled plugin labelled it: {}", w["metadata"]),
        );
    });
}
