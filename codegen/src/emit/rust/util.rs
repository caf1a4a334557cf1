//! Small token helpers shared by the Rust emitters.

use heck::ToShoutySnakeCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::model::{ExternRef, TypeRef};

/// Rust keywords that need a raw identifier as field names.
const KEYWORDS: [&str; 38] = [
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "final", "override", "gen",
];

/// An identifier, raw (`r#type`) when it is a keyword.
pub fn ident(name: &str) -> Ident {
    if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// The identifier of a constant derived from a name: `Widget` → `WIDGET`.
pub fn const_ident(name: &str) -> Ident {
    Ident::new(&name.to_shouty_snake_case(), Span::call_site())
}

/// `#[doc = "…"]` attributes for a doc comment (one per line), or nothing.
pub fn doc_attrs(docs: &str) -> TokenStream {
    if docs.is_empty() {
        return TokenStream::new();
    }
    let lines = docs.lines().map(|l| format!(" {l}"));
    quote! { #(#[doc = #lines])* }
}

/// The path of an item of an extern struct's version module:
/// `::kubernetes_api::core::v1::<item>`.
pub fn extern_item(r: &ExternRef, item: &Ident) -> TokenStream {
    let (krate, group, version) = (
        ident(&r.rust_crate),
        ident(&r.group_module),
        ident(&r.version),
    );
    quote!(::#krate::#group::#version::#item)
}

/// The Rust type of a field type.
pub fn rust_type(t: &TypeRef) -> TokenStream {
    match t {
        TypeRef::Bool => quote!(bool),
        TypeRef::I32 => quote!(i32),
        TypeRef::I64 => quote!(i64),
        TypeRef::F64 => quote!(f64),
        TypeRef::String => quote!(::std::string::String),
        TypeRef::Bytes => quote!(::apimachinery::meta::Bytes),
        TypeRef::Time => quote!(::apimachinery::meta::Time),
        TypeRef::MicroTime => quote!(::apimachinery::meta::MicroTime),
        TypeRef::Quantity => quote!(::apimachinery::meta::Quantity),
        TypeRef::IntOrString => quote!(::apimachinery::meta::IntOrString),
        TypeRef::RawExtension => quote!(::apimachinery::meta::RawExtension),
        TypeRef::Duration => quote!(::apimachinery::meta::Duration),
        TypeRef::FieldsV1 => quote!(::apimachinery::meta::FieldsV1),
        TypeRef::Json => quote!(::apimachinery::__private::serde_json::Value),
        TypeRef::Meta(m) => meta_type(m),
        TypeRef::Extern(r) => extern_item(r, &ident(&r.name)),
        TypeRef::Struct(n) => {
            let i = ident(n);
            quote!(#i)
        }
        TypeRef::Option(inner) => {
            let i = rust_type(inner);
            quote!(::std::option::Option<#i>)
        }
        TypeRef::Vec(inner) => {
            let i = rust_type(inner);
            quote!(::std::vec::Vec<#i>)
        }
        TypeRef::Map(inner) => {
            let i = rust_type(inner);
            quote!(::std::collections::BTreeMap<::std::string::String, #i>)
        }
    }
}

/// The path of a struct of the shared version (`meta.k8s.io/v1`), which apimachinery's build
/// script generates into `apimachinery::meta`.
pub fn meta_type(name: &str) -> TokenStream {
    let i = ident(name);
    quote!(::apimachinery::meta::#i)
}

/// An expression building a JSON literal value.
pub fn json_tokens(v: &serde_json::Value) -> TokenStream {
    match v {
        serde_json::Value::Null => quote!(::apimachinery::__private::serde_json::Value::Null),
        serde_json::Value::Bool(b) => {
            quote!(::apimachinery::__private::serde_json::Value::Bool(#b))
        }
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                quote!(::apimachinery::__private::serde_json::Value::from(#i))
            } else {
                let f = n.as_f64().unwrap_or_default();
                quote!(::apimachinery::__private::serde_json::Value::from(#f))
            }
        }
        serde_json::Value::String(s) => {
            quote!(::apimachinery::__private::serde_json::Value::from(#s))
        }
        serde_json::Value::Array(items) => {
            let items = items.iter().map(json_tokens);
            quote!(::apimachinery::__private::serde_json::Value::Array(
                ::std::vec![#(#items),*]
            ))
        }
        serde_json::Value::Object(map) => {
            let entries = map.iter().map(|(k, v)| {
                let v = json_tokens(v);
                quote!((::std::string::String::from(#k), #v))
            });
            quote!(::apimachinery::__private::serde_json::Value::Object([#(#entries),*].into_iter().collect()))
        }
    }
}
