//! CustomResourceDefinitions as objects on the real binary with kubectl: cert-manager's
//! Certificate CRD applied, listed (`NAME  CREATED AT`, as kube-apiserver's default table),
//! read back unchanged with its defaults, accepted and established by the naming and
//! establishing controllers (`kubectl wait --for=condition=Established`), re-applied
//! unchanged; a second CRD of the group whose short name is taken (`ShortNamesConflict`);
//! `kubectl explain crd.spec`; an invalid CRD and one whose CEL rule is estimated too costly
//! refused with kube-apiserver's 422 messages.
//! Around the serving of custom resources (tested in `kubectl_custom_resources.rs`): warnings
//! for unrecognized formats, a ResourceQuota counting custom resources, a restarted server
//! ready only with its custom resources served, and a CRD cleanup cut by kill -9 that finishes
//! after restart while creates stay refused.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::{Server, kubectls};
use kubectl::Kubectl;
use serde_json::{Value, json};

const CERTIFICATES: &str =
    include_str!("../generated/apiextensions/tests/data/cert-manager.io_certificates.yaml");

#[test]
fn a_real_crd_is_applied_listed_and_read_back_unchanged() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let file = k.write("certificates.yaml", CERTIFICATES);

    assert_eq!(
        k.ok(&["apply", "-f", &file]).trim(),
        "customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io created"
    );
    let table = k.ok(&["get", "crd"]);
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "CREATED", "AT"], "{table}");
    assert_eq!(lines.len(), 2, "{table}");
    assert_eq!(lines[1][0], "certificates.cert-manager.io", "{table}");
    // The short names and the plural name the same objects.
    assert_eq!(
        k.ok(&["get", "crds", "-o", "name"]),
        k.ok(&["get", "customresourcedefinitions", "-o", "name"])
    );

    let sent: Value = serde_yaml_ng::from_str(CERTIFICATES).unwrap();
    let read = k.json(&["get", "crd", "certificates.cert-manager.io", "-o", "json"]);
    let mut want_spec = sent["spec"].clone();
    want_spec["conversion"] = json!({"strategy": "None"});
    assert_eq!(
        read["spec"], want_spec,
        "the spec reads back as written, defaulted"
    );
    assert_eq!(read["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(read["metadata"]["generation"], 1);
    assert_eq!(
        read["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"],
        sent["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"]
    );

    // The naming and establishing controllers accept the names and establish the CRD.
    assert_eq!(
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/certificates.cert-manager.io",
            "--timeout=15s"
        ])
        .trim(),
        "customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io condition met"
    );
    let read = k.json(&["get", "crd", "certificates.cert-manager.io", "-o", "json"]);
    assert_eq!(read["status"]["acceptedNames"], sent["spec"]["names"]);
    let conditions: Vec<(String, String, String, String)> = read["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let field = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (
                field("type"),
                field("status"),
                field("reason"),
                field("message"),
            )
        })
        .collect();
    let condition = |t: &str, s: &str, r: &str, m: &str| (t.into(), s.into(), r.into(), m.into());
    assert_eq!(
        conditions,
        [
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted"
            ),
        ]
    );
    assert_eq!(
        read["spec"], want_spec,
        "the controllers write the status only"
    );
    assert_eq!(read["metadata"]["generation"], 1);

    assert_eq!(
        k.ok(&["apply", "-f", &file]).trim(),
        "customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io unchanged"
    );
    let again = k.json(&["get", "crd", "certificates.cert-manager.io", "-o", "json"]);
    assert_eq!(
        again["metadata"]["resourceVersion"],
        read["metadata"]["resourceVersion"]
    );

    // A CRD of the same group asking for a short name the first one holds.
    let taken = k.write(
        "taken.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.cert-manager.io\nspec:\n  group: cert-manager.io\n  names:\n    plural: widgets\n    kind: Widget\n    shortNames: [cert]\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n",
    );
    k.ok(&["create", "-f", &taken]);
    let jsonpath = "-o=jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].message}";
    assert_eq!(
        k.until(
            &["get", "crd", "widgets.cert-manager.io", jsonpath],
            "\"cert\" is already in use"
        ),
        "\"cert\" is already in use"
    );
    let widgets = k.json(&["get", "crd", "widgets.cert-manager.io", "-o", "json"]);
    assert_eq!(
        widgets["status"]["acceptedNames"],
        json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"})
    );
    let reasons: Vec<(&str, &str)> = widgets["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("NamesAccepted", "ShortNamesConflict"),
            ("Established", "NotAccepted")
        ]
    );

    let resources = k.ok(&["api-resources", "--api-group=apiextensions.k8s.io"]);
    let row: Vec<&str> = resources
        .lines()
        .find(|l| l.starts_with("customresourcedefinitions"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(
        row,
        [
            "customresourcedefinitions",
            "crd,crds",
            "apiextensions.k8s.io/v1",
            "false",
            "CustomResourceDefinition"
        ],
        "{resources}"
    );
    let explain = k.ok(&["explain", "crd.spec"]);
    for needle in [
        "KIND:       CustomResourceDefinition",
        "versions",
        "<[]CustomResourceDefinitionVersion>",
    ] {
        assert!(
            explain.contains(needle),
            "explain crd.spec lacks {needle:?}:\n{explain}"
        );
    }
}

#[test]
fn an_invalid_crd_is_refused_with_kubernetes_message() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let file = k.write(
        "bad.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example\nspec:\n  group: example\n  names:\n    plural: widgets\n    kind: Widget\n  scope: Global\n  versions:\n  - name: v1\n    served: true\n    storage: true\n",
    );
    let run = k.fails(&["apply", "-f", &file]);
    assert_eq!(
        run.stderr.trim_end(),
        "The CustomResourceDefinition \"widgets.example\" is invalid: \n\
         * spec.group: Invalid value: \"example\": should be a domain with at least one dot\n\
         * spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"\n\
         * spec.versions[0].schema.openAPIV3Schema: Required value",
        "{}",
        run.describe()
    );
    let status = server_status(&server, &file);
    assert_eq!(status["code"], 422);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example\" is invalid: [spec.group: Invalid value: \"example\": should be a domain with at least one dot, spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\", spec.versions[0].schema.openAPIV3Schema: Required value]"
    );
    assert_eq!(k.ok(&["get", "crd", "-o", "name"]).trim(), "");
}

/// A CRD whose one rule checks each of up to `max_items` unbounded strings with
/// `self.contains('abcdefghij')`.
fn costly_crd(max_items: u32) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.dev
spec:
  group: example.dev
  names: {{plural: gadgets, kind: Gadget}}
  scope: Namespaced
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
            properties:
              items:
                type: array
                maxItems: {max_items}
                items:
                  type: string
                  x-kubernetes-validations:
                  - rule: self.contains('abcdefghij')
"
    )
}

#[test]
fn a_crd_whose_rule_is_too_costly_is_refused_with_kubernetes_message() {
    // Each item costs 1 + ceil(3145726 * 0.1) * ceil(10 * 0.1) = 314574 (kube-apiserver's
    // estimate for an unbounded string), 200 of them 62914800: 6.3 times the limit.
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let file = k.write("costly.yaml", &costly_crd(200));
    let run = k.fails(&["apply", "-f", &file]);
    let error = "spec.validation.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 6.3x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        run.stderr.trim_end(),
        format!("The CustomResourceDefinition \"gadgets.example.dev\" is invalid: {error}"),
        "{}",
        run.describe()
    );
    let status = server_status(&server, &file);
    assert_eq!(status["code"], 422);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.dev\" is invalid: {error}"
        )
    );
    // Bounded to 20 items (6291480), it is accepted.
    let file = k.write("bounded.yaml", &costly_crd(20));
    assert_eq!(
        k.ok(&["apply", "-f", &file]).trim(),
        "customresourcedefinition.apiextensions.k8s.io/gadgets.example.dev created"
    );
}

#[test]
fn unrecognized_formats_are_warned_about_once() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let crd = |extra: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: paints.formats.example.dev\nspec:\n  group: formats.example.dev\n  names:\n    plural: paints\n    kind: Paint\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          count: {{type: integer, format: int32}}\n          when: {{type: string, format: date-time}}\n          color: {{type: string, format: color}}\n{extra}"
        )
    };
    let file = k.write("paints.yaml", &crd(""));
    let run = k.run(&["create", "-f", &file]);
    assert!(run.success(), "{}", run.describe());
    assert_eq!(
        run.stderr.trim(),
        "Warning: unrecognized format \"color\"",
        "{}",
        run.describe()
    );
    // An update warns about the formats it introduces only.
    let file = k.write(
        "paints.yaml",
        &crd("          tags: {type: array, format: set, items: {type: string}}\n"),
    );
    let run = k.run(&["replace", "-f", &file]);
    assert!(run.success(), "{}", run.describe());
    assert_eq!(
        run.stderr.trim(),
        "Warning: unrecognized format \"set\"",
        "{}",
        run.describe()
    );
}

#[test]
fn a_resource_quota_counts_custom_resources() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    install_free_form_crd(&k, "quota.example.dev", "tokens", "Token");
    let token = |name: &str| {
        format!(
            "apiVersion: quota.example.dev/v1\nkind: Token\nmetadata:\n  name: {name}\n  namespace: default\n"
        )
    };
    let first = k.write("first.yaml", &token("first"));
    assert_eq!(
        k.until(
            &["create", "-f", &first],
            "token.quota.example.dev/first created"
        ),
        "token.quota.example.dev/first created"
    );
    k.ok(&[
        "create",
        "quota",
        "tokens",
        "-n",
        "default",
        "--hard=count/tokens.quota.example.dev=1",
    ]);
    // The controller counts the objects of the CRD's resource (at its next pass at the latest).
    let used = "jsonpath={.status.used['count/tokens\\.quota\\.example\\.dev']}";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while k.ok(&["get", "quota", "tokens", "-n", "default", "-o", used]) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the quota never counted the Token"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let second = k.write("second.yaml", &token("second"));
    let run = k.fails(&["create", "-f", &second]);
    assert!(
        run.stderr.contains(
            "exceeded quota: tokens, requested: count/tokens.quota.example.dev=1, used: count/tokens.quota.example.dev=1, limited: count/tokens.quota.example.dev=1"
        ),
        "{}",
        run.describe()
    );
    // A deletion gives the count back (at the controller's next pass at the latest).
    k.ok(&["delete", "token", "first", "-n", "default"]);
    let created = "token.quota.example.dev/second created";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let run = k.run(&["create", "-f", &second]);
        if run.success() {
            assert_eq!(run.stdout.trim(), created);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the deletion was never given back: {}",
            run.describe()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

#[test]
fn a_restarted_server_is_ready_only_once_its_custom_resources_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = Server::start_in(&data, &[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    install_free_form_crd(&k, "restart.example.dev", "gizmos", "Gizmo");
    let gizmo = k.write(
        "gizmo.yaml",
        "apiVersion: restart.example.dev/v1\nkind: Gizmo\nmetadata:\n  name: one\n  namespace: default\nspec:\n  size: 3\n",
    );
    assert_eq!(
        k.until(
            &["apply", "-f", &gizmo],
            "gizmo.restart.example.dev/one created"
        ),
        "gizmo.restart.example.dev/one created"
    );
    server.terminate(std::time::Duration::from_secs(30));

    // Ready means the CRDs that exist are served: the first request after it finds the
    // object (before it, a path no server serves yet is 503 with Retry-After, never 404).
    let server = Server::start_in(&data, &[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    assert_eq!(
        k.ok(&["get", "gizmos", "-n", "default", "-o", "name"])
            .trim(),
        "gizmo.restart.example.dev/one"
    );
    let readyz = k.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(
        readyz.contains("[+]poststarthook/crd-informer-synced ok"),
        "{readyz}"
    );
}

#[test]
fn a_cleanup_cut_by_kill_9_finishes_after_restart_and_creates_stay_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = Server::start_in(&data, &[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    install_free_form_crd(&k, "cleanup.example.dev", "holds", "Hold");
    let hold = |name: &str| {
        format!(
            "apiVersion: cleanup.example.dev/v1\nkind: Hold\nmetadata:\n  name: {name}\n  namespace: default\n  finalizers: [cleanup.example.dev/hold]\nspec:\n  n: 1\n"
        )
    };
    for name in ["h1", "h2", "h3"] {
        let file = k.write(&format!("{name}.yaml"), &hold(name));
        let created = format!("hold.cleanup.example.dev/{name} created");
        assert_eq!(k.until(&["create", "-f", &file], &created), created);
    }
    // The cleanup deletes the objects, whose finalizer holds them: it cannot finish, and the
    // server is killed in the middle of it.
    k.ok(&["delete", "crd", "holds.cleanup.example.dev", "--wait=false"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let list = k.json(&["get", "holds", "-n", "default", "-o", "json"]);
        let marked = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["metadata"]["deletionTimestamp"].is_string())
            .count();
        if marked == 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cleanup did not delete the objects: {list}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server.kill();

    let server = Server::start_in(&data, &[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    let terminating = k.ok(&[
        "get",
        "crd",
        "holds.cleanup.example.dev",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Terminating\")].status}",
    ]);
    assert_eq!(terminating, "True");
    // Creates are refused while it terminates, whichever way they come.
    let file = k.write("h4.yaml", &hold("h4"));
    for args in [
        vec!["create", "-f", &file],
        vec!["apply", "-f", &file],
        vec!["apply", "--server-side", "-f", &file],
    ] {
        let run = k.fails(&args);
        assert!(
            run.stderr
                .contains("create not allowed while custom resource definition is terminating"),
            "{}",
            run.describe()
        );
    }
    // Released, the objects go, and with them the CRD.
    for name in ["h1", "h2", "h3"] {
        k.ok(&[
            "patch",
            "hold",
            name,
            "-n",
            "default",
            "--type=merge",
            "-p",
            "{\"metadata\":{\"finalizers\":null}}",
        ]);
    }
    assert_eq!(
        k.until(&["get", "crd", "-o", "name"], ""),
        "",
        "the cleanup finished and released the CRD"
    );
}

/// Applies a namespaced CRD `<plural>.<group>` of kind `kind` whose one version, `v1`, keeps
/// every field (`x-kubernetes-preserve-unknown-fields`), and waits until it is established.
fn install_free_form_crd(k: &Kubectl, group: &str, plural: &str, kind: &str) {
    let crd = k.write(
        &format!("{plural}.yaml"),
        &format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  names:\n    plural: {plural}\n    kind: {kind}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
        ),
    );
    k.ok(&["apply", "-f", &crd]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{plural}.{group}"),
        "--timeout=60s",
    ]);
}

/// The Status of a create of the YAML file `path`, sent as JSON.
fn server_status(server: &Server, path: &str) -> Value {
    let body: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        server
            .admin()
            .post(server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    })
}

/// Two versions whose schemas differ: v1 (stored) has `spec.min` with a default and a rule
/// comparing it to `spec.replicas`; v1beta1 has only `spec.replicas`, at most 5.
const TWO_SCHEMAS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pools.schemas.example.com
spec:
  group: schemas.example.com
  names: {plural: pools, kind: Pool}
  scope: Namespaced
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
            - {rule: "self.min <= self.replicas", message: "min must not exceed replicas"}
            properties:
              replicas: {type: integer}
              min: {type: integer, default: 0}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, maximum: 5}
"#;

#[test]
fn a_write_is_validated_with_the_schema_of_the_version_it_was_sent_in() {
    let server = Server::start(&[]);
    let k = Kubectl::new(&server, &kubectls()[0]);
    k.ok(&["apply", "-f", &k.write("pools.yaml", TWO_SCHEMAS)]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/pools.schemas.example.com",
        "--timeout=60s",
    ]);
    let pool = |version: &str, name: &str, spec: &str| {
        format!(
            "apiVersion: schemas.example.com/{version}\nkind: Pool\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
        )
    };
    let v1 = "pools.v1.schemas.example.com";
    let v1beta1 = "pools.v1beta1.schemas.example.com";
    // Created through v1beta1: v1beta1's schema checks it (v1's rule, which reads the `min`
    // v1beta1 does not have, does not run); stored as v1, it reads back through v1 with v1's
    // default.
    let mut created = k.run_with(
        &["create", "-f", "-"],
        &[],
        &pool("v1beta1", "legacy", "{replicas: 3}"),
    );
    for _ in 0..50 {
        // The resource is served a moment after the CRD is established.
        if created.success() || !created.stderr.contains("the server could not find") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        created = k.run_with(
            &["create", "-f", "-"],
            &[],
            &pool("v1beta1", "legacy", "{replicas: 3}"),
        );
    }
    assert!(created.success(), "{}", created.describe());
    let read = k.json(&["get", v1, "legacy", "-n", "default", "-o", "json"]);
    assert_eq!(read["spec"], json!({"replicas": 3, "min": 0}), "{read}");
    // Through v1beta1, v1's field is pruned (converted with strategy None, then read with
    // v1beta1's schema).
    let read = k.json(&["get", v1beta1, "legacy", "-n", "default", "-o", "json"]);
    assert_eq!(read["spec"], json!({"replicas": 3}), "{read}");
    // A list reads with the schema too.
    let list = k.json(&["get", v1, "-n", "default", "-o", "json"]);
    assert_eq!(
        list["items"][0]["spec"],
        json!({"replicas": 3, "min": 0}),
        "{list}"
    );
    // v1beta1's own bound applies to writes through v1beta1, and only to them.
    let refused = k.run_with(
        &["create", "-f", "-"],
        &[],
        &pool("v1beta1", "big", "{replicas: 7}"),
    );
    assert!(
        refused.stderr.contains(
            "spec.replicas: Invalid value: 7: spec.replicas in body should be less than or equal to 5"
        ),
        "{}",
        refused.describe()
    );
    k.ok_stdin(&["create", "-f", "-"], &pool("v1", "big", "{replicas: 7}"));
    // An update through v1beta1 of an object stored in v1 is checked in v1beta1 too.
    k.ok(&[
        "patch",
        v1beta1,
        "legacy",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ]);
    // And v1's rule checks writes through v1.
    let refused = k.run(&[
        "patch",
        v1,
        "legacy",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"spec":{"min":9}}"#,
    ]);
    assert!(
        refused
            .stderr
            .contains("spec: Invalid value: \"object\": min must not exceed replicas"),
        "{}",
        refused.describe()
    );

    // Reads default with the schema as it is now: a default the CRD gains later shows on
    // objects written before it (GET and list), and a field it drops is pruned.
    let before = k.json(&["get", v1, "-n", "default", "-o", "json"]);
    assert!(before["items"][0]["spec"].get("tier").is_none(), "{before}");
    let patch = json!([
        {"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tier",
         "value": {"type": "string", "default": "gold"}},
        {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/min"},
        {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations"},
    ]);
    k.ok(&[
        "patch",
        "crd",
        "pools.schemas.example.com",
        "--type=json",
        "-p",
        &patch.to_string(),
    ]);
    let mut spec = Value::Null;
    for _ in 0..100 {
        spec = k.json(&["get", v1, "legacy", "-n", "default", "-o", "json"])["spec"].clone();
        if spec.get("tier").is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(spec, json!({"replicas": 4, "tier": "gold"}));
    let list = k.json(&["get", v1, "-n", "default", "-o", "json"]);
    for item in list["items"].as_array().unwrap() {
        assert_eq!(item["spec"]["tier"], "gold", "{item}");
        assert!(item["spec"].get("min").is_none(), "{item}");
    }
}
