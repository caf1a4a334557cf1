//! What clients read from the OpenAPI documents: kubectl's `--validate=strict` check (a PATCH
//! operation with the kind's GVK and a `fieldValidation` query parameter), `kubectl explain`
//! (a schema whose `x-kubernetes-group-version-kind` list holds the GVK), client-side apply
//! (strategic merge patch only for kinds that accept it), and the schema keywords.

mod support;

use codegen::Generator;
use codegen::emit::openapi::{emit_openapi_v2, emit_openapi_v3};
use serde_json::{Value, json};

fn model() -> codegen::ApiModel {
    Generator::new(support::all_api_defs())
        .load()
        .expect("load api-defs")
}

fn v3(model: &codegen::ApiModel, group: &str, version: &str) -> Value {
    let g = model.group(group).expect("group");
    emit_openapi_v3(model, g, g.version(version).expect("version"))
}

/// Finds the PATCH operation carrying `gvk`, as kubectl's query-parameter verifier does.
fn patch_op_for<'a>(doc: &'a Value, gvk: &Value) -> Option<&'a Value> {
    doc["paths"]
        .as_object()?
        .values()
        .filter_map(|p| p.get("patch"))
        .find(|op| &op["x-kubernetes-group-version-kind"] == gvk)
}

fn has_query_param(op: &Value, name: &str) -> bool {
    op["parameters"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "query"))
}

#[test]
fn every_mutable_kind_has_a_patch_operation_with_field_validation() {
    let model = model();
    let mut checked = 0;
    for group in model.api_groups() {
        for version in &group.versions {
            let doc = emit_openapi_v3(&model, group, version);
            assert_eq!(doc["openapi"], "3.0.0");
            for kind in version.kinds().filter_map(|s| s.kind.as_ref()) {
                let gvk =
                    json!({"group": group.name, "kind": kind.name, "version": version.version});
                let schema_name = format!(
                    "{}.{}",
                    codegen::emit::openapi::definition_prefix(version),
                    kind.name
                );
                let schema = &doc["components"]["schemas"][&schema_name];
                assert!(
                    schema["x-kubernetes-group-version-kind"]
                        .as_array()
                        .is_some_and(|l| l.contains(&gvk)),
                    "{schema_name} lacks its GVK"
                );
                if kind.create_only {
                    assert!(
                        patch_op_for(&doc, &gvk).is_none(),
                        "{} is create-only",
                        kind.name
                    );
                    continue;
                }
                let op = patch_op_for(&doc, &gvk)
                    .unwrap_or_else(|| panic!("no PATCH operation for {gvk}"));
                assert!(
                    has_query_param(op, "fieldValidation"),
                    "{gvk}: PATCH lacks fieldValidation"
                );
                assert!(
                    has_query_param(op, "fieldManager")
                        && has_query_param(op, "force")
                        && has_query_param(op, "dryRun")
                );
                let media = op["requestBody"]["content"]
                    .as_object()
                    .expect("patch content");
                for m in [
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ] {
                    assert!(media.contains_key(m), "{gvk}: PATCH lacks {m}");
                }
                assert_eq!(
                    media.contains_key("application/strategic-merge-patch+json"),
                    kind.strategic_merge_patch,
                    "{gvk}: strategic merge patch listed iff the kind accepts it"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 14, "checked {checked} kinds");
}

#[test]
fn widget_paths_and_operations() {
    let model = model();
    let doc = v3(&model, "example.dev", "v1");
    let paths = doc["paths"].as_object().expect("paths");
    let collection = &paths["/apis/example.dev/v1/namespaces/{namespace}/widgets"];
    assert_eq!(collection["get"]["x-kubernetes-action"], "list");
    assert_eq!(collection["post"]["x-kubernetes-action"], "post");
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );
    assert!(has_query_param(&collection["get"], "watch"));
    assert!(has_query_param(&collection["get"], "sendInitialEvents"));
    assert!(has_query_param(&collection["post"], "fieldValidation"));
    let item = &paths["/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}"];
    for (method, action) in [
        ("get", "get"),
        ("put", "put"),
        ("patch", "patch"),
        ("delete", "delete"),
    ] {
        assert_eq!(item[method]["x-kubernetes-action"], action);
        assert_eq!(
            item[method]["x-kubernetes-group-version-kind"],
            json!({"group": "example.dev", "kind": "Widget", "version": "v1"})
        );
    }
    assert_eq!(
        paths["/apis/example.dev/v1/widgets"]["get"]["operationId"],
        "listExampleDevV1WidgetForAllNamespaces"
    );
    assert!(
        paths.contains_key("/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/status")
    );
    let scale = &paths["/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/scale"];
    assert_eq!(
        scale["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    assert!(doc["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"].is_object());
    assert!(paths.contains_key("/apis/example.dev/v1/watch/namespaces/{namespace}/widgets"));
}

#[test]
fn widget_schema_keywords() {
    let model = model();
    let doc = v3(&model, "example.dev", "v1");
    let schemas = &doc["components"]["schemas"];
    let spec = &schemas["dev.example.v1.WidgetSpec"]["properties"];
    assert_eq!(spec["replicas"]["type"], "integer");
    assert_eq!(spec["replicas"]["format"], "int32");
    assert_eq!(spec["replicas"]["default"], 1);
    assert_eq!(spec["replicas"]["minimum"], 0);
    assert_eq!(spec["replicas"]["maximum"], 1000);
    assert_eq!(spec["color"]["pattern"], "^[a-z]+$");
    assert_eq!(spec["color"]["maxLength"], 63);
    let widget = &schemas["dev.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-validations"][0]["message"],
        "a red widget may have at most 100 replicas"
    );
    assert_eq!(
        widget["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    // Every referenced schema is present.
    let text = doc.to_string();
    for name in text
        .split("#/components/schemas/")
        .skip(1)
        .map(|s| s.split('"').next().unwrap_or(""))
    {
        assert!(
            schemas.get(name).is_some(),
            "{name} is referenced but missing"
        );
    }
    assert_eq!(
        schemas["dev.example.v1.WidgetList"]["x-kubernetes-group-version-kind"],
        json!([{"group": "example.dev", "kind": "WidgetList", "version": "v1"}])
    );
}

#[test]
fn kubernetes_kinds_use_kubernetes_names_and_markers() {
    let model = model();
    let core = v3(&model, "", "v1");
    let schemas = &core["components"]["schemas"];
    let config_map = &schemas["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        config_map["properties"]["binaryData"]["additionalProperties"]["format"],
        "byte"
    );
    assert_eq!(
        config_map["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    let status = &schemas["io.k8s.api.core.v1.NamespaceStatus"]["properties"]["conditions"];
    assert_eq!(status["x-kubernetes-list-type"], "map");
    assert_eq!(status["x-kubernetes-list-map-keys"], json!(["type"]));
    assert_eq!(status["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(status["x-kubernetes-patch-merge-key"], "type");
    assert_eq!(
        schemas["io.k8s.api.core.v1.Event"]["properties"]["eventTime"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
    );
    // Namespaces have no deletecollection; core paths live under /api/v1.
    assert!(core["paths"]["/api/v1/namespaces"].get("delete").is_none());
    assert_eq!(
        core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]["operationId"],
        "patchCoreV1NamespacedConfigMap"
    );

    assert_eq!(
        schemas["io.k8s.api.core.v1.ObjectReference"]["x-kubernetes-map-type"],
        "atomic"
    );
    let rbac = v3(&model, "rbac.authorization.k8s.io", "v1");
    assert_eq!(
        rbac["components"]["schemas"]["io.k8s.api.rbac.v1.RoleRef"]["x-kubernetes-map-type"],
        "atomic"
    );
    assert_eq!(
        rbac["components"]["schemas"]["io.k8s.api.rbac.v1.Subject"]["x-kubernetes-map-type"],
        "atomic"
    );

    let admission = v3(&model, "admissionregistration.k8s.io", "v1");
    let webhook = &admission["components"]["schemas"]["io.k8s.api.admissionregistration.v1.MutatingWebhook"]
        ["properties"];
    assert_eq!(webhook["timeoutSeconds"]["default"], 10);
    assert_eq!(webhook["failurePolicy"]["default"], "Fail");
    assert_eq!(webhook["reinvocationPolicy"]["default"], "Never");
    let rule = &admission["components"]["schemas"]["io.k8s.api.admissionregistration.v1.RuleWithOperations"]
        ["properties"];
    assert!(
        rule.get("apiGroups").is_some() && rule.get("rule").is_none(),
        "the inline rule is flattened"
    );

    let authz = v3(&model, "authorization.k8s.io", "v1");
    let paths = authz["paths"].as_object().expect("paths");
    let sar = &paths["/apis/authorization.k8s.io/v1/subjectaccessreviews"];
    assert!(
        sar.get("post").is_some() && sar.get("get").is_none(),
        "review kinds are create-only"
    );
    assert!(paths.contains_key(
        "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews"
    ));
}

#[test]
fn v2_documents_use_definitions_and_body_parameters() {
    let model = model();
    let g = model.group("example.dev").expect("group");
    let doc = emit_openapi_v2(&model, g, g.version("v1").expect("v1"));
    assert!(doc["definitions"]["dev.example.v1.Widget"].is_object());
    assert!(doc["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    let patch =
        &doc["paths"]["/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert_eq!(patch["parameters"][0]["in"], "body");
    assert_eq!(
        patch["parameters"][0]["schema"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    assert!(
        patch["consumes"]
            .as_array()
            .expect("consumes")
            .contains(&json!("application/merge-patch+json"))
    );
    assert!(
        patch["parameters"]
            .as_array()
            .expect("params")
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["type"] == "string")
    );
    assert!(
        !doc.to_string().contains("#/components/"),
        "v2 refers to #/definitions only"
    );
    assert_eq!(
        emit_openapi_v3(&model, g, g.internal.as_ref().expect("hub")),
        Value::Null
    );
}

/// A `#[subresource]` is a `post` operation with its body kind's GVK, and the body's schema
/// (from another group) is in the document, as kube-apiserver publishes
/// `createCoreV1NamespacedServiceAccountToken`.
#[test]
fn the_token_subresource_is_published_with_its_schema() {
    let model = model();
    let doc = v3(&model, "", "v1");
    let op = &doc["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"];
    assert_eq!(
        op["operationId"],
        "createCoreV1NamespacedServiceAccountToken"
    );
    assert_eq!(
        op["x-kubernetes-group-version-kind"],
        json!({"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"})
    );
    let schema = "#/components/schemas/io.k8s.api.authentication.v1.TokenRequest";
    assert_eq!(
        op["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        schema
    );
    let schemas = &doc["components"]["schemas"];
    for name in [
        "io.k8s.api.authentication.v1.TokenRequest",
        "io.k8s.api.authentication.v1.TokenRequestSpec",
        "io.k8s.api.authentication.v1.BoundObjectReference",
    ] {
        assert!(schemas[name].is_object(), "{name} is missing");
    }
    let g = model.group("").expect("core");
    let v2 = emit_openapi_v2(&model, g, g.version("v1").expect("v1"));
    assert!(v2["definitions"]["io.k8s.api.authentication.v1.TokenRequest"].is_object());
}
