//! Defaults: applying them to objects (Kubernetes' `defaulting.Default` and
//! `PruneNonNullableNullsWithoutDefaults`) and checking them in a CRD's schema
//! (`defaulting.ValidateDefaults`: a default must be pruned, valid metadata where it is
//! metadata, and valid against its own schema).

use serde_json::{Map, Value};

use super::path::{child, key};
use super::props::Props;
use super::{embedded, prune, value};
use crate::errors::FieldError;

/// Whether `x` is a `null` that the schema `s` does not allow.
fn non_nullable_null(x: &Value, s: Option<&Props>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Applies the defaults of `s` to `x`: a property with a default is set when absent (or a
/// `null` it does not allow), `null` entries of maps and lists take the entries' default, and
/// the walk goes into the values present.
pub(crate) fn apply(x: &mut Value, s: &Props) {
    match x {
        Value::Object(m) => {
            for (k, p) in &s.properties {
                if let Some(d) = &p.default
                    && m.get(k).is_none_or(|v| non_nullable_null(v, Some(p)))
                {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.properties.get(k) {
                    apply(v, p);
                } else if let Some(a) = s.additional_schema() {
                    if non_nullable_null(v, Some(a)) {
                        *v = a.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, a);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.item_schema() {
                for v in items.iter_mut() {
                    if non_nullable_null(v, Some(is)) {
                        *v = is.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, is);
                }
            }
        }
        _ => {}
    }
}

/// Removes `null`s the schema does not allow and cannot default (those with a default are
/// left for [`apply`]).
pub(crate) fn drop_nulls(x: &mut Value, s: Option<&Props>) {
    match x {
        Value::Object(m) => {
            let field = |k: &str| -> Option<&Props> {
                let s = s?;
                s.properties.get(k).or_else(|| s.additional_schema())
            };
            m.retain(|k, v| {
                let fs = field(k);
                !(v.is_null() && fs.is_some_and(|f| !f.nullable && f.default.is_none()))
            });
            for (k, v) in m.iter_mut() {
                drop_nulls(v, field(k));
            }
        }
        Value::Array(items) => {
            let is = s.and_then(Props::item_schema);
            // Without a schema there is nothing to drop below.
            if is.is_some() {
                for v in items.iter_mut() {
                    drop_nulls(v, is);
                }
            }
        }
        _ => {}
    }
}

/// A step from an embedded resource's root down to a default inside its metadata.
#[derive(Clone)]
enum Step {
    Child(String),
    Index,
}

/// The object a default inside metadata stands in: the default wrapped in the steps from the
/// resource root, with `apiVersion` and `kind` set when the steps did not.
fn surrounding(steps: &[Step], default: &Value) -> Value {
    let mut x = default.clone();
    for step in steps.iter().rev() {
        x = match step {
            Step::Child(k) => Value::Object(Map::from_iter([(k.clone(), x)])),
            Step::Index => Value::Array(vec![x]),
        };
    }
    if let Value::Object(m) = &mut x {
        m.entry("kind").or_insert_with(|| Value::from("Validation"));
        m.entry("apiVersion")
            .or_insert_with(|| Value::from("validation/v1"));
    }
    x
}

/// The walk's state: the embedded resource the node is in and the way down from it.
struct Walk<'s> {
    resource: &'s Props,
    steps: Vec<Step>,
    inside_meta: bool,
}

/// The errors of the defaults in the (structural) schema `root` at `path`.
pub(crate) fn validate_defaults(path: &str, root: &Props, require_pruned: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let walk = Walk {
        resource: root,
        steps: Vec::new(),
        inside_meta: false,
    };
    node(path, root, true, walk, require_pruned, &mut errs);
    errs
}

fn node<'s>(
    path: &str,
    s: &'s Props,
    is_root: bool,
    mut w: Walk<'s>,
    require_pruned: bool,
    errs: &mut Vec<FieldError>,
) {
    let embedded = is_root || s.embedded_resource;
    if embedded {
        w = Walk {
            resource: s,
            steps: Vec::new(),
            inside_meta: false,
        };
    }
    let dp = child(path, "default");
    if let Some(d) = &s.default {
        if w.inside_meta {
            let mut obj = surrounding(&w.steps, d);
            let mut unknown = Vec::new();
            let meta_errs =
                match embedded::coerce(&mut obj, w.resource, true, false, "", &mut unknown) {
                    Err(e) => vec![e],
                    Ok(()) => {
                        let mut es = Vec::new();
                        embedded::validate(&obj, w.resource, true, "", &mut es);
                        es
                    }
                };
            if !meta_errs.is_empty() {
                errs.push(FieldError::invalid(
                    &dp,
                    d,
                    format!(
                        "must result in valid metadata: {}",
                        crate::validation::aggregate(&meta_errs)
                    ),
                ));
            } else {
                errs.extend(value::validate(s, "", d, None).into_field_errors(&dp));
            }
        } else {
            if require_pruned {
                let mut pruned = d.clone();
                prune::prune(&mut pruned, s, embedded);
                if pruned != *d {
                    errs.push(FieldError::invalid(&dp, d, "must not have unknown fields"));
                }
            }
            let mut coerced = d.clone();
            let mut unknown = Vec::new();
            if let Err(e) = embedded::coerce(&mut coerced, s, embedded, false, &dp, &mut unknown) {
                errs.push(e);
            } else {
                let mut es = Vec::new();
                embedded::validate(d, s, embedded, &dp, &mut es);
                if es.is_empty() {
                    es = value::validate(s, "", d, None).into_field_errors(&dp);
                }
                errs.extend(es);
            }
        }
    }
    // Defaults are forbidden under additionalProperties: not followed.
    if let Some(is) = s.item_schema() {
        let mut sub = Walk {
            resource: w.resource,
            steps: w.steps.clone(),
            inside_meta: w.inside_meta,
        };
        sub.steps.push(Step::Index);
        node(&child(path, "items"), is, false, sub, require_pruned, errs);
    }
    for (k, p) in &s.properties {
        let mut sub = Walk {
            resource: w.resource,
            steps: w.steps.clone(),
            inside_meta: w.inside_meta
                || (embedded && ["metadata", "kind", "apiVersion"].contains(&k.as_str())),
        };
        sub.steps.push(Step::Child(k.clone()));
        node(
            &key(&child(path, "properties"), k),
            p,
            false,
            sub,
            require_pruned,
            errs,
        );
    }
}
