//! CEL validation rules of the definitions (`#[rule(cel = …, message = …)]`), compiled once
//! and evaluated with `self` bound to the value of the struct or field they are written on,
//! within a cost bound.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use crate::errors::{FieldError, FieldErrorType};

use crate::markers::FieldPath;

mod authz;
mod check;
mod cost;
mod estimate;
mod expression;

pub use authz::AuthorizerContext;
pub use check::TypeError;
pub(crate) use estimate::{Decl, DeclKind};
pub use expression::{CEL_PER_CALL_LIMIT, CEL_RUNTIME_BUDGET, CelActivation, CelExpression};

/// The most JSON nodes (objects, arrays and scalars) a CEL rule is evaluated over; larger
/// objects fail the rule with a cost error instead of running unbounded.
pub const CEL_MAX_NODES: usize = 100_000;

/// The longest CEL expression accepted.
pub const CEL_MAX_EXPRESSION_LEN: usize = 10_000;

/// The standard functions, registered once: every evaluation binds its variables in a scope
/// of its own over this root (registering the functions anew took about 20k instructions per
/// evaluation).
static ROOT_CONTEXT: std::sync::LazyLock<cel::Context<'static, 'static>> =
    std::sync::LazyLock::new(|| {
        let mut cx = cel::Context::default();
        authz::register(&mut cx).expect("the authorizer library's names are not standard ones");
        // `jsonpatch.escapeKey(k)` of mutating admission policies: `~` as `~0`, `/` as `~1`
        // (the target, the `jsonpatch` variable, is only a namespace).
        cx.add_function("escapeKey", |key: Arc<String>| -> Arc<String> {
            Arc::new(key.replace('~', "~0").replace('/', "~1"))
        })
        .expect("escapeKey is not a standard function");
        cx
    });

/// A CEL validation rule (`#[rule(cel = …, message = …)]`), compiled on first use.
pub struct CelRule {
    expression: &'static str,
    message: &'static str,
    program: OnceLock<Result<cel::Program, String>>,
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
    fn program(&self) -> &Result<cel::Program, String> {
        self.program.get_or_init(|| {
            if self.expression.len() > CEL_MAX_EXPRESSION_LEN {
                return Err(format!(
                    "the rule is longer than {CEL_MAX_EXPRESSION_LEN} characters"
                ));
            }
            // The CEL parser may panic on some malformed input instead of returning an error.
            std::panic::catch_unwind(|| cel::Program::compile(self.expression))
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
fn to_cel(v: &Value) -> cel::Value {
    use cel::Value as C;
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
            let m: HashMap<String, cel::Value> =
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
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
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

/// Converts a CEL value back to JSON.
fn from_cel(v: &cel::Value) -> Value {
    use cel::Value as C;
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

fn key_text(k: &cel::objects::Key) -> String {
    use cel::objects::Key;
    match k {
        Key::String(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}
