//! Markers that shape the schema of a value: `#[validate(…)]` constraints, `#[rule(…)]` CEL
//! rules, `#[default(…)]` values, and the merge semantics of lists, maps and strategic merge
//! patches (`#[list(…)]`, `#[map(…)]`, `#[patch(…)]`).
//!
//! `#[rule]` and `#[map]` are allowed on structs as well as on fields; the others on fields only.

use syn::spanned::Spanned;
use syn::{Attribute, Expr};

use super::MarkerCx;
use super::syntax::{
    count_value, literal_json, number_value, path_name, string_list_value, string_value,
    unknown_key,
};
use crate::diagnostics::suggestion;
use crate::model::{
    CelRule, FORMATS, ListMarker, ListType, MapMarker, MapType, PatchMarker, Validation,
};

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
