//! Markers that say how a field is encoded: `#[proto(…)]` (its protobuf field number, or that it
//! is left out of the message) and `#[json(…)]` (its JSON name and when it is written).

use syn::Attribute;
use syn::spanned::Spanned;

use super::MarkerCx;
use super::syntax::{path_name, string_value, unknown_key};

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

/// Parses `#[json(custom)]` on a struct (its JSON encoding is hand-written in `hooks.rs`);
/// returns whether it parsed.
pub fn parse_struct_json(cx: &mut MarkerCx<'_>, attr: &Attribute) -> bool {
    const HINT: &str = "on a struct, `#[json]` takes only `custom`: `#[json(custom)]` (its `Serialize` and `Deserialize` are written in the group's hooks.rs)";
    let parsed = attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let flag: syn::Ident = input.parse()?;
        if flag != "custom" || !input.is_empty() {
            return Err(syn::Error::new(flag.span(), HINT));
        }
        Ok(())
    });
    match parsed {
        Ok(()) => true,
        Err(e) => {
            cx.error(e.span(), HINT);
            false
        }
    }
}
