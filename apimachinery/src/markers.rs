//! The checks of the definitions' `#[validate]` and `#[list]` markers on typed values, with
//! Kubernetes' messages (those of the CRD schema validator: `… in body should match '…'`), and
//! [`FieldPath`], the path of the value being checked, rendered only when a check fails.
//!
//! The generated `validate_fields` of every struct calls these for each field that has
//! markers; values are read through [`MarkerValue`], so one check serves every field type.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::errors::{FieldError, FieldErrorType, render_value};
use crate::meta::{Bytes, IntOrString, MicroTime, Quantity, Time};

/// The path of a value inside an object, built on the stack as a validation walks down and
/// rendered (`spec.items[0].name`, `metadata.labels[app]`) only for an error.
#[derive(Clone, Copy, Debug)]
pub enum FieldPath<'a> {
    /// The object itself.
    Root,
    /// A field of the parent.
    Field(&'a FieldPath<'a>, &'static str),
    /// An element of the parent list.
    Index(&'a FieldPath<'a>, usize),
    /// An entry of the parent map.
    Key(&'a FieldPath<'a>, &'a str),
    /// A whole path given as text: the name a schema validator gives a value
    /// (`spec.items[0].name`), rendered as it is.
    Named(&'a str),
}

impl<'a> FieldPath<'a> {
    /// The path of field `name` of this value.
    pub fn field(&'a self, name: &'static str) -> FieldPath<'a> {
        FieldPath::Field(self, name)
    }

    /// The path of element `index` of this list.
    pub fn index(&'a self, index: usize) -> FieldPath<'a> {
        FieldPath::Index(self, index)
    }

    /// The path of entry `key` of this map.
    pub fn key(&'a self, key: &'a str) -> FieldPath<'a> {
        FieldPath::Key(self, key)
    }

    /// Whether this is the object itself.
    pub fn is_root(&self) -> bool {
        matches!(self, FieldPath::Root)
    }
}

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldPath::Root => Ok(()),
            FieldPath::Field(parent, name) => {
                if parent.is_root() {
                    f.write_str(name)
                } else {
                    write!(f, "{parent}.{name}")
                }
            }
            FieldPath::Index(parent, i) => write!(f, "{parent}[{i}]"),
            FieldPath::Key(parent, k) => write!(f, "{parent}[{k}]"),
            FieldPath::Named(text) => f.write_str(text),
        }
    }
}

/// How the marker checks read a field's value.
pub trait MarkerValue {
    /// The value as a number (numeric fields).
    fn as_number(&self) -> Option<f64> {
        None
    }

    /// The value as text (string-like fields).
    fn as_text(&self) -> Option<&str> {
        None
    }

    /// Whether the value is absent from the object's JSON (`None`, or an empty list, map or
    /// string): what `#[validate(required)]` refuses and what `#[validate(immutable)]` lets
    /// change.
    fn is_missing(&self) -> bool {
        false
    }

    /// The value as JSON, for the message of a failed check.
    fn to_json(&self) -> Value;
}

macro_rules! numeric {
    ($($t:ty),*) => {$(
        impl MarkerValue for $t {
            fn as_number(&self) -> Option<f64> {
                Some(*self as f64)
            }
            fn to_json(&self) -> Value {
                Value::from(*self)
            }
        }
    )*};
}

numeric!(i32, i64, f64);

impl MarkerValue for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl MarkerValue for String {
    fn as_text(&self) -> Option<&str> {
        Some(self)
    }
    fn is_missing(&self) -> bool {
        self.is_empty()
    }
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl MarkerValue for Quantity {
    fn as_text(&self) -> Option<&str> {
        Some(&self.0)
    }
    fn is_missing(&self) -> bool {
        self.0.is_empty()
    }
    fn to_json(&self) -> Value {
        Value::from(self.0.as_str())
    }
}

impl MarkerValue for IntOrString {
    fn as_number(&self) -> Option<f64> {
        match self {
            IntOrString::Int(i) => Some(f64::from(*i)),
            IntOrString::String(_) => None,
        }
    }
    fn as_text(&self) -> Option<&str> {
        match self {
            IntOrString::Int(_) => None,
            IntOrString::String(s) => Some(s),
        }
    }
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

macro_rules! serialized {
    ($($t:ty),*) => {$(
        impl MarkerValue for $t {
            fn to_json(&self) -> Value {
                serde_json::to_value(self).unwrap_or(Value::Null)
            }
        }
    )*};
}

serialized!(
    Time,
    MicroTime,
    Bytes,
    Value,
    crate::meta::Duration,
    crate::meta::FieldsV1
);

/// A boxed value reads as the value it holds.
impl<T: MarkerValue> MarkerValue for Box<T> {
    fn as_number(&self) -> Option<f64> {
        (**self).as_number()
    }
    fn as_text(&self) -> Option<&str> {
        (**self).as_text()
    }
    fn is_missing(&self) -> bool {
        (**self).is_missing()
    }
    fn to_json(&self) -> Value {
        (**self).to_json()
    }
}

impl<T: MarkerValue> MarkerValue for Option<T> {
    fn as_number(&self) -> Option<f64> {
        self.as_ref().and_then(T::as_number)
    }
    fn as_text(&self) -> Option<&str> {
        self.as_ref().and_then(T::as_text)
    }
    fn is_missing(&self) -> bool {
        self.as_ref().is_none_or(T::is_missing)
    }
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }
}

/// Renders any serializable value as JSON for a message.
fn json_of<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl<T: Serialize> MarkerValue for Vec<T> {
    fn is_missing(&self) -> bool {
        self.is_empty()
    }
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

impl<T: Serialize> MarkerValue for BTreeMap<String, T> {
    fn is_missing(&self) -> bool {
        self.is_empty()
    }
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

/// `#[validate(minimum = …)]` / `exclusive_minimum`.
pub fn check_minimum<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    bound: f64,
    bound_text: &str,
    exclusive: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(n) = v.as_number() else { return };
    if exclusive && n <= bound {
        errors.push(FieldError::invalid(
            path.to_string(),
            &v.to_json(),
            format!("must be greater than {bound_text}"),
        ));
    } else if !exclusive && n < bound {
        errors.push(FieldError::invalid(
            path.to_string(),
            &v.to_json(),
            format!("must be greater than or equal to {bound_text}"),
        ));
    }
}

/// `#[validate(maximum = …)]` / `exclusive_maximum`.
pub fn check_maximum<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    bound: f64,
    bound_text: &str,
    exclusive: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(n) = v.as_number() else { return };
    if exclusive && n >= bound {
        errors.push(FieldError::invalid(
            path.to_string(),
            &v.to_json(),
            format!("must be less than {bound_text}"),
        ));
    } else if !exclusive && n > bound {
        errors.push(FieldError::invalid(
            path.to_string(),
            &v.to_json(),
            format!("must be less than or equal to {bound_text}"),
        ));
    }
}

/// `#[validate(minimum = …)]` / `exclusive_minimum` in a `#![crd_validation]` file, with the
/// message kube-apiserver gives for a CRD's schema: `<path> in body should be greater than or
/// equal to N` (`greater than N` when exclusive).
pub fn check_schema_minimum<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    bound: f64,
    bound_text: &str,
    exclusive: bool,
    errors: &mut Vec<FieldError>,
) {
    check_schema_bound(v, path, bound, bound_text, true, exclusive, errors);
}

/// `#[validate(maximum = …)]` / `exclusive_maximum` in a `#![crd_validation]` file:
/// `<path> in body should be less than or equal to N` (`less than N` when exclusive).
pub fn check_schema_maximum<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    bound: f64,
    bound_text: &str,
    exclusive: bool,
    errors: &mut Vec<FieldError>,
) {
    check_schema_bound(v, path, bound, bound_text, false, exclusive, errors);
}

/// A bound of a `#![crd_validation]` file, as kube-apiserver's schema validation words it.
fn check_schema_bound<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    bound: f64,
    bound_text: &str,
    is_min: bool,
    exclusive: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(n) = v.as_number() else { return };
    let fails = match (is_min, exclusive) {
        (true, false) => n < bound,
        (true, true) => n <= bound,
        (false, false) => n > bound,
        (false, true) => n >= bound,
    };
    if fails {
        let p = path.to_string();
        errors.push(FieldError::invalid(
            &p,
            &v.to_json(),
            schema_bound_message(&p, is_min, exclusive, bound_text),
        ));
    }
}

/// kube-apiserver's message for a value outside a schema's `minimum` (`is_min`) or `maximum`:
/// `<name> in body should be greater than or equal to <bound>` and its three siblings.
pub(crate) fn schema_bound_message(
    name: &str,
    is_min: bool,
    exclusive: bool,
    bound: &str,
) -> String {
    let relation = match (is_min, exclusive) {
        (true, false) => "greater than or equal to",
        (true, true) => "greater than",
        (false, false) => "less than or equal to",
        (false, true) => "less than",
    };
    format!("{name} in body should be {relation} {bound}")
}

/// `#[validate(max_length = …)]`: `Too long: may not be more than N bytes`.
pub fn check_max_length<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    max: usize,
    errors: &mut Vec<FieldError>,
) {
    if let Some(s) = v.as_text()
        && s.chars().count() > max
    {
        errors.push(FieldError::new(
            FieldErrorType::TooLong,
            path.to_string(),
            Some(render_value(&v.to_json())),
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            ),
        ));
    }
}

/// `#[validate(min_length = …)]`.
pub fn check_min_length<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    min: usize,
    errors: &mut Vec<FieldError>,
) {
    if let Some(s) = v.as_text()
        && s.chars().count() < min
    {
        let p = path.to_string();
        errors.push(FieldError::invalid(
            &p,
            &v.to_json(),
            format!("{p} in body should be at least {min} chars long"),
        ));
    }
}

/// `#[validate(pattern = …)]`: `<path> in body should match '<pattern>'`.
pub fn check_pattern<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    pattern: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = v.as_text() else { return };
    match crate::validation::cached_regex(pattern) {
        Some(re) if re.is_match(s) => {}
        Some(_) => {
            let p = path.to_string();
            errors.push(FieldError::invalid(
                &p,
                &v.to_json(),
                format!("{p} in body should match '{pattern}'"),
            ))
        }
        None => errors.push(FieldError::new(
            FieldErrorType::Internal,
            path.to_string(),
            None,
            format!("the pattern '{pattern}' does not compile"),
        )),
    }
}

/// `#[validate(enum = […])]`: `Unsupported value: "x": supported values: "A", "B"`.
pub fn check_enum<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    allowed: &[&str],
    errors: &mut Vec<FieldError>,
) {
    if let Some(s) = v.as_text()
        && !allowed.contains(&s)
    {
        let list = allowed
            .iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        errors.push(FieldError::new(
            FieldErrorType::NotSupported,
            path.to_string(),
            Some(render_value(&v.to_json())),
            format!("supported values: {list}"),
        ));
    }
}

/// A list or map the count markers measure.
pub trait Count {
    /// How many items or entries it has.
    fn count(&self) -> usize;
}

impl<T> Count for [T] {
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T> Count for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T> Count for BTreeMap<String, T> {
    fn count(&self) -> usize {
        self.len()
    }
}

impl Count for serde_json::Map<String, Value> {
    fn count(&self) -> usize {
        self.len()
    }
}

/// A count below its minimum: `Invalid value: N: <path> in body should have at least M
/// <noun>` (the value is the count, as Kubernetes shows it).
fn too_few<C: Count + ?Sized>(
    c: &C,
    path: &FieldPath<'_>,
    min: usize,
    noun: &str,
    errors: &mut Vec<FieldError>,
) {
    if c.count() < min {
        let p = path.to_string();
        errors.push(FieldError::invalid(
            &p,
            &Value::from(c.count()),
            format!("{p} in body should have at least {min} {noun}"),
        ));
    }
}

/// A count above its maximum: Kubernetes' `field.TooMany`, `Too many: N: must have at most M
/// items` (`item` when M is 1), for lists and maps alike.
fn too_many<C: Count + ?Sized>(
    c: &C,
    path: &FieldPath<'_>,
    max: usize,
    errors: &mut Vec<FieldError>,
) {
    if c.count() > max {
        errors.push(FieldError::new(
            FieldErrorType::TooMany,
            path.to_string(),
            Some(c.count().to_string()),
            format!(
                "must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            ),
        ));
    }
}

/// `#[validate(min_items = …)]`.
pub fn check_min_items<C: Count + ?Sized>(
    items: &C,
    path: &FieldPath<'_>,
    min: usize,
    errors: &mut Vec<FieldError>,
) {
    too_few(items, path, min, "items", errors);
}

/// `#[validate(max_items = …)]`: `Too many: N: must have at most M items`.
pub fn check_max_items<C: Count + ?Sized>(
    items: &C,
    path: &FieldPath<'_>,
    max: usize,
    errors: &mut Vec<FieldError>,
) {
    too_many(items, path, max, errors);
}

/// `#[validate(min_properties = …)]`.
pub fn check_min_properties<C: Count + ?Sized>(
    map: &C,
    path: &FieldPath<'_>,
    min: usize,
    errors: &mut Vec<FieldError>,
) {
    too_few(map, path, min, "properties", errors);
}

/// `#[validate(max_properties = …)]`.
pub fn check_max_properties<C: Count + ?Sized>(
    map: &C,
    path: &FieldPath<'_>,
    max: usize,
    errors: &mut Vec<FieldError>,
) {
    too_many(map, path, max, errors);
}

/// `#[list(type = "map", map_keys = […])]`: items with the same key fields are duplicates
/// (`spec.ports[1]: Duplicate value: {"name":"http"}`).
pub fn check_list_map_keys<T: Serialize>(
    items: &[T],
    path: &FieldPath<'_>,
    keys: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let mut seen: Vec<Value> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let item = json_of(item);
        let key: serde_json::Map<String, Value> = keys
            .iter()
            .filter_map(|k| item.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        let key = Value::Object(key);
        if seen.contains(&key) {
            errors.push(FieldError::new(
                FieldErrorType::Duplicate,
                path.index(i).to_string(),
                Some(render_value(&key)),
                "",
            ));
        } else {
            seen.push(key);
        }
    }
}

/// `#[list(type = "set")]`: equal items are duplicates (`spec.verbs[2]: Duplicate value: "get"`).
pub fn check_list_set<T: PartialEq + Serialize>(
    items: &[T],
    path: &FieldPath<'_>,
    errors: &mut Vec<FieldError>,
) {
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            errors.push(FieldError::new(
                FieldErrorType::Duplicate,
                path.index(i).to_string(),
                Some(render_value(&json_of(item))),
                "",
            ));
        }
    }
}

/// `#[validate(required)]`: the value must be present in the object's JSON (and not an empty
/// string).
pub fn check_required<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    errors: &mut Vec<FieldError>,
) {
    if v.is_missing() {
        errors.push(FieldError::required(path.to_string(), ""));
    }
}

/// `#[validate(required)]` on an `Option` in a `#![crd_validation]` file: the value must be
/// present, as a CRD schema's `required` asks (an empty string, list or map is a value).
pub fn check_present<T>(v: &Option<T>, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
    if v.is_none() {
        errors.push(FieldError::required(path.to_string(), ""));
    }
}

/// `#[validate(format = …)]`.
pub fn check_format<T: MarkerValue + ?Sized>(
    v: &T,
    path: &FieldPath<'_>,
    format: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = v.as_text() else { return };
    let problems = crate::validation::format_problems(format, s, &|| path.to_string());
    if problems.is_empty() {
        return;
    }
    let p = path.to_string();
    for problem in problems {
        errors.push(FieldError::invalid(&p, &v.to_json(), problem));
    }
}

/// `#[validate(immutable)]`: once set, the value may not change.
pub fn check_immutable<T: MarkerValue + PartialEq + ?Sized>(
    new: &T,
    old: &T,
    path: &FieldPath<'_>,
    errors: &mut Vec<FieldError>,
) {
    if !old.is_missing() && new != old {
        errors.push(FieldError::invalid(
            path.to_string(),
            &new.to_json(),
            "field is immutable",
        ));
    }
}

#[cfg(test)]
mod tests;

/// The marker checks of a value and of everything inside it, implemented by the generated
/// code for every struct of the definitions (the meta structs of [`crate::meta`] included,
/// though the walks of other groups do not enter fields of meta types: the registry validates
/// `metadata` with Kubernetes' object-meta rules); the scalars below are leaves.
pub trait Validate {
    /// Checks the value (`path` is where it sits in the object).
    fn validate(&self, _path: &FieldPath<'_>, _errors: &mut Vec<FieldError>) {}

    /// Checks what an update may not change against the old value.
    fn validate_update(&self, _old: &Self, _path: &FieldPath<'_>, _errors: &mut Vec<FieldError>) {}
}

macro_rules! leaves {
    ($($t:ty),* $(,)?) => {$( impl Validate for $t {} )*};
}

leaves!(
    bool,
    i32,
    i64,
    f64,
    String,
    Value,
    Quantity,
    IntOrString,
    Time,
    MicroTime,
    Bytes,
    crate::meta::RawExtension,
    crate::meta::Duration,
    crate::meta::FieldsV1,
);

/// A boxed value (a struct that contains itself) is checked as the value it holds.
impl<T: Validate> Validate for Box<T> {
    fn validate(&self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        (**self).validate(path, errors);
    }
    fn validate_update(&self, old: &Self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        (**self).validate_update(old, path, errors);
    }
}

impl<T: Validate> Validate for Option<T> {
    fn validate(&self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        if let Some(v) = self {
            v.validate(path, errors);
        }
    }
    fn validate_update(&self, old: &Self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        if let (Some(v), Some(o)) = (self, old) {
            v.validate_update(o, path, errors);
        }
    }
}

impl<T: Validate> Validate for Vec<T> {
    fn validate(&self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        for (i, v) in self.iter().enumerate() {
            v.validate(&path.index(i), errors);
        }
    }
    fn validate_update(&self, old: &Self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        // Items are matched by position, as the JSON walk of a list does.
        for (i, (v, o)) in self.iter().zip(old).enumerate() {
            v.validate_update(o, &path.index(i), errors);
        }
    }
}

impl<T: Validate> Validate for BTreeMap<String, T> {
    fn validate(&self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        for (k, v) in self {
            v.validate(&path.key(k), errors);
        }
    }
    fn validate_update(&self, old: &Self, path: &FieldPath<'_>, errors: &mut Vec<FieldError>) {
        for (k, v) in self {
            if let Some(o) = old.get(k) {
                v.validate_update(o, &path.key(k), errors);
            }
        }
    }
}
