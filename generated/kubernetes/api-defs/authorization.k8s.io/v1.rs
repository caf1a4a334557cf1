//! Authorization checks, version v1: review objects that ask the server whether a user may
//! perform an action. They are created and answered, never stored. Shapes and protobuf
//! numbers follow Kubernetes' `k8s.io/api/authorization/v1`.
#![group = "authorization.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.authorization.v1"]

/// Asks whether a given user (or group) may perform an action.
#[kind(cluster, create_only, strategic_merge_patch)]
pub struct SubjectAccessReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The request being checked.
    #[proto(2)]
    pub spec: SubjectAccessReviewSpec,
    /// The answer, filled in by the server.
    #[proto(3)]
    pub status: SubjectAccessReviewStatus,
}

/// Asks whether the requesting user may perform an action. Without `spec.namespace` in the
/// resource attributes, the question is about all namespaces.
#[kind(cluster, create_only, strategic_merge_patch)]
pub struct SelfSubjectAccessReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The request being checked; the user is the requester.
    #[proto(2)]
    pub spec: SelfSubjectAccessReviewSpec,
    /// The answer, filled in by the server.
    #[proto(3)]
    pub status: SubjectAccessReviewStatus,
}

/// Asks whether a given user may perform an action in the namespace the review is created
/// in, which makes it easy to grant the check within one namespace.
#[kind(namespaced, create_only, strategic_merge_patch)]
pub struct LocalSubjectAccessReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The request being checked; its namespace must be the review's namespace (an empty
    /// one is filled in).
    #[proto(2)]
    pub spec: SubjectAccessReviewSpec,
    /// The answer, filled in by the server.
    #[proto(3)]
    pub status: SubjectAccessReviewStatus,
}

/// Lists the actions the requesting user may perform in a namespace. The answer may be
/// incomplete and is meant for user interfaces, not for authorization decisions.
#[kind(cluster, create_only, strategic_merge_patch)]
pub struct SelfSubjectRulesReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The namespace to list rules for.
    #[proto(2)]
    pub spec: SelfSubjectRulesReviewSpec,
    /// The rules, filled in by the server.
    #[proto(3)]
    pub status: SubjectRulesReviewStatus,
}

/// The attributes of a request on a resource, as the authorizer sees them.
pub struct ResourceAttributes {
    /// The namespace of the action; empty means all namespaces for namespaced resources, and
    /// is required empty for cluster-scoped ones.
    #[proto(1, by_value)]
    pub namespace: Option<String>,
    /// The API verb, such as `get`, `list` or `delete`; `*` means all.
    #[proto(2, by_value)]
    pub verb: Option<String>,
    /// The API group of the resource; `*` means all.
    #[proto(3, by_value)]
    pub group: Option<String>,
    /// The API version of the resource; `*` means all.
    #[proto(4, by_value)]
    pub version: Option<String>,
    /// The resource, such as `pods`; `*` means all.
    #[proto(5, by_value)]
    pub resource: Option<String>,
    /// The subresource, such as `status`; empty means none.
    #[proto(6, by_value)]
    pub subresource: Option<String>,
    /// The name of the object for `get`, `update` or `delete`; empty means all.
    #[proto(7, by_value)]
    pub name: Option<String>,
    /// A field selector limiting the request; it can only narrow access.
    #[proto(8)]
    pub field_selector: Option<FieldSelectorAttributes>,
    /// A label selector limiting the request; it can only narrow access.
    #[proto(9)]
    pub label_selector: Option<LabelSelectorAttributes>,
}

/// A label selector that limits a request, in raw or parsed form (never both).
pub struct LabelSelectorAttributes {
    /// The selector as it appears in a query parameter.
    #[proto(1, by_value)]
    pub raw_selector: Option<String>,
    /// The parsed selector; every requirement must hold.
    #[proto(2)]
    #[list(type = "atomic")]
    pub requirements: Vec<LabelSelectorRequirement>,
}

/// A field selector that limits a request, in raw or parsed form (never both).
pub struct FieldSelectorAttributes {
    /// The selector as it appears in a query parameter.
    #[proto(1, by_value)]
    pub raw_selector: Option<String>,
    /// The parsed selector; every requirement must hold.
    #[proto(2)]
    #[list(type = "atomic")]
    pub requirements: Vec<FieldSelectorRequirement>,
}

/// One requirement of a field selector: a field, an operator and values. Kubernetes declares
/// this type in meta.k8s.io/v1; it is defined here with the same shape and numbers.
pub struct FieldSelectorRequirement {
    /// The field path the requirement applies to.
    #[proto(1)]
    #[validate(required)]
    pub key: String,
    /// How the field relates to the values: `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[proto(2)]
    #[validate(required, enum = ["In", "NotIn", "Exists", "DoesNotExist"])]
    pub operator: String,
    /// The values: not empty for `In` and `NotIn`, empty for `Exists` and `DoesNotExist`.
    #[proto(3)]
    #[list(type = "atomic")]
    pub values: Vec<String>,
}

/// The attributes of a request for a non-resource path.
pub struct NonResourceAttributes {
    /// The URL path of the request.
    #[proto(1, by_value)]
    pub path: Option<String>,
    /// The HTTP verb, in lowercase.
    #[proto(2, by_value)]
    pub verb: Option<String>,
}

/// The access request to check; exactly one of the resource and non-resource attributes is
/// set.
pub struct SubjectAccessReviewSpec {
    /// The request, when it is about a resource.
    #[proto(1)]
    pub resource_attributes: Option<ResourceAttributes>,
    /// The request, when it is about a non-resource path.
    #[proto(2)]
    pub non_resource_attributes: Option<NonResourceAttributes>,
    /// The user to check. Without groups, the user is checked as a member of no group.
    #[proto(3, by_value)]
    pub user: Option<String>,
    /// The groups to check.
    #[proto(4)]
    #[list(type = "atomic")]
    pub groups: Vec<String>,
    /// Extra attributes of the user, as an authenticator reports them.
    #[proto(5)]
    pub extra: BTreeMap<String, Vec<String>>,
    /// The uid of the user.
    #[proto(6, by_value)]
    pub uid: Option<String>,
}

/// The access request to check for the requesting user; exactly one of the two is set.
pub struct SelfSubjectAccessReviewSpec {
    /// The request, when it is about a resource.
    #[proto(1)]
    pub resource_attributes: Option<ResourceAttributes>,
    /// The request, when it is about a non-resource path.
    #[proto(2)]
    pub non_resource_attributes: Option<NonResourceAttributes>,
}

/// The answer to an access review.
pub struct SubjectAccessReviewStatus {
    /// Whether the action is allowed.
    #[proto(1)]
    pub allowed: bool,
    /// Whether the action is explicitly denied. When neither allowed nor denied, no authorizer
    /// had an opinion. Never true together with `allowed`.
    #[proto(4, by_value)]
    pub denied: Option<bool>,
    /// Why the action was allowed or denied.
    #[proto(2, by_value)]
    pub reason: Option<String>,
    /// An error met while checking; the answer may still be meaningful.
    #[proto(3, by_value)]
    pub evaluation_error: Option<String>,
}

/// The namespace a rules review is about.
pub struct SelfSubjectRulesReviewSpec {
    /// The namespace to list rules for.
    #[proto(1, by_value)]
    pub namespace: Option<String>,
}

/// The rules a subject has. The lists may be incomplete, but every rule listed is granted.
pub struct SubjectRulesReviewStatus {
    /// The actions allowed on resources, unordered and possibly with duplicates.
    #[proto(1)]
    #[list(type = "atomic")]
    #[json(always)]
    pub resource_rules: Vec<ResourceRule>,
    /// The actions allowed on non-resource paths, unordered and possibly with duplicates.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(always)]
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Whether the lists are incomplete, for example because an authorizer cannot list rules.
    #[proto(3)]
    pub incomplete: bool,
    /// An error met while listing the rules.
    #[proto(4, by_value)]
    pub evaluation_error: Option<String>,
}

/// Actions a subject may perform on resources.
pub struct ResourceRule {
    /// The allowed verbs; `*` means all.
    #[proto(1)]
    #[list(type = "atomic")]
    #[json(always)]
    pub verbs: Vec<String>,
    /// The API groups of the resources; `*` means all.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(name = "apiGroups")]
    pub api_groups: Vec<String>,
    /// The resources; `*` means all and `*/foo` the subresource `foo` of all.
    #[proto(3)]
    #[list(type = "atomic")]
    pub resources: Vec<String>,
    /// When not empty, only objects with these names; `*` means all.
    #[proto(4)]
    #[list(type = "atomic")]
    pub resource_names: Vec<String>,
}

/// Actions a subject may perform on non-resource paths.
pub struct NonResourceRule {
    /// The allowed HTTP verbs, in lowercase; `*` means all.
    #[proto(1)]
    #[list(type = "atomic")]
    #[json(always)]
    pub verbs: Vec<String>,
    /// The paths; a trailing `*` matches any suffix and `*` alone every path.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(name = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}
