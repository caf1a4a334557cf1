//! The bridge from definitions to CRDs (`codegen export-crd`): apiary's own Widget
//! (`api-defs/example.dev`) exported as a CustomResourceDefinition, installed with kubectl and
//! served by the extension server, answers the same requests as the compiled Widget with the
//! same objects: defaults (the zero values a compiled kind writes, too), the schema's checks
//! and the kind's CEL rule, the printer columns, the scale and status subresources, server-side
//! apply, and a field the schema does not know.
//!
//! The exported CRD is installed under another group (`bridge.example.dev`): the compiled
//! `example.dev` is served by the main server, which answers its paths before the extension
//! server sees them, as kube-apiserver's main server does for a CRD of a built-in group. What
//! differs by design is asserted as such: a schema error's text is kube-apiserver's for CRDs
//! (`… in body should be …`), the compiled kind's is its own (`must be …`); the label the
//! compiled Widget's admission plugin (`api-defs/example.dev/admission.rs`, reported by the
//! export as not carried) adds is not on the custom resource.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::path::Path;

use common::{Server, kubectls};
use kubectl::Kubectl;
use serde_json::{Value, json};

/// The group the exported CRD is installed under.
const BRIDGE_GROUP: &str = "bridge.example.dev";

/// The Widget CRD exported from the definitions, renamed into [`BRIDGE_GROUP`].
fn exported_widget_crd() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("api-defs");
    let model = codegen::Generator::new(root)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let exported = codegen::bridge::export::export_group(&model, "example.dev")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut crd = exported
        .crds
        .into_iter()
        .find(|c| c["metadata"]["name"] == "widgets.example.dev")
        .expect("the Widget CRD");
    crd["metadata"]["name"] = json!(format!("widgets.{BRIDGE_GROUP}"));
    crd["spec"]["group"] = json!(BRIDGE_GROUP);
    // The compiled Widget holds the short name `wd`; the CRD would lose it to a conflict.
    crd["spec"]["names"]
        .as_object_mut()
        .unwrap()
        .remove("shortNames");
    codegen::bridge::export::to_yaml(&[crd])
}

/// One group's answers to the same requests, with what identifies the group or the moment
/// taken out.
#[derive(Debug, Default)]
struct Answers {
    objects: Vec<(String, Value)>,
    outputs: Vec<(String, String)>,
}

impl Answers {
    fn object(&mut self, what: &str, mut v: Value, group: &str) {
        normalize(&mut v, group);
        self.objects.push((what.into(), v));
    }

    fn output(&mut self, what: &str, text: &str, group: &str) {
        self.outputs
            .push((what.into(), text.replace(group, "<group>")));
    }
}

/// Takes out what differs between two objects written the same way at other moments under
/// other groups.
fn normalize(v: &mut Value, group: &str) {
    if let Some(api_version) = v["apiVersion"].as_str() {
        v["apiVersion"] = json!(api_version.replace(group, "<group>"));
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(k);
        }
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            // The compiled Widget's admission plugin (not carried by the export).
            labels.remove("example.dev/color");
            if labels.is_empty() {
                meta.remove("labels");
            }
        }
    }
}

fn widget(group: &str, name: &str, ns: &str, spec: &str) -> String {
    format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\n{spec}"
    )
}

/// The same requests against the Widgets of `group`.
fn answers(k: &Kubectl, group: &str, ns: &str) -> Answers {
    let mut a = Answers::default();
    let resource = format!("widgets.{group}");
    let get = |name: &str| k.json(&["get", &resource, name, "-n", ns, "-o", "json"]);

    // Defaults: a spec without replicas, and no spec at all.
    k.ok_stdin(
        &["create", "-f", "-"],
        &widget(group, "blue", ns, "spec:\n  color: blue\n"),
    );
    a.object("defaulted spec", get("blue"), group);
    k.ok_stdin(&["create", "-f", "-"], &widget(group, "bare", ns, ""));
    a.object("no spec", get("bare"), group);

    // The schema's checks and the kind's CEL rule.
    for (what, spec) in [
        ("pattern", "spec:\n  color: Blue\n"),
        ("minimum", "spec:\n  replicas: -1\n"),
        ("maximum", "spec:\n  replicas: 1001\n"),
        ("CEL rule", "spec:\n  color: red\n  replicas: 200\n"),
        (
            "a red widget within the rule",
            "spec:\n  color: red\n  replicas: 100\n",
        ),
    ] {
        let run = k.run_with(
            &["create", "-f", "-"],
            &[],
            &widget(group, "checked", ns, spec),
        );
        let text = if run.success() {
            k.ok(&["delete", &resource, "checked", "-n", ns]);
            "created".to_string()
        } else {
            run.stderr.clone()
        };
        a.output(what, &text, group);
    }

    // Printer columns.
    let table = k.ok(&["get", &resource, "-n", ns]);
    let wide = k.ok(&["get", &resource, "-n", ns, "-o", "wide"]);
    for (what, t) in [("table", table), ("wide table", wide)] {
        // Without the last column, AGE, whose values depend on the moment.
        let rows: Vec<String> = t
            .lines()
            .map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells[..cells.len().saturating_sub(1)].join(" ")
            })
            .collect();
        a.output(what, &rows.join("\n"), group);
    }

    // Scale and status subresources.
    k.ok(&["scale", &resource, "blue", "-n", ns, "--replicas=3"]);
    a.object(
        "scale",
        k.json(&[
            "get",
            "--raw",
            &format!("/apis/{group}/v1/namespaces/{ns}/widgets/blue/scale"),
        ]),
        group,
    );
    k.ok(&[
        "patch",
        &resource,
        "blue",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":9},"status":{"replicas":2,"selector":"app=blue"}}"#,
    ]);
    a.object("after a status patch", get("blue"), group);
    k.ok(&[
        "patch",
        &resource,
        "blue",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4},"status":{"replicas":7}}"#,
    ]);
    a.object("after a main resource patch", get("blue"), group);

    // Server-side apply by two managers.
    k.ok_stdin(
        &["apply", "--server-side", "--field-manager=one", "-f", "-"],
        &widget(group, "applied", ns, "spec:\n  replicas: 5\n"),
    );
    k.ok_stdin(
        &["apply", "--server-side", "--field-manager=two", "-f", "-"],
        &widget(group, "applied", ns, "spec:\n  color: green\n"),
    );
    let applied = k.json(&[
        "get",
        &resource,
        "applied",
        "-n",
        ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    let managers: Vec<String> = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{} {}", m["manager"], m["fieldsV1"]))
        .collect();
    a.output("field managers", &managers.join("\n"), group);
    a.object("applied", applied, group);

    // A field the schema does not know: refused under Strict, dropped under Ignore.
    let unknown = widget(
        group,
        "unknown",
        ns,
        "spec:\n  replicas: 2\n  shade: dark\n",
    );
    let strict = k.run_with(&["create", "--validate=strict", "-f", "-"], &[], &unknown);
    a.output("strict unknown field", &strict.stderr, group);
    k.ok_stdin(&["create", "--validate=ignore", "-f", "-"], &unknown);
    a.object("unknown field ignored", get("unknown"), group);
    a
}

#[test]
fn widget_exported_as_a_crd_answers_as_the_compiled_widget() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let file = k.write("widgets-crd.yaml", &exported_widget_crd());
    k.ok(&["apply", "-f", &file]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/widgets.{BRIDGE_GROUP}"),
        "--timeout=20s",
    ]);
    for ns in ["compiled", "exported"] {
        k.ok(&["create", "namespace", ns]);
    }
    // The extension server serves the resource a moment after the CRD is established.
    k.until(
        &["get", &format!("widgets.{BRIDGE_GROUP}"), "-n", "exported"],
        "No resources found",
    );

    // The two groups answer side by side (each kubectl with caches of its own).
    let other = Kubectl::new(&server, &kubectls()[0]);
    let (compiled, exported) = std::thread::scope(|s| {
        let compiled = s.spawn(|| answers(&k, "example.dev", "compiled"));
        let exported = answers(&other, BRIDGE_GROUP, "exported");
        (
            compiled.join().expect("the compiled Widget's answers"),
            exported,
        )
    });

    for ((what, c), (_, e)) in compiled.objects.iter().zip(&exported.objects) {
        let mut c = c.clone();
        let mut e = e.clone();
        for v in [&mut c, &mut e] {
            if let Some(ns) = v["metadata"]["namespace"].as_str() {
                assert!(ns == "compiled" || ns == "exported", "{ns}");
                v["metadata"]["namespace"] = json!("<ns>");
            }
        }
        assert_eq!(
            c, e,
            "{what}: the compiled Widget (left) and the custom resource (right) differ"
        );
    }
    for ((what, c), (_, e)) in compiled.outputs.iter().zip(&exported.outputs) {
        let c = c.replace("compiled", "<ns>");
        // A bound's message: a compiled kind's reads as Kubernetes' built-in kinds' (`must be
        // …`), a custom resource's as kube-apiserver's schema errors (`<field> in body should
        // be …`); the code, reason, field and value are the same.
        let e = e
            .replace("exported", "<ns>")
            .replace("spec.replicas in body should be", "must be");
        assert_eq!(
            c, e,
            "{what}: the compiled Widget (left) and the custom resource (right) differ"
        );
    }
    assert_eq!(compiled.objects.len(), exported.objects.len());
    assert_eq!(compiled.outputs.len(), exported.outputs.len());
}
