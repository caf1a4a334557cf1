//! The path operations kube-apiserver serves for each resource, as OpenAPI `paths`.
//!
//! For a kind with plural `p` under root `R` (`/api/v1` or `/apis/{group}/{version}`):
//! the collection path (`R/namespaces/{namespace}/p` or `R/p`) has list (GET), create (POST)
//! and deletecollection (DELETE); the item path (`…/{name}`) has read, replace, patch and
//! delete; namespaced kinds also have the all-namespaces list `R/p`; `/status` and `/scale`
//! have read, replace and patch; the deprecated `R/watch/…` paths have watch. Only the kind's
//! verbs are emitted (a create-only review kind gets POST only). Every operation carries
//! `x-kubernetes-action` and `x-kubernetes-group-version-kind` (one object). Query
//! parameters are on the operations (kubectl looks for `fieldValidation` on the PATCH
//! operation); path parameters and `pretty` are on the path.

use std::collections::BTreeMap;

use heck::{ToLowerCamelCase, ToUpperCamelCase};
use serde_json::{Map, Value, json};

use super::Dialect;
use super::meta::definition_name as shared_name;
use super::schema::definition_name;
use crate::model::{KindModel, VersionModel};

const OBJECT_MEDIA: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const LIST_MEDIA: [&str; 5] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// The URL root of a group version: `/api/v1` for core, `/apis/{group}/{version}` otherwise.
pub fn api_root(version: &VersionModel) -> String {
    if version.group.is_empty() {
        format!("/api/{}", version.version)
    } else {
        format!("/apis/{}/{}", version.group, version.version)
    }
}

/// The group part of operation ids: `Core`, `RbacAuthorization`, `ExampleDev`.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.replace('.', "_").to_upper_camel_case()
}

/// The tag of a group version: `core_v1`, `rbacAuthorization_v1`.
fn tag(version: &VersionModel) -> String {
    format!(
        "{}_{}",
        group_camel(&version.group).to_lower_camel_case(),
        version.version
    )
}

/// What an operation's parameters and bodies look like in a dialect.
struct Ops<'a> {
    dialect: Dialect,
    version: &'a VersionModel,
    tag: String,
    id_prefix: String,
    /// The definition names of the body types of the kinds' `#[subresource]`s, by
    /// `group/version/Kind`.
    foreign: &'a BTreeMap<String, String>,
}

/// A parameter's type.
#[derive(Clone, Copy)]
enum P {
    Str,
    Int,
    Bool,
}

impl P {
    fn name(self) -> &'static str {
        match self {
            P::Str => "string",
            P::Int => "integer",
            P::Bool => "boolean",
        }
    }
}

/// The body of a request or response: a definition, with media types.
struct Body<'m> {
    schema: String,
    media: &'m [&'m str],
}

impl Ops<'_> {
    fn schema_ref(&self, name: &str) -> Value {
        json!({ "$ref": format!("{}{name}", self.dialect.ref_prefix()) })
    }

    fn param(&self, name: &str, location: &str, ty: P, description: &str) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(name));
        m.insert("in".into(), json!(location));
        m.insert("description".into(), json!(description));
        if location == "path" {
            m.insert("required".into(), json!(true));
        }
        match self.dialect {
            Dialect::V3 => {
                m.insert(
                    "schema".into(),
                    json!({"type": ty.name(), "uniqueItems": true}),
                );
            }
            Dialect::V2 => {
                m.insert("type".into(), json!(ty.name()));
                m.insert("uniqueItems".into(), json!(true));
            }
        }
        Value::Object(m)
    }

    fn q(&self, name: &str) -> Value {
        let (ty, description) = match name {
            "allowWatchBookmarks" => (
                P::Bool,
                "Asks for BOOKMARK events in a watch; the server may send them or not.",
            ),
            "continue" => (
                P::Str,
                "The token of the next page of a chunked list, from the previous page's metadata.continue.",
            ),
            "dryRun" => (
                P::Str,
                "When present, the request is checked and answered but nothing is persisted. The only valid value is All.",
            ),
            "fieldManager" => (
                P::Str,
                "The name of the actor making the change, recorded in managedFields; at most 128 printable characters. Required for apply.",
            ),
            "fieldSelector" => (
                P::Str,
                "Restricts the objects returned by their fields, such as metadata.name=foo. Everything by default.",
            ),
            "fieldValidation" => (
                P::Str,
                "What to do with unknown or duplicate fields in the body: Ignore drops them, Warn (the default) drops them with a warning header each, Strict fails the request.",
            ),
            "force" => (
                P::Bool,
                "Apply only: take over fields owned by other managers instead of failing with a conflict.",
            ),
            "gracePeriodSeconds" => (
                P::Int,
                "Seconds before the object is deleted; zero deletes immediately. The kind's default when absent.",
            ),
            "ignoreStoreReadErrorWithClusterBreakingPotential" => (
                P::Bool,
                "Deletes an object that cannot be read from storage. Dangerous; requires extra permission.",
            ),
            "labelSelector" => (
                P::Str,
                "Restricts the objects returned by their labels, such as app=web,tier!=db. Everything by default.",
            ),
            "limit" => (
                P::Int,
                "The largest number of objects to return; more may follow, fetched with the continue token.",
            ),
            "orphanDependents" => (P::Bool, "Deprecated: use propagationPolicy."),
            "propagationPolicy" => (
                P::Str,
                "Whether and how dependents are garbage collected: Orphan, Background or Foreground.",
            ),
            "resourceVersion" => (
                P::Str,
                "Which version of the data to read: empty for the latest, 0 for any, or a version to read at or after (see resourceVersionMatch).",
            ),
            "resourceVersionMatch" => (
                P::Str,
                "How resourceVersion applies to a list: Exact or NotOlderThan.",
            ),
            "sendInitialEvents" => (
                P::Bool,
                "In a watch, first sends the current objects as ADDED events, then a bookmark annotated k8s.io/initial-events-end.",
            ),
            "timeoutSeconds" => (
                P::Int,
                "Ends a list or watch after this many seconds, regardless of activity.",
            ),
            "watch" => (
                P::Bool,
                "Streams changes (ADDED, MODIFIED, DELETED) instead of returning a list.",
            ),
            _ => (P::Str, ""),
        };
        self.param(name, "query", ty, description)
    }

    fn qs(&self, names: &[&str]) -> Vec<Value> {
        names.iter().map(|n| self.q(n)).collect()
    }

    fn path_params(&self, namespaced: bool, named: bool, kind: &str) -> Value {
        let mut params = Vec::new();
        if named {
            params.push(self.param("name", "path", P::Str, &format!("The name of the {kind}.")));
        }
        if namespaced {
            params.push(self.param("namespace", "path", P::Str, "The namespace of the objects."));
        }
        params.push(self.param(
            "pretty",
            "query",
            P::Str,
            "When true, the output is indented.",
        ));
        Value::Array(params)
    }

    /// One operation.
    #[allow(clippy::too_many_arguments)]
    fn op(
        &self,
        id: &str,
        description: &str,
        action: &str,
        gvk: (&str, &str, &str),
        params: Vec<Value>,
        request: Option<Body<'_>>,
        responses: &[(&str, Option<&Body<'_>>)],
    ) -> Value {
        let mut op = Map::new();
        op.insert("description".into(), json!(description));
        op.insert("operationId".into(), json!(id));
        op.insert("tags".into(), json!([self.tag]));
        let mut params = params;
        match (self.dialect, &request) {
            (Dialect::V3, Some(body)) => {
                let content: Map<String, Value> = body
                    .media
                    .iter()
                    .map(|m| {
                        (
                            m.to_string(),
                            json!({"schema": self.schema_ref(&body.schema)}),
                        )
                    })
                    .collect();
                op.insert(
                    "requestBody".into(),
                    json!({"content": content, "required": true}),
                );
            }
            (Dialect::V2, Some(body)) => {
                params.insert(0, json!({"name": "body", "in": "body", "required": true, "schema": self.schema_ref(&body.schema)}));
                op.insert("consumes".into(), json!(body.media));
            }
            _ => {}
        }
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        let mut resp = Map::new();
        for (code, body) in responses {
            let description = match *code {
                "200" => "OK",
                "201" => "Created",
                "202" => "Accepted",
                _ => "Unauthorized",
            };
            let entry = match (self.dialect, body) {
                (Dialect::V3, Some(b)) => {
                    let content: Map<String, Value> = b
                        .media
                        .iter()
                        .map(|m| (m.to_string(), json!({"schema": self.schema_ref(&b.schema)})))
                        .collect();
                    json!({"description": description, "content": content})
                }
                (Dialect::V2, Some(b)) => {
                    json!({"description": description, "schema": self.schema_ref(&b.schema)})
                }
                _ => json!({"description": description}),
            };
            resp.insert(code.to_string(), entry);
        }
        resp.insert("401".into(), json!({"description": "Unauthorized"}));
        op.insert("responses".into(), Value::Object(resp));
        if self.dialect == Dialect::V2 {
            let produces: Vec<&str> = responses
                .iter()
                .find_map(|(_, b)| b.map(|b| b.media.to_vec()))
                .unwrap_or_default();
            op.insert("produces".into(), json!(produces));
            op.insert("schemes".into(), json!(["https"]));
        }
        op.insert("x-kubernetes-action".into(), json!(action));
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": gvk.0, "kind": gvk.2, "version": gvk.1}),
        );
        Value::Object(op)
    }
}

const LIST_PARAMS: [&str; 10] = [
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: [&str; 3] = ["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: [&str; 4] = ["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: [&str; 5] = [
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const DELETE_COLLECTION_PARAMS: [&str; 14] = [
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];

/// The patch media types a kind accepts.
fn patch_media(kind: &KindModel) -> Vec<&'static str> {
    let mut media = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if kind.strategic_merge_patch {
        media.push("application/strategic-merge-patch+json");
    }
    media
}

/// Inserts an operation under a path, creating the path item with its parameters.
fn put(paths: &mut Map<String, Value>, path: &str, method: &str, op: Value, params: &Value) {
    let item = paths.entry(path.to_string()).or_insert_with(|| json!({}));
    if let Value::Object(m) = item {
        m.insert(method.into(), op);
        m.entry("parameters").or_insert_with(|| params.clone());
    }
}

/// A subresource served with get, put and patch (`status`, `scale`).
struct Subresource<'a> {
    /// The path segment, also used (capitalised) in operation ids and descriptions.
    name: &'a str,
    /// The kind of its body.
    gvk: (&'a str, &'a str, &'a str),
    /// The definition name of its body.
    schema: String,
}

/// The get, put and patch operations of one subresource under a kind's item path.
#[allow(clippy::too_many_arguments)]
fn subresource_paths(
    ops: &Ops<'_>,
    paths: &mut Map<String, Value>,
    item: &str,
    id_stem: &str,
    k: &str,
    sub: &Subresource<'_>,
    patch: &str,
    patch_media: &[&str],
    item_params: &Value,
) {
    let path = format!("{item}/{}", sub.name);
    let title = sub.name.to_upper_camel_case();
    let body = Body {
        schema: sub.schema.clone(),
        media: &OBJECT_MEDIA,
    };
    let read = ops.op(
        &format!("read{id_stem}{title}"),
        &format!("reads the {} of the named {k}", sub.name),
        "get",
        sub.gvk,
        Vec::new(),
        None,
        &[("200", Some(&body))],
    );
    put(paths, &path, "get", read, item_params);
    let replace = ops.op(
        &format!("replace{id_stem}{title}"),
        &format!("replaces the {} of the named {k}", sub.name),
        "put",
        sub.gvk,
        ops.qs(&WRITE_PARAMS),
        Some(Body {
            schema: sub.schema.clone(),
            media: &["*/*"],
        }),
        &[("200", Some(&body)), ("201", Some(&body))],
    );
    put(paths, &path, "put", replace, item_params);
    let patch_op = ops.op(
        &format!("patch{id_stem}{title}"),
        &format!("partially updates the {} of the named {k}", sub.name),
        "patch",
        sub.gvk,
        ops.qs(&PATCH_PARAMS),
        Some(Body {
            schema: patch.to_string(),
            media: patch_media,
        }),
        &[("200", Some(&body)), ("201", Some(&body))],
    );
    put(paths, &path, "patch", patch_op, item_params);
}

/// Every path of one kind.
fn kind_paths(ops: &Ops<'_>, kind: &KindModel, paths: &mut Map<String, Value>) {
    let version = ops.version;
    let root = api_root(version);
    let k = kind.name.as_str();
    let gvk = (version.group.as_str(), version.version.as_str(), k);
    let namespaced = kind.scope == crate::model::Scope::Namespaced;
    let has = |verb: &str| {
        if kind.create_only {
            verb == "create"
        } else {
            kind.verbs.iter().any(|v| v == verb)
        }
    };
    let ns = if namespaced { "Namespaced" } else { "" };
    let prefix = &ops.id_prefix;
    let collection = if namespaced {
        format!("{root}/namespaces/{{namespace}}/{}", kind.plural)
    } else {
        format!("{root}/{}", kind.plural)
    };
    let item = format!("{collection}/{{name}}");
    let object = definition_name(version, k);
    let list = definition_name(version, &kind.list_name());
    let status = shared_name("Status");
    let delete_options = shared_name("DeleteOptions");
    let patch = shared_name("Patch");
    let watch_event = shared_name("WatchEvent");
    let object_body = Body {
        schema: object.clone(),
        media: &OBJECT_MEDIA,
    };
    let list_body = Body {
        schema: list.clone(),
        media: &LIST_MEDIA,
    };
    let status_body = Body {
        schema: status.clone(),
        media: &OBJECT_MEDIA,
    };
    let watch_body = Body {
        schema: watch_event.clone(),
        media: &LIST_MEDIA,
    };
    let patch_media = patch_media(kind);

    let collection_params = ops.path_params(namespaced, false, k);
    if has("list") {
        let op = ops.op(
            &format!("list{prefix}{ns}{k}"),
            &format!("lists or watches objects of kind {k}"),
            "list",
            gvk,
            ops.qs(&LIST_PARAMS),
            None,
            &[("200", Some(&list_body))],
        );
        put(paths, &collection, "get", op, &collection_params);
    }
    if has("create") {
        let op = ops.op(
            &format!("create{prefix}{ns}{k}"),
            &format!("creates a {k}"),
            "post",
            gvk,
            ops.qs(&WRITE_PARAMS),
            Some(Body {
                schema: object.clone(),
                media: &["*/*"],
            }),
            &[
                ("200", Some(&object_body)),
                ("201", Some(&object_body)),
                ("202", Some(&object_body)),
            ],
        );
        put(paths, &collection, "post", op, &collection_params);
    }
    if has("deletecollection") {
        let op = ops.op(
            &format!("delete{prefix}Collection{ns}{k}"),
            &format!("deletes a collection of {k} objects"),
            "deletecollection",
            gvk,
            ops.qs(&DELETE_COLLECTION_PARAMS),
            Some(Body {
                schema: delete_options.clone(),
                media: &["*/*"],
            }),
            &[("200", Some(&status_body))],
        );
        put(paths, &collection, "delete", op, &collection_params);
    }

    let item_params = ops.path_params(namespaced, true, k);
    if has("get") {
        let op = ops.op(
            &format!("read{prefix}{ns}{k}"),
            &format!("reads the named {k}"),
            "get",
            gvk,
            Vec::new(),
            None,
            &[("200", Some(&object_body))],
        );
        put(paths, &item, "get", op, &item_params);
    }
    if has("update") {
        let op = ops.op(
            &format!("replace{prefix}{ns}{k}"),
            &format!("replaces the named {k}"),
            "put",
            gvk,
            ops.qs(&WRITE_PARAMS),
            Some(Body {
                schema: object.clone(),
                media: &["*/*"],
            }),
            &[("200", Some(&object_body)), ("201", Some(&object_body))],
        );
        put(paths, &item, "put", op, &item_params);
    }
    if has("patch") {
        let op = ops.op(
            &format!("patch{prefix}{ns}{k}"),
            &format!("partially updates the named {k}"),
            "patch",
            gvk,
            ops.qs(&PATCH_PARAMS),
            Some(Body {
                schema: patch.clone(),
                media: &patch_media,
            }),
            &[("200", Some(&object_body)), ("201", Some(&object_body))],
        );
        put(paths, &item, "patch", op, &item_params);
    }
    if has("delete") {
        let op = ops.op(
            &format!("delete{prefix}{ns}{k}"),
            &format!("deletes the named {k}"),
            "delete",
            gvk,
            ops.qs(&DELETE_PARAMS),
            Some(Body {
                schema: delete_options.clone(),
                media: &["*/*"],
            }),
            &[("200", Some(&status_body)), ("202", Some(&status_body))],
        );
        put(paths, &item, "delete", op, &item_params);
    }

    if namespaced && has("list") {
        let all = format!("{root}/{}", kind.plural);
        let op = ops.op(
            &format!("list{prefix}{k}ForAllNamespaces"),
            &format!("lists or watches objects of kind {k} in every namespace"),
            "list",
            gvk,
            ops.qs(&LIST_PARAMS),
            None,
            &[("200", Some(&list_body))],
        );
        put(paths, &all, "get", op, &ops.path_params(false, false, k));
    }

    let id_stem = format!("{prefix}{ns}{k}");
    if kind.status && !kind.create_only {
        let status_sub = Subresource {
            name: "status",
            gvk,
            schema: object.clone(),
        };
        subresource_paths(
            ops,
            paths,
            &item,
            &id_stem,
            k,
            &status_sub,
            &patch,
            &patch_media,
            &item_params,
        );
    }

    if kind.scale.is_some() && !kind.create_only {
        let scale_sub = Subresource {
            name: "scale",
            gvk: ("autoscaling", "v1", "Scale"),
            schema: shared_name("Scale"),
        };
        subresource_paths(
            ops,
            paths,
            &item,
            &id_stem,
            k,
            &scale_sub,
            &patch,
            &patch_media,
            &item_params,
        );
    }

    for sub in kind.subresources.iter().filter(|_| !kind.create_only) {
        if sub.kind.is_empty() {
            // An update of the object itself through the subresource: a PUT of the kind.
            let body = Body {
                schema: object.clone(),
                media: &OBJECT_MEDIA,
            };
            let op = ops.op(
                &format!("replace{id_stem}{}", sub.name.to_upper_camel_case()),
                &format!("replace {} of the specified {k}", sub.name),
                "put",
                gvk,
                ops.qs(&WRITE_PARAMS),
                Some(Body {
                    schema: object.clone(),
                    media: &["*/*"],
                }),
                &[("200", Some(&body)), ("201", Some(&body))],
            );
            put(
                paths,
                &format!("{item}/{}", sub.name),
                "put",
                op,
                &item_params,
            );
            continue;
        }
        let key = format!("{}/{}/{}", sub.group, sub.version, sub.kind);
        let Some(schema) = ops.foreign.get(&key) else {
            continue;
        };
        let body = Body {
            schema: schema.clone(),
            media: &OBJECT_MEDIA,
        };
        let op = ops.op(
            &format!("create{id_stem}{}", sub.name.to_upper_camel_case()),
            &format!("create {} of a {k}", sub.name),
            "post",
            (&sub.group, &sub.version, &sub.kind),
            ops.qs(&WRITE_PARAMS),
            Some(Body {
                schema: schema.clone(),
                media: &["*/*"],
            }),
            &[
                ("200", Some(&body)),
                ("201", Some(&body)),
                ("202", Some(&body)),
            ],
        );
        put(
            paths,
            &format!("{item}/{}", sub.name),
            "post",
            op,
            &item_params,
        );
    }

    if has("watch") {
        let watch_params: Vec<&str> = LIST_PARAMS.to_vec();
        let (watch_collection, watch_item) = if namespaced {
            (
                format!("{root}/watch/namespaces/{{namespace}}/{}", kind.plural),
                format!(
                    "{root}/watch/namespaces/{{namespace}}/{}/{{name}}",
                    kind.plural
                ),
            )
        } else {
            (
                format!("{root}/watch/{}", kind.plural),
                format!("{root}/watch/{}/{{name}}", kind.plural),
            )
        };
        let op = ops.op(
            &format!("watch{prefix}{ns}{k}List"),
            &format!("watches changes to a list of {k}; deprecated: use the watch parameter of the list operation"),
            "watchlist",
            gvk,
            ops.qs(&watch_params),
            None,
            &[("200", Some(&watch_body))],
        );
        put(paths, &watch_collection, "get", op, &collection_params);
        let op = ops.op(
            &format!("watch{prefix}{ns}{k}"),
            &format!(
                "watches changes to a {k}; deprecated: use the watch parameter of the list operation with a field selector on metadata.name"
            ),
            "watch",
            gvk,
            ops.qs(&watch_params),
            None,
            &[("200", Some(&watch_body))],
        );
        put(paths, &watch_item, "get", op, &item_params);
        if namespaced {
            let op = ops.op(
                &format!("watch{prefix}{k}ListForAllNamespaces"),
                &format!("watches changes to a list of {k} in every namespace; deprecated: use the watch parameter of the list operation"),
                "watchlist",
                gvk,
                ops.qs(&watch_params),
                None,
                &[("200", Some(&watch_body))],
            );
            put(
                paths,
                &format!("{root}/watch/{}", kind.plural),
                "get",
                op,
                &ops.path_params(false, false, k),
            );
        }
    }
}

/// Every path of a version: its resource discovery path and every kind's paths.
pub fn version_paths(
    dialect: Dialect,
    version: &VersionModel,
    foreign: &BTreeMap<String, String>,
) -> Map<String, Value> {
    let ops = Ops {
        dialect,
        version,
        foreign,
        tag: tag(version),
        id_prefix: format!(
            "{}{}",
            group_camel(&version.group),
            version.version.to_upper_camel_case()
        ),
    };
    let mut paths = Map::new();
    let resources = Body {
        schema: shared_name("APIResourceList"),
        media: &[
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ],
    };
    let mut discovery = ops.op(
        &format!("get{}APIResources", ops.id_prefix),
        "gets the resources of this group version",
        "get",
        ("", "v1", "APIResourceList"),
        Vec::new(),
        None,
        &[("200", Some(&resources))],
    );
    if let Value::Object(m) = &mut discovery {
        // Discovery is not an operation on a kind of this group.
        m.remove("x-kubernetes-action");
        m.remove("x-kubernetes-group-version-kind");
    }
    paths.insert(
        format!("{}/", api_root(version)),
        json!({ "get": discovery }),
    );
    for kind in version.kinds().filter_map(|s| s.kind.as_ref()) {
        kind_paths(&ops, kind, &mut paths);
    }
    paths
}
