//! Role-based access control, version v1: roles grant verbs on resources, bindings grant roles
//! to users, groups and service accounts. Shapes and protobuf numbers follow Kubernetes'
//! `k8s.io/api/rbac/v1`.
#![group = "rbac.authorization.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.rbac.v1"]

/// A Role is a named set of policy rules within one namespace, granted through RoleBindings.
#[kind(namespaced, strategic_merge_patch, unconditional_update, create_on_update, no_generation, name_format = "path-segment")]
pub struct Role {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The rules this role grants.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(always)]
    pub rules: Vec<PolicyRule>,
}

/// A ClusterRole is a named set of policy rules at cluster scope, granted through RoleBindings
/// (within a namespace) or ClusterRoleBindings (everywhere).
#[kind(cluster, strategic_merge_patch, unconditional_update, create_on_update, no_generation, name_format = "path-segment")]
pub struct ClusterRole {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The rules this role grants. With an aggregation rule, a controller owns this list.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(always)]
    pub rules: Vec<PolicyRule>,
    /// When set, the rules are the union of the rules of the cluster roles it selects.
    #[proto(3)]
    pub aggregation_rule: Option<AggregationRule>,
}

/// Selects the cluster roles whose rules are aggregated into a ClusterRole.
pub struct AggregationRule {
    /// Label selectors of cluster roles; a role matching any of them contributes its rules.
    #[proto(1)]
    #[list(type = "atomic")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// A RoleBinding grants a Role of its namespace, or a ClusterRole, to subjects within the
/// binding's namespace.
#[kind(namespaced, strategic_merge_patch, unconditional_update, create_on_update, no_generation, name_format = "path-segment")]
pub struct RoleBinding {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The users, groups and service accounts the role is granted to.
    #[proto(2)]
    #[list(type = "atomic")]
    pub subjects: Vec<Subject>,
    /// The granted role: a Role in the binding's namespace or a ClusterRole. Immutable.
    #[proto(3)]
    pub role_ref: RoleRef,
}

/// A ClusterRoleBinding grants a ClusterRole to subjects in every namespace and at cluster
/// scope.
#[kind(cluster, strategic_merge_patch, unconditional_update, create_on_update, no_generation, name_format = "path-segment")]
pub struct ClusterRoleBinding {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The users, groups and service accounts the role is granted to.
    #[proto(2)]
    #[list(type = "atomic")]
    pub subjects: Vec<Subject>,
    /// The granted ClusterRole. Immutable.
    #[proto(3)]
    pub role_ref: RoleRef,
}

/// One rule of a role: verbs allowed on resources of API groups, or on non-resource URLs. It
/// says nothing about who it applies to.
pub struct PolicyRule {
    /// The allowed verbs, such as `get` or `list`; `*` allows every verb.
    #[proto(1)]
    #[list(type = "atomic")]
    #[json(always)]
    pub verbs: Vec<String>,
    /// The API groups of the resources; `""` is the core group and `*` any group.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(name = "apiGroups")]
    pub api_groups: Vec<String>,
    /// The resources the rule covers; `*` covers all of them.
    #[proto(3)]
    #[list(type = "atomic")]
    pub resources: Vec<String>,
    /// When not empty, only objects with these names are covered.
    #[proto(4)]
    #[list(type = "atomic")]
    pub resource_names: Vec<String>,
    /// Non-resource URL paths, such as `/healthz`; a trailing `*` matches any suffix. Only
    /// meaningful in cluster roles bound by cluster role bindings, and never together with
    /// resources.
    #[proto(5)]
    #[list(type = "atomic")]
    #[json(name = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

/// Who a binding applies to: a user, a group or a service account.
#[map(type = "atomic")]
pub struct Subject {
    /// The kind of subject: `User`, `Group` or `ServiceAccount`.
    #[proto(1)]
    pub kind: String,
    /// The API group of the subject: `""` for service accounts, `rbac.authorization.k8s.io`
    /// for users and groups.
    #[proto(2, by_value)]
    pub api_group: Option<String>,
    /// The name of the subject.
    #[proto(3)]
    #[validate(required)]
    pub name: String,
    /// The namespace of a service account subject; must be empty for users and groups.
    #[proto(4, by_value)]
    pub namespace: Option<String>,
}

/// The role a binding grants.
#[map(type = "atomic")]
pub struct RoleRef {
    /// The API group of the role, `rbac.authorization.k8s.io`.
    #[proto(1)]
    pub api_group: String,
    /// The kind of the role: `Role` or `ClusterRole`.
    #[proto(2)]
    pub kind: String,
    /// The name of the role.
    #[proto(3)]
    #[validate(required)]
    pub name: String,
}
