//! Parsing of marker attributes (`#[kind(…)]`, `#[validate(…)]`, …) into model values.
//!
//! Every problem is recorded in [`Diagnostics`] with the marker's location and the fix; parsing
//! continues so that one run reports every mistake.

use std::path::Path;

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

use crate::diagnostics::{Diagnostics, suggestion};
use crate::model::{
    CelRule, FORMATS, ListMarker, ListType, Loc, MapMarker, MapType, PatchMarker, PrintColumn,
    ScaleModel, Validation,
};

/// Markers allowed on a struct.
pub const STRUCT_MARKERS: [&str; 8] = [
    "kind",
    "scale",
    "subresource",
    "print_column",
    "rule",
    "doc",
    "map",
    "gvk",
];
/// Markers allowed on a field.
pub const FIELD_MARKERS: [&str; 9] = [
    "proto", "json", "default", "validate", "rule", "list", "map", "patch", "doc",
];
/// Keys of `#[kind(…)]`.
pub const KIND_KEYS: [&str; 15] = [
    "namespaced",
    "cluster",
    "status",
    "plural",
    "singular",
    "short_names",
    "categories",
    "verbs",
    "create_only",
    "strategic_merge_patch",
    "unconditional_update",
    "create_on_update",
    "no_generation",
    "field_selectors",
    "name_format",
];
/// Keys of `#[validate(…)]`.
pub const VALIDATE_KEYS: [&str; 15] = [
    "required",
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "pattern",
    "enum",
    "min_length",
    "max_length",
    "min_items",
    "max_items",
    "min_properties",
    "max_properties",
    "format",
    "immutable",
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

/// Reports an unknown key inside a marker and skips its value.
fn unknown_key(
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
fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Parses `= "string"`.
fn string_value(meta: &ParseNestedMeta<'_>) -> syn::Result<String> {
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
fn string_list_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<String>> {
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
fn int_value(meta: &ParseNestedMeta<'_>) -> syn::Result<i64> {
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
fn count_value(meta: &ParseNestedMeta<'_>) -> syn::Result<u64> {
    let span = meta.path.span();
    let key = path_name(&meta.path);
    let v = int_value(meta)?;
    u64::try_from(v).map_err(|_| syn::Error::new(span, format!("`{key}` must be zero or greater")))
}

/// Parses `= <number>` (integer or float, possibly negative).
fn number_value(meta: &ParseNestedMeta<'_>) -> syn::Result<serde_json::Number> {
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

/// Parsed `#[kind(…)]` keys (merged over repeated `#[kind]` attributes).
#[derive(Default, Debug)]
pub struct KindKeys {
    /// `namespaced` / `cluster` and the span of the first one.
    pub scope: Option<crate::model::Scope>,
    /// `status`.
    pub status: bool,
    /// `plural`.
    pub plural: Option<String>,
    /// `singular`.
    pub singular: Option<String>,
    /// `short_names`.
    pub short_names: Vec<String>,
    /// `categories`.
    pub categories: Vec<String>,
    /// `verbs`.
    pub verbs: Option<Vec<String>>,
    /// `create_only`.
    pub create_only: bool,
    /// `strategic_merge_patch`.
    pub strategic_merge_patch: bool,
    /// `unconditional_update`.
    pub unconditional_update: bool,
    /// `create_on_update`.
    pub create_on_update: bool,
    /// `no_generation`.
    pub no_generation: bool,
    /// `field_selectors`.
    pub field_selectors: Vec<String>,
    /// `name_format`.
    pub name_format: Option<String>,
}

/// Parses one `#[kind(…)]` into `keys`.
pub fn parse_kind(cx: &mut MarkerCx<'_>, attr: &Attribute, keys: &mut KindKeys) {
    let result = attr.parse_nested_meta(|meta| {
        let key = path_name(&meta.path);
        let given_before = match key.as_str() {
            "plural" => keys.plural.is_some(),
            "singular" => keys.singular.is_some(),
            "name_format" => keys.name_format.is_some(),
            "verbs" => keys.verbs.is_some(),
            _ => false,
        };
        if given_before {
            cx.error(meta.path.span(), format!("`{key}` is given twice in `#[kind]`; keep one"));
        }
        match key.as_str() {
            "namespaced" | "cluster" => {
                let scope =
                    if key == "namespaced" { crate::model::Scope::Namespaced } else { crate::model::Scope::Cluster };
                if keys.scope.is_some_and(|s| s != scope) {
                    cx.error(meta.path.span(), "a kind is either `namespaced` or `cluster`, not both");
                }
                keys.scope = Some(scope);
            }
            "status" => keys.status = true,
            "create_only" => keys.create_only = true,
            "strategic_merge_patch" => keys.strategic_merge_patch = true,
            "unconditional_update" => keys.unconditional_update = true,
            "create_on_update" => keys.create_on_update = true,
            "no_generation" => keys.no_generation = true,
            "plural" => keys.plural = Some(string_value(&meta)?),
            "singular" => keys.singular = Some(string_value(&meta)?),
            "name_format" => {
                let span = meta.path.span();
                let v = string_value(&meta)?;
                const NAME_FORMATS: [&str; 3] = ["dns1123-subdomain", "dns1123-label", "path-segment"];
                if !NAME_FORMATS.contains(&v.as_str()) {
                    let hint = suggestion(&v, NAME_FORMATS);
                    cx.error(span, format!("unknown name_format `{v}`{hint}; use one of `dns1123-subdomain`, `dns1123-label`, `path-segment`"));
                }
                keys.name_format = Some(v);
            }
            "short_names" => keys.short_names.extend(string_list_value(&meta)?),
            "categories" => keys.categories.extend(string_list_value(&meta)?),
            "field_selectors" => keys.field_selectors.extend(string_list_value(&meta)?),
            "verbs" => {
                let span = meta.path.span();
                let verbs = string_list_value(&meta)?;
                for v in &verbs {
                    if !crate::model::DEFAULT_VERBS.contains(&v.as_str()) {
                        let hint = suggestion(v, crate::model::DEFAULT_VERBS);
                        cx.error(span, format!("unknown verb `{v}`{hint}"));
                    }
                }
                keys.verbs = Some(verbs);
            }
            _ => unknown_key(cx, &meta, "kind", &KIND_KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

/// Parses `#[scale(spec_replicas = …, status_replicas = …, selector = …)]`.
pub fn parse_scale(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<ScaleModel> {
    const KEYS: [&str; 3] = ["spec_replicas", "status_replicas", "selector"];
    let mut scale = ScaleModel {
        spec_replicas: String::new(),
        status_replicas: String::new(),
        selector: String::new(),
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "spec_replicas" => scale.spec_replicas = string_value(&meta)?,
            "status_replicas" => scale.status_replicas = string_value(&meta)?,
            "selector" => scale.selector = string_value(&meta)?,
            _ => unknown_key(cx, &meta, "scale", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    for (name, value) in [
        ("spec_replicas", &scale.spec_replicas),
        ("status_replicas", &scale.status_replicas),
    ] {
        if value.is_empty() {
            cx.error(
                attr.span(),
                format!(
                    "`#[scale]` needs `{name} = \".path\"`, such as `{name} = \".spec.replicas\"`"
                ),
            );
        }
    }
    Some(scale)
}

/// Parses `#[subresource(name = …, group = …, version = …, kind = …, verbs = […])]`, or
/// `#[subresource(name = …, verbs = ["update"])]` (an update of the kind itself).
pub fn parse_subresource(
    cx: &mut MarkerCx<'_>,
    attr: &Attribute,
) -> Option<crate::model::SubresourceModel> {
    const KEYS: [&str; 5] = ["name", "group", "version", "kind", "verbs"];
    let mut sub = crate::model::SubresourceModel {
        name: String::new(),
        group: String::new(),
        version: String::new(),
        kind: String::new(),
        verbs: vec!["create".to_string()],
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "name" => sub.name = string_value(&meta)?,
            "group" => sub.group = string_value(&meta)?,
            "version" => sub.version = string_value(&meta)?,
            "kind" => sub.kind = string_value(&meta)?,
            "verbs" => sub.verbs = string_list_value(&meta)?,
            _ => unknown_key(cx, &meta, "subresource", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    if sub.verbs == ["update"] {
        if sub.name.is_empty()
            || !(sub.group.is_empty() && sub.version.is_empty() && sub.kind.is_empty())
        {
            cx.error(
                attr.span(),
                "an `update` `#[subresource]` writes the kind itself: give it a name and leave out group, version and kind, such as `#[subresource(name = \"finalize\", verbs = [\"update\"])]`",
            );
            return None;
        }
    } else if sub.name.is_empty() || sub.version.is_empty() || sub.kind.is_empty() {
        cx.error(
            attr.span(),
            "`#[subresource]` needs a name, a version and a kind, such as `#[subresource(name = \"token\", group = \"authentication.k8s.io\", version = \"v1\", kind = \"TokenRequest\")]`",
        );
        return None;
    }
    if sub.verbs != ["create"] && sub.verbs != ["update"] {
        cx.error(
            attr.span(),
            "`#[subresource]` serves `create` (of another kind, the default) or `update` (of the kind itself): write `verbs = [\"create\"]` or `verbs = [\"update\"]`",
        );
        return None;
    }
    if ["status", "scale"].contains(&sub.name.as_str()) {
        cx.error(
            attr.span(),
            format!(
                "`{}` is declared with `#[kind(status)]` or `#[scale]`",
                sub.name
            ),
        );
        return None;
    }
    Some(sub)
}

/// Parses `#[print_column(name = …, type = …, json_path = …, format?, description?, priority?)]`.
pub fn parse_print_column(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<PrintColumn> {
    const KEYS: [&str; 6] = [
        "name",
        "type",
        "json_path",
        "format",
        "description",
        "priority",
    ];
    const TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];
    let mut col = PrintColumn {
        name: String::new(),
        type_: String::new(),
        json_path: String::new(),
        format: String::new(),
        description: String::new(),
        priority: 0,
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "name" => col.name = string_value(&meta)?,
            "type" => {
                let span = meta.path.span();
                col.type_ = string_value(&meta)?;
                if !TYPES.contains(&col.type_.as_str()) {
                    let hint = suggestion(&col.type_, TYPES);
                    cx.error(span, format!("unknown column type `{}`{hint}; use one of `integer`, `number`, `string`, `boolean`, `date`", col.type_));
                }
            }
            "json_path" => col.json_path = string_value(&meta)?,
            "format" => col.format = string_value(&meta)?,
            "description" => col.description = string_value(&meta)?,
            "priority" => {
                let span = meta.path.span();
                col.priority = i32::try_from(int_value(&meta)?)
                    .map_err(|_| syn::Error::new(span, "`priority` must fit in a 32-bit integer"))?;
            }
            _ => unknown_key(cx, &meta, "print_column", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    for (key, value) in [
        ("name", &col.name),
        ("type", &col.type_),
        ("json_path", &col.json_path),
    ] {
        if value.is_empty() {
            cx.error(
                attr.span(),
                format!("`#[print_column]` needs `{key} = \"…\"`"),
            );
        }
    }
    if !col.json_path.is_empty() && !col.json_path.starts_with('.') {
        cx.error(
            attr.span(),
            format!(
                "`json_path` must start with `.`, such as `.{}`",
                col.json_path
            ),
        );
    }
    Some(col)
}

/// Parses `#[rule(cel = "…", message = "…")]`.
pub fn parse_rule(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<CelRule> {
    const KEYS: [&str; 2] = ["cel", "message"];
    let mut cel = None;
    let mut message = None;
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "cel" => cel = Some(string_value(&meta)?),
            "message" => message = Some(string_value(&meta)?),
            _ => unknown_key(cx, &meta, "rule", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    let loc = cx.loc(attr.span());
    let Some(cel) = cel else {
        cx.error(attr.span(), "`#[rule]` needs `cel = \"<expression>\"`, such as `cel = \"self.minReplicas <= self.replicas\"`");
        return None;
    };
    let message = message.unwrap_or_else(|| format!("failed rule: {cel}"));
    Some(CelRule { cel, message, loc })
}

/// Parses `#[proto(N)]` or `#[proto(N, by_value)]` into the field number and whether Go
/// holds the field by value (see [`crate::model::FieldModel::proto_by_value`]).
pub fn parse_proto(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<ProtoMarker> {
    const HINT: &str = "`#[proto]` takes a field number and optionally `by_value`, such as `#[proto(1)]` or `#[proto(1, by_value)]`, or `skip` for a field outside the message: `#[proto(skip)]`";
    let parsed = attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        if input.peek(syn::Ident) {
            let flag: syn::Ident = input.parse()?;
            if flag != "skip" || !input.is_empty() {
                return Err(syn::Error::new(flag.span(), HINT));
            }
            return Ok(ProtoMarker::Skip);
        }
        let number: syn::LitInt = input.parse()?;
        let mut by_value = false;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() {
            let flag: syn::Ident = input.parse()?;
            if flag != "by_value" {
                return Err(syn::Error::new(flag.span(), HINT));
            }
            by_value = true;
        }
        Ok(ProtoMarker::Number(number.base10_parse::<u32>()?, by_value))
    });
    match parsed {
        Ok(ProtoMarker::Number(0, _)) => {
            cx.error(
                attr.span(),
                "protobuf field numbers start at 1: write `#[proto(1)]` or higher",
            );
            None
        }
        Ok(marker) => Some(marker),
        Err(_) => {
            cx.error(attr.span(), HINT);
            None
        }
    }
}

/// A parsed `#[proto(…)]` marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtoMarker {
    /// `#[proto(N)]` or `#[proto(N, by_value)]`.
    Number(u32, bool),
    /// `#[proto(skip)]`.
    Skip,
}

/// Parses `#[gvk(group = "…", version = "…", kind = "…")]` (`kind` defaults to the struct's
/// name).
pub fn parse_gvk(
    cx: &mut MarkerCx<'_>,
    attr: &Attribute,
    struct_name: &str,
) -> Option<crate::model::GvkMarker> {
    const KEYS: [&str; 3] = ["group", "version", "kind"];
    let (mut group, mut version, mut kind) = (None, None, None);
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "group" => group = Some(string_value(&meta)?),
            "version" => version = Some(string_value(&meta)?),
            "kind" => kind = Some(string_value(&meta)?),
            _ => unknown_key(cx, &meta, "gvk", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    match (group, version) {
        (Some(group), Some(version)) => Some(crate::model::GvkMarker {
            group,
            version,
            kind: kind.unwrap_or_else(|| struct_name.to_string()),
        }),
        _ => {
            cx.error(
                attr.span(),
                "`#[gvk]` needs a group and a version, such as `#[gvk(group = \"\", version = \"v1\")]`",
            );
            None
        }
    }
}

/// Parsed `#[json(…)]` keys.
#[derive(Default, Debug)]
pub struct JsonKeys {
    /// `name = "…"`.
    pub name: Option<String>,
    /// `always`.
    pub always: bool,
    /// `inline`.
    pub inline: bool,
    /// `keep_zero`.
    pub keep_zero: bool,
}

/// Parses `#[json(name = "…", always, inline, keep_zero)]` into `keys`.
pub fn parse_json(cx: &mut MarkerCx<'_>, attr: &Attribute, keys: &mut JsonKeys) {
    const KEYS: [&str; 4] = ["name", "always", "inline", "keep_zero"];
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "name" => keys.name = Some(string_value(&meta)?),
            "always" => keys.always = true,
            "inline" => keys.inline = true,
            "keep_zero" => keys.keep_zero = true,
            _ => unknown_key(cx, &meta, "json", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

/// Parses `#[default(<literal>)]` into its JSON form.
pub fn parse_default(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<serde_json::Value> {
    let expr = match attr.parse_args::<Expr>() {
        Ok(e) => e,
        Err(_) => {
            cx.error(attr.span(), "`#[default]` takes one literal, such as `#[default(1)]`, `#[default(\"x\")]`, `#[default(true)]` or `#[default([])]`");
            return None;
        }
    };
    match literal_json(&expr) {
        Some(v) => Some(v),
        None => {
            cx.error(expr.span(), "`#[default]` takes a literal (number, string, boolean or list of them), such as `#[default(1)]`");
            None
        }
    }
}

/// Parses `#[validate(…)]` into `v`.
pub fn parse_validate(cx: &mut MarkerCx<'_>, attr: &Attribute, v: &mut Validation) {
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "required" => v.required = true,
            "immutable" => v.immutable = true,
            "minimum" => v.minimum = Some(number_value(&meta)?),
            "maximum" => v.maximum = Some(number_value(&meta)?),
            "exclusive_minimum" => v.exclusive_minimum = Some(number_value(&meta)?),
            "exclusive_maximum" => v.exclusive_maximum = Some(number_value(&meta)?),
            "pattern" => {
                let span = meta.path.span();
                let p = string_value(&meta)?;
                if let Err(e) = check_pattern(&p) {
                    cx.error(span, format!("invalid `pattern`: {e}"));
                }
                v.pattern = Some(p);
            }
            "enum" => v.enum_values = string_list_value(&meta)?,
            "min_length" => v.min_length = Some(count_value(&meta)?),
            "max_length" => v.max_length = Some(count_value(&meta)?),
            "min_items" => v.min_items = Some(count_value(&meta)?),
            "max_items" => v.max_items = Some(count_value(&meta)?),
            "min_properties" => v.min_properties = Some(count_value(&meta)?),
            "max_properties" => v.max_properties = Some(count_value(&meta)?),
            "format" => {
                let span = meta.path.span();
                let f = string_value(&meta)?;
                if !FORMATS.contains(&f.as_str()) {
                    let hint = suggestion(&f, FORMATS);
                    let all = FORMATS
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let fix = if hint.is_empty() {
                        format!("; supported formats are {all}")
                    } else {
                        hint
                    };
                    cx.error(span, format!("unknown format `{f}`{fix}"));
                }
                v.format = Some(f);
            }
            _ => unknown_key(cx, &meta, "validate", &VALIDATE_KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

/// Checks that a pattern is a plausible regular expression: balanced brackets and groups.
fn check_pattern(p: &str) -> Result<(), String> {
    let mut depth_paren = 0i32;
    let mut in_class = false;
    let mut escaped = false;
    for c in p.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth_paren += 1,
            ')' if !in_class => {
                depth_paren -= 1;
                if depth_paren < 0 {
                    return Err("unbalanced `)`".into());
                }
            }
            _ => {}
        }
    }
    if in_class {
        return Err("unclosed `[`".into());
    }
    if depth_paren != 0 {
        return Err("unclosed `(`".into());
    }
    if escaped {
        return Err("trailing `\\`".into());
    }
    Ok(())
}

/// Parses `#[list(type = "atomic" | "set" | "map", map_keys = […])]`.
pub fn parse_list(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<ListMarker> {
    const KEYS: [&str; 2] = ["type", "map_keys"];
    let mut list = ListMarker {
        type_: ListType::Atomic,
        map_keys: Vec::new(),
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "type" => {
                let span = meta.path.span();
                list.type_ = match string_value(&meta)?.as_str() {
                    "atomic" => ListType::Atomic,
                    "set" => ListType::Set,
                    "map" => ListType::Map,
                    other => {
                        let hint = suggestion(other, ["atomic", "set", "map"]);
                        cx.error(
                            span,
                            format!(
                                "unknown list type `{other}`{hint}; use `atomic`, `set` or `map`"
                            ),
                        );
                        ListType::Atomic
                    }
                }
            }
            "map_keys" => list.map_keys = string_list_value(&meta)?,
            _ => unknown_key(cx, &meta, "list", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    if list.type_ == ListType::Map && list.map_keys.is_empty() {
        cx.error(
            attr.span(),
            "`#[list(type = \"map\")]` needs `map_keys = [\"name\"]`",
        );
    }
    if list.type_ != ListType::Map && !list.map_keys.is_empty() {
        cx.error(attr.span(), "`map_keys` needs `type = \"map\"`");
    }
    Some(list)
}

/// Parses `#[map(type = "atomic" | "granular")]`.
pub fn parse_map(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<MapMarker> {
    const KEYS: [&str; 1] = ["type"];
    let mut map = MapMarker {
        type_: MapType::Granular,
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "type" => {
                let span = meta.path.span();
                map.type_ = match string_value(&meta)?.as_str() {
                    "atomic" => MapType::Atomic,
                    "granular" => MapType::Granular,
                    other => {
                        let hint = suggestion(other, ["atomic", "granular"]);
                        cx.error(
                            span,
                            format!("unknown map type `{other}`{hint}; use `atomic` or `granular`"),
                        );
                        MapType::Granular
                    }
                }
            }
            _ => unknown_key(cx, &meta, "map", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    Some(map)
}

/// Parses `#[patch(strategy = "merge", merge_key = "name")]`.
pub fn parse_patch(cx: &mut MarkerCx<'_>, attr: &Attribute) -> Option<PatchMarker> {
    const KEYS: [&str; 2] = ["strategy", "merge_key"];
    let mut patch = PatchMarker {
        strategy: String::new(),
        merge_key: None,
    };
    let result = attr.parse_nested_meta(|meta| {
        match path_name(&meta.path).as_str() {
            "strategy" => patch.strategy = string_value(&meta)?,
            "merge_key" => patch.merge_key = Some(string_value(&meta)?),
            _ => unknown_key(cx, &meta, "patch", &KEYS)?,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    if patch.strategy.is_empty() {
        cx.error(
            attr.span(),
            "`#[patch]` needs `strategy = \"merge\"` (or `\"merge,retainKeys\"`, `\"replace\"`)",
        );
    }
    Some(patch)
}
