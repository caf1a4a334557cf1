//! Hand-written strategies of admissionregistration.k8s.io: webhook configurations print how
//! many webhooks they register; every CEL expression of a policy or a webhook's
//! `matchConditions` must compile when the object is written.

use ::apimachinery::admission::{Attributes, Operation};
use ::apimachinery::cel::CelExpression;
use ::apimachinery::status::ApiError;
use ::apimachinery::errors::FieldError;
use ::apimachinery::resource::PrinterColumn;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};

/// The columns of a webhook configuration.
static WEBHOOK_COLUMNS: [PrinterColumn; 3] = [
    NAME_COLUMN,
    column(
        "Webhooks",
        "integer",
        0,
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE_COLUMN,
];

static VALIDATING_TABLE: TypedTable<v1::ValidatingWebhookConfiguration> =
    TypedTable::new(&WEBHOOK_COLUMNS, |c, now| {
        vec![
            table::name(&c.metadata),
            table::count(c.webhooks.len()),
            table::age(&c.metadata, now),
        ]
    });

static MUTATING_TABLE: TypedTable<v1::MutatingWebhookConfiguration> =
    TypedTable::new(&WEBHOOK_COLUMNS, |c, now| {
        vec![
            table::name(&c.metadata),
            table::count(c.webhooks.len()),
            table::age(&c.metadata, now),
        ]
    });

/// A `compilation failed` error for every expression of `expressions` (`(path, text)`) that
/// does not compile.
fn compile_errors<'a>(expressions: impl IntoIterator<Item = (String, &'a str)>) -> Vec<FieldError> {
    expressions
        .into_iter()
        .filter_map(|(path, text)| {
            let e = CelExpression::compile(text).err()?;
            Some(FieldError::invalid(
                path,
                &::serde_json::Value::from(text),
                format!("compilation failed: {e}"),
            ))
        })
        .collect()
}

/// The errors of a webhook's `matchConditions`.
fn match_condition_errors(webhook: usize, conditions: &[v1::MatchCondition]) -> Vec<FieldError> {
    compile_errors(conditions.iter().enumerate().map(|(i, c)| {
        (
            format!("webhooks[{webhook}].matchConditions[{i}].expression"),
            c.expression.as_str(),
        )
    }))
}

/// A ValidatingWebhookConfiguration prints its number of webhooks.
pub struct ValidatingWebhookConfigurationStrategy;

impl Strategy for ValidatingWebhookConfigurationStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&VALIDATING_TABLE)
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        let Some(c) = object.downcast_ref::<v1::ValidatingWebhookConfiguration>() else {
            return Vec::new();
        };
        let hooks = c.webhooks.iter().enumerate();
        hooks.flat_map(|(i, w)| match_condition_errors(i, &w.match_conditions)).collect()
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// A MutatingWebhookConfiguration prints its number of webhooks.
pub struct MutatingWebhookConfigurationStrategy;

impl Strategy for MutatingWebhookConfigurationStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&MUTATING_TABLE)
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        let Some(c) = object.downcast_ref::<v1::MutatingWebhookConfiguration>() else {
            return Vec::new();
        };
        let hooks = c.webhooks.iter().enumerate();
        hooks.flat_map(|(i, w)| match_condition_errors(i, &w.match_conditions)).collect()
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// The columns of a ValidatingAdmissionPolicy (kube-apiserver's printer).
static POLICY_COLUMNS: [PrinterColumn; 4] = [
    NAME_COLUMN,
    column(
        "Validations",
        "integer",
        0,
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    column(
        "ParamKind",
        "string",
        0,
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE_COLUMN,
];

static POLICY_TABLE: TypedTable<v1::ValidatingAdmissionPolicy> =
    TypedTable::new(&POLICY_COLUMNS, |p, now| {
        let param_kind = match &p.spec.param_kind {
            Some(k) => format!(
                "{}/{}",
                k.api_version.as_deref().unwrap_or(""),
                k.kind.as_deref().unwrap_or("")
            ),
            None => "<unset>".to_string(),
        };
        vec![
            table::name(&p.metadata),
            table::count(p.spec.validations.len()),
            ::serde_json::Value::from(param_kind),
            table::age(&p.metadata, now),
        ]
    });

/// The columns of a ValidatingAdmissionPolicyBinding (kube-apiserver's printer).
static BINDING_COLUMNS: [PrinterColumn; 4] = [
    NAME_COLUMN,
    column(
        "PolicyName",
        "string",
        0,
        "PolicyName indicates the name of the policy this binding binds to",
    ),
    column(
        "ParamRef",
        "string",
        0,
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE_COLUMN,
];

/// A binding's `ParamRef` column: `<namespace>/<name>` (`*` for a namespace left to the
/// request, or for a selector), `<unset>` without one.
fn param_ref_column(name: Option<&str>, selector: bool, namespace: Option<&str>, set: bool) -> ::serde_json::Value {
    if !set {
        return ::serde_json::Value::from("<unset>");
    }
    let name = match name.filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None if selector => "*".to_string(),
        None => String::new(),
    };
    let text = match namespace.filter(|n| !n.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => format!("*/{name}"),
    };
    ::serde_json::Value::from(text)
}

static BINDING_TABLE: TypedTable<v1::ValidatingAdmissionPolicyBinding> =
    TypedTable::new(&BINDING_COLUMNS, |b, now| {
        let r = b.spec.param_ref.as_ref();
        vec![
            table::name(&b.metadata),
            ::serde_json::Value::from(b.spec.policy_name.clone()),
            param_ref_column(
                r.and_then(|r| r.name.as_deref()),
                r.is_some_and(|r| r.selector.is_some()),
                r.and_then(|r| r.namespace.as_deref()),
                r.is_some(),
            ),
            table::age(&b.metadata, now),
        ]
    });

/// A policy's `paramKind` as (apiVersion, kind).
type KindRef<'a> = (&'a str, &'a str);

/// The write of a policy kind `T` this request makes (a create or update of the object
/// itself), with the stored object of an update.
fn written<'a, T: Object>(attributes: &'a Attributes<'_>) -> Option<(&'a T, Option<&'a T>)> {
    if !matches!(attributes.operation, Operation::Create | Operation::Update)
        || !attributes.subresource.is_empty()
    {
        return None;
    }
    let object = attributes.object()?.downcast_ref::<T>()?;
    Some((object, attributes.old_object.and_then(|o| o.downcast_ref::<T>())))
}

/// The group, version and resource a `paramKind` names, `*` for what does not parse or
/// resolve (Kubernetes asks then for permission on everything the part could be).
fn param_resource<'a>(
    attributes: &Attributes<'_>,
    (api_version, kind): KindRef<'a>,
) -> (&'a str, &'a str, &'static str) {
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => return ("*", "*", "*"),
    };
    let resource = attributes
        .objects
        .and_then(|o| o.resolve(group, version, kind))
        .map_or("*", |info| info.plural);
    (group, version, resource)
}

/// A 422 of the written object with one Forbidden field error, as Kubernetes' policy
/// strategies report a failed read-permission check.
fn forbidden_field(attributes: &Attributes<'_>, field: &str, detail: String) -> ApiError {
    ApiError::invalid(
        attributes.version.group,
        attributes.version.kind,
        attributes.object_name(),
        &[FieldError::forbidden(field, detail)],
    )
}

/// Kubernetes' check of a policy's `paramKind`: outside `system:masters`, whoever sets or
/// changes it must be able to `get` every object of that kind, since the policy's messages
/// can show the parameters it reads.
fn authorize_param_kind(
    attributes: &Attributes<'_>,
    param_kind: Option<KindRef<'_>>,
    old: Option<Option<KindRef<'_>>>,
) -> Result<(), ApiError> {
    let Some(kind_ref) = param_kind else {
        return Ok(());
    };
    if old == Some(Some(kind_ref)) || attributes.escalation_allowed() {
        return Ok(());
    }
    let (group, version, resource) = param_resource(attributes, kind_ref);
    if attributes.user_may("get", group, version, resource, "*", "*") {
        return Ok(());
    }
    Err(forbidden_field(
        attributes,
        "spec.paramKind",
        format!(
            "user {} must have \"get\" permission on all objects of the referenced paramKind (kind={}, apiVersion={})",
            attributes.user.go_value(),
            kind_ref.1,
            kind_ref.0
        ),
    ))
}

/// Kubernetes' check of a binding's `paramRef`: outside `system:masters`, whoever sets or
/// changes it (or the policy it binds) must be able to `get` the object it names, of the
/// bound policy's `paramKind` (any kind while the policy is unknown).
fn authorize_param_ref(
    attributes: &Attributes<'_>,
    param_ref: Option<(Option<&str>, Option<&str>)>,
    unchanged: bool,
    policy_kind: Option<KindRef<'_>>,
) -> Result<(), ApiError> {
    let Some((name, namespace)) = param_ref else {
        return Ok(());
    };
    if unchanged || attributes.escalation_allowed() {
        return Ok(());
    }
    let (group, version, resource) = match policy_kind {
        Some(kind_ref) => param_resource(attributes, kind_ref),
        None => ("*", "*", "*"),
    };
    let (name, namespace) = (name.unwrap_or(""), namespace.unwrap_or(""));
    if attributes.user_may("get", group, version, resource, namespace, name) {
        return Ok(());
    }
    Err(forbidden_field(
        attributes,
        "spec.paramRef",
        format!(
            "user {} does not have \"get\" permission on the object referenced by paramRef",
            attributes.user.go_value()
        ),
    ))
}

/// A ValidatingAdmissionPolicy's `paramKind`.
fn validating_param_kind(p: &v1::ValidatingAdmissionPolicy) -> Option<KindRef<'_>> {
    let k = p.spec.param_kind.as_ref()?;
    Some((k.api_version.as_deref().unwrap_or(""), k.kind.as_deref().unwrap_or("")))
}

/// A MutatingAdmissionPolicy's `paramKind`.
fn mutating_param_kind(p: &v1beta1::MutatingAdmissionPolicy) -> Option<KindRef<'_>> {
    let k = p.spec.param_kind.as_ref()?;
    Some((k.api_version.as_deref().unwrap_or(""), k.kind.as_deref().unwrap_or("")))
}


/// What the `paramRef` check reads of a policy binding kind.
trait ParamBinding: Object + Sized {
    /// The kind of policy it binds.
    type Policy: Object;
    /// The policy kind's name.
    const POLICY_KIND: &'static str;
    /// The name of the bound policy.
    fn policy_name(&self) -> &str;
    /// The `paramRef`'s name and namespace, when it has one.
    fn param_ref(&self) -> Option<(Option<&str>, Option<&str>)>;
    /// Whether `other` binds the same policy with the same `paramRef`.
    fn same_params(&self, other: &Self) -> bool;
    /// The bound policy's `paramKind`.
    fn param_kind(policy: &Self::Policy) -> Option<KindRef<'_>>;
}

impl ParamBinding for v1::ValidatingAdmissionPolicyBinding {
    type Policy = v1::ValidatingAdmissionPolicy;
    const POLICY_KIND: &'static str = "ValidatingAdmissionPolicy";
    fn policy_name(&self) -> &str {
        &self.spec.policy_name
    }
    fn param_ref(&self) -> Option<(Option<&str>, Option<&str>)> {
        let r = self.spec.param_ref.as_ref()?;
        Some((r.name.as_deref(), r.namespace.as_deref()))
    }
    fn same_params(&self, other: &Self) -> bool {
        self.spec.param_ref == other.spec.param_ref && self.spec.policy_name == other.spec.policy_name
    }
    fn param_kind(policy: &Self::Policy) -> Option<KindRef<'_>> {
        validating_param_kind(policy)
    }
}

impl ParamBinding for v1beta1::MutatingAdmissionPolicyBinding {
    type Policy = v1beta1::MutatingAdmissionPolicy;
    const POLICY_KIND: &'static str = "MutatingAdmissionPolicy";
    fn policy_name(&self) -> &str {
        &self.spec.policy_name
    }
    fn param_ref(&self) -> Option<(Option<&str>, Option<&str>)> {
        let r = self.spec.param_ref.as_ref()?;
        Some((r.name.as_deref(), r.namespace.as_deref()))
    }
    fn same_params(&self, other: &Self) -> bool {
        self.spec.param_ref == other.spec.param_ref && self.spec.policy_name == other.spec.policy_name
    }
    fn param_kind(policy: &Self::Policy) -> Option<KindRef<'_>> {
        mutating_param_kind(policy)
    }
}

/// The `paramRef` check of a write of binding kind `B`; the bound policy is read from the
/// server's cache.
fn authorize_binding_write<B: ParamBinding>(attributes: &Attributes<'_>) -> Result<(), ApiError> {
    let Some((binding, old)) = written::<B>(attributes) else {
        return Ok(());
    };
    let unchanged = old.is_some_and(|o| o.param_ref().is_some() && o.same_params(binding));
    let policy = attributes.objects.and_then(|o| {
        o.cached("admissionregistration.k8s.io", B::POLICY_KIND, "", binding.policy_name())
    });
    let policy_kind = policy
        .as_deref()
        .and_then(|p| p.downcast_ref::<B::Policy>())
        .and_then(B::param_kind);
    authorize_param_ref(attributes, binding.param_ref(), unchanged, policy_kind)
}

/// A ValidatingAdmissionPolicy prints its validations and parameter kind; never sent to
/// webhooks.
pub struct ValidatingAdmissionPolicyStrategy;

impl Strategy for ValidatingAdmissionPolicyStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&POLICY_TABLE)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some((policy, old)) = written::<v1::ValidatingAdmissionPolicy>(attributes) else {
            return Ok(());
        };
        authorize_param_kind(attributes, validating_param_kind(policy), old.map(validating_param_kind))
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        let Some(p) = object.downcast_ref::<v1::ValidatingAdmissionPolicy>() else {
            return Vec::new();
        };
        let spec = &p.spec;
        let mut expressions: Vec<(String, &str)> = Vec::new();
        for (i, c) in spec.match_conditions.iter().enumerate() {
            expressions.push((format!("spec.matchConditions[{i}].expression"), &c.expression));
        }
        for (i, v) in spec.variables.iter().enumerate() {
            expressions.push((format!("spec.variables[{i}].expression"), &v.expression));
        }
        for (i, v) in spec.validations.iter().enumerate() {
            expressions.push((format!("spec.validations[{i}].expression"), &v.expression));
            if let Some(m) = v.message_expression.as_deref().filter(|m| !m.is_empty()) {
                expressions.push((format!("spec.validations[{i}].messageExpression"), m));
            }
        }
        for (i, a) in spec.audit_annotations.iter().enumerate() {
            expressions.push((
                format!("spec.auditAnnotations[{i}].valueExpression"),
                &a.value_expression,
            ));
        }
        let mut errors = compile_errors(expressions);
        if spec
            .match_constraints
            .as_ref()
            .is_some_and(|m| m.resource_rules.is_empty())
        {
            errors.push(FieldError::required(
                "spec.matchConstraints.resourceRules",
                "",
            ));
        }
        if spec.validations.is_empty() && spec.audit_annotations.is_empty() {
            errors.push(FieldError::required(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        errors
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// A ValidatingAdmissionPolicyBinding prints its policy and parameters; never sent to
/// webhooks.
pub struct ValidatingAdmissionPolicyBindingStrategy;

impl Strategy for ValidatingAdmissionPolicyBindingStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&BINDING_TABLE)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        authorize_binding_write::<v1::ValidatingAdmissionPolicyBinding>(attributes)
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        let Some(b) = object.downcast_ref::<v1::ValidatingAdmissionPolicyBinding>() else {
            return Vec::new();
        };
        let actions = &b.spec.validation_actions;
        let has = |a: &str| actions.iter().any(|x| x == a);
        if has("Deny") && has("Warn") {
            return vec![FieldError::invalid(
                "spec.validationActions",
                &::serde_json::json!(actions),
                "Deny and Warn may not be used together",
            )];
        }
        Vec::new()
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// The columns of a MutatingAdmissionPolicy (kube-apiserver's printer).
static MUTATING_POLICY_COLUMNS: [PrinterColumn; 4] = [
    NAME_COLUMN,
    column(
        "Mutations",
        "integer",
        0,
        "Mutations indicates the number of mutations rules defined in this configuration",
    ),
    column(
        "ParamKind",
        "string",
        0,
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE_COLUMN,
];

static MUTATING_POLICY_TABLE: TypedTable<v1beta1::MutatingAdmissionPolicy> =
    TypedTable::new(&MUTATING_POLICY_COLUMNS, |p, now| {
        let param_kind = match &p.spec.param_kind {
            Some(k) => format!(
                "{}/{}",
                k.api_version.as_deref().unwrap_or(""),
                k.kind.as_deref().unwrap_or("")
            ),
            None => "<unset>".to_string(),
        };
        vec![
            table::name(&p.metadata),
            table::count(p.spec.mutations.len()),
            ::serde_json::Value::from(param_kind),
            table::age(&p.metadata, now),
        ]
    });

static MUTATING_BINDING_TABLE: TypedTable<v1beta1::MutatingAdmissionPolicyBinding> =
    TypedTable::new(&BINDING_COLUMNS, |b, now| {
        let r = b.spec.param_ref.as_ref();
        vec![
            table::name(&b.metadata),
            ::serde_json::Value::from(b.spec.policy_name.clone()),
            param_ref_column(
                r.and_then(|r| r.name.as_deref()),
                r.is_some_and(|r| r.selector.is_some()),
                r.and_then(|r| r.namespace.as_deref()),
                r.is_some(),
            ),
            table::age(&b.metadata, now),
        ]
    });

/// A MutatingAdmissionPolicy prints its mutations and parameter kind; its expressions must
/// compile; never sent to webhooks.
pub struct MutatingAdmissionPolicyStrategy;

impl Strategy for MutatingAdmissionPolicyStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&MUTATING_POLICY_TABLE)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some((policy, old)) = written::<v1beta1::MutatingAdmissionPolicy>(attributes) else {
            return Ok(());
        };
        authorize_param_kind(attributes, mutating_param_kind(policy), old.map(mutating_param_kind))
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        let Some(p) = object.downcast_ref::<v1beta1::MutatingAdmissionPolicy>() else {
            return Vec::new();
        };
        let spec = &p.spec;
        let mut expressions: Vec<(String, &str)> = Vec::new();
        for (i, c) in spec.match_conditions.iter().enumerate() {
            expressions.push((format!("spec.matchConditions[{i}].expression"), &c.expression));
        }
        for (i, v) in spec.variables.iter().enumerate() {
            expressions.push((format!("spec.variables[{i}].expression"), &v.expression));
        }
        let mut errors = compile_errors(expressions);
        for (i, m) in spec.mutations.iter().enumerate() {
            let (field, expression) = match m.patch_type.as_str() {
                "ApplyConfiguration" => (
                    "applyConfiguration",
                    m.apply_configuration.as_ref().and_then(|a| a.expression.as_deref()),
                ),
                "JSONPatch" => ("jsonPatch", m.json_patch.as_ref().and_then(|j| j.expression.as_deref())),
                _ => continue,
            };
            let path = format!("spec.mutations[{i}].{field}.expression");
            match expression.filter(|e| !e.is_empty()) {
                None => errors.push(FieldError::required(path, "")),
                Some(e) => {
                    if let Err(why) = CelExpression::compile_with_object_types(e) {
                        errors.push(FieldError::invalid(
                            path,
                            &::serde_json::Value::from(e),
                            format!("compilation failed: {why}"),
                        ));
                    }
                }
            }
        }
        if spec.mutations.is_empty() {
            errors.push(FieldError::required("spec.mutations", "mutations must contain at least one item"));
        }
        if let Some(m) = &spec.match_constraints {
            if m.resource_rules.is_empty() {
                errors.push(FieldError::required("spec.matchConstraints.resourceRules", ""));
            }
            for (i, r) in m.resource_rules.iter().enumerate() {
                if r.rule_with_operations.operations.iter().any(|o| o == "DELETE") {
                    errors.push(FieldError::new(
                        ::apimachinery::errors::FieldErrorType::NotSupported,
                        format!("spec.matchConstraints.resourceRules[{i}].operations"),
                        Some("\"DELETE\"".to_string()),
                        "supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
                    ));
                }
            }
        }
        errors
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// A MutatingAdmissionPolicyBinding prints its policy and parameters; never sent to
/// webhooks.
pub struct MutatingAdmissionPolicyBindingStrategy;

impl Strategy for MutatingAdmissionPolicyBindingStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&MUTATING_BINDING_TABLE)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        authorize_binding_write::<v1beta1::MutatingAdmissionPolicyBinding>(attributes)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::chrono::{DateTime, Utc};
    use ::serde_json::json;

    #[test]
    fn webhook_configurations_print_their_webhook_count() {
        let now = DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let webhook = |name: &str| {
            json!({
                "name": name, "clientConfig": {"url": "https://example.com"},
                "sideEffects": "None", "admissionReviewVersions": ["v1"]
            })
        };
        let v: v1::ValidatingWebhookConfiguration = ::serde_json::from_value(json!({
            "metadata": {"name": "policy", "creationTimestamp": "2024-05-01T11:59:30Z"},
            "webhooks": [webhook("a.example.com"), webhook("b.example.com")]
        }))
        .unwrap();
        let table = ValidatingWebhookConfigurationStrategy.table().unwrap();
        assert_eq!(
            table.cells(&v, now),
            vec![json!("policy"), json!(2), json!("30s")]
        );
        let m: v1::MutatingWebhookConfiguration =
            ::serde_json::from_value(json!({"metadata": {"name": "none"}})).unwrap();
        let table = MutatingWebhookConfigurationStrategy.table().unwrap();
        assert_eq!(
            table.cells(&m, now),
            vec![json!("none"), json!(0), json!("<unknown>")]
        );
        let names: Vec<_> = table.columns().iter().map(|c| (c.name, c.type_)).collect();
        assert_eq!(
            names,
            [
                ("Name", "string"),
                ("Webhooks", "integer"),
                ("Age", "string")
            ]
        );
    }
}
