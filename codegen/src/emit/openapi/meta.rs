//! The schemas of the shared types documents reference: `meta.k8s.io/v1` (ObjectMeta,
//! ListMeta, Time, Status, DeleteOptions, WatchEvent, Patch, …), `runtime.RawExtension`,
//! `resource.Quantity`, `intstr.IntOrString`, and `autoscaling/v1` Scale for `/scale`.
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

fn string_map(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}, "description": description})
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

    let mut owner = object(
        "A reference to an object that owns this one, in the same namespace (or at cluster scope).",
        props(vec![
            ("apiVersion", s("The apiVersion of the owner.")),
            (
                "blockOwnerDeletion",
                boolean(
                    "When true, and the owner is deleted in the foreground, the owner waits until this object is gone.",
                ),
            ),
            (
                "controller",
                boolean("Whether the owner is the managing controller; at most one owner may be."),
            ),
            ("kind", s("The kind of the owner.")),
            ("name", s("The name of the owner.")),
            ("uid", s("The uid of the owner.")),
        ]),
    );
    owner.insert(
        "required".into(),
        json!(["apiVersion", "kind", "name", "uid"]),
    );
    owner.insert("x-kubernetes-map-type".into(), json!("atomic"));
    add("OwnerReference", owner);

    add(
        "ManagedFieldsEntry",
        object(
            "The fields one manager owns, and how it last wrote them.",
            props(vec![
                (
                    "apiVersion",
                    s("The apiVersion the field set is expressed in."),
                ),
                (
                    "fieldsType",
                    s("The format of fieldsV1; only FieldsV1 exists."),
                ),
                ("fieldsV1", b.rd("FieldsV1", "The set of fields.")),
                ("manager", s("The name of the manager.")),
                (
                    "operation",
                    s("The operation that wrote the fields: Apply or Update."),
                ),
                (
                    "subresource",
                    s("The subresource the fields were written through, if any."),
                ),
                ("time", b.rd("Time", "When the entry last changed.")),
            ]),
        ),
    );

    let owner_refs = json!({"type": "array", "items": b.r("OwnerReference"),
        "description": "The objects this object depends on; it is garbage collected when all of them are gone.",
        "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
        "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"});
    add(
        "ObjectMeta",
        object(
            "The metadata every persisted object has.",
            props(vec![
                ("annotations", string_map("Unstructured key-value data for tools; not used to select objects.")),
                ("creationTimestamp", b.rd("Time", "When the server created the object. Read-only.")),
                ("deletionGracePeriodSeconds", int64("Seconds the object has to terminate gracefully once deletion started. Read-only.")),
                ("deletionTimestamp", b.rd("Time", "When the object will be deleted, set by the server when deletion is requested. Read-only.")),
                ("finalizers", json!({"type": "array", "items": {"type": "string"},
                    "description": "Conditions that must be cleared, by the controllers that own them, before the object is removed.",
                    "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"})),
                ("generateName", s("A prefix from which the server generates a unique name when name is empty.")),
                ("generation", int64("A sequence number of the desired state, increased by the server. Read-only.")),
                ("labels", string_map("Key-value pairs used to organize and select objects.")),
                ("managedFields", json!({"type": "array", "items": b.r("ManagedFieldsEntry"),
                    "description": "Which manager owns which fields, for server-side apply.",
                    "x-kubernetes-list-type": "atomic"})),
                ("name", s("The name of the object, unique within its namespace and kind. Cannot be updated.")),
                ("namespace", s("The namespace of the object; empty for cluster-scoped kinds. Cannot be updated.")),
                ("ownerReferences", owner_refs),
                ("resourceVersion", s("An opaque version of the object, changed on every write; used for optimistic concurrency and watches.")),
                ("selfLink", s("Deprecated; never set.")),
                ("uid", s("A unique identifier, set by the server. Read-only.")),
            ]),
        ),
    );
    add(
        "ListMeta",
        object(
            "The metadata of a list.",
            props(vec![
                (
                    "continue",
                    s(
                        "A token to request the next page of a chunked list; empty on the last page.",
                    ),
                ),
                (
                    "remainingItemCount",
                    int64("How many items follow this page, when the server knows."),
                ),
                (
                    "resourceVersion",
                    s(
                        "The resourceVersion the list was read at; watch from it to see later changes.",
                    ),
                ),
                ("selfLink", s("Deprecated; never set.")),
            ]),
        ),
    );

    let mut requirement = object(
        "One requirement of a label selector: a key, an operator and values.",
        props(vec![
            ("key", s("The label key.")),
            (
                "operator",
                s("How the key relates to the values: In, NotIn, Exists or DoesNotExist."),
            ),
            (
                "values",
                json!({"type": "array", "items": {"type": "string"},
                "description": "The values; not empty for In and NotIn, empty for Exists and DoesNotExist.",
                "x-kubernetes-list-type": "atomic"}),
            ),
        ]),
    );
    requirement.insert("required".into(), json!(["key", "operator"]));
    add("LabelSelectorRequirement", requirement);
    let mut selector = object(
        "A label query; all requirements must hold. An empty selector matches everything, a missing one nothing.",
        props(vec![
            (
                "matchExpressions",
                json!({"type": "array", "items": b.r("LabelSelectorRequirement"),
                "description": "Set-based requirements.", "x-kubernetes-list-type": "atomic"}),
            ),
            (
                "matchLabels",
                string_map("Labels that must have exactly these values."),
            ),
        ]),
    );
    selector.insert("x-kubernetes-map-type".into(), json!("atomic"));
    add("LabelSelector", selector);

    let mut condition = object(
        "One aspect of an object's observed state.",
        props(vec![
            (
                "lastTransitionTime",
                b.rd("Time", "When the status last changed."),
            ),
            ("message", s("A human-readable explanation.")),
            (
                "observedGeneration",
                int64("The metadata.generation the condition was computed for."),
            ),
            ("reason", s("A CamelCase reason for the last transition.")),
            ("status", s("True, False or Unknown.")),
            ("type", s("The condition type, in CamelCase.")),
        ]),
    );
    condition.insert(
        "required".into(),
        json!(["type", "status", "lastTransitionTime", "reason", "message"]),
    );
    add("Condition", condition);

    add(
        "StatusCause",
        object(
            "One cause of a failure.",
            props(vec![
                (
                    "field",
                    s("The field the cause is about, such as spec.replicas."),
                ),
                ("message", s("A human-readable description.")),
                (
                    "reason",
                    s("A machine-readable cause, such as FieldValueInvalid."),
                ),
            ]),
        ),
    );
    add(
        "StatusDetails",
        object(
            "Extra facts about a failure.",
            props(vec![
                (
                    "causes",
                    json!({"type": "array", "items": b.r("StatusCause"), "description": "The individual causes.",
                    "x-kubernetes-list-type": "atomic"}),
                ),
                ("group", s("The group of the object concerned.")),
                ("kind", s("The kind (or resource) of the object concerned.")),
                ("name", s("The name of the object concerned.")),
                (
                    "retryAfterSeconds",
                    int32("Seconds to wait before retrying."),
                ),
                ("uid", s("The uid of the object concerned.")),
            ]),
        ),
    );
    let mut status_props = props(vec![
        ("code", int32("The HTTP status code.")),
        (
            "details",
            b.rd("StatusDetails", "Extra facts about the reason."),
        ),
        ("message", s("A human-readable description.")),
        ("metadata", b.rd("ListMeta", "Standard list metadata.")),
        ("reason", s("A machine-readable reason, such as NotFound.")),
        ("status", s("Success or Failure.")),
    ]);
    type_meta(&mut status_props);
    let mut status = object(
        "The result of an operation that returns no object, and of every failure.",
        status_props,
    );
    status.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": "", "kind": "Status", "version": "v1"}]),
    );
    add("Status", status);

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
