//! OpenAPI validation of a value against a schema node, as kube-openapi's `SchemaValidator`
//! runs it for custom resources (its validators in its order, its messages, its choice of the
//! best-matching `anyOf`/`oneOf` branch), and the mapping of its results to field errors that
//! kube-apiserver applies (`kubeOpenAPIResultToFieldErrors`). With an old value it ratchets as
//! Kubernetes' `RatchetingSchemaValidator` does: errors inside a correlated node whose new
//! value equals the old one are dropped.

use serde_json::Value;

use super::formats;
use super::props::Props;
use super::ratchet::Correlated;
use crate::errors::{FieldError, FieldErrorType, render_value};
use crate::markers::{self, FieldPath};
use crate::strconv::quote;

/// One kube-openapi error: a field error named by the validator's path (`spec.replicas`), or
/// a message not tied to a field (the composite `anyOf`/`allOf`/… failures).
#[derive(Clone, Debug, PartialEq)]
enum OpenApiError {
    Field(FieldError),
    Plain(String),
}

/// What a validation found: the errors (each once) and kube-openapi's count of checks that
/// passed, which picks the branch of an `anyOf`/`oneOf` shown when none matches.
#[derive(Default)]
pub(crate) struct Outcome {
    errors: Vec<OpenApiError>,
    matches: usize,
}

impl Outcome {
    fn add(&mut self, e: OpenApiError) {
        if !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    fn field(&mut self, e: FieldError) {
        self.add(OpenApiError::Field(e));
    }

    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.matches += other.matches;
    }

    fn valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// The field errors, under `base` (the validator's path: empty for a custom resource,
    /// `….default` for a schema default).
    pub(crate) fn into_field_errors(self, base: &str) -> Vec<FieldError> {
        let at_base = || {
            if base.is_empty() {
                "<nil>".to_string()
            } else {
                base.to_string()
            }
        };
        self.errors
            .into_iter()
            .map(|e| match e {
                OpenApiError::Field(mut f) => {
                    let name = f.field.strip_prefix('.').unwrap_or(&f.field);
                    f.field = if name.is_empty() {
                        at_base()
                    } else {
                        super::path::child(base, name)
                    };
                    f
                }
                OpenApiError::Plain(text) => FieldError::invalid(at_base(), &Value::from(""), text),
            })
            .collect()
    }
}

/// kube-openapi's `InvalidType` (`<name> in body must be of type <t>: "<seen>"`), a
/// `FieldValueTypeInvalid` error whose value is the type seen.
fn invalid_type(name: &str, want: &str, seen: &str) -> FieldError {
    FieldError::new(
        FieldErrorType::TypeInvalid,
        name,
        Some(render_value(&Value::from(seen))),
        format!("{name} in body must be of type {want}: {}", quote(seen)),
    )
}

/// Any other kube-openapi `Validation` error: `FieldValueInvalid` with its value and message.
fn invalid(name: &str, value: &Value, message: String) -> FieldError {
    FieldError::invalid(name, value, message)
}

/// The JSON type of a value and kube-openapi's format of it, as Go's decoder produces values
/// (integers that fit an `int64` are integers, every other number a `float64`).
fn type_of(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// The types the validator checks: `integer,string` for `x-kubernetes-int-or-string`.
fn types(s: &Props) -> ([&str; 2], usize) {
    if s.int_or_string {
        (["integer", "string"], 2)
    } else if s.type_.is_empty() {
        (["", ""], 0)
    } else {
        ([s.type_.as_str(), ""], 1)
    }
}

/// The format the validator sees: unsupported formats are stripped, as kube-apiserver does
/// when it builds the validator.
fn format(s: &Props) -> &str {
    let f = s.format.as_str();
    let single = if s.int_or_string {
        ""
    } else {
        s.type_.as_str()
    };
    let kept = match single {
        "" | "string" => formats::supported(f),
        "integer" => f == "int32" || f == "int64",
        "number" => f == "float" || f == "double",
        _ => false,
    };
    if kept { f } else { "" }
}

/// Validates `data` at `name` (kube-openapi's path) against `s`; `old` correlates the old
/// value for ratcheting.
pub(crate) fn validate(
    s: &Props,
    name: &str,
    data: &Value,
    old: Option<&Correlated<'_>>,
) -> Outcome {
    let mut out = Outcome::default();
    let (buf, n) = types(s);
    let types = &buf[..n];
    let format = format(s);
    if data.is_null() {
        if !types.is_empty() && !s.nullable {
            out.field(invalid_type(name, &types.join(","), "null"));
        }
        enum_check(s, name, data, &mut out);
        return ratchet(out, old);
    }
    let (seen, seen_format) = type_of(data);
    let is_text = matches!(data, Value::String(_) | Value::Array(_));
    // The type validator.
    if !types.is_empty() || !format.is_empty() {
        let has = |t: &str| types.contains(&t);
        let float_int = matches!(data, Value::Number(n) if !n.is_i64() && n.as_f64().is_some_and(super::numbers::is_json_integer))
            && has("integer");
        let int_float = seen == "integer" && has("number");
        let ok_type = has(seen) || float_int || int_float;
        if !(is_text || format.is_empty() || ok_type || seen_format == format) {
            out.field(invalid_type(name, format, seen_format));
        } else if is_text && !(has("number") || has("integer") || format.is_empty()) {
            out.matches += 1;
        } else if !ok_type {
            out.field(invalid_type(name, &types.join(","), seen));
        } else {
            out.matches += 1;
        }
        out.matches += 1;
    }
    composites(s, name, data, &mut out);
    out.matches += 1;
    if let Value::String(text) = data {
        strings(s, name, text, data, &mut out);
        out.matches += 1;
        if let Some(key) = formats::string_format(format) {
            if !formats::valid(key, text) {
                out.field(FieldError::new(
                    FieldErrorType::TypeInvalid,
                    name,
                    Some(render_value(data)),
                    format!("{name} in body must be of type {format}: {}", quote(text)),
                ));
            }
            out.matches += 1;
        }
    }
    if let Value::Number(n) = data {
        super::numbers::check(s, name, n, &mut out.errors_sink());
        out.matches += 1;
    }
    if let Value::Array(items) = data {
        for (i, item) in items.iter().enumerate() {
            if let Some(is) = s.item_schema() {
                let child = old.and_then(|c| c.index(i));
                out.merge(validate(is, &format!("{name}[{i}]"), item, child.as_ref()));
            }
        }
        let path = FieldPath::Named(name);
        let mut errs = Vec::new();
        if let Some(min) = s.min_items {
            markers::check_min_items(items, &path, clamp(min), &mut errs);
        }
        if let Some(max) = s.max_items {
            markers::check_max_items(items, &path, clamp(max), &mut errs);
        }
        if s.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, x)| items[..i].contains(x))
        {
            errs.push(invalid(
                name,
                &Value::from(""),
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
        errs.into_iter().for_each(|e| out.field(e));
        out.matches += 2;
    }
    enum_check(s, name, data, &mut out);
    out.matches += 1;
    if let Value::Object(map) = data {
        objects(s, name, map, old, &mut out);
        out.matches += 1;
    }
    out.matches += 1;
    ratchet(out, old)
}

/// Drops the errors of a correlated node whose value did not change.
fn ratchet(out: Outcome, old: Option<&Correlated<'_>>) -> Outcome {
    match old {
        Some(c) if !out.valid() && c.deep_equal() => Outcome::default(),
        _ => out,
    }
}

/// A schema bound as a count (negative bounds count as zero, huge ones as unbounded).
fn clamp(n: i64) -> usize {
    usize::try_from(n.max(0)).unwrap_or(usize::MAX)
}

impl Outcome {
    /// A sink the number checks push field errors and plain messages into.
    fn errors_sink(&mut self) -> Sink<'_> {
        Sink(self)
    }
}

/// Where the number checks report.
pub(crate) struct Sink<'a>(&'a mut Outcome);

impl Sink<'_> {
    /// A field error named by the validator's path.
    pub(crate) fn field(&mut self, e: FieldError) {
        self.0.field(e);
    }

    /// A message not tied to a field.
    pub(crate) fn plain(&mut self, text: String) {
        self.0.add(OpenApiError::Plain(text));
    }
}

fn strings(s: &Props, name: &str, text: &str, data: &Value, out: &mut Outcome) {
    let path = FieldPath::Named(name);
    let mut errs = Vec::new();
    let json = super::Json(data);
    // kube-openapi stops at the first failing string check.
    if let Some(max) = s.max_length {
        markers::check_max_length(&json, &path, clamp(max), &mut errs);
    }
    if errs.is_empty()
        && let Some(min) = s.min_length
    {
        markers::check_min_length(&json, &path, clamp(min), &mut errs);
    }
    if errs.is_empty()
        && let Some(p) = &s.pattern
    {
        match &p.regex {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => markers::check_pattern(&json, &path, &p.text, &mut errs),
            Err(e) => errs.push(invalid(
                name,
                data,
                format!(
                    "{name} in body should match '{}, but pattern is invalid: {e}'",
                    p.text
                ),
            )),
        }
    }
    errs.into_iter().for_each(|e| out.field(e));
}

/// kube-openapi's enum check: a value matches an entry equal to it, or equal once converted
/// to the entry's Go type (so `3.0` matches `3`).
fn enum_check(s: &Props, name: &str, data: &Value, out: &mut Outcome) {
    if s.enum_.is_empty() || s.enum_.iter().any(|e| enum_matches(data, e)) {
        return;
    }
    let supported: Vec<String> = s
        .enum_
        .iter()
        .map(|e| match e {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        })
        .collect();
    let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
    out.field(super::checks::not_supported(
        name.to_string(),
        data,
        &supported,
    ));
}

fn enum_matches(data: &Value, entry: &Value) -> bool {
    if data.is_null() || entry.is_null() {
        return false;
    }
    if data == entry {
        return true;
    }
    match (data, entry) {
        // Go converts a number to the entry's numeric type (floats to ints truncate).
        (Value::Number(d), Value::Number(e)) => match (e.as_i64(), d.as_i64(), d.as_f64()) {
            (Some(ei), _, Some(df)) => super::numbers::go_f64_to_i64(df) == ei,
            (None, Some(di), _) => Some(di as f64) == e.as_f64(),
            _ => d.as_f64() == e.as_f64(),
        },
        // An integer converts to the string of its code point.
        (Value::Number(d), Value::String(e)) => d.as_i64().is_some_and(|i| {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            e.chars().eq(std::iter::once(c))
        }),
        _ => false,
    }
}

fn composites(s: &Props, name: &str, data: &Value, out: &mut Outcome) {
    if !s.any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success = None;
        for x in &s.any_of {
            let r = validate(x, name, data, None);
            if r.valid() {
                best = None;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if first_success.is_none() {
            out.add(OpenApiError::Plain(format!(
                "{} must validate at least one schema (anyOf)",
                quote(name)
            )));
        }
        if let Some(b) = best.or(first_success) {
            out.merge(b);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success = None;
        let mut validated = 0;
        for x in &s.one_of {
            let r = validate(x, name, data, None);
            if r.valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let more = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            out.add(OpenApiError::Plain(format!(
                "{} must validate one and only one schema (oneOf). {more}",
                quote(name)
            )));
            if let Some(b) = best {
                out.merge(b);
            }
        } else if let Some(f) = first_success {
            out.merge(f);
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0;
        for x in &s.all_of {
            let r = validate(x, name, data, None);
            if r.valid() {
                validated += 1;
            }
            out.merge(r);
        }
        if validated != s.all_of.len() {
            let more = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            out.add(OpenApiError::Plain(format!(
                "{} must validate all the schemas (allOf){more}",
                quote(name)
            )));
        }
    }
    if let Some(not) = &s.not
        && validate(not, name, data, None).valid()
    {
        out.add(OpenApiError::Plain(format!(
            "{} must not validate the schema (not)",
            quote(name)
        )));
    }
}

fn objects(
    s: &Props,
    name: &str,
    map: &serde_json::Map<String, Value>,
    old: Option<&Correlated<'_>>,
    out: &mut Outcome,
) {
    let path = FieldPath::Named(name);
    let mut errs = Vec::new();
    if let Some(min) = s.min_properties {
        markers::check_min_properties(map, &path, clamp(min), &mut errs);
    }
    if let Some(max) = s.max_properties {
        markers::check_max_properties(map, &path, clamp(max), &mut errs);
    }
    errs.into_iter().for_each(|e| out.field(e));
    let child_name = |k: &str| {
        if name.is_empty() {
            k.to_string()
        } else {
            format!("{name}.{k}")
        }
    };
    match &s.additional_properties {
        Some(super::props::SchemaOrBool::Bool(false)) => {
            for k in map.keys().filter(|k| !s.properties.contains_key(*k)) {
                out.field(invalid(
                    name,
                    &Value::from(k.as_str()),
                    format!("{name}.{k} in body is a forbidden property"),
                ));
            }
        }
        Some(super::props::SchemaOrBool::Schema(a)) => {
            for (k, v) in map.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                let corr = old.and_then(|c| c.key(k, name.is_empty()));
                out.merge(validate(a, &format!("{name}.{k}"), v, corr.as_ref()));
            }
        }
        _ => {}
    }
    for (k, v) in map {
        if let Some(ps) = s.properties.get(k) {
            let corr = old.and_then(|c| c.key(k, name.is_empty()));
            out.merge(validate(ps, &child_name(k), v, corr.as_ref()));
        }
    }
    for k in s.required.iter().flatten() {
        if !map.contains_key(k) {
            out.field(FieldError::required(format!("{name}.{k}"), ""));
        }
    }
}
