//! The checked model of one `#[derive(Object)]`.

use syn::spanned::Spanned;

use super::attr::ObjectAttrs;

/// What the emitter needs.
pub struct ObjectModel {
    /// The struct.
    pub ident: syn::Ident,
    /// The generics of the struct (none are allowed; kept for the impl header).
    pub generics: syn::Generics,
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// For lists: the item type.
    pub list_item: Option<syn::Type>,
}

/// Checks the input against the attributes and builds the model; all errors at once,
/// including those found while parsing the attributes (`attr_errors`).
pub fn build(
    input: &syn::DeriveInput,
    attrs: ObjectAttrs,
    attr_errors: Option<syn::Error>,
) -> syn::Result<ObjectModel> {
    let mut errors: Vec<syn::Error> = attr_errors.into_iter().collect();
    let attr_seen = attrs.seen;
    let missing = |key: &str| {
        syn::Error::new(
            attrs.span,
            format!("`#[object]` is missing `{key} = \"…\"`"),
        )
    };
    if attr_seen {
        if attrs.group.is_none() {
            errors.push(missing("group"));
        }
        if attrs.version.as_ref().is_none_or(|v| v.value().is_empty()) {
            errors.push(missing("version"));
        }
        if attrs.kind.as_ref().is_none_or(|v| v.value().is_empty()) {
            errors.push(missing("kind"));
        }
    }
    if let Some(kind) = &attrs.kind {
        let k = kind.value();
        if !k.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            errors.push(syn::Error::new(
                kind.span(),
                format!("kinds are CamelCase: write `kind = \"{}\"`", capitalize(&k)),
            ));
        }
        if attrs.list && !k.ends_with("List") {
            errors.push(syn::Error::new(
                kind.span(),
                format!("a list kind ends in `List`: write `kind = \"{k}List\"`"),
            ));
        }
    }
    if !input.generics.params.is_empty() {
        errors.push(syn::Error::new(
            input.generics.span(),
            "`#[derive(Object)]` does not support generic parameters",
        ));
    }
    let mut list_item = None;
    match &input.data {
        syn::Data::Struct(s) => {
            let field = |name: &str| {
                s.fields
                    .iter()
                    .find(|f| f.ident.as_ref().is_some_and(|i| i == name))
            };
            if field("metadata").is_none() {
                let ty = if attrs.list { "ListMeta" } else { "ObjectMeta" };
                errors.push(syn::Error::new(
                    input.ident.span(),
                    format!("`#[derive(Object)]` needs a field `pub metadata: {ty}`"),
                ));
            }
            if attrs.list {
                match field("items").map(|f| vec_item(&f.ty)) {
                    Some(Some(t)) => list_item = Some(t),
                    Some(None) => errors.push(syn::Error::new(
                        field("items")
                            .map(|f| f.ty.span())
                            .unwrap_or(input.ident.span()),
                        "`items` of a list must be a `Vec<Item>`",
                    )),
                    None => errors.push(syn::Error::new(
                        input.ident.span(),
                        "a list needs a field `pub items: Vec<Item>`",
                    )),
                }
            }
        }
        _ => errors.push(syn::Error::new(
            input.ident.span(),
            "`#[derive(Object)]` only supports structs with named fields",
        )),
    }
    if let Some(mut first) = errors.first().cloned() {
        for e in errors.into_iter().skip(1) {
            first.combine(e);
        }
        return Err(first);
    }
    Ok(ObjectModel {
        ident: input.ident.clone(),
        generics: input.generics.clone(),
        group: attrs.group.map(|g| g.value()).unwrap_or_default(),
        version: attrs.version.map(|g| g.value()).unwrap_or_default(),
        kind: attrs.kind.map(|g| g.value()).unwrap_or_default(),
        list_item,
    })
}

/// The element type of `Vec<T>`.
fn vec_item(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != "Vec" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// `widget` → `Widget`.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
