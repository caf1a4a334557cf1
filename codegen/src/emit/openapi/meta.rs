//! The schemas of the shared types documents reference that are not definitions: the
//! hand-written `meta.k8s.io/v1` scalars (Time, MicroTime, Duration, FieldsV1), the request
//! and discovery types the paths name (DeleteOptions, Preconditions, WatchEvent, Patch,
//! APIResource, APIResourceList), `runtime.RawExtension`, `resource.Quantity`,
//! `intstr.IntOrString`, and `autoscaling/v1` Scale for `/scale`. The schemas of the shared
//! definitions (ObjectMeta, ListMeta, Status, …) come from `api-defs/meta.k8s.io/v1.rs`
//! ([`super::shared_schemas`]).
//!
//! Names are Kubernetes' definition names, so clients that look schemas up by name (or by
//! `x-kubernetes-group-version-kind`) find them where they expect.

use serde_json::{Map, Value, json};

use super::Dialect;

/// The package prefix of the meta types' definition names.
pub const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// The definition name of a shared type: meta types under `io.k8s.apimachinery.pkg.apis.meta.v1`,
/// and `Quantity`, `IntOrString`, `RawExtension` and `Scale` under their own packages.
pub fn definition_name(name: &str) -> String {
    match name {
        "Quantity" => "io.k8s.apimachinery.pkg.api.resource.Quantity".into(),
        "IntOrString" => "io.k8s.apimachinery.pkg.util.intstr.IntOrString".into(),
        "RawExtension" => "io.k8s.apimachinery.pkg.runtime.RawExtension".into(),
        "Scale" | "ScaleSpec" | "ScaleStatus" => format!("io.k8s.api.autoscaling.v1.{name}"),
        other => format!("{META}.{other}"),
    }
}

/// Builds schemas with the dialect's `$ref` rules.
struct Builder {
    dialect: Dialect,
}

impl Builder {
    /// A reference to a shared type.
    fn r(&self, name: &str) -> Value {
        json!({ "$ref": format!("{}{}", self.dialect.ref_prefix(), definition_name(name)) })
    }

    /// A described reference (wrapped in `allOf` for v3).
    fn rd(&self, name: &str, description: &str) -> Value {
        match self.dialect {
            Dialect::V3 => json!({ "allOf": [self.r(name)], "description": description }),
            Dialect::V2 => {
                let mut v = self.r(name);
                if let Value::Object(m) = &mut v {
                    m.insert("description".into(), Value::String(description.into()));
                }
                v
            }
        }
    }
}

fn s(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn int64(description: &str) -> Value {
    json!({"type": "integer", "format": "int64", "description": description})
}

fn int32(description: &str) -> Value {
    json!({"type": "integer", "format": "int32", "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn type_meta(props: &mut Map<String, Value>) {
    props.insert(
        "apiVersion".into(),
        s("The versioned schema of this representation of an object."),
    );
    props.insert(
        "kind".into(),
        s("The REST resource type this object represents, in CamelCase."),
    );
}

fn object(description: &str, props: Map<String, Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("description".into(), Value::String(description.into()));
    m.insert("type".into(), Value::String("object".into()));
    m.insert("properties".into(), Value::Object(props));
    m
}

fn props(entries: Vec<(&str, Value)>) -> Map<String, Value> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Every shared schema, keyed by definition name.
pub fn shared_schemas(dialect: Dialect) -> Map<String, Value> {
    let b = Builder { dialect };
    let mut out = Map::new();
    let mut add = |name: &str, schema: Map<String, Value>| {
        out.insert(definition_name(name), Value::Object(schema));
    };

    add(
        "Time",
        json!({"type": "string", "format": "date-time", "description": "An RFC 3339 date and time with second precision, such as 2024-05-01T10:00:00Z."})
            .as_object().cloned().unwrap_or_default(),
    );
    add(
        "MicroTime",
        json!({"type": "string", "format": "date-time", "description": "An RFC 3339 date and time with microsecond precision."})
            .as_object().cloned().unwrap_or_default(),
    );
    add(
        "Duration",
        json!({"type": "string", "description": "A duration in Go's notation, such as 1h30m or 15s."})
            .as_object().cloned().unwrap_or_default(),
    );
    add(
        "FieldsV1",
        json!({"type": "object", "description": "A set of fields in the structured-merge-diff JSON format used by server-side apply."})
            .as_object().cloned().unwrap_or_default(),
    );
    add(
        "RawExtension",
        json!({"type": "object", "description": "An embedded object of any kind."})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    add(
        "Patch",
        json!({"type": "object", "description": "The body of a PATCH request: a JSON patch, a merge patch, a strategic merge patch or an apply configuration, depending on the Content-Type."})
            .as_object().cloned().unwrap_or_default(),
    );
    let quantity = match dialect {
        Dialect::V3 => {
            json!({"description": "A fixed-point amount with an optional unit suffix, such as 100m, 2 or 1Gi.", "oneOf": [{"type": "string"}, {"type": "number"}]})
        }
        Dialect::V2 => {
            json!({"description": "A fixed-point amount with an optional unit suffix, such as 100m, 2 or 1Gi.", "type": "string"})
        }
    };
    add(
        "Quantity",
        quantity.as_object().cloned().unwrap_or_default(),
    );
    let int_or_string = match dialect {
        Dialect::V3 => {
            json!({"description": "A value that is either a 32-bit integer or a string.", "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
        }
        Dialect::V2 => {
            json!({"description": "A value that is either a 32-bit integer or a string.", "format": "int-or-string", "type": "string"})
        }
    };
    add(
        "IntOrString",
        int_or_string.as_object().cloned().unwrap_or_default(),
    );

    add(
        "Preconditions",
        object(
            "Conditions an object must meet for a delete to proceed.",
            props(vec![
                (
                    "resourceVersion",
                    s("The object's resourceVersion must be this."),
                ),
                ("uid", s("The object's uid must be this.")),
            ]),
        ),
    );
    let mut delete_props = props(vec![
        (
            "dryRun",
            json!({"type": "array", "items": {"type": "string"},
            "description": "When present, the deletion is checked but not persisted; the only valid value is All.",
            "x-kubernetes-list-type": "atomic"}),
        ),
        (
            "gracePeriodSeconds",
            int64("Seconds before the object is deleted; zero deletes immediately."),
        ),
        (
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            boolean(
                "Deletes an object that cannot be read from storage (for example, undecryptable). Dangerous.",
            ),
        ),
        (
            "orphanDependents",
            boolean("Deprecated: use propagationPolicy."),
        ),
        (
            "preconditions",
            b.rd(
                "Preconditions",
                "Conditions that must hold for the deletion to proceed.",
            ),
        ),
        (
            "propagationPolicy",
            s(
                "Whether and how dependents are garbage collected: Orphan, Background or Foreground.",
            ),
        ),
    ]);
    type_meta(&mut delete_props);
    let mut delete = object("Options of a DELETE request.", delete_props);
    delete.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": "", "kind": "DeleteOptions", "version": "v1"}]),
    );
    add("DeleteOptions", delete);

    let mut event = object(
        "One event of a watch stream.",
        props(vec![
            ("object", b.rd("RawExtension", "The object: for ADDED and MODIFIED its new state, for DELETED its last state, for BOOKMARK only its resourceVersion, for ERROR a Status.")),
            ("type", s("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.")),
        ]),
    );
    event.insert("required".into(), json!(["type", "object"]));
    event.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": "", "kind": "WatchEvent", "version": "v1"}]),
    );
    add("WatchEvent", event);

    let mut resource = object(
        "One resource of a group version, as discovery lists it.",
        props(vec![
            (
                "categories",
                json!({"type": "array", "items": {"type": "string"}, "description": "Groups of resources this one belongs to, such as all.", "x-kubernetes-list-type": "atomic"}),
            ),
            (
                "group",
                s("The group of a subresource whose kind lives in another group."),
            ),
            ("kind", s("The kind of the resource.")),
            (
                "name",
                s("The plural resource name, or resource/subresource."),
            ),
            ("namespaced", boolean("Whether objects live in namespaces.")),
            (
                "shortNames",
                json!({"type": "array", "items": {"type": "string"}, "description": "Short names kubectl accepts.", "x-kubernetes-list-type": "atomic"}),
            ),
            ("singularName", s("The singular resource name.")),
            (
                "storageVersionHash",
                s("A hash of the storage version, which changes when it does."),
            ),
            (
                "verbs",
                json!({"type": "array", "items": {"type": "string"}, "description": "The verbs served.", "x-kubernetes-list-type": "atomic"}),
            ),
            (
                "version",
                s("The version of a subresource whose kind lives in another version."),
            ),
        ]),
    );
    resource.insert(
        "required".into(),
        json!(["name", "singularName", "namespaced", "kind", "verbs"]),
    );
    add("APIResource", resource);
    let mut resource_list_props = props(vec![
        ("groupVersion", s("The group version listed.")),
        (
            "resources",
            json!({"type": "array", "items": b.r("APIResource"), "description": "The resources.", "x-kubernetes-list-type": "atomic"}),
        ),
    ]);
    type_meta(&mut resource_list_props);
    let mut resource_list = object("The resources of one group version.", resource_list_props);
    resource_list.insert("required".into(), json!(["groupVersion", "resources"]));
    resource_list.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": "", "kind": "APIResourceList", "version": "v1"}]),
    );
    add("APIResourceList", resource_list);

    let mut scale_props = props(vec![
        ("metadata", b.rd("ObjectMeta", "Standard object metadata.")),
        ("spec", b.rd("ScaleSpec", "The desired scale.")),
        (
            "status",
            b.rd("ScaleStatus", "The observed scale. Read-only."),
        ),
    ]);
    type_meta(&mut scale_props);
    let mut scale = object("The scale subresource of a scalable object.", scale_props);
    scale.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}]),
    );
    add("Scale", scale);
    add(
        "ScaleSpec",
        object(
            "The desired scale.",
            props(vec![("replicas", int32("The desired number of replicas."))]),
        ),
    );
    let mut scale_status = object(
        "The observed scale.",
        props(vec![
            ("replicas", int32("The observed number of replicas.")),
            (
                "selector",
                s("The label selector of the replicas, in query-parameter form."),
            ),
        ]),
    );
    scale_status.insert("required".into(), json!(["replicas"]));
    add("ScaleStatus", scale_status);
    out
}
