//! The runtime the generated `KindOps` call: decoding, defaulting, validation and CEL rules.
//!
//! Everything here is generic over the generated types through serde and
//! `apimachinery::schema::Schema`, so the generated code stays a list of plain calls.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use apimachinery::errors::FieldError;
use apimachinery::schema::Schema;
use apimachinery::scheme::{CodecError, Decoded};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The most JSON nodes (objects, arrays and scalars) a CEL rule is evaluated over; larger
/// objects fail the rule with a cost error instead of running unbounded.
pub const CEL_MAX_NODES: usize = 100_000;

/// The longest CEL expression accepted.
pub const CEL_MAX_EXPRESSION_LEN: usize = 10_000;

/// A typed defaulting walk that does nothing (for kinds without hand-written hooks).
pub fn no_hooks<T>(_: &mut T) {}

/// The error for a version a kind does not serve.
pub fn unknown_version(kind: &str, version: &str) -> CodecError {
    CodecError::UnknownVersion {
        kind: kind.to_string(),
        version: version.to_string(),
    }
}

/// Decodes a JSON value into a typed object; errors name the field path, such as
/// `spec.replicas: invalid type: string "x", expected i32`.
pub fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, CodecError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." || path.is_empty() {
            CodecError::Json(e.into_inner().to_string())
        } else {
            CodecError::Json(format!("{path}: {}", e.into_inner()))
        }
    })
}

/// Decodes a typed object from a borrowed JSON value: copies what the object keeps instead of
/// cloning the whole value first. Errors are [`from_json`]'s, with the field path (the value
/// is decoded again, with path tracking, only when the first decode fails).
pub fn from_json_ref<T: DeserializeOwned>(value: &Value) -> Result<T, CodecError> {
    match T::deserialize(value) {
        Ok(obj) => Ok(obj),
        Err(_) => from_json(value.clone()),
    }
}

/// Encodes a typed object as JSON.
pub fn to_json<T: Serialize>(obj: &T) -> Result<Value, CodecError> {
    serde_json::to_value(obj).map_err(|e| CodecError::Json(e.to_string()))
}

/// Applies marker defaults on the JSON form (absent fields), decodes, runs the typed hooks and
/// re-encodes. The decode is [`from_json_ref`]'s: without path tracking, which only a failed
/// decode needs for its error.
pub fn default<T: DeserializeOwned + Serialize + Schema>(
    mut value: Value,
    hooks: fn(&mut T),
) -> Result<Value, CodecError> {
    T::apply_defaults(&mut value);
    let mut typed = from_json_ref::<T>(&value)?;
    hooks(&mut typed);
    to_json(&typed)
}

/// Decodes as Kubernetes' codec does: records unknown fields, applies defaults, and returns the
/// canonical re-encoding.
pub fn decode<T: DeserializeOwned + Serialize + Schema>(
    value: Value,
    hooks: fn(&mut T),
) -> Result<Decoded, CodecError> {
    let mut unknown_fields = Vec::new();
    T::unknown_fields(&value, "", &mut unknown_fields);
    let object = default::<T>(value, hooks)?;
    Ok(Decoded {
        object,
        unknown_fields,
    })
}

/// How `metadata` of a kind is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaRules {
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// The name format: `dns1123-subdomain`, `dns1123-label` or `path-segment`.
    pub name_format: &'static str,
    /// Review kinds that are created but never stored (`create_only`) skip metadata validation,
    /// as Kubernetes does for them.
    pub create_only: bool,
}

/// A hand-written validation hook of a kind (`validate_<version>_<kind>` in `hooks.rs`).
pub type ValidateHook<T> = Option<fn(&T, &mut Vec<FieldError>)>;

/// Validates an object being created: metadata, field markers, CEL rules and the kind's
/// hand-written validation hook, if any.
pub fn validate<T: Schema + DeserializeOwned>(
    value: &Value,
    rules: MetaRules,
    hook: ValidateHook<T>,
) -> Vec<FieldError> {
    validate_typed(value, rules, hook).0
}

/// Validates an object being created as [`validate`] does and, when it is valid and the hook
/// decoded the typed object, returns `encode` of that typed object too (the caller then need
/// not decode it again to encode it).
pub fn validate_and_encode<T: Schema + DeserializeOwned>(
    value: &Value,
    rules: MetaRules,
    hook: ValidateHook<T>,
    encode: fn(T) -> Vec<u8>,
) -> (Vec<FieldError>, Option<Vec<u8>>) {
    let (errors, typed) = validate_typed(value, rules, hook);
    let encoded = if errors.is_empty() {
        typed.map(encode)
    } else {
        None
    };
    (errors, encoded)
}

/// [`validate`], also returning the typed object the hook was given (`None` without a hook or
/// when the value does not decode).
fn validate_typed<T: Schema + DeserializeOwned>(
    value: &Value,
    rules: MetaRules,
    hook: ValidateHook<T>,
) -> (Vec<FieldError>, Option<T>) {
    let mut errors = Vec::new();
    if !rules.create_only {
        let null = Value::Null;
        apimachinery::validation::validate_object_meta(
            apimachinery::json::get(value, "metadata").unwrap_or(&null),
            rules.namespaced,
            rules.name_format,
            &mut errors,
        );
    }
    T::validate(value, "", &mut errors);
    let mut typed = None;
    if let Some(hook) = hook {
        // Deserializing from a borrowed value copies nothing the typed object does not keep.
        match T::deserialize(value) {
            Ok(obj) => {
                hook(&obj, &mut errors);
                typed = Some(obj);
            }
            Err(e) => errors.push(FieldError::new(
                apimachinery::errors::FieldErrorType::TypeInvalid,
                "",
                None,
                e.to_string(),
            )),
        }
    }
    (errors, typed)
}

/// Validates an update: everything [`validate`] checks, immutable metadata and fields.
pub fn validate_update<T: Schema + DeserializeOwned>(
    value: &Value,
    old: &Value,
    rules: MetaRules,
    hook: ValidateHook<T>,
) -> Vec<FieldError> {
    let mut errors = validate::<T>(value, rules, hook);
    let null = Value::Null;
    apimachinery::validation::validate_object_meta_update(
        value.get("metadata").unwrap_or(&null),
        old.get("metadata").unwrap_or(&null),
        &mut errors,
    );
    T::validate_update(value, old, "", &mut errors);
    errors
}

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
pub fn check_rules(rules: &[CelRule], value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if rules.is_empty() {
        return;
    }
    let bad_value = Value::from(type_name(value));
    // Kubernetes reports rules of the root object at a nil field path, printed as `<nil>`.
    let path = if path.is_empty() { "<nil>" } else { path };
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
                    apimachinery::errors::FieldErrorType::Internal,
                    path,
                    None,
                    format!("rule compile error: {e}"),
                ));
                continue;
            }
        };
        let mut cx = cel_interpreter::Context::default();
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
