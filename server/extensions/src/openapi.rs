//! The OpenAPI documents of a CRD's served versions, as kube-apiserver's CRD OpenAPI builder
//! makes them: the kind's schema (its `openAPIV3Schema` with `apiVersion`, `kind` and
//! `metadata` set and `x-kubernetes-group-version-kind`), its list's, and the paths of every
//! operation with the parameters clients look for (`kubectl` checks a PATCH's `fieldValidation`
//! before it asks the server to validate fields). One v3 document per group version, and the
//! `paths` and `definitions` of the v2 document.

use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::{Map, Value, json};
use server::genericserver::openapi::OwnedOpenApiDocs;

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// The documents of every served version of `crd` (with the accepted names).
pub fn documents(crd: &CustomResourceDefinition) -> Vec<OwnedOpenApiDocs> {
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| version_documents(crd, v))
        .collect()
}

/// The reversed group, as Kubernetes names a CRD's definitions (`com.example.stable`).
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

struct Names<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    list_kind: String,
    plural: &'a str,
    namespaced: bool,
    definition: String,
    list_definition: String,
}

fn version_documents(
    crd: &CustomResourceDefinition,
    version: &CustomResourceDefinitionVersion,
) -> OwnedOpenApiDocs {
    let accepted = &crd.status.accepted_names;
    let kind = accepted.kind.as_str();
    let list_kind = accepted
        .list_kind
        .clone()
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| format!("{kind}List"));
    let prefix = format!("{}.{}", reversed(&crd.spec.group), version.name);
    let names = Names {
        group: &crd.spec.group,
        version: &version.name,
        kind,
        definition: format!("{prefix}.{kind}"),
        list_definition: format!("{prefix}.{list_kind}"),
        list_kind,
        plural: &accepted.plural,
        namespaced: crd.spec.scope != "Cluster",
    };
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let subresources = version.subresources.as_ref();
    let status = subresources.is_some_and(|s| s.status.is_some());
    let scale = subresources.is_some_and(|s| s.scale.is_some());

    let v3_schemas = definitions(&names, &schema, "#/components/schemas/", true);
    let v3 = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths(&names, status, scale, true),
        "components": {"schemas": v3_schemas},
    });
    let v2 = json!({
        "paths": paths(&names, status, scale, false),
        "definitions": definitions(&names, &strip_for_v2(schema), "#/definitions/", false),
    });
    OwnedOpenApiDocs {
        group: names.group.to_string(),
        version: names.version.to_string(),
        v3,
        v2,
    }
}

/// OpenAPI v2 has no `nullable` and kube-apiserver publishes no defaults there.
fn strip_for_v2(mut schema: Value) -> Value {
    fn walk(v: &mut Value, depth: usize) {
        if depth > 128 {
            return;
        }
        match v {
            Value::Object(m) => {
                m.remove("nullable");
                m.remove("default");
                for child in m.values_mut() {
                    walk(child, depth + 1);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|c| walk(c, depth + 1)),
            _ => {}
        }
    }
    walk(&mut schema, 0);
    schema
}

fn gvk(names: &Names<'_>, kind: &str) -> Value {
    json!([{"group": names.group, "kind": kind, "version": names.version}])
}

fn definitions(names: &Names<'_>, schema: &Value, refs: &str, v3: bool) -> Map<String, Value> {
    let mut kind_schema = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let properties = kind_schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(p) = properties {
        p.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
        p.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
        let meta_ref = json!({"$ref": format!("{refs}{META}.ObjectMeta")});
        p.insert(
            "metadata".into(),
            if v3 {
                json!({"allOf": [meta_ref], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"})
            } else {
                meta_ref
            },
        );
    }
    kind_schema.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk(names, names.kind),
    );
    let list = json!({
        "type": "object",
        "description": format!("{} is a list of {}", names.list_kind, names.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"type": "array", "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", names.plural),
                "items": {"$ref": format!("{refs}{}", names.definition)}},
            "kind": {"type": "string"},
            "metadata": {"$ref": format!("{refs}{META}.ListMeta")},
        },
        "x-kubernetes-group-version-kind": gvk(names, &names.list_kind),
    });
    let mut out = Map::new();
    out.insert(names.definition.clone(), Value::Object(kind_schema));
    out.insert(names.list_definition.clone(), list);
    out
}

/// A query or path parameter.
fn param(name: &str, location: &str, type_: &str, description: &str, v3: bool) -> Value {
    let mut p =
        json!({"name": name, "in": location, "description": description, "uniqueItems": true});
    if location == "path" {
        p["required"] = json!(true);
    }
    if v3 {
        p["schema"] = json!({"type": type_, "uniqueItems": true});
        if let Value::Object(m) = &mut p {
            m.remove("uniqueItems");
        }
    } else {
        p["type"] = json!(type_);
    }
    p
}

fn write_params(v3: bool, patch: bool) -> Vec<Value> {
    let mut out = vec![
        param(
            "dryRun",
            "query",
            "string",
            "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
            v3,
        ),
        param(
            "fieldManager",
            "query",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
            v3,
        ),
        param(
            "fieldValidation",
            "query",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn (the default) - Strict",
            v3,
        ),
    ];
    if patch {
        out.push(param("force", "query", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.", v3));
    }
    out
}

fn list_params(v3: bool) -> Vec<Value> {
    [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    ]
    .iter()
    .map(|(n, t)| param(n, "query", t, &format!("The {n} of the list or watch."), v3))
    .collect()
}

/// One operation: its action, parameters, body and answer.
fn operation(
    names: &Names<'_>,
    action: &str,
    id: &str,
    params: Vec<Value>,
    body: Option<&str>,
    answer: &str,
    v3: bool,
) -> Value {
    let refs = if v3 {
        "#/components/schemas/"
    } else {
        "#/definitions/"
    };
    let answer_ref = json!({"$ref": format!("{refs}{answer}")});
    let mut op = json!({
        "operationId": id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": names.group, "kind": names.kind, "version": names.version},
    });
    if !params.is_empty() {
        op["parameters"] = Value::Array(params);
    }
    if v3 {
        let media = ["application/json", "application/yaml"];
        let content: Map<String, Value> = media
            .iter()
            .map(|m| (m.to_string(), json!({"schema": answer_ref.clone()})))
            .collect();
        op["responses"] = json!({"200": {"description": "OK", "content": content}, "401": {"description": "Unauthorized"}});
        if let Some(body) = body {
            let types: &[&str] = if action == "patch" {
                &[
                    "application/apply-patch+yaml",
                    "application/json-patch+json",
                    "application/merge-patch+json",
                ]
            } else {
                &["application/json", "application/yaml"]
            };
            let content: Map<String, Value> = types
                .iter()
                .map(|t| {
                    (
                        t.to_string(),
                        json!({"schema": {"$ref": format!("{refs}{body}")}}),
                    )
                })
                .collect();
            op["requestBody"] = json!({"content": content, "required": true});
        }
    } else {
        op["responses"] = json!({"200": {"description": "OK", "schema": answer_ref}, "401": {"description": "Unauthorized"}});
        op["produces"] = json!(["application/json", "application/yaml"]);
        if action == "patch" {
            op["consumes"] = json!([
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml"
            ]);
        } else {
            op["consumes"] = json!(["*/*"]);
        }
        if let Some(body) = body {
            let mut params = op["parameters"].as_array().cloned().unwrap_or_default();
            params.insert(
                0,
                json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": format!("{refs}{body}")}}),
            );
            op["parameters"] = Value::Array(params);
        }
    }
    op
}

fn paths(names: &Names<'_>, status: bool, scale: bool, v3: bool) -> Map<String, Value> {
    let root = format!("/apis/{}/{}", names.group, names.version);
    let (collection, object) = if names.namespaced {
        (
            format!("{root}/namespaces/{{namespace}}/{}", names.plural),
            format!("{root}/namespaces/{{namespace}}/{}/{{name}}", names.plural),
        )
    } else {
        (
            format!("{root}/{}", names.plural),
            format!("{root}/{}/{{name}}", names.plural),
        )
    };
    let scope = if names.namespaced { "Namespaced" } else { "" };
    let id = |verb: &str, suffix: &str| {
        format!(
            "{verb}{}{}{scope}{}{suffix}",
            camel(names.group),
            camel(names.version),
            names.kind
        )
    };
    let mut common = vec![param(
        "pretty",
        "query",
        "string",
        "If 'true', then the output is pretty printed.",
        v3,
    )];
    if names.namespaced {
        common.push(param(
            "namespace",
            "path",
            "string",
            "object name and auth scope, such as for teams and projects",
            v3,
        ));
    }
    let mut with_name = common.clone();
    with_name.push(param(
        "name",
        "path",
        "string",
        &format!("name of the {}", names.kind),
        v3,
    ));
    let (kind_def, list_def) = (names.definition.as_str(), names.list_definition.as_str());
    let status_def = format!("{META}.Status");
    let patch_def = format!("{META}.Patch");
    let delete_def = format!("{META}.DeleteOptions");
    let scale_def = "io.k8s.api.autoscaling.v1.Scale";

    let mut out = Map::new();
    out.insert(
        collection.clone(),
        json!({
            "parameters": common,
            "get": operation(names, "list", &id("list", ""), list_params(v3), None, list_def, v3),
            "post": operation(names, "post", &id("create", ""), write_params(v3, false), Some(kind_def), kind_def, v3),
            "delete": operation(names, "deletecollection", &id("deletecollection", ""), list_params(v3), Some(&delete_def), &status_def, v3),
        }),
    );
    out.insert(
        object.clone(),
        json!({
            "parameters": with_name,
            "get": operation(names, "get", &id("read", ""), vec![], None, kind_def, v3),
            "put": operation(names, "put", &id("replace", ""), write_params(v3, false), Some(kind_def), kind_def, v3),
            "patch": operation(names, "patch", &id("patch", ""), write_params(v3, true), Some(&patch_def), kind_def, v3),
            "delete": operation(names, "delete", &id("delete", ""), vec![param("dryRun", "query", "string", "When present, indicates that modifications should not be persisted.", v3)], Some(&delete_def), &status_def, v3),
        }),
    );
    if names.namespaced {
        out.insert(
            format!("{root}/{}", names.plural),
            json!({
                "parameters": [param("pretty", "query", "string", "If 'true', then the output is pretty printed.", v3)],
                "get": operation(names, "list", &format!("list{}{}{}ForAllNamespaces", camel(names.group), camel(names.version), names.kind), list_params(v3), None, list_def, v3),
            }),
        );
    }
    if status {
        out.insert(
            format!("{object}/status"),
            json!({
                "parameters": with_name,
                "get": operation(names, "get", &id("read", "Status"), vec![], None, kind_def, v3),
                "put": operation(names, "put", &id("replace", "Status"), write_params(v3, false), Some(kind_def), kind_def, v3),
                "patch": operation(names, "patch", &id("patch", "Status"), write_params(v3, true), Some(&patch_def), kind_def, v3),
            }),
        );
    }
    if scale {
        out.insert(
            format!("{object}/scale"),
            json!({
                "parameters": with_name,
                "get": operation(names, "get", &id("read", "Scale"), vec![], None, scale_def, v3),
                "put": operation(names, "put", &id("replace", "Scale"), write_params(v3, false), Some(scale_def), scale_def, v3),
                "patch": operation(names, "patch", &id("patch", "Scale"), write_params(v3, true), Some(&patch_def), scale_def, v3),
            }),
        );
    }
    out
}

/// `stable.example.com` → `StableExampleCom`, as Kubernetes builds operation ids.
fn camel(text: &str) -> String {
    text.split(['.', '-'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "default": 1, "nullable": true}}}}}}}]
            },
            "status": {"acceptedNames": {"plural": "crontabs", "kind": "CronTab"}}
        }))
        .expect("a CRD")
    }

    #[test]
    fn the_kind_its_list_and_its_paths() {
        let docs = documents(&crd());
        assert_eq!(docs.len(), 1);
        let v3 = &docs[0].v3;
        let schemas = &v3["components"]["schemas"];
        let kind = &schemas["com.example.stable.v1.CronTab"];
        assert_eq!(
            kind["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        assert_eq!(
            kind["properties"]["spec"]["properties"]["replicas"]["default"],
            1
        );
        assert_eq!(
            schemas["com.example.stable.v1.CronTabList"]["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTab"
        );
        let patch = &v3["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
            ["patch"];
        assert_eq!(
            patch["operationId"],
            "patchStableExampleComV1NamespacedCronTab"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "fieldValidation"))
        );
        assert!(
            v3["paths"]
                .get("/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status")
                .is_some()
        );
        let v2 = &docs[0].v2["definitions"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            v2["properties"]["spec"]["properties"]["replicas"],
            json!({"type": "integer"}),
            "v2 has no defaults or nullable"
        );
    }
}
