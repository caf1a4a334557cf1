//! ValidatingAdmissionPolicies against the real binary: a policy denying Widgets with more
//! than 10 replicas, through kubectl with Kubernetes' message; parameters from a ConfigMap
//! with a message expression; variables; the Warn action; a missing parameter under `Deny`;
//! expressions that do not compile are refused when the policy is written.

mod common;

use common::Server;
use common::send_json as send;
use serde_json::{Value, json};

const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";

struct Fixture {
    server: Server,
    client: reqwest::Client,
}

impl Fixture {
    /// Creates `plural/name` and waits until the watch cache has it (policies take effect
    /// once the caches have them, as in Kubernetes once the informers have them).
    async fn create(&self, plural: &str, body: Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
        let (code, resp, _) = send(
            &self.client,
            reqwest::Method::POST,
            self.server.url(&format!("{GROUP}/{plural}")),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{resp}");
        let cached = self
            .server
            .url(&format!("{GROUP}/{plural}/{name}?resourceVersion=0"));
        common::tls::wait_until("the policy object is in the watch cache", || async {
            send(&self.client, reqwest::Method::GET, cached.clone(), None)
                .await
                .0
                == 200
        })
        .await;
    }

    async fn widget(&self, ns: &str, name: &str, replicas: i64) -> (u16, Value, Vec<String>) {
        send(
            &self.client,
            reqwest::Method::POST,
            self.server
                .url(&format!("/apis/example.dev/v1/namespaces/{ns}/widgets")),
            Some(json!({"apiVersion": "example.dev/v1", "kind": "Widget",
                        "metadata": {"name": name}, "spec": {"replicas": replicas}})),
        )
        .await
    }
}

fn widget_rules() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.dev"],
                              "apiVersions": ["*"], "resources": ["widgets"]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_deny_warn_and_read_params() {
    let server = Server::start(&[]);
    let client = server.admin();
    let f = Fixture { server, client };
    for ns in ["vap", "params", "warn"] {
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
}
