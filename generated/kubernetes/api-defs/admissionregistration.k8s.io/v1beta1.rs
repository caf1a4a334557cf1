//! Admission registration, version v1beta1: mutating admission policies and their bindings,
//! as kube-apiserver 1.34 serves them (stored in this version: they are not in v1). Shapes and
//! protobuf numbers follow Kubernetes' `k8s.io/api/admissionregistration/v1beta1`.
#![group = "admissionregistration.k8s.io"]
#![version = "v1beta1"]
#![priority = 9]
#![proto_package = "k8s.io.api.admissionregistration.v1beta1"]

/// A policy of CEL mutations applied to the objects of the requests its bindings select.
#[kind(cluster, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct MutatingAdmissionPolicy {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// What the policy changes and on which requests.
    #[proto(2)]
    pub spec: MutatingAdmissionPolicySpec,
}

/// The mutations of a mutating admission policy.
pub struct MutatingAdmissionPolicySpec {
    /// The kind of the objects that parameterize the policy; none when it takes no
    /// parameters.
    #[proto(1)]
    pub param_kind: Option<ParamKind>,
    /// The requests the policy may apply to (CREATE, UPDATE and CONNECT; never DELETE);
    /// bindings narrow them further.
    #[proto(2)]
    #[validate(required)]
    pub match_constraints: Option<MatchResources>,
    /// Named CEL expressions the mutations may read as `variables.<name>`.
    #[proto(3)]
    #[list(type = "atomic")]
    pub variables: Vec<Variable>,
    /// The mutations, applied in order.
    #[proto(4)]
    #[list(type = "atomic")]
    pub mutations: Vec<Mutation>,
    /// What to do when an expression cannot be evaluated or the policy is misconfigured:
    /// `Ignore` or `Fail`.
    #[proto(5)]
    #[default("Fail")]
    #[validate(enum = ["Ignore", "Fail"])]
    pub failure_policy: Option<String>,
    /// CEL conditions a request must meet for the mutations to run.
    #[proto(6)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    #[validate(max_items = 64)]
    pub match_conditions: Vec<MatchCondition>,
    /// Whether the mutations run again when a later admission step changed the object:
    /// `Never` or `IfNeeded`.
    #[proto(7)]
    #[validate(required, enum = ["Never", "IfNeeded"])]
    pub reinvocation_policy: Option<String>,
}

/// One mutation: a CEL expression giving an apply configuration or a JSON patch.
pub struct Mutation {
    /// How the result is applied: `ApplyConfiguration` or `JSONPatch`.
    #[proto(2)]
    #[validate(required, enum = ["ApplyConfiguration", "JSONPatch"])]
    pub patch_type: String,
    /// The apply configuration (when `patchType` is `ApplyConfiguration`).
    #[proto(3)]
    pub apply_configuration: Option<ApplyConfiguration>,
    /// The JSON patch (when `patchType` is `JSONPatch`).
    #[proto(4)]
    #[json(name = "jsonPatch")]
    pub json_patch: Option<JSONPatch>,
}

/// A CEL expression returning an apply configuration, such as
/// `Object{metadata: Object.metadata{labels: {"team": "a"}}}`, merged into the object as
/// server-side apply merges.
pub struct ApplyConfiguration {
    /// The expression.
    #[proto(1)]
    pub expression: Option<String>,
}

/// A CEL expression returning a list of JSON patch operations, such as
/// `[JSONPatch{op: "add", path: "/spec/color", value: "blue"}]`.
pub struct JSONPatch {
    /// The expression.
    #[proto(1)]
    pub expression: Option<String>,
}

/// Applies a mutating admission policy to requests, with parameters.
#[kind(cluster, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct MutatingAdmissionPolicyBinding {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The policy, its parameters and the requests.
    #[proto(2)]
    pub spec: MutatingAdmissionPolicyBindingSpec,
}

/// What a mutating binding applies.
pub struct MutatingAdmissionPolicyBindingSpec {
    /// The name of the bound policy.
    #[proto(1)]
    #[validate(required)]
    pub policy_name: String,
    /// Where the parameter objects are.
    #[proto(2)]
    pub param_ref: Option<ParamRef>,
    /// Narrows the requests the policy applies to.
    #[proto(3)]
    pub match_resources: Option<MatchResources>,
}

/// Operations together with the resources they apply to.
pub struct RuleWithOperations {
    /// The operations: `CREATE`, `UPDATE`, `DELETE`, `CONNECT`, or `*` for all.
    #[proto(1)]
    #[list(type = "atomic")]
    pub operations: Vec<String>,
    /// The resources, written inline in JSON.
    #[proto(2)]
    #[json(inline)]
    pub rule: Rule,
}

/// Which resources a webhook rule applies to.
pub struct Rule {
    /// The API groups; `*` means all.
    #[proto(1)]
    #[list(type = "atomic")]
    #[json(name = "apiGroups")]
    pub api_groups: Vec<String>,
    /// The API versions; `*` means all.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(name = "apiVersions")]
    pub api_versions: Vec<String>,
    /// The resources, such as `pods` or `pods/status`; `*` means all resources and `*/*` all
    /// resources and their subresources.
    #[proto(3)]
    #[list(type = "atomic")]
    pub resources: Vec<String>,
    /// The scope: `Cluster`, `Namespaced` or `*` for both.
    #[proto(4)]
    #[default("*")]
    #[validate(enum = ["Cluster", "Namespaced", "*"])]
    pub scope: Option<String>,
}

/// A named CEL condition a request must meet to be sent to a webhook.
pub struct MatchCondition {
    /// A name for the condition, unique within the webhook; a qualified name such as
    /// `example.com/check`.
    #[proto(1)]
    #[validate(required)]
    pub name: String,
    /// A CEL expression evaluating to a boolean, over `object`, `oldObject`, `request` and
    /// `authorizer`.
    #[proto(2)]
    #[validate(required)]
    pub expression: String,
}

/// The kind of a policy's parameter objects.
#[map(type = "atomic")]
pub struct ParamKind {
    /// The group/version of the parameter objects, such as `v1`.
    #[proto(1)]
    pub api_version: Option<String>,
    /// The kind of the parameter objects, such as `ConfigMap`.
    #[proto(2)]
    pub kind: Option<String>,
}

/// Which requests a policy or binding applies to.
#[map(type = "atomic")]
pub struct MatchResources {
    /// Selects by the labels of the object's namespace. Empty matches everything.
    #[proto(1)]
    pub namespace_selector: Option<LabelSelector>,
    /// Selects by the labels of the object. Empty matches everything.
    #[proto(2)]
    pub object_selector: Option<LabelSelector>,
    /// The operations and resources that match.
    #[proto(3)]
    #[list(type = "atomic")]
    pub resource_rules: Vec<NamedRuleWithOperations>,
    /// The operations and resources that never match, whatever the other rules say.
    #[proto(4)]
    #[list(type = "atomic")]
    pub exclude_resource_rules: Vec<NamedRuleWithOperations>,
    /// How rules match: `Exact` or `Equivalent` (also through other versions).
    #[proto(7)]
    #[default("Equivalent")]
    #[validate(enum = ["Exact", "Equivalent"])]
    pub match_policy: Option<String>,
}

/// A rule with operations, optionally limited to objects of some names.
#[map(type = "atomic")]
pub struct NamedRuleWithOperations {
    /// The names the rule applies to; empty means every name.
    #[proto(1)]
    #[list(type = "atomic")]
    pub resource_names: Vec<String>,
    /// The operations and resources, written inline in JSON.
    #[proto(2)]
    #[json(inline)]
    pub rule_with_operations: RuleWithOperations,
}

/// A named CEL expression of a policy.
pub struct Variable {
    /// The name, a CEL identifier.
    #[proto(1)]
    #[validate(required)]
    pub name: String,
    /// The expression.
    #[proto(2)]
    #[validate(required)]
    pub expression: String,
}

/// Where a binding's parameter objects are.
#[map(type = "atomic")]
pub struct ParamRef {
    /// The name of one parameter object.
    #[proto(1)]
    pub name: Option<String>,
    /// The namespace of the parameter objects (empty: the request's namespace, for
    /// namespaced parameter kinds).
    #[proto(2)]
    pub namespace: Option<String>,
    /// Selects the parameter objects by label, instead of `name`.
    #[proto(3)]
    pub selector: Option<LabelSelector>,
    /// What to do when no parameter object is found: `Allow` or `Deny`.
    #[proto(4)]
    #[validate(enum = ["Allow", "Deny"])]
    pub parameter_not_found_action: Option<String>,
}
