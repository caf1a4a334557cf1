//! The `meta.k8s.io/v1` types every group uses: object and list metadata, owner references,
//! managed fields, label selectors, conditions and `Status`.
//!
//! The file is shared: its Rust is compiled into `apimachinery::meta` (by apimachinery's build
//! script), other groups' definitions name its structs directly (`pub metadata: ObjectMeta`),
//! and it has no kinds, routes or OpenAPI document of its own; its schemas are the shared
//! definitions the other documents reference. Field numbers are those of
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`. The scalar-like types with their own
//! encodings (`Time`, `MicroTime`, `Duration`, `FieldsV1`, …) are written by hand in
//! `apimachinery::meta`.
#![group = "meta.k8s.io"]
#![version = "v1"]
#![shared]
#![proto_package = "k8s.io.apimachinery.pkg.apis.meta.v1"]

/// The apiVersion and kind of an object.
pub struct TypeMeta {
    /// The versioned schema of the object, such as `example.dev/v1`.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub api_version: Option<String>,
    /// The kind, such as `Widget`.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub kind: Option<String>,
}

/// The metadata every persisted object has.
pub struct ObjectMeta {
    /// The name of the object, unique within its namespace and kind. Cannot be updated.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub name: Option<String>,
    /// A prefix from which the server generates a unique name when name is empty.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub generate_name: Option<String>,
    /// The namespace of the object; empty for cluster-scoped kinds. Cannot be updated.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub namespace: Option<String>,
    /// Deprecated; never set.
    #[proto(4, by_value)]
    #[json(keep_zero)]
    pub self_link: Option<String>,
    /// A unique identifier, set by the server. Read-only.
    #[proto(5, by_value)]
    #[json(keep_zero)]
    pub uid: Option<String>,
    /// An opaque version of the object, changed on every write; used for optimistic concurrency and watches.
    #[proto(6, by_value)]
    #[json(keep_zero)]
    pub resource_version: Option<String>,
    /// A sequence number of the desired state, increased by the server. Read-only.
    #[proto(7, by_value)]
    #[json(keep_zero)]
    pub generation: Option<i64>,
    /// When the server created the object. Read-only.
    #[proto(8, by_value)]
    pub creation_timestamp: Option<Time>,
    /// When the object will be deleted, set by the server when deletion is requested. Read-only.
    #[proto(9)]
    pub deletion_timestamp: Option<Time>,
    /// Seconds the object has to terminate gracefully once deletion started. Read-only.
    #[proto(10)]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Key-value pairs used to organize and select objects.
    #[proto(11)]
    pub labels: BTreeMap<String, String>,
    /// Unstructured key-value data for tools; not used to select objects.
    #[proto(12)]
    pub annotations: BTreeMap<String, String>,
    /// The objects this object depends on; it is garbage collected when all of them are gone.
    #[proto(13)]
    #[list(type = "map", map_keys = ["uid"])]
    #[patch(strategy = "merge", merge_key = "uid")]
    pub owner_references: Vec<OwnerReference>,
    /// Conditions that must be cleared, by the controllers that own them, before the object is removed.
    #[proto(14)]
    #[list(type = "set")]
    #[patch(strategy = "merge")]
    pub finalizers: Vec<String>,
    /// Which manager owns which fields, for server-side apply.
    #[proto(17)]
    #[list(type = "atomic")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// The metadata of a list.
pub struct ListMeta {
    /// Deprecated; never set.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub self_link: Option<String>,
    /// The resourceVersion the list was read at; watch from it to see later changes.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub resource_version: Option<String>,
    /// A token to request the next page of a chunked list; empty on the last page.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub continue_: Option<String>,
    /// How many items follow this page, when the server knows.
    #[proto(4)]
    pub remaining_item_count: Option<i64>,
}

/// A reference to an object that owns this one, in the same namespace (or at cluster scope).
#[map(type = "atomic")]
pub struct OwnerReference {
    /// The apiVersion of the owner.
    #[proto(5)]
    #[validate(required)]
    pub api_version: String,
    /// The kind of the owner.
    #[proto(1)]
    #[validate(required)]
    pub kind: String,
    /// The name of the owner.
    #[proto(3)]
    #[validate(required)]
    pub name: String,
    /// The uid of the owner.
    #[proto(4)]
    #[validate(required)]
    pub uid: String,
    /// Whether the owner is the managing controller; at most one owner may be.
    #[proto(6)]
    pub controller: Option<bool>,
    /// When true, and the owner is deleted in the foreground, the owner waits until this object is gone.
    #[proto(7)]
    pub block_owner_deletion: Option<bool>,
}

/// The fields one manager owns, and how it last wrote them.
pub struct ManagedFieldsEntry {
    /// The name of the manager.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub manager: Option<String>,
    /// The operation that wrote the fields: Apply or Update.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub operation: Option<String>,
    /// The apiVersion the field set is expressed in.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub api_version: Option<String>,
    /// When the entry last changed.
    #[proto(4)]
    pub time: Option<Time>,
    /// The format of fieldsV1; only FieldsV1 exists.
    #[proto(6, by_value)]
    #[json(keep_zero)]
    pub fields_type: Option<String>,
    /// The set of fields.
    #[proto(7)]
    #[json(name = "fieldsV1")]
    pub fields_v1: Option<FieldsV1>,
    /// The subresource the fields were written through, if any.
    #[proto(8, by_value)]
    #[json(keep_zero)]
    pub subresource: Option<String>,
}

/// A label query; all requirements must hold. An empty selector matches everything, a missing one nothing.
#[map(type = "atomic")]
pub struct LabelSelector {
    /// Labels that must have exactly these values.
    #[proto(1)]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[proto(2)]
    #[list(type = "atomic")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One requirement of a label selector: a key, an operator and values.
pub struct LabelSelectorRequirement {
    /// The label key.
    #[proto(1)]
    #[validate(required)]
    pub key: String,
    /// How the key relates to the values: In, NotIn, Exists or DoesNotExist.
    #[proto(2)]
    #[validate(required)]
    pub operator: String,
    /// The values; not empty for In and NotIn, empty for Exists and DoesNotExist.
    #[proto(3)]
    #[list(type = "atomic")]
    pub values: Vec<String>,
}

/// One requirement of a field selector: a field path, an operator and values.
pub struct FieldSelectorRequirement {
    /// The field path.
    #[proto(1)]
    #[validate(required)]
    pub key: String,
    /// How the field relates to the values: In, NotIn, Exists or DoesNotExist.
    #[proto(2)]
    #[validate(required)]
    pub operator: String,
    /// The values; not empty for In and NotIn, empty for Exists and DoesNotExist.
    #[proto(3)]
    #[list(type = "atomic")]
    pub values: Vec<String>,
}

/// One aspect of an object's observed state.
pub struct Condition {
    /// The condition type, in CamelCase.
    #[proto(1)]
    #[validate(required)]
    pub type_: String,
    /// True, False or Unknown.
    #[proto(2)]
    #[validate(required)]
    pub status: String,
    /// The metadata.generation the condition was computed for.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub observed_generation: Option<i64>,
    /// When the status last changed.
    #[proto(4)]
    #[validate(required)]
    pub last_transition_time: Time,
    /// A CamelCase reason for the last transition.
    #[proto(5)]
    #[validate(required)]
    pub reason: String,
    /// A human-readable explanation.
    #[proto(6)]
    #[validate(required)]
    pub message: String,
}

/// The result of an operation that returns no object, and of every failure.
#[gvk(group = "", version = "v1")]
pub struct Status {
    /// The versioned schema of this representation of an object.
    #[proto(skip)]
    pub api_version: Option<String>,
    /// The REST resource type this object represents, in CamelCase.
    #[proto(skip)]
    pub kind: Option<String>,
    /// Standard list metadata.
    #[proto(1)]
    pub metadata: ListMeta,
    /// Success or Failure.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub status: Option<String>,
    /// A human-readable description.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub message: Option<String>,
    /// A machine-readable reason, such as NotFound.
    #[proto(4, by_value)]
    #[json(keep_zero)]
    pub reason: Option<String>,
    /// Extra facts about the reason.
    #[proto(5)]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[proto(6, by_value)]
    #[json(keep_zero)]
    pub code: Option<i32>,
}

/// Extra facts about a failure.
pub struct StatusDetails {
    /// The name of the object concerned.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub name: Option<String>,
    /// The group of the object concerned.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub group: Option<String>,
    /// The kind (or resource) of the object concerned.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub kind: Option<String>,
    /// The uid of the object concerned.
    #[proto(6, by_value)]
    #[json(keep_zero)]
    pub uid: Option<String>,
    /// The individual causes.
    #[proto(4)]
    #[list(type = "atomic")]
    pub causes: Vec<StatusCause>,
    /// Seconds to wait before retrying.
    #[proto(5, by_value)]
    #[json(keep_zero)]
    pub retry_after_seconds: Option<i32>,
}

/// One cause of a failure.
pub struct StatusCause {
    /// A machine-readable cause, such as FieldValueInvalid.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub reason: Option<String>,
    /// A human-readable description.
    #[proto(2, by_value)]
    #[json(keep_zero)]
    pub message: Option<String>,
    /// The field the cause is about, such as spec.replicas.
    #[proto(3, by_value)]
    #[json(keep_zero)]
    pub field: Option<String>,
}
