//! Struct markers that say what the server serves and publishes for a type: a kind's
//! `#[kind(…)]` (scope, names, verbs and behaviour), `#[scale(…)]`, `#[subresource(…)]` and
//! `#[print_column(…)]`, and `#[gvk(…)]` (the group, version and kind of a struct sent as an
//! object without being a kind of its own group, such as meta's `Status`).
//!
//! Each parser records its problems in the [`MarkerCx`] and keeps what it could read.

use syn::Attribute;
use syn::spanned::Spanned;

use super::MarkerCx;
use super::syntax::{int_value, path_name, string_list_value, string_value, unknown_key};
use crate::diagnostics::suggestion;
use crate::model::{PrintColumn, ScaleModel};

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
                const NAME_FORMATS: [&str; 4] = ["dns1123-subdomain", "dns1123-label", "dns1035-label", "path-segment"];
                if !NAME_FORMATS.contains(&v.as_str()) {
                    let hint = suggestion(&v, NAME_FORMATS);
                    cx.error(span, format!("unknown name_format `{v}`{hint}; use one of `dns1123-subdomain`, `dns1123-label`, `dns1035-label`, `path-segment`"));
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
