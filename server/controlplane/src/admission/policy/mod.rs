//! CEL admission policies (kube-apiserver's ValidatingAdmissionPolicy and
//! MutatingAdmissionPolicy plugins): policies and their bindings read from the watch caches,
//! compiled again only when either cache's change counter moved, and what both kinds share —
//! which requests a policy and binding select (`matchConstraints`, the binding's
//! `matchResources`: rules with `resourceNames`, exclusions, namespace and object selectors,
//! `matchPolicy`), the binding's parameter objects (`paramKind`, `paramRef` by name or selector,
//! `parameterNotFoundAction`) and the variables the expressions see (`object` and `oldObject`
//! in the version that matched, `request`, `params`, `namespaceObject`, `variables`).
//!
//! - [`validating`]: validations that deny, warn or audit.
//! - [`mutating`]: apply configurations and JSON patches that change the object.
//! - [`type_check`]: the field checks behind a policy's `status.typeChecking`.
//!
//! Every expression runs within Kubernetes' cost limits ([`apimachinery::cel::CEL_PER_CALL_LIMIT`]
//! per expression, [`apimachinery::cel::CEL_RUNTIME_BUDGET`] per evaluation of a binding with
//! one parameter object): its cost bound over the actual variables is computed first, and an
//! expression above it fails without running (the policy's `failurePolicy` decides).
//!
//! The `authorizer` variable asks the server's authorizer about the requesting user
//! (Kubernetes' CEL authorizer library); `auditAnnotations` and the `Audit` action reach the
//! request's audit event.

pub mod mutating;
pub mod type_check;
pub mod validating;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use apimachinery::admission::Attributes;
use apimachinery::cel::{CelActivation, CelExpression};
use apimachinery::runtime::{Kind, Object};
use apimachinery::selectors::LabelSelector;
use apimachinery::status::ApiError;
use apimachinery::{ResourceInfo, Scheme};
use kubernetes_api::admissionregistration_k8s_io::v1::{
    MatchResources, NamedRuleWithOperations, ParamRef,
};
use parking_lot::RwLock;
use serde_json::Value;
use storage::interface::ListOptions;

use crate::admission::review;
use crate::admission::webhook::rules::{self, CompiledRule, Target};
use server::registry::Registry;

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

    /// Whether this matcher's namespace selector needs the request's namespace object.
    fn needs_namespace(&self) -> bool {
        !self.namespace_selector.as_ref().is_ok_and(|s| s.is_empty())
    }

    /// The version in which the rules select the request (and the exclusions do not), or
    /// `None`. Empty `resourceRules` select every resource (a binding's `matchResources` then
    /// only narrows by selectors; a policy's `matchConstraints` must name its rules).
    fn rules_select(&self, attributes: &Attributes<'_>) -> Option<&'static ResourceInfo> {
        let name = attributes.object_name();
        let rule_matches = |rules: &[NamedRule], t: &Target<'_>| {
            rules.iter().any(|r| {
                r.rule.matches(t) && (r.names.is_empty() || r.names.iter().any(|n| n == name))
            })
        };
        let version = if self.rules.is_empty() {
            attributes.version
        } else {
            rules::matching_version(attributes, self.exact, |t| rule_matches(&self.rules, t))?
        };
        if !self.excludes.is_empty()
            && rules::matching_version(attributes, self.exact, |t| rule_matches(&self.excludes, t))
                .is_some()
        {
            return None;
        }
        Some(version)
    }

    /// Whether the namespace and object selectors select the request.
    fn selectors_select(
        &self,
        attributes: &Attributes<'_>,
        namespace: Option<&dyn Object>,
    ) -> Result<bool, String> {
        let ns = self.namespace_selector.as_ref().map_err(|e| e.clone())?;
        if !rules::namespace_matches(ns, attributes, namespace) {
            return Ok(false);
        }
        let objects = self.object_selector.as_ref().map_err(|e| e.clone())?;
        if !objects.is_empty() {
            let labels =
                |o: Option<&dyn Object>| o.is_some_and(|o| objects.matches(&o.metadata().labels));
            if !labels(attributes.object()) && !labels(attributes.old_object) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Which variables a policy's expressions read.
#[derive(Clone, Copy, Debug, Default)]
struct Uses {
    object: bool,
    old_object: bool,
    request: bool,
    params: bool,
    namespace_object: bool,
    authorizer: bool,
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
            uses.authorizer |= e.uses("authorizer");
        }
        uses
    }
}

/// What a policy and its binding say about which requests they select and with which
/// parameters: the parts both policy kinds share.
struct Selection<'a> {
    constraints: Option<&'a Matcher>,
    binding: Option<&'a Matcher>,
    param_kind: Option<&'a (String, String)>,
    param_ref: Option<&'a ParamRef>,
    uses: Uses,
}

/// The outcome of matching one binding against a request.
enum Selected {
    /// The binding does not apply.
    No,
    /// It applies, in this version, once per parameter object (`Null` when the policy takes
    /// none).
    Yes(&'static ResourceInfo, Vec<Value>),
    /// The binding is misconfigured (its policy's failure policy decides).
    Error(String),
    /// No parameter object was found and the binding says `Deny`.
    NoParams,
}

/// The compiled policies and bindings of one kind, with the two watch caches' change counters
/// they were compiled at.
type Memo<T> = RwLock<Option<((u64, u64), Arc<T>)>>;

/// The policies' view of the server: the registry their objects and parameters are read
/// from, and the scheme their parameter kinds are found in.
struct Source {
    registry: Arc<Registry>,
    scheme: Scheme,
}

impl Source {
    /// The compiled form of the policies and bindings of `kinds`, compiled again by `build`
    /// only when either watch cache's change counter moved since `memo` was filled.
    async fn compiled<T>(
        &self,
        kinds: (&'static Kind, &'static Kind),
        memo: &Memo<T>,
        build: impl FnOnce(&[Box<dyn Object>], &[Box<dyn Object>]) -> T,
    ) -> Result<Arc<T>, ApiError> {
        let policies = self.registry.store(kinds.0)?;
        let bindings = self.registry.store(kinds.1)?;
        let generation = match (policies.changes(), bindings.changes()) {
            (Some(p), Some(b)) => Some((p.load(Ordering::Acquire), b.load(Ordering::Acquire))),
            _ => None,
        };
        if let (Some(g), Some((seen, compiled))) = (generation, &*memo.read())
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
        let compiled = Arc::new(build(&policy_objects, &binding_objects));
        if let Some(g) = generation {
            *memo.write() = Some((g, compiled.clone()));
        }
        Ok(compiled)
    }

    /// Whether a binding applies to the request, and with which parameters; the request's
    /// namespace object is read (once per request, into `namespace`) only when a selector
    /// or an expression needs it.
    async fn select(
        &self,
        s: &Selection<'_>,
        attributes: &Attributes<'_>,
        namespace: &mut Option<Option<Box<dyn Object>>>,
    ) -> Result<Selected, ApiError> {
        let Some(constraints) = s.constraints else {
            return Ok(Selected::No);
        };
        // Rules first: the namespace is read only for a request some rules select.
        let Some(version) = constraints.rules_select(attributes) else {
            return Ok(Selected::No);
        };
        if s.binding
            .is_some_and(|m| m.rules_select(attributes).is_none())
        {
            return Ok(Selected::No);
        }
        let wants_namespace = constraints.needs_namespace()
            || s.binding.is_some_and(Matcher::needs_namespace)
            || s.uses.namespace_object;
        if wants_namespace && namespace.is_none() {
            *namespace = Some(review::namespace_object(&self.registry, attributes).await?);
        }
        let ns = namespace.as_ref().and_then(|n| n.as_deref());
        let selected =
            constraints
                .selectors_select(attributes, ns)
                .and_then(|ok| match s.binding {
                    Some(m) if ok => m.selectors_select(attributes, ns),
                    _ => Ok(ok),
                });
        match selected {
            Ok(true) => {}
            Ok(false) => return Ok(Selected::No),
            Err(e) => return Ok(Selected::Error(e)),
        }
        let params = match self.params(s, attributes).await {
            Ok(p) => p,
            Err(e) => return Ok(Selected::Error(e)),
        };
        Ok(match params {
            None => Selected::Yes(version, vec![Value::Null]),
            Some(found) if found.is_empty() => {
                let deny = s
                    .param_ref
                    .and_then(|r| r.parameter_not_found_action.as_deref())
                    == Some("Deny");
                if deny {
                    Selected::NoParams
                } else {
                    Selected::No
                }
            }
            Some(found) => Selected::Yes(version, found),
        })
    }

    /// The parameter objects of a binding, as JSON; `Ok(None)` when the policy takes none.
    async fn params(
        &self,
        s: &Selection<'_>,
        attributes: &Attributes<'_>,
    ) -> Result<Option<Vec<Value>>, String> {
        let Some((api_version, kind_name)) = s.param_kind else {
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
        let param_ref = s.param_ref.ok_or_else(|| {
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

/// The variables of one evaluation that do not depend on the parameters: `object` and
/// `oldObject` in `version`, `request` and `namespaceObject`, each only when an expression
/// reads it.
fn base_activation(
    attributes: &Attributes<'_>,
    version: &'static ResourceInfo,
    uses: Uses,
    namespace: Option<&dyn Object>,
) -> Result<CelActivation, String> {
    let json = |o: Option<&dyn Object>| -> Result<Value, String> {
        match o {
            Some(o) => {
                review::json_in(attributes.kind, o, version).map_err(|e| e.message().to_string())
            }
            None => Ok(Value::Null),
        }
    };
    let mut activation = CelActivation::new();
    if uses.object {
        activation.set("object", &json(attributes.object())?)?;
    }
    if uses.old_object {
        activation.set("oldObject", &json(attributes.old_object)?)?;
    }
    if uses.request {
        let request = review::admission_request(attributes, version, "", false)
            .map_err(|e| e.message().to_string())?;
        activation.set("request", &request)?;
    }
    if uses.namespace_object {
        let namespace_object = namespace
            .and_then(|n| n.to_value().ok())
            .unwrap_or(Value::Null);
        activation.set("namespaceObject", &namespace_object)?;
    }
    if uses.authorizer {
        review::bind_authorizer(&mut activation, attributes);
    }
    Ok(activation)
}

/// Evaluates a policy's `matchConditions`: `Ok(false)` when one is false, an error naming
/// the condition when one cannot be evaluated.
fn conditions_hold(
    conditions: &[(String, Compiled)],
    activation: &CelActivation,
) -> Result<bool, String> {
    for (name, condition) in conditions {
        let condition = condition
            .as_ref()
            .map_err(|e| format!("compilation failed for matchCondition {name:?}: {e}"))?;
        match condition.evaluate_bool_in(activation) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(format!("matchCondition {name:?} resulted in error: {e}")),
        }
    }
    Ok(true)
}

/// Evaluates a policy's `variables` in order and binds them as `variables`, each seeing
/// those before it.
fn bind_variables(
    variables: &[(String, Compiled)],
    activation: &mut CelActivation,
) -> Result<(), String> {
    if variables.is_empty() {
        return Ok(());
    }
    let mut values = serde_json::Map::new();
    for (name, expression) in variables {
        let value = match expression {
            Ok(e) => e.evaluate_json_in(activation),
            Err(e) => Err(format!("compilation failed: {e}")),
        };
        let value = value.map_err(|e| format!("variable {name:?} resulted in error: {e}"))?;
        values.insert(name.clone(), value);
        activation.set("variables", &Value::Object(values.clone()))?;
    }
    Ok(())
}

/// The `(apiVersion, kind)` of a policy's `paramKind`.
fn param_kind_of(api_version: Option<&String>, kind: Option<&String>) -> (String, String) {
    (
        api_version.cloned().unwrap_or_default(),
        kind.cloned().unwrap_or_default(),
    )
}
