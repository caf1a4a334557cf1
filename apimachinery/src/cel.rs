//! CEL validation rules of the definitions (`#[rule(cel = …, message = …)]`), compiled once
//! and evaluated with `self` bound to the value of the struct or field they are written on,
//! within a cost bound.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use crate::errors::{FieldError, FieldErrorType};

mod authz;
use crate::markers::FieldPath;
pub use authz::AuthorizerContext;

/// The most JSON nodes (objects, arrays and scalars) a CEL rule is evaluated over; larger
/// objects fail the rule with a cost error instead of running unbounded.
pub const CEL_MAX_NODES: usize = 100_000;

/// The longest CEL expression accepted.
pub const CEL_MAX_EXPRESSION_LEN: usize = 10_000;

/// The standard functions, registered once: every evaluation binds its variables in a scope
/// of its own over this root (registering the functions anew took about 20k instructions per
/// evaluation).
static ROOT_CONTEXT: std::sync::LazyLock<cel_interpreter::Context<'static>> =
    std::sync::LazyLock::new(|| {
        let mut cx = cel_interpreter::Context::default();
        authz::register(&mut cx);
        // `jsonpatch.escapeKey(k)` of mutating admission policies: `~` as `~0`, `/` as `~1`
        // (the target, the `jsonpatch` variable, is only a namespace).
        cx.add_function("escapeKey", |key: Arc<String>| -> Arc<String> {
            Arc::new(key.replace('~', "~0").replace('/', "~1"))
        });
        cx
    });

/// A CEL validation rule (`#[rule(cel = …, message = …)]`), compiled on first use.
pub struct CelRule {
    expression: &'static str,
    message: &'static str,
    program: OnceLock<Result<cel_interpreter::Program, String>>,
}

impl CelRule {
    /// Creates a rule.
    pub const fn new(expression: &'static str, message: &'static str) -> Self {
        Self {
            expression,
            message,
            program: OnceLock::new(),
        }
    }

    /// The compiled program, or the compile error.
    fn program(&self) -> &Result<cel_interpreter::Program, String> {
        self.program.get_or_init(|| {
            if self.expression.len() > CEL_MAX_EXPRESSION_LEN {
                return Err(format!(
                    "the rule is longer than {CEL_MAX_EXPRESSION_LEN} characters"
                ));
            }
            // The CEL parser may panic on some malformed input instead of returning an error.
            std::panic::catch_unwind(|| cel_interpreter::Program::compile(self.expression))
                .map_err(|_| "the CEL parser rejected the rule".to_string())?
                .map_err(|e| e.to_string())
        })
    }

    /// Whether the rule compiles (used by tests of the definitions).
    pub fn compile_error(&self) -> Option<String> {
        self.program().as_ref().err().cloned()
    }

    /// The expression.
    pub fn expression(&self) -> &'static str {
        self.expression
    }
}

/// The OpenAPI type name Kubernetes reports as the bad value of a failed rule.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

/// Counts JSON nodes, stopping at `limit + 1`.
fn count_nodes(v: &Value, limit: usize, count: &mut usize) {
    *count += 1;
    if *count > limit {
        return;
    }
    match v {
        Value::Array(items) => items.iter().for_each(|i| count_nodes(i, limit, count)),
        Value::Object(map) => map.values().for_each(|i| count_nodes(i, limit, count)),
        _ => {}
    }
}

/// Converts JSON to a CEL value (integers stay integers).
fn to_cel(v: &Value) -> cel_interpreter::Value {
    use cel_interpreter::Value as C;
    match v {
        Value::Null => C::Null,
        Value::Bool(b) => C::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => C::Int(i),
            None => n
                .as_u64()
                .map(C::UInt)
                .unwrap_or_else(|| C::Float(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => C::String(Arc::new(s.clone())),
        Value::Array(items) => C::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let m: HashMap<String, cel_interpreter::Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            C::from(m)
        }
    }
}

/// Evaluates rules with `self` bound to `value`; each failing rule adds
/// `<path>: Invalid value: "<type>": <message>` (`<nil>` as the path of the root object, as
/// Kubernetes prints it).
pub fn check_rules<T: Serialize + ?Sized>(
    rules: &[CelRule],
    value: &T,
    path: &FieldPath<'_>,
    errors: &mut Vec<FieldError>,
) {
    if rules.is_empty() {
        return;
    }
    let value = match serde_json::to_value(value) {
        Ok(v) => v,
        Err(e) => {
            errors.push(FieldError::new(
                FieldErrorType::Internal,
                path.to_string(),
                None,
                format!("the value could not be read for its rules: {e}"),
            ));
            return;
        }
    };
    let value = &value;
    let bad_value = Value::from(type_name(value));
    // Kubernetes reports rules of the root object at a nil field path, printed as `<nil>`.
    let path = if path.is_root() {
        "<nil>".to_string()
    } else {
        path.to_string()
    };
    let path = path.as_str();
    let mut nodes = 0;
    count_nodes(value, CEL_MAX_NODES, &mut nodes);
    if nodes > CEL_MAX_NODES {
        errors.push(FieldError::forbidden(
            path,
            format!("validation rules are not evaluated over more than {CEL_MAX_NODES} values: cost budget exceeded"),
        ));
        return;
    }
    let this = to_cel(value);
    for rule in rules {
        let program = match rule.program() {
            Ok(p) => p,
            Err(e) => {
                errors.push(FieldError::new(
                    FieldErrorType::Internal,
                    path,
                    None,
                    format!("rule compile error: {e}"),
                ));
                continue;
            }
        };
        let mut cx = ROOT_CONTEXT.new_inner_scope();
        cx.add_variable_from_value("self", this.clone());
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(&cx)));
        let Ok(result) = result else {
            errors.push(FieldError::invalid(
                path,
                &bad_value,
                "rule evaluation error: the CEL interpreter failed",
            ));
            continue;
        };
        match result {
            Ok(cel_interpreter::Value::Bool(true)) => {}
            Ok(cel_interpreter::Value::Bool(false)) => {
                errors.push(FieldError::invalid(path, &bad_value, rule.message))
            }
            Ok(other) => errors.push(FieldError::invalid(
                path,
                &bad_value,
                format!(
                    "rule {:?} returned {other:?}, not a boolean",
                    rule.expression
                ),
            )),
            Err(e) => errors.push(FieldError::invalid(
                path,
                &bad_value,
                format!("rule evaluation error: {e}"),
            )),
        }
    }
}

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
    program: cel_interpreter::Program,
    /// The syntax tree the cost bound is computed over.
    ast: cel_parser::Expression,
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
        let parsed = std::panic::catch_unwind(|| {
            let program = cel_interpreter::Program::compile(expression)?;
            let ast = cel_parser::Parser::default().parse(expression)?;
            Ok::<_, cel_parser::ParseErrors>((program, ast))
        });
        let (program, ast) = parsed
            .map_err(|_| "the CEL parser rejected the expression".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(Self { program, ast })
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
        bounds.cost(&self.ast)
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
            cel_interpreter::Value::Bool(b) => Ok(b),
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
            cel_interpreter::Value::Bool(b) => Ok(b),
            other => Err(format!("expected a boolean, got {other:?}")),
        }
    }

    /// Evaluates the expression over an activation, as JSON.
    pub fn evaluate_json_in(&self, activation: &CelActivation) -> Result<Value, String> {
        Ok(from_cel(&self.evaluate_in(activation)?))
    }

    fn evaluate_in(&self, activation: &CelActivation) -> Result<cel_interpreter::Value, String> {
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

    fn evaluate(&self, variables: &[(&str, &Value)]) -> Result<cel_interpreter::Value, String> {
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

/// A field an expression selects that the schema does not have: its name and the byte offset
/// of the `.` selecting it in the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndefinedField {
    /// The field's name.
    pub field: String,
    /// The offset of the selecting `.` in the expression's text.
    pub offset: usize,
}

/// Finds the fields an expression selects through variables of known structure that their
/// structs do not have (a type check of field selections only: other type errors are left to
/// evaluation).
struct FieldCheck<'a> {
    source: &'a str,
    roots: &'a [(&'a str, &'static crate::structure::StructShape)],
    /// Comprehension variables with the shape they stand for (`None`: unknown, shadowing).
    scopes: Vec<(String, Option<crate::structure::Shape>)>,
    /// Where the search for the next `.field` in the text starts.
    cursor: usize,
    found: Vec<UndefinedField>,
}

impl FieldCheck<'_> {
    /// The shape `e` has, when it is a path the roots give a shape to.
    fn shape_of(&mut self, e: &cel_parser::Expression) -> Option<crate::structure::Shape> {
        use crate::structure::Shape;
        use cel_parser::ast::{Expr, operators};
        match &e.expr {
            Expr::Ident(name) => {
                if let Some((_, shape)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
                    return *shape;
                }
                self.roots
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| Shape::Struct(s))
            }
            Expr::Select(sel) => {
                let operand = self.shape_of(&sel.operand);
                let offset = self.offset_of(&sel.field);
                match operand? {
                    Shape::Struct(s) => match s.field(&sel.field) {
                        Some(f) => Some(f.shape),
                        // Every object has these, though the structs leave them implicit.
                        None if matches!(sel.field.as_str(), "apiVersion" | "kind") => {
                            Some(Shape::Scalar)
                        }
                        None => {
                            self.found.push(UndefinedField {
                                field: sel.field.clone(),
                                offset,
                            });
                            None
                        }
                    },
                    Shape::Map(m) => Some(m.values),
                    _ => None,
                }
            }
            Expr::Call(c) if c.func_name == operators::INDEX && c.args.len() == 2 => {
                let operand = self.shape_of(&c.args[0]);
                self.walk(&c.args[1]);
                match operand? {
                    Shape::List(l) => Some(l.items),
                    Shape::Map(m) => Some(m.values),
                    _ => None,
                }
            }
            _ => {
                self.walk(e);
                None
            }
        }
    }

    /// The offset of the next `.field` in the text (the walk visits selections in order).
    fn offset_of(&mut self, field: &str) -> usize {
        let needle = format!(".{field}");
        let mut from = self.cursor;
        while let Some(i) = self.source.get(from..).and_then(|t| t.find(&needle)) {
            let at = from + i;
            let end = at + needle.len();
            let boundary = self
                .source
                .get(end..)
                .and_then(|t| t.chars().next())
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if boundary {
                self.cursor = end;
                return at;
            }
            from = end;
        }
        self.source.find(&needle).unwrap_or(0)
    }

    fn walk(&mut self, e: &cel_parser::Expression) {
        use crate::structure::Shape;
        use cel_parser::ast::{EntryExpr, Expr};
        match &e.expr {
            Expr::Select(_) | Expr::Ident(_) => {
                self.shape_of(e);
            }
            Expr::Call(c) => {
                if c.func_name == cel_parser::ast::operators::INDEX {
                    self.shape_of(e);
                    return;
                }
                if let Some(t) = &c.target {
                    self.walk(t);
                }
                c.args.iter().for_each(|a| self.walk(a));
            }
            Expr::List(l) => l.elements.iter().for_each(|x| self.walk(x)),
            Expr::Map(m) => m.entries.iter().for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => {
                    self.walk(&me.key);
                    self.walk(&me.value);
                }
                EntryExpr::StructField(f) => self.walk(&f.value),
            }),
            Expr::Struct(st) => st.entries.iter().for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => {
                    self.walk(&me.key);
                    self.walk(&me.value);
                }
                EntryExpr::StructField(f) => self.walk(&f.value),
            }),
            Expr::Comprehension(c) => {
                let range = self.shape_of(&c.iter_range);
                let item = match range {
                    Some(Shape::List(l)) => Some(l.items),
                    Some(Shape::Map(_)) => Some(Shape::Scalar),
                    _ => None,
                };
                self.walk(&c.accu_init);
                self.scopes.push((c.iter_var.clone(), item));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), None));
                }
                self.scopes.push((c.accu_var.clone(), None));
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.walk(&c.result);
                self.scopes.pop();
                if c.iter_var2.is_some() {
                    self.scopes.pop();
                }
                self.scopes.pop();
            }
            Expr::Unspecified | Expr::Literal(_) => {}
        }
    }
}

impl CelExpression {
    /// The fields the expression selects through the variables of `roots` (such as `object`
    /// bound to a kind's structure) that those structures do not have, in the order they are
    /// written.
    pub fn undefined_fields(
        &self,
        source: &str,
        roots: &[(&str, &'static crate::structure::StructShape)],
    ) -> Vec<UndefinedField> {
        let mut check = FieldCheck {
            source,
            roots,
            scopes: Vec::new(),
            cursor: 0,
            found: Vec::new(),
        };
        check.walk(&self.ast);
        check.found.sort_by_key(|f| f.offset);
        check.found
    }
}

/// The number of values in a CEL value (a scalar is one; a string counts its bytes, as
/// operations on it cost by its length).
fn cel_size(v: &cel_interpreter::Value) -> u64 {
    use cel_interpreter::Value as C;
    match v {
        C::List(items) => 1 + items.iter().map(cel_size).sum::<u64>(),
        C::Map(map) => 1 + map.map.values().map(cel_size).sum::<u64>(),
        C::String(s) => 1 + s.len() as u64 / 8,
        C::Bytes(b) => 1 + b.len() as u64 / 8,
        _ => 1,
    }
}

/// The length of a CEL list, map or string (what a comprehension over it iterates).
fn cel_len(v: &cel_interpreter::Value) -> u64 {
    use cel_interpreter::Value as C;
    match v {
        C::List(items) => items.len() as u64,
        C::Map(map) => map.map.len() as u64,
        C::String(s) => s.len() as u64,
        C::Bytes(b) => b.len() as u64,
        _ => 0,
    }
}

/// The cost bound of an expression over an activation.
struct CostBounds<'a> {
    activation: &'a CelActivation,
    /// The size of all the variables together: the bound of a value the walk cannot size.
    total: u64,
    /// The comprehension variables in scope, with the bound of their sizes.
    scopes: Vec<(String, u64)>,
}

impl CostBounds<'_> {
    /// The value of a path of field selections from a bound variable, when it is one.
    fn path_value(&self, e: &cel_parser::Expression) -> Option<cel_interpreter::Value> {
        use cel_parser::ast::Expr;
        match &e.expr {
            Expr::Ident(name) => {
                if self.scopes.iter().any(|(n, _)| n == name) {
                    return None;
                }
                self.activation
                    .variables
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            }
            Expr::Select(s) if !s.test => {
                let operand = self.path_value(&s.operand)?;
                match operand {
                    cel_interpreter::Value::Map(m) => Some(
                        m.map
                            .get(&cel_interpreter::objects::Key::String(Arc::new(
                                s.field.clone(),
                            )))
                            .cloned()
                            .unwrap_or(cel_interpreter::Value::Null),
                    ),
                    _ => Some(cel_interpreter::Value::Null),
                }
            }
            _ => None,
        }
    }

    /// An upper bound of the length of the list, map or string `e` evaluates to.
    fn size(&self, e: &cel_parser::Expression) -> u64 {
        use cel_parser::ast::{Expr, operators};
        if let Some(v) = self.path_value(e) {
            return cel_len(&v);
        }
        match &e.expr {
            Expr::Ident(name) => self
                .scopes
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, b)| *b)
                .unwrap_or(self.total),
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            Expr::Struct(s) => s.entries.len() as u64,
            Expr::Literal(cel_parser::reference::Val::String(s)) => s.len() as u64,
            Expr::Literal(_) => 0,
            Expr::Call(c) if c.func_name == operators::ADD && c.args.len() == 2 => {
                self.size(&c.args[0]).saturating_add(self.size(&c.args[1]))
            }
            // `map` and `filter` give at most one item per item of their range.
            Expr::Comprehension(c) => self.size(&c.iter_range),
            _ => self.total,
        }
    }

    /// An upper bound of what evaluating `e` costs.
    fn cost(&mut self, e: &cel_parser::Expression) -> u64 {
        use cel_parser::ast::{EntryExpr, Expr, operators};
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => 1,
            Expr::Select(s) => 1 + self.cost(&s.operand),
            Expr::List(l) => l
                .elements
                .iter()
                .fold(1u64, |acc, x| acc.saturating_add(self.cost(x))),
            Expr::Map(m) => m.entries.iter().fold(1u64, |acc, entry| {
                let c = match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        self.cost(&me.key).saturating_add(self.cost(&me.value))
                    }
                    EntryExpr::StructField(f) => self.cost(&f.value),
                };
                acc.saturating_add(c)
            }),
            Expr::Struct(s) => s.entries.iter().fold(1u64, |acc, entry| {
                let c = match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        self.cost(&me.key).saturating_add(self.cost(&me.value))
                    }
                    EntryExpr::StructField(f) => self.cost(&f.value),
                };
                acc.saturating_add(c)
            }),
            Expr::Call(c) => {
                let mut cost = 1u64;
                if let Some(t) = &c.target {
                    cost = cost.saturating_add(self.cost(t));
                }
                for a in &c.args {
                    cost = cost.saturating_add(self.cost(a));
                }
                // Operations that walk a whole value cost by its length: concatenation and
                // equality copy or compare it, `in` and the string functions scan it.
                let walks = matches!(
                    c.func_name.as_str(),
                    operators::ADD | operators::EQUALS | operators::NOT_EQUALS | operators::IN
                ) || matches!(
                    c.func_name.as_str(),
                    "contains" | "startsWith" | "endsWith" | "matches" | "string"
                );
                if walks {
                    let operands = c.target.iter().map(|t| &**t).chain(c.args.iter());
                    let length = operands.fold(0u64, |acc, x| acc.saturating_add(self.size(x)));
                    cost = cost.saturating_add(length / 10);
                }
                cost
            }
            Expr::Comprehension(c) => {
                let range = self.size(&c.iter_range);
                let mut cost = self
                    .cost(&c.iter_range)
                    .saturating_add(self.cost(&c.accu_init));
                self.scopes.push((c.iter_var.clone(), self.total));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), self.total));
                }
                self.scopes.push((c.accu_var.clone(), range));
                let body = self
                    .cost(&c.loop_cond)
                    .saturating_add(self.cost(&c.loop_step));
                cost = cost
                    .saturating_add(range.saturating_mul(body))
                    .saturating_add(self.cost(&c.result));
                self.scopes.pop();
                if c.iter_var2.is_some() {
                    self.scopes.pop();
                }
                self.scopes.pop();
                cost
            }
        }
    }
}

/// Named variables converted to CEL once and shared by every expression evaluated over them
/// (their values are reference-counted, so binding one is cheap), with what the expressions
/// evaluated over them may have cost so far (against [`CEL_RUNTIME_BUDGET`]).
#[derive(Default)]
pub struct CelActivation {
    variables: Vec<(String, cel_interpreter::Value)>,
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

    fn bind(&mut self, name: &str, value: cel_interpreter::Value) {
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

/// Converts a CEL value back to JSON.
fn from_cel(v: &cel_interpreter::Value) -> Value {
    use cel_interpreter::Value as C;
    match v {
        C::Null => Value::Null,
        C::Bool(b) => Value::Bool(*b),
        C::Int(i) => Value::from(*i),
        C::UInt(u) => Value::from(*u),
        C::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        C::String(s) => Value::String(s.to_string()),
        C::Bytes(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        C::List(items) => Value::Array(items.iter().map(from_cel).collect()),
        C::Map(map) => Value::Object(
            map.map
                .iter()
                .map(|(k, v)| (key_text(k), from_cel(v)))
                .collect(),
        ),
        other => Value::String(format!("{other:?}")),
    }
}

fn key_text(k: &cel_interpreter::objects::Key) -> String {
    use cel_interpreter::objects::Key;
    match k {
        Key::String(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

#[cfg(test)]
mod expression_tests {
    use super::*;

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
