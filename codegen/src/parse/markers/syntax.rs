//! The syntax shared by the arguments of every marker: key names, typed values after `=`, and
//! literals converted to JSON.
//!
//! A marker's parser reads each key with [`path_name`] and its value with one of the `*_value`
//! functions here; a key it does not know goes to [`unknown_key`], which reports it with the keys
//! the marker accepts and skips its value so that parsing goes on.

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit};

use super::MarkerCx;
use crate::diagnostics::suggestion;

/// Reports an unknown key inside a marker and skips its value.
pub(super) fn unknown_key(
    cx: &mut MarkerCx<'_>,
    meta: &ParseNestedMeta<'_>,
    marker: &str,
    keys: &[&str],
) -> syn::Result<()> {
    let key = path_name(&meta.path);
    let hint = suggestion(&key, keys.iter().copied());
    let fix = if hint.is_empty() {
        format!(
            "; `{marker}` accepts {}",
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        hint
    };
    cx.error(
        meta.path.span(),
        format!("unknown key `{key}` in `#[{marker}]`{fix}"),
    );
    skip_value(meta)
}

/// Consumes `= expr` or `(…)` after a key, if present.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

/// The key of a nested meta as a string (keywords such as `type` and `enum` included).
pub(super) fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Parses `= "string"`.
pub(super) fn string_value(meta: &ParseNestedMeta<'_>) -> syn::Result<String> {
    let expr: Expr = meta.value()?.parse()?;
    match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        other => Err(syn::Error::new(
            other.span(),
            format!(
                "`{}` takes a string literal, such as `\"…\"`",
                path_name(&meta.path)
            ),
        )),
    }
}

/// Parses `= ["a", "b"]`.
pub(super) fn string_list_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<String>> {
    let expr: Expr = meta.value()?.parse()?;
    let key = path_name(&meta.path);
    let Expr::Array(array) = &expr else {
        return Err(syn::Error::new(
            expr.span(),
            format!("`{key}` takes a list of strings, such as `{key} = [\"a\", \"b\"]`"),
        ));
    };
    let mut out = Vec::new();
    for elem in &array.elems {
        match elem {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => out.push(s.value()),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    format!("`{key}` items must be string literals, such as `\"a\"`"),
                ));
            }
        }
    }
    Ok(out)
}

/// Parses `= <integer>` as an `i64`.
pub(super) fn int_value(meta: &ParseNestedMeta<'_>) -> syn::Result<i64> {
    let expr: Expr = meta.value()?.parse()?;
    let key = path_name(&meta.path);
    match number_of(&expr) {
        Some(serde_json::Value::Number(n)) if n.as_i64().is_some() => {
            Ok(n.as_i64().unwrap_or_default())
        }
        _ => Err(syn::Error::new(
            expr.span(),
            format!("`{key}` takes an integer literal, such as `{key} = 1`"),
        )),
    }
}

/// Parses `= <non-negative integer>`.
pub(super) fn count_value(meta: &ParseNestedMeta<'_>) -> syn::Result<u64> {
    let span = meta.path.span();
    let key = path_name(&meta.path);
    let v = int_value(meta)?;
    u64::try_from(v).map_err(|_| syn::Error::new(span, format!("`{key}` must be zero or greater")))
}

/// Parses `= <number>` (integer or float, possibly negative).
pub(super) fn number_value(meta: &ParseNestedMeta<'_>) -> syn::Result<serde_json::Number> {
    let expr: Expr = meta.value()?.parse()?;
    let key = path_name(&meta.path);
    match number_of(&expr) {
        Some(serde_json::Value::Number(n)) => Ok(n),
        _ => Err(syn::Error::new(
            expr.span(),
            format!("`{key}` takes a number literal, such as `{key} = 0`"),
        )),
    }
}

/// Converts a literal expression to JSON (numbers, strings, booleans, `-N`, and lists of them).
pub fn literal_json(expr: &Expr) -> Option<serde_json::Value> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(serde_json::Value::String(s.value())),
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Some(serde_json::Value::Bool(b.value)),
        Expr::Array(a) => a
            .elems
            .iter()
            .map(literal_json)
            .collect::<Option<Vec<_>>>()
            .map(serde_json::Value::Array),
        other => number_of(other),
    }
}

/// Converts an integer or float literal, possibly negated, to a JSON number.
fn number_of(expr: &Expr) -> Option<serde_json::Value> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<i64>().ok().map(serde_json::Value::from),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f
            .base10_parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(serde_json::Value::Number),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match number_of(expr)? {
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(serde_json::Value::from(-i))
                } else {
                    n.as_f64()
                        .and_then(|f| serde_json::Number::from_f64(-f))
                        .map(serde_json::Value::Number)
                }
            }
            _ => None,
        },
        Expr::Group(g) => number_of(&g.expr),
        Expr::Paren(p) => number_of(&p.expr),
        _ => None,
    }
}
