//! The CEL rules of a structural schema (`x-kubernetes-validations`), compiled once with the
//! schema and run on every write of a custom resource as kube-apiserver runs them: each rule
//! with `self` bound to the value of its node (and `oldSelf` to the correlated old value on an
//! update; a rule that reads `oldSelf` is a transition rule, run only where an old value
//! correlates), its `message` or `messageExpression`, its `reason` and `fieldPath`. Every
//! evaluation's cost is bounded before it runs (Kubernetes' per-expression limit) and all of
//! one object's evaluations share Kubernetes' per-call budget; a value unchanged by an update
//! is not checked again (validation ratcheting).

use serde_json::Value;

use super::props::{Items, Props, SchemaOrBool};
use super::ratchet::Correlated;
use crate::cel::{CelActivation, CelExpression};
use crate::errors::{FieldError, FieldErrorType};

/// One compiled rule.
struct Rule {
    rule: CelExpression,
    source: String,
    message: Option<String>,
    message_expression: Option<CelExpression>,
    reason: Option<String>,
    field_path: Option<String>,
    transition: bool,
}

/// The rules of one node and of the nodes below it that have any (a tree as sparse as the
/// rules are).
#[derive(Default)]
pub(crate) struct RuleTree {
    rules: Vec<Rule>,
    /// The schema type of the node, as errors render the value (`"object"`).
    type_: String,
    properties: Vec<(String, RuleTree)>,
    items: Option<Box<RuleTree>>,
    additional: Option<Box<RuleTree>>,
}

impl std::fmt::Debug for RuleTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleTree")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

/// Compiles the rules of one node (the `x-kubernetes-validations` list as written); a rule
/// that does not compile, or whose `messageExpression` does not, is left out (the CRD's
/// checks report them when it is written).
fn compile_rules(validations: &[Value]) -> Vec<Rule> {
    let mut rules = Vec::new();
    for v in validations {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let source = text("rule").unwrap_or_default();
        let Ok(rule) = CelExpression::compile(&source) else {
            continue;
        };
        let message_expression = match text("messageExpression").filter(|m| !m.is_empty()) {
            None => None,
            Some(m) => match CelExpression::compile(&m) {
                Ok(e) => Some(e),
                Err(_) => continue,
            },
        };
        let transition = rule.uses("oldSelf");
        rules.push(Rule {
            rule,
            source,
            message: text("message").filter(|m| !m.is_empty()),
            message_expression,
            reason: text("reason").filter(|r| !r.is_empty()),
            field_path: text("fieldPath").filter(|p| !p.is_empty()),
            transition,
        });
    }
    rules
}

impl RuleTree {
    /// The rules of `schema` (rules that do not compile are left out: a CRD's schema was
    /// checked when it was stored). `None` when the schema has no rule at all.
    pub(crate) fn build(schema: &Props) -> Option<RuleTree> {
        Self::node(schema, 0)
    }

    fn node(schema: &Props, depth: usize) -> Option<RuleTree> {
        if depth > super::MAX_SCHEMA_DEPTH {
            return None;
        }
        let rules = compile_rules(&schema.validations);
        let properties: Vec<(String, RuleTree)> = schema
            .properties
            .iter()
            .filter_map(|(k, p)| Some((k.clone(), Self::node(p, depth + 1)?)))
            .collect();
        let items = match &schema.items {
            Some(Items::Schema(items)) => Self::node(items, depth + 1).map(Box::new),
            _ => None,
        };
        let additional = match &schema.additional_properties {
            Some(SchemaOrBool::Schema(a)) => Self::node(a, depth + 1).map(Box::new),
            _ => None,
        };
        if rules.is_empty() && properties.is_empty() && items.is_none() && additional.is_none() {
            return None;
        }
        Some(RuleTree {
            rules,
            type_: schema.type_.clone(),
            properties,
            items,
            additional,
        })
    }

    /// Runs the rules on `object` (and on `old`, the object it replaces, for an update).
    pub(crate) fn validate(
        &self,
        schema: &Props,
        object: &Value,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        let mut activation = CelActivation::new();
        let correlated = old.map(|old| Correlated {
            new: object,
            old,
            schema,
        });
        self.walk(object, correlated, "", 0, &mut activation, errors);
    }

    fn walk(
        &self,
        value: &Value,
        old: Option<Correlated<'_>>,
        path: &str,
        depth: usize,
        activation: &mut CelActivation,
        errors: &mut Vec<FieldError>,
    ) {
        if depth > super::MAX_SCHEMA_DEPTH || value.is_null() {
            return;
        }
        // Ratcheting: what an update did not change is not checked again.
        if old.is_some_and(|c| c.deep_equal()) {
            return;
        }
        self.run_rules(value, old.map(|c| c.old), path, activation, errors);
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let tree = self
                        .properties
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, t)| t)
                        .or(self.additional.as_deref());
                    if let Some(tree) = tree {
                        let child_old = old.and_then(|c| c.key(key, depth == 0));
                        tree.walk(
                            child,
                            child_old,
                            &join(path, key),
                            depth + 1,
                            activation,
                            errors,
                        );
                    }
                }
            }
            Value::Array(items) => {
                if let Some(tree) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        let item_old = old.and_then(|c| c.index(i));
                        tree.walk(
                            item,
                            item_old,
                            &format!("{path}[{i}]"),
                            depth + 1,
                            activation,
                            errors,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn run_rules(
        &self,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        activation: &mut CelActivation,
        errors: &mut Vec<FieldError>,
    ) {
        if self.rules.is_empty() {
            return;
        }
        if let Err(e) = activation.set("self", value) {
            errors.push(FieldError::new(
                FieldErrorType::Invalid,
                at_root_as_nil(path),
                Some(format!("{:?}", self.type_)),
                e,
            ));
            return;
        }
        let old_bound = match old {
            Some(old) => activation.set("oldSelf", old).is_ok(),
            None => false,
        };
        for rule in &self.rules {
            if rule.transition && !old_bound {
                continue;
            }
            let field = match &rule.field_path {
                Some(fp) => format!("{path}{fp}").trim_start_matches('.').to_string(),
                None => at_root_as_nil(path),
            };
            match rule.rule.evaluate_bool_in(activation) {
                Ok(true) => {}
                Ok(false) => {
                    let detail = self.message(rule, activation);
                    errors.push(self.rule_error(&field, rule.reason.as_deref(), detail));
                }
                Err(e) => errors.push(FieldError::new(
                    FieldErrorType::Invalid,
                    field,
                    Some(format!("{:?}", self.type_)),
                    format!("{}: {e}", rule.source),
                )),
            }
        }
    }

    /// The message of a failed rule: its `messageExpression`'s string when it evaluates to a
    /// non-empty one, else its `message`, else `failed rule: <rule>`.
    fn message(&self, rule: &Rule, activation: &CelActivation) -> String {
        if let Some(expression) = &rule.message_expression
            && let Ok(Value::String(text)) = expression.evaluate_json_in(activation)
            && !text.trim().is_empty()
            && !text.contains('\n')
        {
            return text;
        }
        match &rule.message {
            Some(m) => m.clone(),
            None => format!("failed rule: {}", rule.source.trim()),
        }
    }

    fn rule_error(&self, field: &str, reason: Option<&str>, detail: String) -> FieldError {
        let bad = Some(format!("{:?}", self.type_));
        match reason {
            Some("FieldValueForbidden") => {
                FieldError::new(FieldErrorType::Forbidden, field, None, detail)
            }
            Some("FieldValueRequired") => {
                FieldError::new(FieldErrorType::Required, field, None, detail)
            }
            Some("FieldValueDuplicate") => {
                FieldError::new(FieldErrorType::Duplicate, field, bad, detail)
            }
            _ => FieldError::new(FieldErrorType::Invalid, field, bad, detail),
        }
    }
}

/// A rule's field path: kube-apiserver validates a custom resource's rules from a nil path,
/// which an error at the root prints as `<nil>`.
fn at_root_as_nil(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Structural;

    fn schema() -> Structural {
        Structural::new(&json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be at most maxReplicas"},
                {"rule": "self.replicas >= oldSelf.replicas", "messageExpression": "'replicas may not go down from ' + string(oldSelf.replicas)", "reason": "FieldValueForbidden", "fieldPath": ".replicas"}
            ],
            "properties": {
                "replicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}
            }
        }}}))
        .expect("the schema compiles")
    }

    fn messages(errors: Vec<crate::errors::FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rules_fail_with_their_messages() {
        let s = schema();
        let object = json!({"spec": {"replicas": 5, "maxReplicas": 3, "name": "bob"}});
        assert_eq!(
            messages(s.validate(&object)),
            vec![
                r#"spec: Invalid value: "object": replicas must be at most maxReplicas"#,
                r#"spec.name: Invalid value: "string": failed rule: self.startsWith('a')"#,
            ]
        );
        assert!(
            s.validate(&json!({"spec": {"replicas": 1, "maxReplicas": 3, "name": "al"}}))
                .is_empty()
        );
    }

    #[test]
    fn transition_rules_run_on_updates_and_unchanged_values_ratchet() {
        let s = schema();
        let old = json!({"spec": {"replicas": 3, "maxReplicas": 3, "name": "al"}});
        let new = json!({"spec": {"replicas": 2, "maxReplicas": 3, "name": "al"}});
        assert_eq!(
            messages(s.validate_update(&new, &old)),
            vec!["spec.replicas: Forbidden: replicas may not go down from 3"]
        );
        // An invalid value the update leaves alone is not reported again.
        let bad_old = json!({"spec": {"replicas": 3, "maxReplicas": 3, "name": "bob"}});
        let bad_new = json!({"spec": {"replicas": 3, "maxReplicas": 3, "name": "bob"}});
        assert!(s.validate_update(&bad_new, &bad_old).is_empty());
    }
}
