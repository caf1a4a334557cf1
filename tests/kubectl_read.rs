//! kubectl (the one on PATH, 1.27 and 1.33) against the real binary: discovery, `explain`,
//! `auth whoami` / `auth can-i`, creating namespaces, ConfigMaps and Secrets, and every form of
//! `get` (tables, `-o wide|yaml|json|name`, label and field selectors, `--chunk-size`, `-A`).

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl, names};

/// The whitespace-separated cells of the table line starting with `first`.
fn row(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|cells| cells.first().is_some_and(|c| c == first))
        .unwrap_or_default()
}

/// The header cells of a table.
fn header(table: &str) -> Vec<String> {
    table
        .lines()
        .next()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn discovery_explain_and_auth() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let versions = c.run_ok(k, &["api-versions"]).stdout;
        for gv in [
            "v1",
            "example.dev/v1",
            "example.dev/v1alpha1",
            "rbac.authorization.k8s.io/v1",
            "authentication.k8s.io/v1",
            "authorization.k8s.io/v1",
            "coordination.k8s.io/v1",
            "admissionregistration.k8s.io/v1",
            "apiextensions.k8s.io/v1",
        ] {
            c.check(versions.lines().any(|l| l == gv), || {
                format!("api-versions lacks {gv}:\n{versions}")
            });
        }

        let resources = c.run_ok(k, &["api-resources"]).stdout;
        c.eq(
            "api-resources header",
            header(&resources),
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "widgets row",
            row(&resources, "widgets"),
            ["widgets", "wd", "example.dev/v1", "true", "Widget"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "configmaps row",
            row(&resources, "configmaps"),
            ["configmaps", "cm", "v1", "true", "ConfigMap"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "namespaces row",
            row(&resources, "namespaces"),
            ["namespaces", "ns", "v1", "false", "Namespace"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "secrets row",
            row(&resources, "secrets"),
            ["secrets", "v1", "true", "Secret"]
                .map(String::from)
                .to_vec(),
        );
        let cluster = c
            .run_ok(k, &["api-resources", "--namespaced=false", "-o", "name"])
            .stdout;
        c.check(cluster.lines().any(|l| l == "namespaces"), || {
            format!("--namespaced=false lacks namespaces:\n{cluster}")
        });
        c.check(!cluster.lines().any(|l| l.starts_with("widgets")), || {
            format!("--namespaced=false lists widgets:\n{cluster}")
        });
        let group = c
            .run_ok(
                k,
                &["api-resources", "--api-group=example.dev", "-o", "name"],
            )
            .stdout;
        c.eq(
            "api-resources --api-group=example.dev -o name",
            group.trim(),
            "widgets.example.dev",
        );

        // Every resource discovery calls listable lists; review kinds are create-only.
        let listable = c
            .run_ok(k, &["api-resources", "--verbs=list", "-o", "name"])
            .stdout;
        c.check(!listable.contains("review"), || {
            format!("review kinds advertise list:\n{listable}")
        });
        for resource in listable.lines() {
            let run = k.run(&["get", resource, "-A"]);
            c.check(run.success(), || {
                format!("get {resource} -A: {}", run.describe())
            });
        }
        let wide = c.run_ok(k, &["api-resources", "-o", "wide"]).stdout;
        let review = row(&wide, "selfsubjectaccessreviews");
        c.eq(
            "selfsubjectaccessreviews verbs",
            review.get(4).map(String::as_str),
            Some("create"),
        );

        let spec = c.run_ok(k, &["explain", "widget.spec"]).stdout;
        for needle in [
            "KIND:",
            "Widget",
            "VERSION:",
            "v1",
            "replicas",
            "<integer>",
            "color",
            "<string>",
        ] {
            c.contains("explain widget.spec", &spec, needle);
        }
        c.contains(
            "explain widget.spec",
            &spec,
            "Desired number of copies of the widget.",
        );
        c.contains(
            "explain widget.spec",
            &spec,
            "The widget's color, in lowercase letters.",
        );
        let field = c.run_ok(k, &["explain", "widget.spec.replicas"]).stdout;
        c.contains("explain widget.spec.replicas", &field, "replicas");
        c.contains("explain widget.spec.replicas", &field, "<integer>");
        c.contains(
            "explain widget.spec.replicas",
            &field,
            "Desired number of copies of the widget.",
        );
        let recursive = c.run_ok(k, &["explain", "widgets", "--recursive"]).stdout;
        for needle in [
            "spec", "replicas", "color", "status", "selector", "metadata",
        ] {
            c.contains("explain widgets --recursive", &recursive, needle);
        }
        // The meta schemas (from api-defs/meta.k8s.io/v1.rs) as kubectl reads them.
        let owners = c
            .run_ok(k, &["explain", "configmap.metadata.ownerReferences"])
            .stdout;
        for needle in [
            "[]OwnerReference",
            "The objects this object depends on",
            "apiVersion",
            "blockOwnerDeletion",
            "<boolean>",
            "uid",
            "-required-",
        ] {
            c.contains(
                "explain configmap.metadata.ownerReferences",
                &owners,
                needle,
            );
        }
        let created = c
            .run_ok(k, &["explain", "widget.metadata.creationTimestamp"])
            .stdout;
        c.contains(
            "explain widget.metadata.creationTimestamp",
            &created,
            "When the server created the object. Read-only.",
        );
        let data = c.run_ok(k, &["explain", "configmap.data"]).stdout;
        c.contains("explain configmap.data", &data, "ConfigMap");
        c.contains("explain configmap.data", &data, "map[string]string");
        let top = c.run_ok(k, &["explain", "widgets"]).stdout;
        c.contains(
            "explain widgets",
            &top,
            "A Widget is a unit of work with a desired number of replicas.",
        );
        let alpha = c
            .run_ok(
                k,
                &[
                    "explain",
                    "widgets.spec",
                    "--api-version=example.dev/v1alpha1",
                ],
            )
            .stdout;
        c.contains("explain --api-version=example.dev/v1alpha1", &alpha, "size");
        c.check(!alpha.contains("replicas\t"), || {
            format!("v1alpha1 spec documents replicas:\n{alpha}")
        });

        // kubectl 1.27 only knows SelfSubjectReview at v1alpha1/v1beta1, which a 1.33 server
        // does not serve by default (apiary serves authentication.k8s.io/v1).
        if k.label == "k127" {
            let run = k.run(&["auth", "whoami"]);
            c.check(!run.success(), || {
                format!("1.27 whoami should fail: {}", run.describe())
            });
            c.contains(
                "1.27 auth whoami",
                &run.stderr,
                "the selfsubjectreviews API is not enabled in the cluster",
            );
        } else {
            let who = c.run_ok(k, &["auth", "whoami"]).stdout;
            c.eq(
                "whoami Username row",
                row(&who, "Username"),
                vec!["Username".to_string(), "admin".to_string()],
            );
            c.contains("auth whoami", &who, "system:masters");
            let run = c.run_ok(k, &["auth", "whoami", "-o", "json"]);
            let review: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
            c.eq(
                "whoami -o json kind",
                review["kind"].as_str(),
                Some("SelfSubjectReview"),
            );
            c.eq(
                "whoami -o json username",
                review["status"]["userInfo"]["username"].as_str(),
                Some("admin"),
            );
        }

        let can = c
            .run_ok(
                k,
                &[
                    "auth",
                    "can-i",
                    "create",
                    "widgets.example.dev",
                    "-n",
                    "default",
                ],
            )
            .stdout;
        c.eq("auth can-i create widgets", can.trim(), "yes");
        let all = c.run_ok(k, &["auth", "can-i", "*", "*"]).stdout;
        c.eq("auth can-i * *", all.trim(), "yes");
        let list = c
            .run_ok(k, &["auth", "can-i", "--list", "-n", "default"])
            .stdout;
        c.check(row(&list, "*.*").contains(&"[*]".to_string()), || {
            format!("auth can-i --list lacks *.* [*]:\n{list}")
        });
    });
}

/// Five Widgets in `ns`: odd ones labelled `tier=gold`, even ones `tier=silver`; `w<i>` has
/// replicas `i` and a color.
fn widgets(ns: &str) -> String {
    let colors = ["red", "blue", "green", "black", "white"];
    (1..=5)
        .map(|i| {
            let tier = if i % 2 == 1 { "gold" } else { "silver" };
            format!(
                "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w{i}\n  namespace: {ns}\n  labels:\n    tier: {tier}\nspec:\n  replicas: {i}\n  color: {}\n",
                colors[i - 1]
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn create_and_get() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("get");
        let out = k.ok(&["create", "namespace", &ns]);
        c.eq(
            "create namespace",
            out.trim(),
            &format!("namespace/{ns} created"),
        );
        let nsobj = k.json(&["get", "namespace", &ns, "-o", "json"]);
        c.eq(
            "namespace phase",
            nsobj["status"]["phase"].as_str(),
            Some("Active"),
        );
        let nstable = k.ok(&["get", "namespace", &ns]);
        c.eq(
            "namespace table header",
            header(&nstable),
            ["NAME", "STATUS", "AGE"].map(String::from).to_vec(),
        );
        c.eq(
            "namespace table row",
            row(&nstable, &ns).get(1).map(String::as_str),
            Some("Active"),
        );

        let out = k.ok(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=color=blue",
            "--from-literal=size=3",
            "-n",
            &ns,
        ]);
        c.eq("create configmap", out.trim(), "configmap/settings created");
        let cm = k.json(&["get", "configmap", "settings", "-n", &ns, "-o", "json"]);
        c.eq(
            "configmap data",
            &cm["data"],
            &serde_json::json!({"color": "blue", "size": "3"}),
        );
        let cms = k.ok(&["get", "configmaps", "-n", &ns]);
        c.eq(
            "configmap table header",
            header(&cms),
            ["NAME", "DATA", "AGE"].map(String::from).to_vec(),
        );
        c.eq(
            "configmap table DATA",
            row(&cms, "settings").get(1).map(String::as_str),
            Some("2"),
        );

        let out = k.ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cr3t",
            "-n",
            &ns,
        ]);
        c.eq("create secret generic", out.trim(), "secret/creds created");
        let secret = k.json(&["get", "secret", "creds", "-n", &ns, "-o", "json"]);
        c.eq("secret type", secret["type"].as_str(), Some("Opaque"));
        c.eq(
            "secret data",
            secret["data"]["password"].as_str(),
            Some("czNjcjN0"),
        );
        let secrets = k.ok(&["get", "secrets", "-n", &ns]);
        c.eq(
            "secret table header",
            header(&secrets),
            ["NAME", "TYPE", "DATA", "AGE"].map(String::from).to_vec(),
        );
        let creds = row(&secrets, "creds");
        c.eq(
            "secret table TYPE and DATA",
            creds.get(1..3).map(<[String]>::to_vec),
            Some(vec!["Opaque".into(), "1".into()]),
        );

        let file = k.write("widgets.yaml", &widgets(&ns));
        let out = k.ok(&["create", "-f", &file]);
        c.eq("create -f widgets", out.lines().count(), 5);
        c.contains("create -f widgets", &out, "widget.example.dev/w1 created");

        let table = k.ok(&["get", "widgets", "-n", &ns]);
        c.eq(
            "widget table header",
            header(&table),
            ["NAME", "REPLICAS", "AGE"].map(String::from).to_vec(),
        );
        c.eq("widget table rows", table.lines().count(), 6);
        c.eq(
            "widget table w3",
            row(&table, "w3").get(1).map(String::as_str),
            Some("3"),
        );
        let short = k.ok(&["get", "wd", "w2", "-n", &ns]);
        c.eq(
            "get wd w2 (short name)",
            row(&short, "w2").get(1).map(String::as_str),
            Some("2"),
        );

        let wide = k.ok(&["get", "widgets", "-n", &ns, "-o", "wide"]);
        c.eq(
            "widget -o wide header",
            header(&wide),
            ["NAME", "REPLICAS", "COLOR", "AGE"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "widget -o wide w2",
            row(&wide, "w2").get(1..3).map(<[String]>::to_vec),
            Some(vec!["2".into(), "blue".into()]),
        );

        let yaml = k.ok(&["get", "widget", "w4", "-n", &ns, "-o", "yaml"]);
        for line in [
            "apiVersion: example.dev/v1",
            "kind: Widget",
            "  name: w4",
            &format!("  namespace: {ns}"),
            "  replicas: 4",
            "  color: black",
            "    tier: silver",
        ] {
            c.check(yaml.lines().any(|l| l == line), || {
                format!("-o yaml lacks line {line:?}:\n{yaml}")
            });
        }

        let json = k.json(&["get", "widget", "w5", "-n", &ns, "-o", "json"]);
        c.eq(
            "-o json apiVersion",
            json["apiVersion"].as_str(),
            Some("example.dev/v1"),
        );
        c.eq("-o json kind", json["kind"].as_str(), Some("Widget"));
        c.eq(
            "-o json spec",
            &json["spec"],
            &serde_json::json!({"replicas": 5, "color": "white"}),
        );
        c.eq(
            "-o json generation",
            json["metadata"]["generation"].as_i64(),
            Some(1),
        );
        c.check(
            json["metadata"]["uid"]
                .as_str()
                .is_some_and(|u| u.len() == 36),
            || format!("uid: {json}"),
        );
        c.check(
            json["metadata"]["creationTimestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            || format!("creationTimestamp: {json}"),
        );
        c.check(
            json["metadata"]["resourceVersion"]
                .as_str()
                .is_some_and(|rv| rv.parse::<u64>().is_ok_and(|n| n > 0)),
            || format!("resourceVersion: {json}"),
        );
        let list = k.json(&["get", "widgets", "-n", &ns, "-o", "json"]);
        c.eq("-o json list kind", list["kind"].as_str(), Some("List"));
        c.eq(
            "-o json list names",
            names(&list),
            ["w1", "w2", "w3", "w4", "w5"].map(String::from).to_vec(),
        );
        c.eq(
            "-o json list item kind",
            list["items"][0]["kind"].as_str(),
            Some("Widget"),
        );

        let gold = k.ok(&["get", "widgets", "-n", &ns, "-l", "tier=gold", "-o", "name"]);
        c.eq(
            "-l tier=gold",
            gold.lines().collect::<Vec<_>>(),
            vec![
                "widget.example.dev/w1",
                "widget.example.dev/w3",
                "widget.example.dev/w5",
            ],
        );
        let silver = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-l",
            "tier!=gold",
            "-o",
            "name",
        ]);
        c.eq(
            "-l tier!=gold",
            silver.lines().collect::<Vec<_>>(),
            vec!["widget.example.dev/w2", "widget.example.dev/w4"],
        );
        let set = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "-l",
            "tier in (silver,bronze)",
            "-o",
            "name",
        ]);
        c.eq("-l tier in (silver,bronze)", set.lines().count(), 2);
        let none = k.run(&["get", "widgets", "-n", &ns, "-l", "tier=bronze"]);
        c.check(none.success() && none.stdout.is_empty(), || none.describe());
        c.contains(
            "get with no match",
            &none.stderr,
            &format!("No resources found in {ns} namespace."),
        );

        let by_name = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "--field-selector",
            "metadata.name=w2",
            "-o",
            "name",
        ]);
        c.eq(
            "--field-selector metadata.name=w2",
            by_name.trim(),
            "widget.example.dev/w2",
        );
        let not_name = k.ok(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "--field-selector",
            "metadata.name!=w2",
            "-o",
            "name",
        ]);
        c.eq(
            "--field-selector metadata.name!=w2",
            not_name.lines().count(),
            4,
        );
        let bad = k.run(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "--field-selector",
            "spec.color=red",
        ]);
        c.check(!bad.success(), || {
            format!("unsupported field selector accepted: {}", bad.describe())
        });
        c.contains(
            "unsupported field selector",
            &bad.stderr,
            "field label not supported: spec.color",
        );

        let chunked = k.run(&[
            "get",
            "widgets",
            "-n",
            &ns,
            "--chunk-size=2",
            "-o",
            "name",
            "-v=6",
        ]);
        c.check(chunked.success(), || chunked.describe());
        c.eq("--chunk-size=2 names", chunked.stdout.lines().count(), 5);
        let pages = chunked
            .stderr
            .lines()
            .filter(|l| l.contains("limit=2"))
            .count();
        let continued = chunked
            .stderr
            .lines()
            .filter(|l| l.contains("limit=2") && l.contains("continue="))
            .count();
        c.check(pages == 3 && continued == 2, || format!("--chunk-size=2 over 5 items should take 3 pages (2 with continue), saw {pages}/{continued}:\n{}", chunked.stderr));
        let chunked_table = k.ok(&["get", "widgets", "-n", &ns, "--chunk-size=2"]);
        c.eq(
            "--chunk-size=2 table rows",
            chunked_table.lines().count(),
            6,
        );
        c.eq(
            "--chunk-size=2 table header once",
            chunked_table
                .lines()
                .filter(|l| l.starts_with("NAME"))
                .count(),
            1,
        );

        let other = k.ns("get-other");
        k.ok(&["create", "namespace", &other]);
        k.ok_stdin(
            &["create", "-f", "-"],
            &kubectl::widget_v1("elsewhere", &other, 1, None),
        );
        let all = k.ok(&["get", "widgets", "-A"]);
        c.eq(
            "-A header",
            header(&all),
            ["NAMESPACE", "NAME", "REPLICAS", "AGE"]
                .map(String::from)
                .to_vec(),
        );
        let has = |ns: &str, name: &str| {
            all.lines().any(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.len() >= 2 && cells[0] == ns && cells[1] == name
            })
        };
        c.check(has(&ns, "w1") && has(&other, "elsewhere"), || {
            format!("-A lacks {ns}/w1 or {other}/elsewhere:\n{all}")
        });
        let all_json = k.json(&["get", "widgets", "--all-namespaces", "-o", "json"]);
        let namespaces: std::collections::BTreeSet<String> = kubectl::items(&all_json)
            .iter()
            .filter_map(|i| i["metadata"]["namespace"].as_str().map(str::to_string))
            .collect();
        c.check(
            namespaces.contains(&ns) && namespaces.contains(&other),
            || format!("--all-namespaces -o json namespaces: {namespaces:?}"),
        );
        let all_chunked = k.ok(&["get", "widgets", "-A", "--chunk-size=1", "-o", "name"]);
        c.check(all_chunked.lines().count() >= 6, || {
            format!("-A --chunk-size=1:\n{all_chunked}")
        });
    });
}
