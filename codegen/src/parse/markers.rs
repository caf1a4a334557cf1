//! Parsing of marker attributes (`#[kind(…)]`, `#[validate(…)]`, …) into model values.
//!
//! Every problem is recorded in [`Diagnostics`] with the marker's location and the fix; parsing
//! continues so that one run reports every mistake.
//!
//! This file holds what every marker shares: the lists of markers allowed on a struct and on a
//! field, the parsing context [`MarkerCx`], the reading of marker names and doc comments, and the
//! report of an unknown marker. The syntax of marker arguments (keys, typed values, literals) is
//! in `syntax`; the markers themselves are parsed in `resource` (what is served and published
//! for a type), `schema` (validation, defaults and merge semantics of values) and `encoding`
//! (how a field is written in JSON and protobuf). Their items are re-exported here.

mod encoding;
mod resource;
mod schema;
mod syntax;

use std::path::Path;

use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

use crate::diagnostics::{Diagnostics, suggestion};
use crate::model::Loc;

pub use encoding::{JsonKeys, ProtoMarker, parse_json, parse_proto, parse_struct_json};
pub use resource::{
    KIND_KEYS, KindKeys, parse_gvk, parse_kind, parse_print_column, parse_scale, parse_subresource,
};
pub use schema::{
    VALIDATE_KEYS, parse_default, parse_list, parse_map, parse_patch, parse_rule, parse_validate,
};
pub use syntax::literal_json;

/// Markers allowed on a struct.
pub const STRUCT_MARKERS: [&str; 9] = [
    "kind",
    "scale",
    "subresource",
    "print_column",
    "rule",
    "doc",
    "map",
    "gvk",
    "json",
];
/// Markers allowed on a field.
pub const FIELD_MARKERS: [&str; 9] = [
    "proto", "json", "default", "validate", "rule", "list", "map", "patch", "doc",
];

/// Context for parsing markers of one file.
pub struct MarkerCx<'a> {
    /// The file being parsed.
    pub file: &'a Path,
    /// Where errors go.
    pub diags: &'a mut Diagnostics,
}

impl MarkerCx<'_> {
    /// The location of a span in this file.
    pub fn loc(&self, span: proc_macro2::Span) -> Loc {
        Loc::from_span(self.file, span)
    }

    /// Records an error at a span.
    pub fn error(&mut self, span: proc_macro2::Span, message: impl Into<String>) {
        let loc = self.loc(span);
        self.diags.push(loc, message);
    }

    /// Records a `syn::Error` (all its messages).
    pub fn syn_error(&mut self, err: syn::Error) {
        for e in err {
            let loc = self.loc(e.span());
            self.diags.push(loc, e.to_string());
        }
    }
}

/// The name of an attribute's path (`validate` for `#[validate(…)]`).
pub fn attr_name(attr: &Attribute) -> String {
    attr.path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Collects the doc comment of a list of attributes.
pub fn docs(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            let v = s.value();
            lines.push(v.strip_prefix(' ').unwrap_or(&v).trim_end().to_string());
        }
    }
    lines.join("\n").trim().to_string()
}

/// Reports an unknown marker with a suggestion.
pub fn unknown_marker(cx: &mut MarkerCx<'_>, attr: &Attribute, allowed: &[&str], on: &str) {
    let name = attr_name(attr);
    let hint = suggestion(&name, allowed.iter().copied());
    let list = allowed
        .iter()
        .filter(|m| **m != "doc")
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let fix = if hint.is_empty() {
        format!("; markers allowed on a {on} are {list}")
    } else {
        hint
    };
    cx.error(attr.path().span(), format!("unknown marker `{name}`{fix}"));
}
