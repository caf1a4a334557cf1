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
//!
//! This file lays out those paths and operations for each kind and version. Building one
//! operation object (its bodies, media types, responses and extensions) is in `operation`; the
//! query and path parameters, with their descriptions and the lists each verb takes, are in
//! `parameters`.

mod operation;
mod parameters;

use std::collections::BTreeMap;

use heck::{ToLowerCamelCase, ToUpperCamelCase};
use serde_json::{Map, Value, json};

use super::Dialect;
use super::meta::definition_name as shared_name;
use super::schema::definition_name;
use crate::model::{KindModel, VersionModel};
use operation::{Body, LIST_MEDIA, OBJECT_MEDIA, Ops, patch_media};
use parameters::{
    DELETE_COLLECTION_PARAMS, DELETE_PARAMS, LIST_PARAMS, PATCH_PARAMS, WRITE_PARAMS,
};

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
