//! The CEL checks of a CRD's schema when the CRD is written, as kube-apiserver makes them:
//! every `x-kubernetes-validations` rule (and `messageExpression`) must compile, and its
//! estimated cost must fit Kubernetes' budgets.
//!
//! - A rule's cost is the estimate of one evaluation (from the sizes the schema declares, see
//!   [`decl_of`]) times how many times it can run: the product of the `maxItems` and
//!   `maxProperties` of the lists and maps above its node, or, when one of them has none, as
//!   many values of the node's least serialized size as fit in a 3 MiB request. A rule over
//!   [`STATIC_ESTIMATED_COST_LIMIT`] is forbidden.
//! - A `messageExpression`'s cost is the estimate of one evaluation, with the same limit.
//! - The costs of all of them together must stay under [`STATIC_ESTIMATED_CRD_COST_LIMIT`]:
//!   past it, the (up to four) most expensive expressions costing at least 1% of that limit
//!   are named, and the schema is forbidden.
//!
//! Errors come in Kubernetes' order: a node's children's before its own; for each rule its
//! cost, its compile error, then its `messageExpression`'s.

use serde_json::Value;

use super::path::{child, index, key};
use super::props::{Items, Props, SchemaOrBool};
use crate::cel::{CelExpression, Decl, DeclKind};
use crate::errors::FieldError;

/// The largest estimated cost of one rule, times its cardinality, or of one
/// `messageExpression` (Kubernetes' `StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;

/// The largest estimated cost of all the rules of one schema together (Kubernetes'
/// `StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// The largest request kube-apiserver accepts, which bounds what the schema does not.
const MAX_REQUEST_BYTES: i64 = 3 * 1024 * 1024;

/// The most expressions the total's error names.
const MOST_EXPENSIVE: usize = 4;

/// The message of an estimate over its limit, with Kubernetes' rendering of the factor.
pub(crate) fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The total of the estimated costs, and its most expensive contributors.
#[derive(Default)]
struct Total {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        let at = self.most_expensive.partition_point(|(_, c)| *c >= cost);
        self.most_expensive.insert(at, (path, cost));
        self.most_expensive.truncate(MOST_EXPENSIVE);
    }
}

/// The CEL errors of the schema `props` at `path` (`…openAPIV3Schema`): compile errors and
/// cost errors. `suppress_per_expression` leaves out the per-expression limits (kube-apiserver
/// does for a version whose schema an update leaves unchanged); the total still applies.
pub(crate) fn cel_errors(
    props: &Props,
    path: &str,
    suppress_per_expression: bool,
) -> Vec<FieldError> {
    let mut walk = Walk {
        errors: Vec::new(),
        total: Total::default(),
        suppress_per_expression,
    };
    walk.node(props, path, true, Some(1), 0);
    let mut errors = walk.errors;
    if walk.total.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (p, _) in &walk.total.most_expensive {
            errors.push(FieldError::forbidden(
                p.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errors.push(FieldError::forbidden(
            path,
            cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                walk.total.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    errors
}

struct Walk {
    errors: Vec<FieldError>,
    total: Total,
    suppress_per_expression: bool,
}

impl Walk {
    /// The node `p` at `path`, which can occur `cardinality` times in an object (`None`:
    /// unbounded).
    fn node(&mut self, p: &Props, path: &str, root: bool, cardinality: Option<u64>, depth: usize) {
        if depth > super::MAX_SCHEMA_DEPTH {
            return;
        }
        // How many of each child there can be per value of this node.
        let per_value = match p.type_.as_str() {
            "object" if p.additional_properties.is_some() => p.max_properties.map(non_negative),
            "array" => p.max_items.map(non_negative),
            _ => Some(1),
        };
        let below = cardinality.zip(per_value).map(|(c, n)| c.saturating_mul(n));
        if let Some(SchemaOrBool::Schema(a)) = &p.additional_properties {
            self.node(
                a,
                &child(path, "additionalProperties"),
                false,
                below,
                depth + 1,
            );
        }
        for (k, prop) in &p.properties {
            let at = key(&child(path, "properties"), k);
            self.node(prop, &at, false, below, depth + 1);
        }
        if let Some(Items::Schema(items)) = &p.items {
            self.node(items, &child(path, "items"), false, below, depth + 1);
        }
        if !p.validations.is_empty() {
            self.rules(p, path, root, cardinality);
        }
    }

    fn rules(&mut self, p: &Props, path: &str, root: bool, cardinality: Option<u64>) {
        let decl = decl_of(p, root || p.embedded_resource);
        let cardinality = cardinality.unwrap_or_else(|| {
            let least = decl.as_ref().map_or(0, |d| d.min_size);
            (MAX_REQUEST_BYTES / (least + 1)) as u64
        });
        let field = child(path, "x-kubernetes-validations");
        for (i, v) in p.validations.iter().enumerate() {
            let at = index(&field, i);
            let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
            let source = text("rule");
            if source.trim().is_empty() {
                continue;
            }
            let rule = match CelExpression::compile(source) {
                Ok(rule) => rule,
                Err(message) => {
                    self.errors.push(FieldError::invalid(
                        child(&at, "rule"),
                        &Value::from(""),
                        format!("compilation failed: {message}"),
                    ));
                    continue;
                }
            };
            let estimate = decl.as_ref().map_or(0, |d| rule.estimated_cost(d));
            let cost = if estimate == 0 {
                0
            } else {
                estimate.saturating_mul(cardinality)
            };
            let rule_path = child(&at, "rule");
            if !self.suppress_per_expression && cost > STATIC_ESTIMATED_COST_LIMIT {
                self.errors.push(FieldError::forbidden(
                    rule_path.clone(),
                    cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                ));
            }
            self.total.observe(rule_path, cost);
            let message = text("messageExpression");
            if message.is_empty() {
                continue;
            }
            let message_path = child(&at, "messageExpression");
            match CelExpression::compile(message) {
                Err(message) => self.errors.push(FieldError::invalid(
                    message_path,
                    &Value::from(""),
                    format!("compilation failed: {message}"),
                )),
                Ok(expression) => {
                    let cost = decl.as_ref().map_or(0, |d| expression.estimated_cost(d));
                    if !self.suppress_per_expression && cost > STATIC_ESTIMATED_COST_LIMIT {
                        self.errors.push(FieldError::forbidden(
                            message_path.clone(),
                            cost_message(
                                "estimated messageExpression cost",
                                cost,
                                STATIC_ESTIMATED_COST_LIMIT,
                            ),
                        ));
                    }
                    self.total.observe(message_path, cost);
                }
            }
        }
    }
}

fn non_negative(n: i64) -> u64 {
    n.max(0) as u64
}

/// A CEL identifier for a property name (Kubernetes' escaping), or `None` for a name CEL
/// cannot spell (the property is then not visible to rules).
pub(crate) fn escape(name: &str) -> Option<String> {
    const RESERVED: [&str; 21] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

fn simple(kind: DeclKind, max_elements: i64, min_size: i64) -> Decl {
    Decl {
        kind,
        max_elements: non_negative(max_elements),
        min_size,
    }
}

/// The CEL declaration of a schema node, with the sizes Kubernetes derives for it
/// (`SchemaDeclType`): a string's bound is 4 bytes per character of its `maxLength`, or its
/// longest `enum` value, or what fits in a request; a list's or map's its `maxItems` /
/// `maxProperties`, or as many of its least serialized items as fit in a request. The root
/// of a resource (`resource_root`) always has `apiVersion`, `kind` and `metadata.name` /
/// `metadata.generateName` (at most 253 and 252 characters long). `None` for a node rules
/// cannot see.
pub(crate) fn decl_of(p: &Props, resource_root: bool) -> Option<Decl> {
    let unbounded = MAX_REQUEST_BYTES - 2;
    if p.int_or_string {
        let max = p
            .max_length
            .map_or(unbounded, |l| l.max(0).saturating_mul(4));
        return Some(simple(DeclKind::IntOrString, max, 1));
    }
    Some(match p.type_.as_str() {
        "array" => {
            let Some(Items::Schema(items)) = &p.items else {
                return None;
            };
            let item = decl_of(items, items.embedded_resource)?;
            let max = p.max_items.unwrap_or(unbounded / (item.min_size + 1));
            simple(DeclKind::List(Box::new(item)), max, 2)
        }
        "object" => {
            if let Some(SchemaOrBool::Schema(a)) = &p.additional_properties {
                let value = decl_of(a, a.embedded_resource)?;
                let max = p.max_properties.unwrap_or(unbounded / (value.min_size + 6));
                return Some(simple(DeclKind::Map(Box::new(value)), max, 2));
            }
            object_decl(p, resource_root)
        }
        "string" => match p.format.as_str() {
            "byte" => simple(DeclKind::Bytes, p.max_length.unwrap_or(unbounded), 2),
            "duration" => simple(DeclKind::Duration, 32, 3),
            "date" => simple(DeclKind::Timestamp, 12, 12),
            "date-time" => simple(DeclKind::Timestamp, 32, 21),
            _ => {
                let max = match p.max_length {
                    Some(l) => l.max(0).saturating_mul(4),
                    None if !p.enum_.is_empty() => p
                        .enum_
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.len() as i64)
                        .max()
                        .unwrap_or(0),
                    None => unbounded,
                };
                simple(DeclKind::String, max, 2)
            }
        },
        "boolean" => simple(DeclKind::Bool, 0, 4),
        "number" => simple(DeclKind::Double, 0, 1),
        "integer" => simple(DeclKind::Int, 0, 1),
        _ => return None,
    })
}

/// An object's declaration: its visible fields, and its least size (`{}` and its required
/// properties without a default).
fn object_decl(p: &Props, resource_root: bool) -> Decl {
    let string = || Props {
        type_: "string".into(),
        ..Props::default()
    };
    // At a resource's root, `apiVersion`, `kind` and `metadata` are Kubernetes' own unless
    // the schema declares them all as it does.
    let declares_meta = resource_root && {
        let is = |k: &str, t: &str| p.properties.get(k).is_some_and(|s| s.type_ == t);
        let meta = p.properties.get("metadata");
        is("kind", "string")
            && is("apiVersion", "string")
            && meta.is_some_and(|m| {
                m.type_ == "object"
                    && m.properties
                        .get("name")
                        .is_some_and(|s| s.type_ == "string")
                    && m.properties
                        .get("generateName")
                        .is_some_and(|s| s.type_ == "string")
            })
    };
    let mut synthesized = std::collections::BTreeMap::new();
    if resource_root && !declares_meta {
        synthesized.insert("kind".to_string(), string());
        synthesized.insert("apiVersion".to_string(), string());
        // The names are bounded by the longest name Kubernetes accepts (253 bytes, one less
        // for `generateName`, which a suffix completes), or by the schema's own `maxLength`.
        let declared = p.properties.get("metadata");
        let capped = |name: &str, cap: i64| {
            let own = declared
                .and_then(|m| m.properties.get(name))
                .and_then(|s| s.max_length);
            Props {
                max_length: Some(own.map_or(cap, |l| l.min(cap))),
                ..string()
            }
        };
        let mut meta = Props {
            type_: "object".into(),
            ..Props::default()
        };
        meta.properties.insert("name".into(), capped("name", 253));
        meta.properties
            .insert("generateName".into(), capped("generateName", 252));
        synthesized.insert("metadata".to_string(), meta);
    }
    let required = p.required.as_deref().unwrap_or_default();
    let mut fields = std::collections::BTreeMap::new();
    let mut min_size = 2i64;
    let names = p.properties.keys().chain(
        synthesized
            .keys()
            .filter(|k| !p.properties.contains_key(*k)),
    );
    for name in names {
        let Some(prop) = synthesized.get(name).or_else(|| p.properties.get(name)) else {
            continue;
        };
        let Some(field) = decl_of(prop, prop.embedded_resource) else {
            continue;
        };
        if required.iter().any(|r| r == name) && prop.default.is_none() {
            min_size = min_size
                .saturating_add(name.len() as i64)
                .saturating_add(field.min_size)
                .saturating_add(4);
        }
        if let Some(escaped) = escape(name) {
            fields.insert(escaped, field);
        }
    }
    Decl {
        kind: DeclKind::Object(fields),
        max_elements: 0,
        min_size,
    }
}

#[cfg(test)]
#[path = "cel_cost_tests.rs"]
mod tests;
