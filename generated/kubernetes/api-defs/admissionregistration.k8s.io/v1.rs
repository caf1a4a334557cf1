//! Admission registration, version v1: configurations of webhooks that the server calls to
//! validate or mutate requests. Shapes and protobuf numbers follow Kubernetes'
//! `k8s.io/api/admissionregistration/v1`.
#![group = "admissionregistration.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.admissionregistration.v1"]

/// Webhooks that may accept or reject objects, without changing them.
#[kind(cluster, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct ValidatingWebhookConfiguration {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The webhooks and the requests each of them is called for.
    #[proto(2)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    pub webhooks: Vec<ValidatingWebhook>,
}

/// Webhooks that may accept or reject objects, and change them.
#[kind(cluster, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct MutatingWebhookConfiguration {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The webhooks and the requests each of them is called for.
    #[proto(2)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    pub webhooks: Vec<MutatingWebhook>,
}

/// One validating webhook: how to reach it and which requests it receives.
pub struct ValidatingWebhook {
    /// A fully qualified name for the webhook, such as `imagepolicy.kubernetes.io`, unique
    /// within its configuration.
    #[proto(1)]
    #[validate(required)]
    pub name: String,
    /// How to connect to the webhook.
    #[proto(2)]
    pub client_config: WebhookClientConfig,
    /// The operations and resources the webhook is called for; a request matching any rule
    /// is sent.
    #[proto(3)]
    #[list(type = "atomic")]
    pub rules: Vec<RuleWithOperations>,
    /// What to do when calling the webhook fails: `Ignore` or `Fail`.
    #[proto(4)]
    #[default("Fail")]
    #[validate(enum = ["Ignore", "Fail"])]
    pub failure_policy: Option<String>,
    /// How rules match requests: `Exact` only as written, or `Equivalent` also through other
    /// versions or groups of the same resources.
    #[proto(9)]
    #[default("Equivalent")]
    #[validate(enum = ["Exact", "Equivalent"])]
    pub match_policy: Option<String>,
    /// Selects, by the labels of the object's namespace (or of a namespace object itself),
    /// which requests are sent. Empty matches everything.
    #[proto(5)]
    pub namespace_selector: Option<LabelSelector>,
    /// Selects, by the labels of the object (old or new), which requests are sent. Empty
    /// matches everything.
    #[proto(10)]
    pub object_selector: Option<LabelSelector>,
    /// Whether the webhook has side effects outside the request: `None` or `NoneOnDryRun`.
    /// Dry-run requests are only sent to webhooks without side effects.
    #[proto(6)]
    #[json(always)]
    #[validate(enum = ["None", "NoneOnDryRun"])]
    pub side_effects: Option<String>,
    /// How many seconds to wait for the webhook, between 1 and 30; on timeout the failure
    /// policy applies.
    #[proto(7)]
    #[default(10)]
    pub timeout_seconds: Option<i32>,
    /// The `AdmissionReview` versions the webhook accepts, most preferred first; the server
    /// sends the first it supports.
    #[proto(8)]
    #[list(type = "atomic")]
    #[json(always)]
    #[validate(required)]
    pub admission_review_versions: Vec<String>,
    /// CEL conditions that must all hold for a request to be sent, after the rules and
    /// selectors matched. At most 64.
    #[proto(11)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    #[validate(max_items = 64)]
    pub match_conditions: Vec<MatchCondition>,
}

/// One mutating webhook: how to reach it, which requests it receives and whether it is called
/// again after later mutations.
pub struct MutatingWebhook {
    /// A fully qualified name for the webhook, such as `imagepolicy.kubernetes.io`, unique
    /// within its configuration.
    #[proto(1)]
    #[validate(required)]
    pub name: String,
    /// How to connect to the webhook.
    #[proto(2)]
    pub client_config: WebhookClientConfig,
    /// The operations and resources the webhook is called for; a request matching any rule
    /// is sent.
    #[proto(3)]
    #[list(type = "atomic")]
    pub rules: Vec<RuleWithOperations>,
    /// What to do when calling the webhook fails: `Ignore` or `Fail`.
    #[proto(4)]
    #[default("Fail")]
    #[validate(enum = ["Ignore", "Fail"])]
    pub failure_policy: Option<String>,
    /// How rules match requests: `Exact` only as written, or `Equivalent` also through other
    /// versions or groups of the same resources.
    #[proto(9)]
    #[default("Equivalent")]
    #[validate(enum = ["Exact", "Equivalent"])]
    pub match_policy: Option<String>,
    /// Selects, by the labels of the object's namespace (or of a namespace object itself),
    /// which requests are sent. Empty matches everything.
    #[proto(5)]
    pub namespace_selector: Option<LabelSelector>,
    /// Selects, by the labels of the object (old or new), which requests are sent. Empty
    /// matches everything.
    #[proto(11)]
    pub object_selector: Option<LabelSelector>,
    /// Whether the webhook has side effects outside the request: `None` or `NoneOnDryRun`.
    /// Dry-run requests are only sent to webhooks without side effects.
    #[proto(6)]
    #[json(always)]
    #[validate(enum = ["None", "NoneOnDryRun"])]
    pub side_effects: Option<String>,
    /// How many seconds to wait for the webhook, between 1 and 30; on timeout the failure
    /// policy applies.
    #[proto(7)]
    #[default(10)]
    pub timeout_seconds: Option<i32>,
    /// The `AdmissionReview` versions the webhook accepts, most preferred first; the server
    /// sends the first it supports.
    #[proto(8)]
    #[list(type = "atomic")]
    #[json(always)]
    #[validate(required)]
    pub admission_review_versions: Vec<String>,
    /// Whether the webhook is called again when later mutations change the object: `Never`
    /// or `IfNeeded` (at most once more).
    #[proto(10)]
    #[default("Never")]
    #[validate(enum = ["Never", "IfNeeded"])]
    pub reinvocation_policy: Option<String>,
    /// CEL conditions that must all hold for a request to be sent, after the rules and
    /// selectors matched. At most 64.
    #[proto(12)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    #[validate(max_items = 64)]
    pub match_conditions: Vec<MatchCondition>,
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

/// How to reach a webhook: by URL or through a Service, never both.
pub struct WebhookClientConfig {
    /// The `https://` URL of the webhook, without user info, fragment or query.
    #[proto(3)]
    pub url: Option<String>,
    /// The Service in front of the webhook.
    #[proto(1)]
    pub service: Option<ServiceReference>,
    /// PEM certificate authorities that verify the webhook's serving certificate; the
    /// system trust roots when empty.
    #[proto(2)]
    #[json(name = "caBundle")]
    pub ca_bundle: Option<Bytes>,
}

/// A reference to a Service that fronts a webhook.
pub struct ServiceReference {
    /// The namespace of the service.
    #[proto(1)]
    #[validate(required)]
    pub namespace: String,
    /// The name of the service.
    #[proto(2)]
    #[validate(required)]
    pub name: String,
    /// The URL path requests are sent to.
    #[proto(3)]
    pub path: Option<String>,
    /// The service port to call, between 1 and 65535.
    #[proto(4)]
    #[default(443)]
    #[validate(minimum = 1, maximum = 65535)]
    pub port: Option<i32>,
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

/// A policy of CEL expressions that validate requests, applied where its bindings say.
#[kind(cluster, status, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct ValidatingAdmissionPolicy {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// What the policy checks and on which requests.
    #[proto(2)]
    pub spec: ValidatingAdmissionPolicySpec,
    /// What the server found checking the policy.
    #[proto(3)]
    pub status: Option<ValidatingAdmissionPolicyStatus>,
}

/// The rules of a validating admission policy.
pub struct ValidatingAdmissionPolicySpec {
    /// The kind of the objects that parameterize the policy; none when it takes no
    /// parameters.
    #[proto(1)]
    pub param_kind: Option<ParamKind>,
    /// The requests the policy may apply to; bindings narrow them further.
    #[proto(2)]
    #[validate(required)]
    pub match_constraints: Option<MatchResources>,
    /// The CEL validations; a request passes when all of them hold.
    #[proto(3)]
    #[list(type = "atomic")]
    pub validations: Vec<Validation>,
    /// What to do when an expression cannot be evaluated or the policy is misconfigured:
    /// `Ignore` or `Fail`.
    #[proto(4)]
    #[default("Fail")]
    #[validate(enum = ["Ignore", "Fail"])]
    pub failure_policy: Option<String>,
    /// Annotations to add to the audit event of a matching request.
    #[proto(5)]
    #[list(type = "atomic")]
    pub audit_annotations: Vec<AuditAnnotation>,
    /// CEL conditions a request must meet for the validations to run.
    #[proto(6)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    #[validate(max_items = 64)]
    pub match_conditions: Vec<MatchCondition>,
    /// Named CEL expressions, usable by later variables and by the validations as
    /// `variables.<name>`.
    #[proto(7)]
    #[list(type = "atomic")]
    pub variables: Vec<Variable>,
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

/// One CEL validation.
pub struct Validation {
    /// A CEL expression that must evaluate to true.
    #[proto(1)]
    #[validate(required)]
    pub expression: String,
    /// The message of a failed validation.
    #[proto(2)]
    pub message: Option<String>,
    /// The Status reason of a failed validation: `Unauthorized`, `Forbidden` (the default),
    /// `Invalid` or `RequestEntityTooLarge`.
    #[proto(3)]
    #[validate(enum = ["Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"])]
    pub reason: Option<String>,
    /// A CEL expression evaluating to the message of a failed validation.
    #[proto(4)]
    pub message_expression: Option<String>,
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

/// An audit annotation a policy adds.
pub struct AuditAnnotation {
    /// The key (`<policy name>/<key>` in the audit event).
    #[proto(1)]
    #[validate(required)]
    pub key: String,
    /// A CEL expression evaluating to the value (a string), or null to add nothing.
    #[proto(2)]
    #[validate(required)]
    pub value_expression: String,
}

/// What the server found checking a policy.
pub struct ValidatingAdmissionPolicyStatus {
    /// The generation the status describes.
    #[proto(1)]
    pub observed_generation: Option<i64>,
    /// The results of type checking the expressions.
    #[proto(2)]
    pub type_checking: Option<TypeChecking>,
    /// The policy's conditions.
    #[proto(3)]
    #[list(type = "map", map_keys = ["type"])]
    pub conditions: Vec<Condition>,
}

/// The results of type checking a policy's expressions.
pub struct TypeChecking {
    /// One warning per expression that does not check.
    #[proto(1)]
    #[list(type = "atomic")]
    pub expression_warnings: Vec<ExpressionWarning>,
}

/// A type-checking warning on one expression.
pub struct ExpressionWarning {
    /// The path of the expression, such as `spec.validations[0].expression`.
    #[proto(2)]
    #[validate(required)]
    pub field_ref: String,
    /// What does not check.
    #[proto(3)]
    #[validate(required)]
    pub warning: String,
}

/// Applies a validating admission policy to requests, with parameters and actions.
#[kind(cluster, categories = ["api-extensions"], strategic_merge_patch, unconditional_update)]
pub struct ValidatingAdmissionPolicyBinding {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The policy, its parameters, the requests and the actions.
    #[proto(2)]
    pub spec: ValidatingAdmissionPolicyBindingSpec,
}

/// What a binding applies.
pub struct ValidatingAdmissionPolicyBindingSpec {
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
    /// What a failed validation does: `Deny`, `Warn` and/or `Audit` (`Deny` and `Warn`
    /// not together).
    #[proto(4)]
    #[list(type = "set")]
    #[validate(required, enum = ["Deny", "Warn", "Audit"])]
    pub validation_actions: Vec<String>,
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
