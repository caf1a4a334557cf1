//! OpenAPI emission: v3 and v2 documents of one group version.
//!
//! Contract with the rest of the generator:
//!
//! - [`emit_openapi_v3`] returns the OpenAPI v3 document of the group version served at
//!   `/openapi/v3/apis/<group>/<version>` (`/openapi/v3/api/v1` for core): `openapi`, `info`,
//!   `paths` (the operations the server serves for each kind, with
//!   `x-kubernetes-group-version-kind` and the PATCH operation's `fieldValidation` parameter and
//!   patch media types) and `components.schemas` keyed by Kubernetes-style definition names
//!   (`io.k8s.api.core.v1.ConfigMap`, `dev.example.v1.Widget`), including every shared schema
//!   (`io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, …) the document references: those of
//!   the shared definitions (`meta.k8s.io/v1`) and of the hand-written types.
//! - [`emit_openapi_v2`] returns an object `{"definitions": {…}, "paths": {…}}` for this group
//!   version, which the server merges into `/openapi/v2`.
//!
//! The generator serializes both to `OUT_DIR/openapi/<group-module>_<version>.v3.json` and
//! `.v2.json` and registers them in `generated::scheme()` as `apimachinery::scheme::OpenApiDocs`.
//! The internal hub version is never served and yields `Value::Null` (written as `{}`).

mod meta;
mod paths;
mod schema;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

pub use meta::definition_name as meta_definition_name;
pub use paths::api_root;
pub use schema::{definition_name, definition_prefix};

use crate::model::{ApiModel, GroupModel, VersionModel};

/// The two OpenAPI dialects: they differ in where definitions live and how bodies and
/// parameters are described.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Swagger 2.0 (`/openapi/v2`): `#/definitions/…`, body parameters, `consumes`/`produces`.
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/…`): `#/components/schemas/…`, `requestBody`, `content`.
    V3,
}

impl Dialect {
    /// The `$ref` prefix of definitions.
    pub fn ref_prefix(self) -> &'static str {
        match self {
            Dialect::V2 => "#/definitions/",
            Dialect::V3 => "#/components/schemas/",
        }
    }
}

/// Collects the definition names referenced (`$ref`) anywhere in `value`.
fn collect_refs(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "$ref" {
                    if let Some(name) = v.as_str().and_then(|s| s.strip_prefix(prefix)) {
                        out.insert(name.to_string());
                    }
                } else {
                    collect_refs(v, prefix, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}

/// Every shared schema documents may reference, keyed by definition name: those of the shared
/// version's structs (`ObjectMeta`, `Status`, …, from `api-defs/meta.k8s.io/v1.rs`) and those
/// of the types written by hand (`meta::shared_schemas`: `Time`, `Quantity`, `DeleteOptions`,
/// …).
pub fn shared_schemas(dialect: Dialect, shared: Option<&VersionModel>) -> Map<String, Value> {
    let mut out = meta::shared_schemas(dialect);
    if let Some(v) = shared {
        out.extend(schema::version_schemas(dialect, v));
    }
    out
}

/// The version's schemas plus every shared schema they (or the paths) reference,
/// transitively, sorted by name.
fn schemas_and_paths(
    dialect: Dialect,
    model: &ApiModel,
    version: &VersionModel,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut schemas = schema::version_schemas(dialect, version);
    // The body types of the kinds' `#[subresource]`s live in other groups: their definitions
    // (and those they reference) join this version's document.
    let mut foreign = BTreeMap::new();
    let mut shared = shared_schemas(dialect, model.shared());
    // The structs of other crates' groups the definitions refer to (`core::v1::ObjectReference`):
    // their definitions (and those they reference) join this version's document, so
    // `kubectl explain` reads them.
    for (_, _, extern_version) in referenced_externs(model) {
        for (name, schema) in schema::version_schemas(dialect, extern_version) {
            shared.entry(name).or_insert(schema);
        }
    }
    for kind in version.structs.iter().filter_map(|s| s.kind.as_ref()) {
        for sub in &kind.subresources {
            let Some(body_version) = model
                .group(&sub.group)
                .and_then(|g| g.version(&sub.version))
            else {
                continue;
            };
            foreign.insert(
                format!("{}/{}/{}", sub.group, sub.version, sub.kind),
                schema::definition_name(body_version, &sub.kind),
            );
            for (name, schema) in schema::version_schemas(dialect, body_version) {
                shared.entry(name).or_insert(schema);
            }
        }
    }
    let paths = paths::version_paths(dialect, version, &foreign);
    let prefix = dialect.ref_prefix();
    let mut pending = BTreeSet::new();
    collect_refs(&Value::Object(schemas.clone()), prefix, &mut pending);
    collect_refs(&Value::Object(paths.clone()), prefix, &mut pending);
    while let Some(name) = pending.pop_first() {
        if schemas.contains_key(&name) {
            continue;
        }
        if let Some(schema) = shared.get(&name) {
            collect_refs(schema, prefix, &mut pending);
            schemas.insert(name, schema.clone());
        }
    }
    let mut sorted: Vec<(String, Value)> = schemas.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    (sorted.into_iter().collect(), paths)
}

/// The OpenAPI v3 component schemas of one version: its own and every shared or extern
/// schema they reference, transitively, keyed by definition name.
pub fn schemas_v3(model: &ApiModel, version: &VersionModel) -> Map<String, Value> {
    schemas_and_paths(Dialect::V3, model, version).0
}

/// The extern group versions (of [`ApiModel::externs`]) the model's own definitions refer to,
/// each once, in crate, group and version order.
pub fn referenced_externs(
    model: &ApiModel,
) -> Vec<(&crate::model::ExternCrate, &GroupModel, &VersionModel)> {
    let mut refs = BTreeSet::new();
    for group in model.api_groups() {
        for v in group.versions.iter().chain(group.internal.iter()) {
            for s in &v.structs {
                for f in &s.fields {
                    if let Some(r) = f.ty.extern_ref() {
                        refs.insert((
                            r.rust_crate.clone(),
                            r.group_module.clone(),
                            r.version.clone(),
                        ));
                    }
                }
            }
        }
    }
    refs.iter()
        .filter_map(|(krate, group, version)| {
            let r = crate::model::ExternRef {
                group_module: group.clone(),
                version: version.clone(),
                rust_crate: krate.clone(),
                ..Default::default()
            };
            model.extern_version(&r)
        })
        .collect()
}

/// Returns the OpenAPI v3 document of one group version (`Null` for the internal version and
/// the shared one). `model` provides the shared version's schemas.
pub fn emit_openapi_v3(model: &ApiModel, group: &GroupModel, version: &VersionModel) -> Value {
    let _ = group;
    if version.is_internal || version.shared {
        return Value::Null;
    }
    let (schemas, paths) = schemas_and_paths(Dialect::V3, model, version);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "apiary", "version": version.api_version()},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "authorization",
                    "description": "A bearer token: `Authorization: Bearer <token>`."
                }
            }
        },
        "security": [{"BearerToken": []}]
    })
}

/// Returns the OpenAPI v2 `{definitions, paths}` of one group version (`Null` for the internal
/// version and the shared one). `model` provides the shared version's schemas.
pub fn emit_openapi_v2(model: &ApiModel, group: &GroupModel, version: &VersionModel) -> Value {
    let _ = group;
    if version.is_internal || version.shared {
        return Value::Null;
    }
    let (definitions, paths) = schemas_and_paths(Dialect::V2, model, version);
    json!({ "definitions": definitions, "paths": paths })
}
