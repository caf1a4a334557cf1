//! The checks of a schema node that become `#[validate(…)]` keys of its field: counts of lists
//! and maps, string and number checks (of the property itself, or of every item or value of a
//! list or map of scalars), and what has no marker deeper down.

use heck::ToSnakeCase;
use serde_json::{Map, Value};

use super::{Markers, Schemas, lit, lit_list};

impl Schemas<'_> {
    /// `minItems`/`maxItems` (or `…Properties`) of a list (or map) at depth 0.
    pub(super) fn count_checks(
        &mut self,
        node: &Map<String, Value>,
        _path: &str,
        m: &mut Markers,
        what: &str,
    ) {
        for (key, marker) in [
            (
                format!("min{what}"),
                format!("min_{}", what.to_snake_case()),
            ),
            (
                format!("max{what}"),
                format!("max_{}", what.to_snake_case()),
            ),
        ] {
            if let Some(n) = node.get(&key).and_then(Value::as_u64) {
                m.validate.push(format!("{marker} = {n}"));
            }
        }
    }

    /// The checks of a list or map node deeper than a field's items, which have no marker.
    pub(super) fn deep_checks(&mut self, node: &Map<String, Value>, path: &str) {
        for key in [
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
            "x-kubernetes-list-type",
            "x-kubernetes-map-type",
            "x-kubernetes-validations",
        ] {
            if node.contains_key(key) {
                self.loss(
                    &format!("{path}.{key}"),
                    format!(
                        "`{key}` on a list or map inside a list or map has no marker: not applied"
                    ),
                );
            }
        }
    }

    /// The scalar checks of a node of Rust type `t`, into the field's `#[validate]` (at depth 0
    /// and 1; deeper they are losses).
    pub(super) fn scalar_checks(
        &mut self,
        node: &Map<String, Value>,
        path: &str,
        m: &mut Markers,
        depth: usize,
        t: &str,
    ) {
        let string = t == "String";
        let number = matches!(t, "i32" | "i64" | "f64");
        let mut out = Vec::new();
        for (key, marker, applies) in [
            ("minLength", "min_length", string),
            ("maxLength", "max_length", string),
            ("pattern", "pattern", string),
            ("enum", "enum", string),
            ("format", "format", string),
            ("minimum", "minimum", number),
            ("maximum", "maximum", number),
        ] {
            let Some(v) = node.get(key) else { continue };
            let kpath = format!("{path}.{key}");
            if !applies {
                if key == "format"
                    && matches!(
                        (t, v.as_str()),
                        ("i32", Some("int32"))
                            | ("i64", Some("int64"))
                            | ("f64", Some("float" | "double"))
                    )
                {
                    continue;
                }
                self.loss(
                    &kpath,
                    format!("`{key}` on a value of type `{t}` has no marker: not checked"),
                );
                continue;
            }
            if depth > 1 {
                self.loss(
                    &kpath,
                    format!(
                        "`{key}` inside a list or map of lists or maps has no marker: not checked"
                    ),
                );
                continue;
            }
            match key {
                "minLength" | "maxLength" => {
                    if let Some(n) = v.as_u64() {
                        out.push(format!("{marker} = {n}"));
                    }
                }
                "pattern" => {
                    if let Some(p) = v.as_str() {
                        out.push(format!("pattern = {}", lit(p)));
                    }
                }
                "enum" => {
                    let values: Vec<&str> = v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                    if values.len() == v.as_array().map_or(0, Vec::len) {
                        out.push(format!("enum = {}", lit_list(&values)));
                    } else {
                        self.loss(&kpath, "an enum with values that are not strings has no marker: not checked");
                    }
                }
                "format" => match v.as_str().map(|f| (f, supported_format(f))) {
                    Some((_, Some(f))) => out.push(format!("format = {}", lit(f))),
                    Some((f, None)) => self.loss(
                        &kpath,
                        format!("the string format `{f}` has no marker (the definitions check date-time, uuid and byte): not checked"),
                    ),
                    None => {}
                },
                _ => {
                    let Some(n) = v.as_number() else { continue };
                    let (ex_key, ex_marker) = if key == "minimum" {
                        ("exclusiveMinimum", "exclusive_minimum")
                    } else {
                        ("exclusiveMaximum", "exclusive_maximum")
                    };
                    let n = if t == "f64" { n.to_string() } else { n.as_i64().map(|i| i.to_string()).unwrap_or_else(|| n.to_string()) };
                    if node.get(ex_key) == Some(&Value::Bool(true)) {
                        out.push(format!("{ex_marker} = {n}"));
                    } else {
                        out.push(format!("{marker} = {n}"));
                    }
                }
            }
        }
        if !number {
            for key in ["exclusiveMinimum", "exclusiveMaximum"] {
                if node.contains_key(key)
                    && !node.contains_key(if key == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    })
                {
                    self.loss(
                        &format!("{path}.{key}"),
                        "an exclusive bound without its bound: ignored",
                    );
                }
            }
        }
        m.validate.extend(out);
    }
}

/// The format names of the definitions for a CRD string format, if it has one.
fn supported_format(f: &str) -> Option<&'static str> {
    match f.replace('-', "").as_str() {
        "datetime" => Some("date-time"),
        "uuid" => Some("uuid"),
        "byte" => Some("byte"),
        _ => None,
    }
}
