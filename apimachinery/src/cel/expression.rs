//! CEL expressions given at run time (webhooks' `matchConditions`, admission policies), with
//! the variables they are evaluated over and the cost bound checked before each evaluation.

use std::sync::Arc;

use serde_json::Value;

use super::CEL_MAX_NODES;
use super::cost::{CostBounds, cel_size};
use super::{
    AuthorizerContext, CEL_MAX_EXPRESSION_LEN, ROOT_CONTEXT, authz, count_nodes, from_cel, to_cel,
};

/// The most one evaluation of one run-time expression may cost (Kubernetes' `PerCallLimit`):
/// an expression whose cost bound over its variables is higher fails without running.
pub const CEL_PER_CALL_LIMIT: u64 = 1_000_000;

/// The most the expressions of one policy evaluation may cost together (Kubernetes'
/// `RuntimeCELCostBudget`).
pub const CEL_RUNTIME_BUDGET: u64 = 10_000_000;

/// A CEL expression given at run time (an admission webhook's `matchConditions`, a policy's
/// expressions), compiled once when its configuration is read and evaluated over named JSON
/// variables, within a cost bound.
pub struct CelExpression {
    pub(super) program: cel::Program,
}

impl std::fmt::Debug for CelExpression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CelExpression")
    }
}

impl CelExpression {
    /// Compiles `expression`; the error is the parser's message.
    pub fn compile(expression: &str) -> Result<Self, String> {
        if expression.len() > CEL_MAX_EXPRESSION_LEN {
            return Err(format!(
                "the expression is longer than {CEL_MAX_EXPRESSION_LEN} characters"
            ));
        }
        let program = std::panic::catch_unwind(|| cel::Program::compile(expression))
            .map_err(|_| "the CEL parser rejected the expression".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(Self { program })
    }

    /// An upper bound of what evaluating the expression over `activation` costs, in
    /// Kubernetes' units (about one per node visited): comprehensions multiply their body's
    /// cost by the size of what they range over, as the variables' actual sizes bound it.
    pub fn cost_bound(&self, activation: &CelActivation) -> u64 {
        let total: u64 = activation
            .variables
            .iter()
            .map(|(_, v)| cel_size(v).max(1))
            .sum::<u64>()
            .max(1);
        let mut bounds = CostBounds {
            activation,
            total,
            scopes: Vec::new(),
        };
        bounds.cost(self.program.expression())
    }

    /// The worst-case cost of one evaluation as kube-apiserver estimates it when a CRD is
    /// written, with `self` and `oldSelf` declared by `declared` (the schema node's sizes).
    pub(crate) fn estimated_cost(&self, declared: &super::Decl) -> u64 {
        super::estimate::estimate(self.program.expression(), declared)
    }

    /// Compiles an expression of a mutating admission policy, where object initializers
    /// (`Object{spec: Object.spec{replicas: 1}}`, `JSONPatch{op: "add", …}`) build the
    /// apply configurations and patch operations; they evaluate to maps of their fields.
    pub fn compile_with_object_types(expression: &str) -> Result<Self, String> {
        if expression.len() > CEL_MAX_EXPRESSION_LEN {
            return Err(format!(
                "the expression is longer than {CEL_MAX_EXPRESSION_LEN} characters"
            ));
        }
        Self::compile(&object_initializers_as_maps(expression))
    }

    /// Evaluates the expression as a boolean with each `(name, value)` bound; an error names
    /// what went wrong (a non-boolean result, an evaluation error, a value too large).
    pub fn evaluate_bool(&self, variables: &[(&str, &Value)]) -> Result<bool, String> {
        match self.evaluate(variables)? {
            cel::Value::Bool(b) => Ok(b),
            other => Err(format!("expected a boolean, got {other:?}")),
        }
    }

    /// Evaluates the expression with each `(name, value)` bound, as JSON (maps, lists,
    /// strings, numbers, booleans, null; bytes as their UTF-8 text, durations and timestamps
    /// as strings).
    pub fn evaluate_json(&self, variables: &[(&str, &Value)]) -> Result<Value, String> {
        Ok(from_cel(&self.evaluate(variables)?))
    }

    /// Whether the expression reads the variable `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.program.references().has_variable(name)
    }

    /// Evaluates the expression as a boolean over an activation (only the variables it reads
    /// are bound).
    pub fn evaluate_bool_in(&self, activation: &CelActivation) -> Result<bool, String> {
        match self.evaluate_in(activation)? {
            cel::Value::Bool(b) => Ok(b),
            other => Err(format!("expected a boolean, got {other:?}")),
        }
    }

    /// Evaluates the expression over an activation, as JSON.
    pub fn evaluate_json_in(&self, activation: &CelActivation) -> Result<Value, String> {
        Ok(from_cel(&self.evaluate_in(activation)?))
    }

    fn evaluate_in(&self, activation: &CelActivation) -> Result<cel::Value, String> {
        let cost = self.cost_bound(activation);
        if cost > CEL_PER_CALL_LIMIT {
            return Err(format!(
                "operation cancelled: actual cost limit exceeded (the expression may cost up to {cost}, more than the limit of {CEL_PER_CALL_LIMIT} per expression)"
            ));
        }
        let spent = activation
            .spent
            .fetch_add(cost, std::sync::atomic::Ordering::Relaxed)
            .saturating_add(cost);
        if spent > CEL_RUNTIME_BUDGET {
            return Err(format!(
                "operation cancelled: actual cost limit exceeded (the expressions of this evaluation may cost up to {spent}, more than the budget of {CEL_RUNTIME_BUDGET})"
            ));
        }
        let mut cx = ROOT_CONTEXT.new_inner_scope();
        let references = self.program.references();
        for (name, value) in &activation.variables {
            if references.has_variable(name) {
                cx.add_variable_from_value(name.clone(), value.clone());
            }
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            authz::with_context(activation.authorizer.as_ref(), || self.program.execute(&cx))
        }))
        .map_err(|_| "the CEL interpreter failed".to_string())?;
        result.map_err(|e| e.to_string())
    }

    fn evaluate(&self, variables: &[(&str, &Value)]) -> Result<cel::Value, String> {
        let mut activation = CelActivation::new();
        for (name, value) in variables {
            activation.set(name, value)?;
        }
        self.evaluate_in(&activation)
    }
}

/// Rewrites CEL object initializers (`Type.path{field: value, …}`) as map literals
/// (`{"field": value, …}`), leaving string literals and map literals as they are: the
/// interpreter evaluates maps, not typed messages.
fn object_initializers_as_maps(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len() + 16);
    // The open brackets, each with whether it is an object initializer's brace.
    let mut open: Vec<(char, bool)> = Vec::new();
    // Whether the next token starts a field of the innermost initializer.
    let mut field_start = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // String literals, with their optional raw/bytes prefixes, are copied untouched.
        if c == '"' || c == '\'' {
            let raw = out.ends_with(['r', 'R'])
                && !out[..out.len() - 1].ends_with(|p: char| p.is_alphanumeric() || p == '_');
            let triple = i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c;
            let quote_len = if triple { 3 } else { 1 };
            let start = i;
            i += quote_len;
            while i < chars.len() {
                if !raw && chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == c
                    && (!triple || (i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c))
                {
                    i += quote_len;
                    break;
                }
                i += 1;
            }
            out.extend(&chars[start..i.min(chars.len())]);
            field_start = false;
            continue;
        }
        if c.is_whitespace() {
            out.push(c);
            i += 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if field_start {
                // A field name of an initializer: `name:` becomes `"name":`.
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ':' {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                    field_start = false;
                    continue;
                }
            }
            // A type name (`Object`, `Object.spec`, `JSONPatch`) directly before `{`.
            let mut j = i;
            while j < chars.len()
                && (chars[j] == '.' || chars[j].is_alphanumeric() || chars[j] == '_')
            {
                j += 1;
            }
            let mut k = j;
            while k < chars.len() && chars[k].is_whitespace() {
                k += 1;
            }
            let after_member = out.trim_end().ends_with('.');
            if word != "in" && !after_member && k < chars.len() && chars[k] == '{' {
                open.push(('{', true));
                out.push('{');
                field_start = true;
                i = k + 1;
                continue;
            }
            out.push_str(&word);
            field_start = false;
            continue;
        }
        match c {
            '{' | '[' | '(' => open.push((c, false)),
            '}' | ']' | ')' => {
                open.pop();
            }
            ',' => {
                field_start = open.last().is_some_and(|(_, object)| *object);
                out.push(c);
                i += 1;
                continue;
            }
            _ => {}
        }
        field_start = false;
        out.push(c);
        i += 1;
    }
    out
}

/// Named variables converted to CEL once and shared by every expression evaluated over them
/// (their values are reference-counted, so binding one is cheap), with what the expressions
/// evaluated over them may have cost so far (against [`CEL_RUNTIME_BUDGET`]).
#[derive(Default)]
pub struct CelActivation {
    pub(super) variables: Vec<(String, cel::Value)>,
    spent: std::sync::atomic::AtomicU64,
    /// What the `authorizer` variable's checks ask.
    authorizer: Option<Arc<AuthorizerContext>>,
}

impl Clone for CelActivation {
    fn clone(&self) -> Self {
        Self {
            variables: self.variables.clone(),
            authorizer: self.authorizer.clone(),
            spent: std::sync::atomic::AtomicU64::new(
                self.spent.load(std::sync::atomic::Ordering::Relaxed),
            ),
        }
    }
}

impl CelActivation {
    /// An activation without variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds the `authorizer` variable (Kubernetes' CEL authorizer library) to `context`, its
    /// `requestResource` being the request's own resource (`group`, `version`, `resource`,
    /// `subresource`, `namespace`, `name`).
    pub fn set_authorizer(
        &mut self,
        context: AuthorizerContext,
        request_resource: &[(&str, &str)],
    ) {
        self.bind("authorizer", authz::authorizer_value(request_resource));
        self.authorizer = Some(Arc::new(context));
    }

    fn bind(&mut self, name: &str, value: cel::Value) {
        match self.variables.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.variables.push((name.to_string(), value)),
        }
    }

    /// Binds (or rebinds) `name` to `value`; fails when the value is larger than
    /// [`CEL_MAX_NODES`].
    pub fn set(&mut self, name: &str, value: &Value) -> Result<(), String> {
        let mut nodes = 0;
        count_nodes(value, CEL_MAX_NODES, &mut nodes);
        if nodes > CEL_MAX_NODES {
            return Err(format!(
                "{name} has more than {CEL_MAX_NODES} values: cost budget exceeded"
            ));
        }
        self.bind(name, to_cel(value));
        Ok(())
    }
}

#[cfg(test)]
mod expression_tests {
    use super::*;

    #[test]
    fn malformed_expressions_are_errors_not_panics() {
        // cel-parser 0.10 visited the tree of a failed parse and panicked on these
        // (cel-rust#191, #194); each is a parse error with the parser's message.
        for expression in [
            "1 +", "(", ")", ".", "/", "!", "-", "a.", "[1,", "{1:", "a ? b",
        ] {
            let error = CelExpression::compile(expression).unwrap_err();
            assert!(
                error.contains("ERROR: <input>:1:"),
                "{expression:?}: {error}"
            );
        }
    }

    #[test]
    fn expressions_over_large_values_are_refused_by_their_cost_bound() {
        let mut activation = CelActivation::new();
        let list: Vec<i64> = (0..100).collect();
        activation.set("l", &serde_json::json!(list)).unwrap();
        let cheap = CelExpression::compile("l.all(a, a >= 0)").unwrap();
        assert!(
            cheap.cost_bound(&activation) < 1_000,
            "{}",
            cheap.cost_bound(&activation)
        );
        assert_eq!(cheap.evaluate_bool_in(&activation), Ok(true));
        // A million iterations: refused before they run.
        let cubic = CelExpression::compile("l.all(a, l.all(b, l.all(c, a + b + c >= 0)))").unwrap();
        assert!(cubic.cost_bound(&activation) > CEL_PER_CALL_LIMIT);
        let e = cubic.evaluate_bool_in(&activation).unwrap_err();
        assert!(e.contains("cost limit exceeded"), "{e}");
        // The budget of one evaluation is shared by its expressions (this one is bounded as
        // quadratic but stops at the first item).
        let quadratic = CelExpression::compile("l.all(a, l.all(b, false))").unwrap();
        let each = quadratic.cost_bound(&activation);
        assert!(each < CEL_PER_CALL_LIMIT && each > 10_000, "{each}");
        let runs = CEL_RUNTIME_BUDGET / each;
        for _ in 0..runs {
            assert_eq!(quadratic.evaluate_bool_in(&activation), Ok(false));
        }
        let e = quadratic.evaluate_bool_in(&activation).unwrap_err();
        assert!(e.contains("budget"), "{e}");
        // Another evaluation starts with the whole budget.
        let fresh = CelActivation::new();
        assert!(quadratic.evaluate_json_in(&fresh).is_err()); // `l` is not bound there
        let mut again = fresh.clone();
        again.set("l", &serde_json::json!(list)).unwrap();
        assert_eq!(quadratic.evaluate_bool_in(&again), Ok(false));
    }

    /// Allows `alice` to create deployments in `ns` and get `/healthz`, and nothing else.
    struct AliceMayCreateDeployments;

    impl crate::authorization::Authorizer for AliceMayCreateDeployments {
        fn authorize(
            &self,
            a: &crate::authorization::Attributes<'_>,
        ) -> crate::authorization::Authorization {
            let resource = a.is_resource_request
                && a.verb == "create"
                && a.api_group == "apps"
                && a.resource == "deployments"
                && a.namespace == "ns";
            let path = !a.is_resource_request && a.verb == "get" && a.path == "/healthz";
            if a.user.name == "alice" && (resource || path) {
                crate::authorization::Authorization::allow("alice may")
            } else {
                crate::authorization::Authorization::no_opinion()
            }
        }
    }

    #[test]
    fn the_authorizer_variable_asks_the_authorizer() {
        let mut activation = CelActivation::new();
        activation.set_authorizer(
            AuthorizerContext {
                authorizer: Arc::new(AliceMayCreateDeployments),
                user: crate::user::UserInfo {
                    name: "alice".into(),
                    ..Default::default()
                },
            },
            &[
                ("group", "apps"),
                ("resource", "deployments"),
                ("namespace", "ns"),
            ],
        );
        let check = |e: &str| {
            CelExpression::compile(e)
                .unwrap_or_else(|err| panic!("{e}: {err}"))
                .evaluate_json_in(&activation)
        };
        assert_eq!(
            check(
                "authorizer.group('apps').resource('deployments').namespace('ns').check('create').allowed()"
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            check(
                "authorizer.group('apps').resource('deployments').namespace('other').check('create').allowed()"
            ),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            check(
                "authorizer.group('apps').resource('deployments').namespace('ns').check('create').reason()"
            ),
            Ok(Value::from("alice may"))
        );
        assert_eq!(
            check("authorizer.requestResource.check('create').allowed()"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            check("authorizer.path('/healthz').check('get').allowed()"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            check(
                "authorizer.serviceAccount('ns', 'sa').group('apps').resource('deployments').namespace('ns').check('create').allowed()"
            ),
            Ok(Value::Bool(false))
        );
        // Without an authorizer bound, a check fails.
        let unbound =
            CelExpression::compile("authorizer.path('/').check('get').allowed()").unwrap();
        let mut plain = CelActivation::new();
        plain.set("authorizer", &serde_json::json!({})).unwrap();
        assert!(unbound.evaluate_bool_in(&plain).is_err());
    }

    #[test]
    fn object_initializers_evaluate_to_maps_of_their_fields() {
        assert_eq!(
            object_initializers_as_maps(
                r#"Object{spec: Object.spec{replicas: 1, color: "a{b: c}"}}"#
            ),
            r#"{"spec": {"replicas": 1, "color": "a{b: c}"}}"#
        );
        // Map literals, `in` and member calls are left alone.
        assert_eq!(
            object_initializers_as_maps("'a' in {'a': x.y} && f({'k': 1}).g == r'{b: c}'"),
            "'a' in {'a': x.y} && f({'k': 1}).g == r'{b: c}'"
        );
        let e = CelExpression::compile_with_object_types(
            r#"Object{metadata: Object.metadata{labels: {"team": object.spec.team}}}"#,
        )
        .unwrap();
        let object = serde_json::json!({"spec": {"team": "blue"}});
        assert_eq!(
            e.evaluate_json(&[("object", &object)]),
            Ok(serde_json::json!({"metadata": {"labels": {"team": "blue"}}}))
        );
        let patch = CelExpression::compile_with_object_types(
            r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/a~b"), value: "x"}]"#,
        )
        .unwrap();
        assert_eq!(
            patch.evaluate_json(&[("jsonpatch", &serde_json::json!({}))]),
            Ok(
                serde_json::json!([{"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": "x"}])
            )
        );
    }

    #[test]
    fn run_time_expressions_see_their_variables() {
        let e = CelExpression::compile("object.metadata.name != 'skip' && request.dryRun == false")
            .unwrap();
        let object = serde_json::json!({"metadata": {"name": "a"}});
        let request = serde_json::json!({"dryRun": false});
        assert_eq!(
            e.evaluate_bool(&[("object", &object), ("request", &request)]),
            Ok(true)
        );
        let skip = serde_json::json!({"metadata": {"name": "skip"}});
        assert_eq!(
            e.evaluate_bool(&[("object", &skip), ("request", &request)]),
            Ok(false)
        );
        assert!(CelExpression::compile("object.").is_err());
        let not_bool = CelExpression::compile("1 + 1").unwrap();
        assert!(not_bool.evaluate_bool(&[]).is_err());
    }
}
