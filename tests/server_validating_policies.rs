//! ValidatingAdmissionPolicies against the real binary: a policy denying Widgets with more
//! than 10 replicas, through kubectl with Kubernetes' message; parameters from a ConfigMap
//! with a message expression; variables; the Warn action; a missing parameter under `Deny`;
//! expressions that do not compile are refused when the policy is written; the cost budget;
//! audit annotations and the Audit action; the CEL authorizer.

mod common;

use common::admission::{Fixture, GROUP, audit_args, completed_events, widget_rules};
use common::send_json as send;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_deny_warn_and_read_params() {
    let f = Fixture::start(&[]);
    for ns in ["vap", "params", "warn", "costly"] {
        let (code, body, _) = send(
            &f.client,
            reqwest::Method::POST,
            f.server.url("/api/v1/namespaces"),
            Some(json!({"metadata": {"name": ns, "labels": {"policy": ns}}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }

    // An expression that does not compile is refused when the policy is written.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server
            .url(&format!("{GROUP}/validatingadmissionpolicies")),
        Some(json!({"metadata": {"name": "broken"},
                    "spec": {"matchConstraints": widget_rules(),
                             "validations": [{"expression": "object.spec.replicas <="}]}})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.contains("spec.validations[0].expression")
            && message.contains("compilation failed"),
        "{message}"
    );

    // max-replicas: at most 10, in the namespace labelled policy=vap.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "max-replicas"},
               "spec": {"failurePolicy": "Fail",
                        "matchConstraints": widget_rules(),
                        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
                        "validations": [{"expression": "variables.replicas <= 10",
                                         "message": "replicas must be no more than 10"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "max-replicas-binding"},
               "spec": {"policyName": "max-replicas", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "vap"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("vap", "big", 11).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no more than 10"
    );
    assert_eq!(body["reason"], "Forbidden");
    let (code, body, _) = f.widget("vap", "small", 10).await;
    assert_eq!(code, 201, "{body}");
    // Another namespace is not selected by the binding.
    let (code, body, _) = f.widget("warn", "big", 11).await;
    assert_eq!(code, 201, "{body}");

    // kubectl prints the denial as a Kubernetes user reads it.
    let kubectl = common::kubectls()
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no kubectl"));
    let manifest = f.server.data_dir.join("big-widget.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: kubectl-big\n  namespace: vap\nspec:\n  replicas: 12\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = f
        .server
        .kubectl(&kubectl, &["apply", "-f", &manifest.display().to_string()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no more than 10"),
        "{stderr}"
    );
    // And lists the policy with its columns.
    let out = f
        .server
        .kubectl(&kubectl, &["get", "validatingadmissionpolicies"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("VALIDATIONS") && stdout.contains("PARAMKIND"),
        "{stdout}"
    );
    assert!(
        stdout.contains("max-replicas") && stdout.contains("<unset>"),
        "{stdout}"
    );

    // Parameters from a ConfigMap, with a message expression.
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces/params/configmaps"),
        Some(json!({"metadata": {"name": "limits"}, "data": {"max": "3"}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "param-replicas"},
               "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                        "matchConstraints": widget_rules(),
                        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                                         "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed ' + params.data.max",
                                         "reason": "Invalid"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "param-replicas-binding"},
               "spec": {"policyName": "param-replicas", "validationActions": ["Deny"],
                        "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "params"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("params", "four", 4).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'param-replicas' with binding 'param-replicas-binding' denied request: replicas 4 exceed 3"
    );
    let (code, body, _) = f.widget("params", "three", 3).await;
    assert_eq!(code, 201, "{body}");
    // Without its parameter object, Deny: nothing passes.
    let (code, _, _) = send(
        &f.client,
        reqwest::Method::DELETE,
        f.server.url("/api/v1/namespaces/params/configmaps/limits"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    let gone = f
        .server
        .url("/api/v1/namespaces/params/configmaps/limits?resourceVersion=0");
    common::tls::wait_until("the parameter deletion reached the cache", || async {
        send(&f.client, reqwest::Method::GET, gone.clone(), None)
            .await
            .0
            == 404
    })
    .await;
    let (code, body, _) = f.widget("params", "one", 1).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{body}"
    );

    // Warn: the request passes with the failure as a warning.
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "warn-binding"},
               "spec": {"policyName": "max-replicas", "validationActions": ["Warn"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "warn"}}}}}),
    )
    .await;
    let (code, body, warnings) = f.widget("warn", "warned", 20).await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.iter().any(|w| w.contains(
            "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn-binding': replicas must be no more than 10"
        )),
        "{warnings:?}"
    );

    // A policy whose expression names a field Widgets do not have: the type-checking
    // controller reports it in the policy's status.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "typo"},
               "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                            "apiGroups": ["example.dev"], "apiVersions": ["v1"], "resources": ["widgets"]}]},
                        "validations": [{"expression": "object.spec.replicas > 0 && object.spec.replica > 1"},
                                        {"expression": "object.spec.replicas < 100"},
                                        {"expression": "object.spec.replicas > '10' || size(object.spec.replicas) > 0"}]}}),
    )
    .await;
    let url = f
        .server
        .url(&format!("{GROUP}/validatingadmissionpolicies/typo"));
    let mut status = Value::Null;
    for _ in 0..100 {
        let (_, body, _) = send(&f.client, reqwest::Method::GET, url.clone(), None).await;
        if !body["status"]["typeChecking"].is_null() {
            status = body["status"].clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status["observedGeneration"], 1, "{status}");
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(warnings.len(), 2, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    assert_eq!(
        warnings[0]["warning"],
        "example.dev/v1, Kind=Widget: ERROR: <input>:1:40: undefined field 'replica'\n | object.spec.replicas > 0 && object.spec.replica > 1\n | .......................................^"
    );
    // Operands of the wrong types: one block per mistake under the kind, as cel-go writes
    // its issues.
    let third = "object.spec.replicas > '10' || size(object.spec.replicas) > 0";
    assert_eq!(warnings[1]["fieldRef"], "spec.validations[2].expression");
    assert_eq!(
        warnings[1]["warning"],
        format!(
            "example.dev/v1, Kind=Widget: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | {third}\n | {}^\nERROR: <input>:1:36: found no matching overload for 'size' applied to '(int)'\n | {third}\n | {}^",
            ".".repeat(21),
            ".".repeat(35)
        )
    );

    // An expression that could cost more than the per-expression limit (a million
    // iterations) is refused before it runs, and the failure policy decides.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "costly"},
               "spec": {"matchConstraints": widget_rules(),
                        "variables": [{"name": "l", "expression": format!("{:?}", (0..100).collect::<Vec<i64>>())}],
                        "validations": [{"expression":
                            "variables.l.all(a, variables.l.all(b, variables.l.all(c, a + b + c >= 0)))"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "costly-binding"},
               "spec": {"policyName": "costly", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "costly"}}}}}),
    )
    .await;
    let (code, body, _) = f.widget("costly", "w", 1).await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "ValidatingAdmissionPolicy 'costly' with binding 'costly-binding' denied request: "
        ) && message.contains("cost limit exceeded"),
        "{message}"
    );
}

/// A MutatingAdmissionPolicy with its binding, selecting Widgets in namespaces labelled

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_audit_annotations_and_the_audit_action_reach_the_audit_event() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (args, log) = audit_args(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let f = Fixture::start(&args);
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "audited", "labels": {"policy": "audited"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "replicas-audit"},
               "spec": {"matchConstraints": widget_rules(),
                        "validations": [{"expression": "object.spec.replicas <= 10",
                                         "message": "replicas must be no more than 10"}],
                        "auditAnnotations": [
                            {"key": "replicas", "valueExpression": "string(object.spec.replicas)"},
                            {"key": "nothing", "valueExpression": "null"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "replicas-audit-binding"},
               "spec": {"policyName": "replicas-audit", "validationActions": ["Audit"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "audited"}}}}}),
    )
    .await;
    // Audit only: the request passes, and its event says why it would not have.
    let (code, body, warnings) = f.widget("audited", "big", 20).await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");
    let events = completed_events(&log, "big").await;
    let annotations = &events[0]["annotations"];
    assert_eq!(
        annotations["replicas-audit/replicas"], "20",
        "{annotations}"
    );
    assert!(
        annotations.get("replicas-audit/nothing").is_none(),
        "{annotations}"
    );
    let failures: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation_failure annotation: {annotations}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        failures,
        json!([{"message": "replicas must be no more than 10", "policy": "replicas-audit",
                "binding": "replicas-audit-binding", "expressionIndex": 0,
                "validationActions": ["Audit"]}])
    );
    // A passing request has the annotations but no failure.
    let (code, body, _) = f.widget("audited", "small", 2).await;
    assert_eq!(code, 201, "{body}");
    let events = completed_events(&log, "small").await;
    let annotations = &events[0]["annotations"];
    assert_eq!(annotations["replicas-audit/replicas"], "2", "{annotations}");
    assert!(
        annotations
            .get("validation.policy.admission.k8s.io/validation_failure")
            .is_none(),
        "{annotations}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_ask_the_authorizer_about_the_requesting_user() {
    let f = Fixture::start(&[]);
    let (code, body, _) = send(
        &f.client,
        reqwest::Method::POST,
        f.server.url("/api/v1/namespaces"),
        Some(json!({"metadata": {"name": "authz", "labels": {"policy": "authz"}}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    // Jane may create widgets in the namespace, but not delete them.
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/authz/roles",
            json!({"metadata": {"name": "widget-creator"},
                   "rules": [{"apiGroups": ["example.dev"], "resources": ["widgets"],
                              "verbs": ["create", "get"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/authz/rolebindings",
            json!({"metadata": {"name": "jane-creates"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-creator"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}),
        ),
    ] {
        let (code, resp, _) = send(
            &f.client,
            reqwest::Method::POST,
            f.server.url(path),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{resp}");
    }
    // Widgets with more than 5 replicas only from users who may also delete them.
    f.create(
        "validatingadmissionpolicies",
        json!({"metadata": {"name": "big-needs-delete"},
               "spec": {"matchConstraints": widget_rules(),
                        "validations": [{
                            "expression": "object.spec.replicas <= 5 || authorizer.group('example.dev').resource('widgets').namespace(request.namespace).check('delete').allowed()",
                            "messageExpression": "'only users who may delete widgets may ask for ' + string(object.spec.replicas) + ' replicas'"}]}}),
    )
    .await;
    f.create(
        "validatingadmissionpolicybindings",
        json!({"metadata": {"name": "big-needs-delete-binding"},
               "spec": {"policyName": "big-needs-delete", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "authz"}}}}}),
    )
    .await;
    let (cert, key) = f.server.user_cert("jane", "");
    let jane = f.server.with_identity(&cert, &key);
    let widget = |client: &reqwest::Client, name: &str, replicas: i64| {
        let url = f
            .server
            .url("/apis/example.dev/v1/namespaces/authz/widgets");
        let client = client.clone();
        let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                          "metadata": {"name": name}, "spec": {"replicas": replicas}});
        async move { send(&client, reqwest::Method::POST, url, Some(body)).await }
    };
    // RBAC sees the binding shortly after it is written.
    let mut n = 0;
    loop {
        n += 1;
        let (code, body, _) = widget(&jane, &format!("small-{n}"), 5).await;
        if code == 201 {
            break;
        }
        assert!(n < 100 && code == 403, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (code, body, _) = widget(&jane, "big", 6).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy 'big-needs-delete' with binding 'big-needs-delete-binding' denied request: only users who may delete widgets may ask for 6 replicas"
    );
    // The admin may delete widgets.
    let (code, body, _) = widget(&f.client, "admins-big", 6).await;
    assert_eq!(code, 201, "{body}");
}

/// POSTs `body` to `path` as `client`: the status and the answer.
async fn post(client: &reqwest::Client, f: &Fixture, path: &str, body: Value) -> (u16, Value) {
    let (code, body, _) = send(
        client,
        reqwest::Method::POST,
        f.server.url(path),
        Some(body),
    )
    .await;
    (code, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_a_policy_or_binding_needs_read_access_to_its_parameters() {
    let f = Fixture::start(&[]);
    let admin = &f.client;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    for (path, body) in [
        ("/api/v1/namespaces", json!({"metadata": {"name": "vault"}})),
        (
            "/api/v1/namespaces/vault/secrets",
            json!({"metadata": {"name": "pw"}, "stringData": {"pw": "TOPSECRET"}}),
        ),
        (
            &format!("{rbac}/clusterroles"),
            json!({"metadata": {"name": "policy-writer"},
                   "rules": [{"apiGroups": ["admissionregistration.k8s.io"], "verbs": ["create", "update", "get"],
                              "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings",
                                            "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"]}]}),
        ),
        (
            &format!("{rbac}/clusterrolebindings"),
            json!({"metadata": {"name": "policy-writer"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "policy-writer"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
        ),
        (
            &format!("{GROUP}/validatingadmissionpolicies"),
            json!({"metadata": {"name": "reads-secrets"},
                   "spec": {"paramKind": {"apiVersion": "v1", "kind": "Secret"}, "matchConstraints": widget_rules(),
                            "validations": [{"expression": "false", "messageExpression": "string(params.data)"}]}}),
        ),
    ] {
        let (code, body) = post(admin, &f, path, body).await;
        assert_eq!(code, 201, "{path}: {body}");
    }
    let (cert, key) = f.server.user_cert("alice", "");
    let alice = f.server.with_identity(&cert, &key);

    // A policy without parameters needs nothing more (and tells when the grant applies).
    let plain = json!({"metadata": {"name": "plain"},
                       "spec": {"matchConstraints": widget_rules(), "validations": [{"expression": "true"}]}});
    let mut last = (0, Value::Null);
    for _ in 0..100 {
        last = post(
            &alice,
            &f,
            &format!("{GROUP}/validatingadmissionpolicies"),
            plain.clone(),
        )
        .await;
        if last.0 == 201 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 201, "{}", last.1);

    // Parameters of a kind alice cannot read everywhere: refused, in Kubernetes' words.
    for (path, kind) in [
        (
            format!("{GROUP}/validatingadmissionpolicies"),
            "ValidatingAdmissionPolicy",
        ),
        (
            format!("{}/mutatingadmissionpolicies", common::admission::BETA),
            "MutatingAdmissionPolicy",
        ),
    ] {
        let mut policy = json!({"metadata": {"name": "mine"},
                                "spec": {"paramKind": {"apiVersion": "v1", "kind": "Secret"},
                                         "matchConstraints": widget_rules()}});
        if kind == "ValidatingAdmissionPolicy" {
            policy["spec"]["validations"] =
                json!([{"expression": "false", "messageExpression": "string(params.data)"}]);
        } else {
            policy["spec"]["mutations"] =
                json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]);
        }
        let (code, body) = post(&alice, &f, &path, policy).await;
        assert_eq!(code, 422, "{kind}: {body}");
        assert_eq!(body["reason"], "Invalid");
        assert_eq!(
            body["details"]["causes"][0]["field"], "spec.paramKind",
            "{body}"
        );
        let message = body["message"].as_str().unwrap_or("");
        assert!(
            message.contains(&format!("{kind}.admissionregistration.k8s.io \"mine\" is invalid: spec.paramKind: Forbidden: user &{{alice  [system:authenticated] map[]}} must have \"get\" permission on all objects of the referenced paramKind (kind=Secret, apiVersion=v1)")),
            "{message}"
        );
    }

    // A binding whose paramRef names a Secret alice cannot read: refused, so the policy's
    // message cannot show it to her.
    let binding = json!({"metadata": {"name": "leak"},
                         "spec": {"policyName": "reads-secrets", "validationActions": ["Deny"],
                                  "paramRef": {"name": "pw", "namespace": "vault", "parameterNotFoundAction": "Deny"}}});
    let bindings = format!("{GROUP}/validatingadmissionpolicybindings");
    let (code, body) = post(&alice, &f, &bindings, binding.clone()).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"], "spec.paramRef",
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap_or("").ends_with(
            "spec.paramRef: Forbidden: user &{alice  [system:authenticated] map[]} does not have \"get\" permission on the object referenced by paramRef"
        ),
        "{body}"
    );

    // Allowed to read that one Secret, she may bind it.
    for (path, body) in [
        (
            format!("{rbac}/namespaces/vault/roles"),
            json!({"metadata": {"name": "pw-reader"},
                   "rules": [{"apiGroups": [""], "verbs": ["get"], "resources": ["secrets"], "resourceNames": ["pw"]}]}),
        ),
        (
            format!("{rbac}/namespaces/vault/rolebindings"),
            json!({"metadata": {"name": "pw-reader"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pw-reader"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
        ),
    ] {
        let (code, body) = post(admin, &f, &path, body).await;
        assert_eq!(code, 201, "{path}: {body}");
    }
    for _ in 0..100 {
        last = post(&alice, &f, &bindings, binding.clone()).await;
        if last.0 == 201 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 201, "{}", last.1);
    // Reading one Secret is not reading them all: a policy over Secrets stays refused.
    let (code, body) = post(
        &alice,
        &f,
        &format!("{GROUP}/validatingadmissionpolicies"),
        json!({"metadata": {"name": "mine"},
               "spec": {"paramKind": {"apiVersion": "v1", "kind": "Secret"}, "matchConstraints": widget_rules(),
                        "validations": [{"expression": "true"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
}
