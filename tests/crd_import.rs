//! The CRD import example (`examples/crd-import`: the CronTab CustomResourceDefinition of
//! `crd.yaml`, imported by `codegen import-crd` into `api-defs/` and served with compiled
//! types), built from its own directory as a user builds it, started and driven with kubectl:
//! discovery, create and apply of the example objects, the Table with the CRD's printer
//! columns, the CRD's defaults, reads across its two versions, the validation messages
//! kube-apiserver gives for the CRD's schema (pattern, enum, CEL rule, required, bounds,
//! list-type map and set, item count), merge patches, server-side apply merging a list-type
//! map, the status and scale subresources, lists with field selectors, and `kubectl explain`.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::Kubectl;
use serde_json::json;

/// A v1 CronTab named `name` in `default` with the flow-style YAML `spec`.
fn crontab(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
    )
}

/// Asserts that creating `crontab(name, spec)` fails with `message` in kubectl's stderr.
fn refused(k: &Kubectl, name: &str, spec: &str, message: &str) {
    let run = k.run_with(&["create", "-f", "-"], &[], &crontab(name, spec));
    assert!(
        !run.success() && run.stderr.contains(message),
        "creating {name} ({spec}): want `{message}`:\n{}",
        run.describe()
    );
}

#[test]
fn imported_crd_serves_the_crd_semantics_with_compiled_types() {
    let root = crates::repo_root();
    let example = root.join("examples/crd-import");
    crates::build(&example);
    let server = Server::start_binary(&crates::binary("crontab-apiserver"), &[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);

    // Discovery: the CRD's names, scope and versions (v1 preferred).
    let resources = k.ok(&["api-resources", "--api-group=stable.example.com"]);
    let row = resources
        .lines()
        .find(|l| l.starts_with("crontabs "))
        .unwrap_or_else(|| panic!("no crontabs in:\n{resources}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"],
        "{resources}"
    );
    let versions = k.ok(&["api-versions"]);
    for v in ["stable.example.com/v1\n", "stable.example.com/v1beta1\n"] {
        assert!(versions.contains(v), "{versions}");
    }
    // Only the `kubernetes` Service (category `all` includes Services, as in Kubernetes).
    let all = k.ok(&["get", "all", "-n", "default", "-o", "name"]);
    assert_eq!(
        all.trim(),
        "service/kubernetes",
        "category `all` lists no crontab yet: {all}"
    );

    // The example objects: one in each version.
    let objects = example.join("examples");
    let objects = objects.to_string_lossy();
    let applied = k.ok(&["apply", "-f", &objects]);
    assert!(
        applied.contains("crontab.stable.example.com/my-new-cron-object created")
            && applied.contains("crontab.stable.example.com/legacy-cron created"),
        "{applied}"
    );

    // Table: Name, the printer columns, Age; the priority-1 column with -o wide.
    let table = k.ok(&["get", "crontabs", "-n", "default"]);
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| {
            l.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "SPEC", "IMAGE", "REPLICAS", "AGE"],
        "{table}"
    );
    assert_eq!(
        lines[1][..4],
        ["legacy-cron", "0 3 * * *", "legacy-image", "2"],
        "{table}"
    );
    assert_eq!(
        lines[2][..4],
        [
            "my-new-cron-object",
            "* * * * */5",
            "my-awesome-cron-image",
            "1"
        ],
        "{table}"
    );
    let wide = k.ok(&["get", "ct", "-n", "default", "-o", "wide"]);
    assert!(
        wide.lines()
            .next()
            .is_some_and(|h| h.contains("REPLICAS   POLICY   AGE")),
        "{wide}"
    );
    let all = k.ok(&["get", "all", "-n", "default", "-o", "name"]);
    assert!(
        all.contains("crontab.stable.example.com/legacy-cron"),
        "{all}"
    );

    // The CRD's defaults: replicas, minReplicas, concurrencyPolicy and each port's protocol.
    let get = |resource: &str, name: &str| {
        k.json(&["get", resource, name, "-n", "default", "-o", "json"])
    };
    let created = get("crontab", "my-new-cron-object");
    assert_eq!(
        created["spec"],
        json!({
            "concurrencyPolicy": "Allow",
            "cronSpec": "* * * * */5",
            "image": "my-awesome-cron-image",
            "minReplicas": 0,
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "replicas": 1,
            "tags": ["nightly"],
            "timeout": "90s"
        })
    );
    assert_eq!(created["metadata"]["generation"], 1);
    // Written in v1beta1, read in v1 (stored): v1's defaults fill what v1beta1 lacks.
    let legacy = get("crontab", "legacy-cron");
    assert_eq!(legacy["apiVersion"], "stable.example.com/v1");
    assert_eq!(
        legacy["spec"],
        json!({"concurrencyPolicy": "Allow", "cronSpec": "0 3 * * *", "image": "legacy-image", "minReplicas": 0, "replicas": 2})
    );
    // Read in v1beta1: what v1beta1 does not declare is left out.
    let beta = get("crontabs.v1beta1.stable.example.com", "my-new-cron-object");
    assert_eq!(beta["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(
        beta["spec"],
        json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 1})
    );

    // Validation, as kube-apiserver answers for the CRD's schema.
    let ok = "cronSpec: '* * * * *', image: x";
    refused(
        &k,
        "bad-pattern",
        "{cronSpec: 'every minute', image: x}",
        r#"The CronTab "bad-pattern" is invalid: spec.cronSpec: Invalid value: "every minute": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
    );
    refused(
        &k,
        "bad-enum",
        &format!("{{{ok}, concurrencyPolicy: Sometimes}}"),
        r#"The CronTab "bad-enum" is invalid: spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace""#,
    );
    refused(
        &k,
        "bad-rule",
        &format!("{{{ok}, replicas: 1, minReplicas: 3}}"),
        r#"The CronTab "bad-rule" is invalid: spec: Invalid value: "object": replicas may not be fewer than minReplicas"#,
    );
    refused(
        &k,
        "bad-required",
        "{cronSpec: '* * * * *'}",
        r#"The CronTab "bad-required" is invalid: spec.image: Required value"#,
    );
    refused(
        &k,
        "bad-bound",
        &format!("{{{ok}, replicas: 101}}"),
        "spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100",
    );
    let lists = k.run_with(
        &["create", "-f", "-"],
        &[],
        &crontab(
            "bad-lists",
            &format!(
                "{{{ok}, ports: [{{name: a, port: 1}}, {{name: a, port: 2}}, {{name: b}}], tags: [x, x, a, b, c, d, e, f, g, h, i]}}"
            ),
        ),
    );
    for want in [
        r#"spec.ports[1]: Duplicate value: {"name":"a"}"#,
        "spec.ports[2].port: Required value",
        "spec.tags: Too many: 11: must have at most 10 items",
        r#"spec.tags[1]: Duplicate value: "x""#,
    ] {
        assert!(
            lists.stderr.contains(want),
            "want `{want}`:\n{}",
            lists.describe()
        );
    }
    refused(
        &k,
        "bad-length",
        &format!("{{cronSpec: '* * * * *', image: {}}}", "i".repeat(254)),
        "spec.image: Too long: may not be more than 253 bytes",
    );
    refused(
        &k,
        "unknown-field",
        &format!("{{{ok}, schedule: daily}}"),
        r#"strict decoding error: unknown field "spec.schedule""#,
    );

    // Merge patch: checked like a create.
    k.ok(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"spec":{"concurrencyPolicy":"Forbid"}}"#,
    ]);
    let bad = k.run(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"spec":{"concurrencyPolicy":"Never"}}"#,
    ]);
    assert!(
        bad.stderr.contains(
            r#"The CronTab "my-new-cron-object" is invalid: spec.concurrencyPolicy: Unsupported value: "Never": supported values: "Allow", "Forbid", "Replace""#
        ),
        "{}",
        bad.describe()
    );
    let patched = get("crontab", "my-new-cron-object");
    assert_eq!(patched["spec"]["concurrencyPolicy"], "Forbid");
    assert_eq!(patched["metadata"]["generation"], 2);

    // Server-side apply: a second manager adds a port to the list-type map `ports`.
    k.ok_stdin(
        &["create", "-f", "-"],
        &crontab(
            "applied",
            "{cronSpec: '0 * * * *', image: web, ports: [{name: http, port: 80}]}",
        ),
    );
    k.ok_stdin(
        &["apply", "--server-side", "--field-manager=metrics", "-f", "-"],
        &crontab("applied", "{cronSpec: '0 * * * *', image: web, ports: [{name: metrics, port: 9090, protocol: UDP}]}"),
    );
    let applied = get("crontab", "applied");
    assert_eq!(
        applied["spec"]["ports"],
        json!([
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "protocol": "UDP"}
        ])
    );
    let conflict = k.run_with(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &[],
        &crontab("applied", "{cronSpec: '0 * * * *', image: other}"),
    );
    assert!(
        !conflict.success()
            && conflict.stderr.contains("Apply failed with")
            && conflict.stderr.contains(".spec.image"),
        "{}",
        conflict.describe()
    );

    // Status subresource: the main resource ignores `status`, /status writes only it.
    k.ok(&[
        "patch",
        "crontab",
        "applied",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7}}"#,
    ]);
    assert_eq!(get("crontab", "applied").get("status"), None);
    k.ok(&[
        "patch",
        "crontab",
        "applied",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"labelSelector":"app=web"},"spec":{"image":"ignored"}}"#,
    ]);
    let status = get("crontab", "applied");
    assert_eq!(
        status["status"],
        json!({"labelSelector": "app=web", "replicas": 2})
    );
    assert_eq!(status["spec"]["image"], "web");

    // Scale subresource: spec.replicas, status.replicas and the selector.
    k.ok(&[
        "scale",
        "crontab",
        "applied",
        "-n",
        "default",
        "--replicas=5",
    ]);
    let scaled = get("crontab", "applied");
    assert_eq!(scaled["spec"]["replicas"], 5);
    let scale = k.json(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/applied/scale",
    ]);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"], json!({"replicas": 5}));
    assert_eq!(
        scale["status"],
        json!({"replicas": 2, "selector": "app=web"})
    );
    let too_many = k.run(&[
        "scale",
        "crontab",
        "applied",
        "-n",
        "default",
        "--replicas=101",
    ]);
    assert!(
        too_many
            .stderr
            .contains("spec.replicas in body should be less than or equal to 100"),
        "{}",
        too_many.describe()
    );

    // Lists: every CronTab, and one by field selector.
    let names = k.ok(&["get", "crontabs", "-A", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [
            "crontab.stable.example.com/applied",
            "crontab.stable.example.com/legacy-cron",
            "crontab.stable.example.com/my-new-cron-object"
        ],
        "{names}"
    );
    let one = k.ok(&[
        "get",
        "ct",
        "-n",
        "default",
        "--field-selector",
        "metadata.name=legacy-cron",
        "-o",
        "name",
    ]);
    assert_eq!(one.trim(), "crontab.stable.example.com/legacy-cron");

    // kubectl explain reads the published schema.
    let explain = k.ok(&["explain", "crontabs.spec"]);
    for want in [
        "GROUP:      stable.example.com",
        "VERSION:    v1",
        "cronSpec\t<string> -required-",
        "The schedule, in cron format (five fields).",
        "enum: Allow, Forbid, Replace",
        "ports\t<[]CronTabSpecPortsItem>",
    ] {
        assert!(explain.contains(want), "explain lacks {want}:\n{explain}");
    }
}
