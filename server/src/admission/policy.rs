//! ValidatingAdmissionPolicy (kube-apiserver's plugin of that name): the CEL validations of
//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicies, applied to the requests
//! their ValidatingAdmissionPolicyBindings select, with the binding's parameters and actions.
//!
//! - Policies and bindings are read from the watch cache and compiled again only when either
//!   cache's change counter moved, as the webhooks' configurations are.
//! - A request is checked against a binding when the policy's `matchConstraints` and the
//!   binding's `matchResources` (rules with `resourceNames`, exclusions, namespace and object
//!   selectors, `matchPolicy`) select it and every `matchCondition` holds; the expressions see
//!   `object` and `oldObject` (in the version that matched), `request`, `params`,
//!   `namespaceObject` and `variables`.
//! - A failed validation is denied (`Deny`), returned as a warning (`Warn`), or only audited
//!   (`Audit`), in Kubernetes' words:
//!   `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>`.
//! - An expression that cannot be evaluated, a missing policy's parameter kind or parameter
//!   object follow the policy's `failurePolicy` (and the binding's
//!   `parameterNotFoundAction`).
//!
//! Not yet: `authorizer`, type checking into `status.typeChecking`, a CEL cost budget (the
//! interpreter has no cost meter; the inputs are bounded by [`apimachinery::cel::CEL_MAX_NODES`]),
//! `auditAnnotations` in the audit event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use apimachinery::admission::{Attributes, Plugin, ValidatingPlugin};
use apimachinery::cel::{CelActivation, CelExpression};
use apimachinery::runtime::{Kind, Object};
use apimachinery::selectors::LabelSelector;
use apimachinery::status::{ApiError, StatusReason};
use apimachinery::{ResourceInfo, Scheme};
use async_trait::async_trait;
use generated::admissionregistration_k8s_io::v1::{
    MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use generated::admissionregistration_k8s_io::{
    VALIDATING_ADMISSION_POLICY_BINDING_KIND, VALIDATING_ADMISSION_POLICY_KIND,
};
use parking_lot::RwLock;
use serde_json::Value;
use storage::interface::ListOptions;

use crate::admission::review;
use crate::admission::webhook::rules::{self, CompiledRule, Target};
use crate::registry::Registry;

/// The plugin's name, as the admission flags spell it.
pub const NAME: &str = "ValidatingAdmissionPolicy";

/// The plugin, when the scheme serves the policy kinds.
pub fn plugin(registry: &Arc<Registry>, scheme: &Scheme) -> Option<Plugin> {
    scheme.by_kind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")?;
    scheme.by_kind(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    )?;
    Some(Plugin {
        name: NAME,
        default_enabled: true,
        mutating: None,
        validating: Some(Arc::new(Policies {
            registry: registry.clone(),
            scheme: scheme.clone(),
            memo: RwLock::new(None),
        })),
    })
}

/// A compiled expression, or why it does not compile.
type Compiled = Result<CelExpression, String>;

fn compile(expression: &str) -> Compiled {
    CelExpression::compile(expression)
}

/// A compiled rule, with the object names it is limited to (none: every name).
struct NamedRule {
    rule: CompiledRule,
    names: Vec<String>,
}

fn compile_rules(rules: &[NamedRuleWithOperations]) -> Vec<NamedRule> {
    rules
        .iter()
        .map(|r| NamedRule {
            rule: CompiledRule::compile(&r.rule_with_operations),
            names: r.resource_names.clone(),
        })
        .collect()
}

/// Compiled match constraints.
struct Matcher {
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
    rules: Vec<NamedRule>,
    excludes: Vec<NamedRule>,
    exact: bool,
}

impl Matcher {
    fn compile(m: &MatchResources) -> Matcher {
        let selector = |s: Option<&apimachinery::meta::LabelSelector>| match s {
            None => Ok(LabelSelector::default()),
            Some(s) => LabelSelector::try_from(s).map_err(|e| e.to_string()),
        };
        Matcher {
            namespace_selector: selector(m.namespace_selector.as_ref()),
            object_selector: selector(m.object_selector.as_ref()),
            rules: compile_rules(&m.resource_rules),
            excludes: compile_rules(&m.exclude_resource_rules),
            exact: m.match_policy.as_deref() == Some("Exact"),
        }
    }
}

/// One validation of a policy.
struct CompiledValidation {
    expression_text: String,
    expression: Compiled,
    message: Option<String>,
    message_expression: Option<Compiled>,
    reason: StatusReason,
}

/// A policy, compiled.
struct CompiledPolicy {
    name: String,
    param_kind: Option<(String, String)>,
    constraints: Option<Matcher>,
    fail_closed: bool,
    conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<CompiledValidation>,
    /// Which of the variables any expression reads (the others are never computed).
    uses: Uses,
}

/// Which variables a policy's expressions read.
#[derive(Clone, Copy, Debug, Default)]
struct Uses {
    object: bool,
    old_object: bool,
    request: bool,
    params: bool,
    namespace_object: bool,
}

impl Uses {
    fn of<'a>(expressions: impl Iterator<Item = &'a CelExpression>) -> Uses {
        let mut uses = Uses::default();
        for e in expressions {
            uses.object |= e.uses("object");
            uses.old_object |= e.uses("oldObject");
            uses.request |= e.uses("request");
            uses.params |= e.uses("params");
            uses.namespace_object |= e.uses("namespaceObject");
        }
        uses
    }
}

/// A binding, compiled, with its policy.
struct CompiledBinding {
    name: String,
    policy: Arc<CompiledPolicy>,
    param_ref: Option<generated::admissionregistration_k8s_io::v1::ParamRef>,
    matcher: Option<Matcher>,
    deny: bool,
    warn: bool,
}

/// The bindings (with their policies) in the order they are checked, with the index of the
/// resources each can match (those of its policy's `matchConstraints`).
type Bindings = Arc<(Vec<CompiledBinding>, rules::ResourceIndex)>;

/// The plugin's state.
pub struct Policies {
    registry: Arc<Registry>,
    scheme: Scheme,
    /// The two caches' change counters when `bindings` was compiled, and the bindings.
    memo: RwLock<Option<((u64, u64), Bindings)>>,
}

fn reason_of(r: Option<&str>) -> StatusReason {
    match r {
        Some("Unauthorized") => StatusReason::Unauthorized,
        Some("Invalid") => StatusReason::Invalid,
        Some("RequestEntityTooLarge") => StatusReason::RequestEntityTooLarge,
        _ => StatusReason::Forbidden,
    }
}

fn code_of(reason: StatusReason) -> u16 {
    match reason {
        StatusReason::Unauthorized => 401,
        StatusReason::Invalid => 422,
        StatusReason::RequestEntityTooLarge => 413,
        _ => 403,
    }
}

fn compile_policy(p: &ValidatingAdmissionPolicy) -> CompiledPolicy {
    let spec = &p.spec;
    let mut policy = CompiledPolicy {
        name: p.metadata.name.clone().unwrap_or_default(),
        param_kind: spec.param_kind.as_ref().map(|k| {
            (
                k.api_version.clone().unwrap_or_default(),
                k.kind.clone().unwrap_or_default(),
            )
        }),
        constraints: spec.match_constraints.as_ref().map(Matcher::compile),
        fail_closed: spec.failure_policy.as_deref() != Some("Ignore"),
        conditions: spec
            .match_conditions
            .iter()
            .map(|c| (c.name.clone(), compile(&c.expression)))
            .collect(),
        variables: spec
            .variables
            .iter()
            .map(|v| (v.name.clone(), compile(&v.expression)))
            .collect(),
        validations: spec
            .validations
            .iter()
            .map(|v| CompiledValidation {
                expression_text: v.expression.clone(),
                expression: compile(&v.expression),
                message: v.message.clone().filter(|m| !m.is_empty()),
                message_expression: v
                    .message_expression
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .map(compile),
                reason: reason_of(v.reason.as_deref()),
            })
            .collect(),
        uses: Uses::default(),
    };
    let compiled = policy
        .conditions
        .iter()
        .chain(&policy.variables)
        .filter_map(|(_, e)| e.as_ref().ok())
        .chain(policy.validations.iter().flat_map(|v| {
            let message = v.message_expression.as_ref().and_then(|m| m.as_ref().ok());
            v.expression.as_ref().ok().into_iter().chain(message)
        }));
    policy.uses = Uses::of(compiled);
    policy
}

impl Policies {
    /// The bindings with their policies, from the watch caches.
    async fn bindings(&self) -> Result<Bindings, ApiError> {
        let policies = self.registry.store(&VALIDATING_ADMISSION_POLICY_KIND)?;
        let bindings = self
            .registry
            .store(&VALIDATING_ADMISSION_POLICY_BINDING_KIND)?;
        let generation = match (policies.changes(), bindings.changes()) {
            (Some(p), Some(b)) => Some((p.load(Ordering::Acquire), b.load(Ordering::Acquire))),
            _ => None,
        };
        if let (Some(g), Some((seen, compiled))) = (generation, &*self.memo.read())
            && *seen == g
        {
            return Ok(compiled.clone());
        }
        let cached = || ListOptions {
            resource_version: "0".into(),
            ..ListOptions::default()
        };
        let (policy_objects, _) = policies.list("", cached()).await?;
        let (binding_objects, _) = bindings.list("", cached()).await?;
        let by_name: BTreeMap<String, Arc<CompiledPolicy>> = policy_objects
            .iter()
            .filter_map(|o| o.downcast_ref::<ValidatingAdmissionPolicy>())
            .map(|p| {
                let c = compile_policy(p);
                (c.name.clone(), Arc::new(c))
            })
            .collect();
        let mut compiled: Vec<CompiledBinding> = binding_objects
            .iter()
            .filter_map(|o| o.downcast_ref::<ValidatingAdmissionPolicyBinding>())
            .filter_map(|b| {
                let policy = by_name.get(&b.spec.policy_name)?.clone();
                let actions = &b.spec.validation_actions;
                Some(CompiledBinding {
                    name: b.metadata.name.clone().unwrap_or_default(),
                    policy,
                    param_ref: b.spec.param_ref.clone(),
                    matcher: b.spec.match_resources.as_ref().map(Matcher::compile),
                    deny: actions.iter().any(|a| a == "Deny"),
                    warn: actions.iter().any(|a| a == "Warn"),
                })
            })
            .collect();
        compiled.sort_by(|a, b| a.name.cmp(&b.name));
        let index = rules::ResourceIndex::build(compiled.iter().map(|b| {
            let rules = b.policy.constraints.as_ref().map(|m| &m.rules);
            match rules {
                Some(rules) if !rules.is_empty() => {
                    rules::resources_of(rules.iter().map(|r| &r.rule))
                }
                _ => None,
            }
        }));
        let compiled = Arc::new((compiled, index));
        if let Some(g) = generation {
            *self.memo.write() = Some((g, compiled.clone()));
        }
        Ok(compiled)
    }

    /// The parameter objects of a binding, as JSON; `Ok(None)` when the policy takes none.
    async fn params(
        &self,
        binding: &CompiledBinding,
        attributes: &Attributes<'_>,
    ) -> Result<Option<Vec<Value>>, String> {
        let Some((api_version, kind_name)) = &binding.policy.param_kind else {
            return Ok(None);
        };
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version.as_str()),
        };
        let kind: &'static Kind = self.scheme.by_kind(group, kind_name).ok_or_else(|| {
            format!("paramKind kind {kind_name:?} of {api_version} is not served")
        })?;
        let info = kind.info(version).ok_or_else(|| {
            format!("paramKind version {api_version} of {kind_name} is not served")
        })?;
        let param_ref = binding.param_ref.as_ref().ok_or_else(|| {
            "the policy has a paramKind but its binding has no paramRef".to_string()
        })?;
        let namespace = if info.namespaced() {
            match param_ref.namespace.as_deref().filter(|n| !n.is_empty()) {
                Some(n) => n.to_string(),
                None if !attributes.namespace.is_empty() => attributes.namespace.to_string(),
                None => {
                    return Err(
                        "cannot use a namespaced paramRef without a namespace for a cluster-scoped request"
                            .into(),
                    );
                }
            }
        } else {
            String::new()
        };
        let store = self
            .registry
            .store(kind)
            .map_err(|e| e.message().to_string())?;
        let mut found: Vec<Box<dyn Object>> = Vec::new();
        if let Some(name) = param_ref.name.as_deref().filter(|n| !n.is_empty()) {
            match store.get(&namespace, name, "0").await {
                Ok(o) => found.push(o),
                Err(e) if e.code() == 404 => {}
                Err(e) => return Err(e.message().to_string()),
            }
        } else {
            let selector = match &param_ref.selector {
                Some(s) => LabelSelector::try_from(s).map_err(|e| e.to_string())?,
                None => LabelSelector::default(),
            };
            let (items, _) = store
                .list(
                    &namespace,
                    ListOptions {
                        resource_version: "0".into(),
                        ..ListOptions::default()
                    },
                )
                .await
                .map_err(|e| e.message().to_string())?;
            found.extend(
                items
                    .into_iter()
                    .filter(|o| selector.matches(&o.metadata().labels)),
            );
        }
        found
            .iter()
            .map(|o| review::json_in(kind, o.as_ref(), info).map_err(|e| e.message().to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// The version in which `m`'s rules select the request (and its exclusions do not), or
/// `None`. Empty `resourceRules` select every resource (a binding's `matchResources` then only
/// narrows by selectors; a policy's `matchConstraints` must name its rules).
fn rules_select(m: &Matcher, attributes: &Attributes<'_>) -> Option<&'static ResourceInfo> {
    let name = attributes.object_name();
    let rule_matches = |rules: &[NamedRule], t: &Target<'_>| {
        rules
            .iter()
            .any(|r| r.rule.matches(t) && (r.names.is_empty() || r.names.iter().any(|n| n == name)))
    };
    let version = if m.rules.is_empty() {
        attributes.version
    } else {
        rules::matching_version(attributes, m.exact, |t| rule_matches(&m.rules, t))?
    };
    if !m.excludes.is_empty()
        && rules::matching_version(attributes, m.exact, |t| rule_matches(&m.excludes, t)).is_some()
    {
        return None;
    }
    Some(version)
}

/// Whether `m`'s namespace selector needs the request's namespace object.
fn needs_namespace(m: &Matcher) -> bool {
    !m.namespace_selector.as_ref().is_ok_and(|s| s.is_empty())
}

/// Whether `m`'s namespace and object selectors select the request.
fn selectors_select(
    m: &Matcher,
    attributes: &Attributes<'_>,
    namespace: Option<&dyn Object>,
) -> Result<bool, String> {
    let ns = m.namespace_selector.as_ref().map_err(|e| e.clone())?;
    if !rules::namespace_matches(ns, attributes, namespace) {
        return Ok(false);
    }
    let objects = m.object_selector.as_ref().map_err(|e| e.clone())?;
    if !objects.is_empty() {
        let labels =
            |o: Option<&dyn Object>| o.is_some_and(|o| objects.matches(&o.metadata().labels));
        if !labels(attributes.object()) && !labels(attributes.old_object) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The outcome of one binding on one request.
enum Verdict {
    Pass,
    /// A validation failed: its message and reason.
    Failed(String, StatusReason),
    /// The binding could not be evaluated (its failure policy decides).
    Error(String),
}

fn evaluate(policy: &CompiledPolicy, activation: &mut CelActivation) -> Verdict {
    for (name, condition) in &policy.conditions {
        let condition = match condition {
            Ok(c) => c,
            Err(e) => {
                return Verdict::Error(format!(
                    "compilation failed for matchCondition {name:?}: {e}"
                ));
            }
        };
        match condition.evaluate_bool_in(activation) {
            Ok(true) => {}
            Ok(false) => return Verdict::Pass,
            Err(e) => {
                return Verdict::Error(format!("matchCondition {name:?} resulted in error: {e}"));
            }
        }
    }
    if !policy.variables.is_empty() {
        let mut variables = serde_json::Map::new();
        for (name, expression) in &policy.variables {
            let value = match expression {
                Ok(e) => e.evaluate_json_in(activation),
                Err(e) => Err(format!("compilation failed: {e}")),
            };
            match value {
                Ok(v) => {
                    variables.insert(name.clone(), v);
                }
                Err(e) => {
                    return Verdict::Error(format!("variable {name:?} resulted in error: {e}"));
                }
            }
            if let Err(e) = activation.set("variables", &Value::Object(variables.clone())) {
                return Verdict::Error(e);
            }
        }
    }
    for v in &policy.validations {
        let expression = match &v.expression {
            Ok(e) => e,
            Err(e) => return Verdict::Error(format!("compilation error: {e}")),
        };
        match expression.evaluate_bool_in(activation) {
            Ok(true) => {}
            Ok(false) => {
                let from_expression = v.message_expression.as_ref().and_then(|m| {
                    let m = m.as_ref().ok()?;
                    match m.evaluate_json_in(activation) {
                        Ok(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                            Some(s)
                        }
                        _ => None,
                    }
                });
                let message = from_expression
                    .or_else(|| v.message.clone())
                    .unwrap_or_else(|| format!("failed expression: {}", v.expression_text));
                return Verdict::Failed(message, v.reason);
            }
            Err(e) => {
                return Verdict::Error(format!(
                    "expression '{}' resulted in error: {e}",
                    v.expression_text
                ));
            }
        }
    }
    Verdict::Pass
}

#[async_trait]
impl ValidatingPlugin for Policies {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        !attributes.kind.strategy().exempt_from_admission_webhooks()
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let bindings = self.bindings().await?;
        if bindings.0.is_empty() {
            return Ok(());
        }
        let mut namespace: Option<Option<Box<dyn Object>>> = None;
        let (list, index) = &*bindings;
        for binding in index
            .candidates(attributes.version.plural)
            .into_iter()
            .map(|i| &list[i])
        {
            let policy = &binding.policy;
            let denied = |message: String, reason: StatusReason| {
                ApiError::new(
                    code_of(reason),
                    reason,
                    format!(
                        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
                        policy.name, binding.name
                    ),
                    None,
                )
            };
            let Some(constraints) = &policy.constraints else {
                continue;
            };
            // Rules first: the namespace is read only for a request some rules select.
            let Some(version) = rules_select(constraints, attributes) else {
                continue;
            };
            if binding
                .matcher
                .as_ref()
                .is_some_and(|m| rules_select(m, attributes).is_none())
            {
                continue;
            }
            let wants_namespace = needs_namespace(constraints)
                || binding.matcher.as_ref().is_some_and(needs_namespace)
                || policy.uses.namespace_object;
            if wants_namespace && namespace.is_none() {
                namespace = Some(review::namespace_object(&self.registry, attributes).await?);
            }
            let ns = namespace.as_ref().and_then(|n| n.as_deref());
            let selected = selectors_select(constraints, attributes, ns).and_then(|ok| {
                match &binding.matcher {
                    Some(m) if ok => selectors_select(m, attributes, ns),
                    _ => Ok(ok),
                }
            });
            match selected {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) if policy.fail_closed => return Err(denied(e, StatusReason::Forbidden)),
                Err(_) => continue,
            }
            let params = match self.params(binding, attributes).await {
                Ok(p) => p,
                Err(e) if policy.fail_closed => return Err(denied(e, StatusReason::Forbidden)),
                Err(_) => continue,
            };
            let param_sets: Vec<Value> = match params {
                None => vec![Value::Null],
                Some(found) if found.is_empty() => {
                    let deny = binding
                        .param_ref
                        .as_ref()
                        .and_then(|r| r.parameter_not_found_action.as_deref())
                        == Some("Deny");
                    if deny {
                        return Err(denied(
                            "no params found for policy binding with `Deny` parameterNotFoundAction"
                                .into(),
                            StatusReason::Forbidden,
                        ));
                    }
                    continue;
                }
                Some(found) => found,
            };
            let json = |o: Option<&dyn Object>| -> Result<Value, ApiError> {
                match o {
                    Some(o) => review::json_in(attributes.kind, o, version),
                    None => Ok(Value::Null),
                }
            };
            let namespace_object = match ns {
                Some(n) if policy.uses.namespace_object => n.to_value().unwrap_or(Value::Null),
                _ => Value::Null,
            };
            let uses = policy.uses;
            let mut base = CelActivation::new();
            let bind = |a: &mut CelActivation, name: &str, v: &Value| {
                a.set(name, v)
                    .map_err(|e| denied(e, StatusReason::Forbidden))
            };
            if uses.object {
                bind(&mut base, "object", &json(attributes.object())?)?;
            }
            if uses.old_object {
                bind(&mut base, "oldObject", &json(attributes.old_object)?)?;
            }
            if uses.request {
                let request = review::admission_request(attributes, version, "", false)?;
                bind(&mut base, "request", &request)?;
            }
            if uses.namespace_object {
                bind(&mut base, "namespaceObject", &namespace_object)?;
            }
            for params in param_sets {
                let mut activation = base.clone();
                if uses.params {
                    bind(&mut activation, "params", &params)?;
                }
                match evaluate(policy, &mut activation) {
                    Verdict::Pass => {}
                    Verdict::Failed(message, reason) => {
                        if binding.deny {
                            return Err(denied(message, reason));
                        }
                        if binding.warn {
                            attributes.warn(format!(
                                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                                policy.name, binding.name
                            ));
                        }
                    }
                    Verdict::Error(e) => {
                        if policy.fail_closed {
                            return Err(denied(e, StatusReason::Forbidden));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
