//! ValidatingAdmissionPolicy (kube-apiserver's plugin of that name): the CEL validations of
//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicies, applied to the requests
//! their ValidatingAdmissionPolicyBindings select (see the [parent module](super)), with the
//! binding's parameters and actions.
//!
//! - A failed validation is denied (`Deny`), returned as a warning (`Warn`), or only audited
//!   (`Audit`), in Kubernetes' words:
//!   `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>`.
//! - An expression that cannot be evaluated, a missing policy's parameter kind or parameter
//!   object follow the policy's `failurePolicy` (and the binding's
//!   `parameterNotFoundAction`).

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::admission::{Attributes, Plugin, ValidatingPlugin};
use apimachinery::cel::{CelActivation, CelExpression};
use apimachinery::runtime::Object;
use apimachinery::status::{ApiError, StatusReason};
use async_trait::async_trait;
use kubernetes_api::admissionregistration_k8s_io::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use kubernetes_api::admissionregistration_k8s_io::{
    VALIDATING_ADMISSION_POLICY_BINDING_KIND, VALIDATING_ADMISSION_POLICY_KIND,
};
use parking_lot::RwLock;

use super::{
    Compiled, Matcher, Memo, Selected, Selection, Source, Uses, base_activation, bind_variables,
    compile, conditions_hold, param_kind_of,
};
use crate::admission::webhook::rules;
use server::registry::Registry;

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
            source: Source {
                registry: registry.clone(),
                scheme: scheme.clone(),
            },
            memo: RwLock::new(None),
        })),
    })
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
    /// The `auditAnnotations`: keys (qualified with the policy's name) and value expressions.
    audit_annotations: Vec<(String, Compiled)>,
    /// Which of the variables any expression reads (the others are never computed).
    uses: Uses,
}

/// A binding, compiled, with its policy.
struct CompiledBinding {
    name: String,
    policy: Arc<CompiledPolicy>,
    param_ref: Option<kubernetes_api::admissionregistration_k8s_io::v1::ParamRef>,
    matcher: Option<Matcher>,
    deny: bool,
    warn: bool,
    audit: bool,
    /// The binding's `validationActions`, as written.
    actions: Vec<String>,
}

/// The bindings (with their policies) in the order they are checked, with the index of the
/// resources each can match (those of its policy's `matchConstraints`).
type Bindings = (Vec<CompiledBinding>, rules::ResourceIndex);

/// The plugin's state.
pub struct Policies {
    source: Source,
    /// The two caches' change counters when the bindings were compiled, and the bindings.
    memo: Memo<Bindings>,
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
        param_kind: spec
            .param_kind
            .as_ref()
            .map(|k| param_kind_of(k.api_version.as_ref(), k.kind.as_ref())),
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
        audit_annotations: spec
            .audit_annotations
            .iter()
            .map(|a| {
                let name = p.metadata.name.as_deref().unwrap_or_default();
                (format!("{name}/{}", a.key), compile(&a.value_expression))
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
        }))
        .chain(
            policy
                .audit_annotations
                .iter()
                .filter_map(|(_, e)| e.as_ref().ok()),
        );
    policy.uses = Uses::of(compiled);
    policy
}

/// Compiles the bindings with their policies, in the order they are checked.
fn compile_bindings(policies: &[Box<dyn Object>], bindings: &[Box<dyn Object>]) -> Bindings {
    let by_name: BTreeMap<String, Arc<CompiledPolicy>> = policies
        .iter()
        .filter_map(|o| o.downcast_ref::<ValidatingAdmissionPolicy>())
        .map(|p| {
            let c = compile_policy(p);
            (c.name.clone(), Arc::new(c))
        })
        .collect();
    let mut compiled: Vec<CompiledBinding> = bindings
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
                audit: actions.iter().any(|a| a == "Audit"),
                actions: actions.clone(),
            })
        })
        .collect();
    compiled.sort_by(|a, b| a.name.cmp(&b.name));
    let index = rules::ResourceIndex::build(compiled.iter().map(|b| {
        match b.policy.constraints.as_ref().map(|m| &m.rules) {
            Some(rules) if !rules.is_empty() => rules::resources_of(rules.iter().map(|r| &r.rule)),
            _ => None,
        }
    }));
    (compiled, index)
}

/// The outcome of one binding on one request.
enum Verdict {
    Pass,
    /// A validation failed: its message, reason and index.
    Failed(String, StatusReason, usize),
    /// The binding could not be evaluated (its failure policy decides).
    Error(String),
}

fn evaluate(policy: &CompiledPolicy, activation: &mut CelActivation) -> Verdict {
    match conditions_hold(&policy.conditions, activation) {
        Ok(true) => {}
        Ok(false) => return Verdict::Pass,
        Err(e) => return Verdict::Error(e),
    }
    if let Err(e) = bind_variables(&policy.variables, activation) {
        return Verdict::Error(e);
    }
    for (index, v) in policy.validations.iter().enumerate() {
        let expression: &CelExpression = match &v.expression {
            Ok(e) => e,
            Err(e) => return Verdict::Error(format!("compilation error: {e}")),
        };
        match expression.evaluate_bool_in(activation) {
            Ok(true) => {}
            Ok(false) => {
                let from_expression = v.message_expression.as_ref().and_then(|m| {
                    let m = m.as_ref().ok()?;
                    match m.evaluate_json_in(activation) {
                        Ok(serde_json::Value::String(s))
                            if !s.trim().is_empty() && !s.contains('\n') =>
                        {
                            Some(s)
                        }
                        _ => None,
                    }
                });
                let message = from_expression
                    .or_else(|| v.message.clone())
                    .unwrap_or_else(|| format!("failed expression: {}", v.expression_text));
                return Verdict::Failed(message, v.reason, index);
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

/// The values of a policy's `auditAnnotations` (a null value adds nothing), or why one
/// could not be evaluated.
fn audit_annotations(
    policy: &CompiledPolicy,
    activation: &CelActivation,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (key, expression) in &policy.audit_annotations {
        let expression = expression
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        match expression.evaluate_json_in(activation) {
            Ok(serde_json::Value::Null) => {}
            Ok(serde_json::Value::String(v)) => out.push((key.clone(), v)),
            Ok(other) => {
                return Err(format!(
                    "audit annotation {key:?}: valueExpression must evaluate to a string or null, not {other}"
                ));
            }
            Err(e) => return Err(format!("audit annotation {key:?} resulted in error: {e}")),
        }
    }
    Ok(out)
}

/// The audit annotation under which failed validations with the `Audit` action are recorded.
const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

#[async_trait]
impl ValidatingPlugin for Policies {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        !attributes.kind.strategy().exempt_from_admission_webhooks()
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let bindings = self
            .source
            .compiled(
                (
                    &VALIDATING_ADMISSION_POLICY_KIND,
                    &VALIDATING_ADMISSION_POLICY_BINDING_KIND,
                ),
                &self.memo,
                compile_bindings,
            )
            .await?;
        if bindings.0.is_empty() {
            return Ok(());
        }
        let mut namespace: Option<Option<Box<dyn Object>>> = None;
        // The failed validations the `Audit` action records, in one annotation.
        let mut audited: Vec<serde_json::Value> = Vec::new();
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
            let selection = Selection {
                constraints: policy.constraints.as_ref(),
                binding: binding.matcher.as_ref(),
                param_kind: policy.param_kind.as_ref(),
                param_ref: binding.param_ref.as_ref(),
                uses: policy.uses,
            };
            let (version, param_sets) = match self
                .source
                .select(&selection, attributes, &mut namespace)
                .await?
            {
                Selected::No => continue,
                Selected::Yes(version, params) => (version, params),
                Selected::Error(e) if policy.fail_closed => {
                    return Err(denied(e, StatusReason::Forbidden));
                }
                Selected::Error(_) => continue,
                Selected::NoParams => {
                    return Err(denied(
                        "no params found for policy binding with `Deny` parameterNotFoundAction"
                            .into(),
                        StatusReason::Forbidden,
                    ));
                }
            };
            let ns = namespace.as_ref().and_then(|n| n.as_deref());
            let base = base_activation(attributes, version, policy.uses, ns)
                .map_err(|e| denied(e, StatusReason::Forbidden))?;
            for params in param_sets {
                let mut activation = base.clone();
                if policy.uses.params {
                    activation
                        .set("params", &params)
                        .map_err(|e| denied(e, StatusReason::Forbidden))?;
                }
                let verdict = evaluate(policy, &mut activation);
                if !policy.audit_annotations.is_empty() && !matches!(verdict, Verdict::Error(_)) {
                    match audit_annotations(policy, &activation) {
                        Ok(values) => {
                            for (k, v) in values {
                                attributes.annotate_audit(k, v);
                            }
                        }
                        Err(e) if policy.fail_closed => {
                            return Err(denied(e, StatusReason::Forbidden));
                        }
                        Err(_) => {}
                    }
                }
                match verdict {
                    Verdict::Pass => {}
                    Verdict::Failed(message, reason, expression_index) => {
                        if binding.audit {
                            audited.push(serde_json::json!({
                                "message": message,
                                "policy": policy.name,
                                "binding": binding.name,
                                "expressionIndex": expression_index,
                                "validationActions": binding.actions,
                            }));
                        }
                        if binding.deny {
                            record_audited(attributes, &audited);
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
                            record_audited(attributes, &audited);
                            return Err(denied(e, StatusReason::Forbidden));
                        }
                    }
                }
            }
        }
        record_audited(attributes, &audited);
        Ok(())
    }
}

/// Records the failed validations of `Audit` bindings in the request's audit event.
fn record_audited(attributes: &Attributes<'_>, audited: &[serde_json::Value]) {
    if !audited.is_empty() {
        attributes.annotate_audit(
            VALIDATION_FAILURE_ANNOTATION,
            serde_json::Value::Array(audited.to_vec()).to_string(),
        );
    }
}
