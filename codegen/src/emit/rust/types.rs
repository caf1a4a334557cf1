//! Typed structs with Kubernetes' JSON encoding, and the `…List` type of every kind.
//!
//! Deserialization is derived (every field defaults when absent, `null` reads as empty); the
//! `Default` of a struct is emitted with the definition's `#[default]` markers, so an absent
//! field, a `null` one and a new object all get the marker's value; serialization is emitted
//! by hand so that `apiVersion`/`kind` come first on kinds and lists,
//! `Option`s are left out when `None` and lists/maps when empty unless `#[json(always)]`, and
//! inline (`#[json(inline)]`) structs are flattened into their parent.

use proc_macro2::TokenStream;
use quote::quote;

use heck::ToSnakeCase;
use quote::format_ident;

use super::util::{doc_attrs, ident, json_tokens, rust_type};
use crate::model::{FieldModel, StructModel, TypeRef, VersionModel};

/// Emits every struct of a version, plus the `…List` types of its kinds.
pub fn emit_types(version: &VersionModel) -> TokenStream {
    let mut out = TokenStream::new();
    for s in &version.structs {
        out.extend(emit_struct(version, s));
        if let Some(kind) = &s.kind {
            out.extend(emit_list(version, &kind.name));
        }
    }
    out
}

/// Whether a field's serde attributes should read `null` as the empty value.
fn null_tolerant(f: &FieldModel) -> bool {
    !matches!(f.ty, TypeRef::Option(_)) && !f.json_inline
}

/// The function returning a field's marker default: `__default_widget_spec_replicas`.
pub fn default_fn(s: &StructModel, f: &FieldModel) -> proc_macro2::Ident {
    format_ident!("__default_{}_{}", s.name.to_snake_case(), f.name)
}

/// The function reading a defaulted field, `null` as its default: `__de_widget_spec_replicas`.
fn de_fn(s: &StructModel, f: &FieldModel) -> proc_macro2::Ident {
    format_ident!("__de_{}_{}", s.name.to_snake_case(), f.name)
}

/// A Rust expression of type `t` for a `#[default]` literal (checked to fit by `check`).
pub fn default_expr(t: &TypeRef, d: &serde_json::Value) -> TokenStream {
    use serde_json::Value as J;
    match (t, d) {
        (TypeRef::Bool, J::Bool(b)) => quote!(#b),
        (TypeRef::I32, J::Number(n)) if n.as_i64().is_some() => {
            let v = proc_macro2::Literal::i32_suffixed(n.as_i64().unwrap_or_default() as i32);
            quote!(#v)
        }
        (TypeRef::I64, J::Number(n)) if n.as_i64().is_some() => {
            let v = proc_macro2::Literal::i64_suffixed(n.as_i64().unwrap_or_default());
            quote!(#v)
        }
        (TypeRef::F64, J::Number(n)) => {
            let v = proc_macro2::Literal::f64_suffixed(n.as_f64().unwrap_or_default());
            quote!(#v)
        }
        (TypeRef::String, J::String(v)) => quote!(::std::string::String::from(#v)),
        (TypeRef::Quantity, J::String(v)) => {
            quote!(::apimachinery::meta::Quantity(::std::string::String::from(#v)))
        }
        (TypeRef::Quantity, J::Number(n)) => {
            let v = n.to_string();
            quote!(::apimachinery::meta::Quantity(::std::string::String::from(#v)))
        }
        (TypeRef::IntOrString, J::Number(n)) if n.as_i64().is_some() => {
            let v = proc_macro2::Literal::i32_suffixed(n.as_i64().unwrap_or_default() as i32);
            quote!(::apimachinery::meta::IntOrString::Int(#v))
        }
        (TypeRef::IntOrString, J::String(v)) => {
            quote!(::apimachinery::meta::IntOrString::String(::std::string::String::from(#v)))
        }
        (TypeRef::Option(inner), d) => {
            let e = default_expr(inner, d);
            quote!(::std::option::Option::Some(#e))
        }
        (TypeRef::Vec(inner), J::Array(items)) => {
            let items = items.iter().map(|i| default_expr(inner, i));
            quote!(::std::vec![#(#items),*])
        }
        // Times and free-form JSON are read from the literal's JSON form.
        (t, d) => {
            let ty = rust_type(t);
            let j = json_tokens(d);
            quote!(::apimachinery::__private::serde_json::from_value::<#ty>(#j).unwrap_or_default())
        }
    }
}

/// The Rust type of a field: its type, with the box of a `#[boxed]` field (`Option<Box<T>>`).
pub fn field_type(f: &FieldModel) -> TokenStream {
    if !f.boxed {
        return rust_type(&f.ty);
    }
    match &f.ty {
        TypeRef::Option(inner) => {
            let i = rust_type(inner);
            quote!(::std::option::Option<::std::boxed::Box<#i>>)
        }
        other => {
            let i = rust_type(other);
            quote!(::std::boxed::Box<#i>)
        }
    }
}

/// Emits a struct whose JSON encoding is written by hand (`#[json(custom)]`): the struct, its
/// `Default`, and no serde impls (the group's `hooks.rs` has them).
fn emit_custom_struct(s: &StructModel) -> TokenStream {
    let name = ident(&s.name);
    let docs = doc_attrs(&s.docs);
    let fields = s.fields.iter().map(|f| {
        let (fname, ty, fdocs) = (ident(&f.name), field_type(f), doc_attrs(&f.docs));
        quote! { #fdocs pub #fname: #ty, }
    });
    quote! {
        #docs
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct #name { #(#fields)* }
    }
}

/// Emits one struct with its derives, its `Default` and its `Serialize` impl.
fn emit_struct(version: &VersionModel, s: &StructModel) -> TokenStream {
    if s.json_custom {
        return emit_custom_struct(s);
    }
    let name = ident(&s.name);
    let docs = doc_attrs(&s.docs);
    let mut helpers = TokenStream::new();
    let fields = s.fields.iter().map(|f| {
        let fname = ident(&f.name);
        let ty = field_type(f);
        let fdocs = doc_attrs(&f.docs);
        let json = &f.json_name;
        let serde_attr = if f.json_inline {
            quote!(#[serde(flatten)])
        } else if f.default.is_some() {
            let de = de_fn(s, f).to_string();
            quote!(#[serde(rename = #json, deserialize_with = #de)])
        } else if omits_zero(f) {
            // Encoding leaves the zero out (Go's `omitempty` on a by-value field), so decoding
            // reads it as unset: the object survives a JSON round trip unchanged.
            quote!(#[serde(rename = #json, default, deserialize_with = "::apimachinery::serde_util::zero_as_none")])
        } else if null_tolerant(f) {
            quote!(#[serde(rename = #json, deserialize_with = "::apimachinery::serde_util::null_default")])
        } else {
            quote!(#[serde(rename = #json)])
        };
        quote! { #fdocs #serde_attr pub #fname: #ty, }
    }).collect::<Vec<_>>();
    let defaults = s.fields.iter().map(|f| {
        let fname = ident(&f.name);
        match &f.default {
            Some(_) => {
                let d = default_fn(s, f);
                quote!(#fname: #d(),)
            }
            None => quote!(#fname: ::std::default::Default::default(),),
        }
    });
    for f in s
        .fields
        .iter()
        .filter(|f| f.default.is_some() && !f.json_inline)
    {
        let ty = rust_type(&f.ty);
        let (d, de) = (default_fn(s, f), de_fn(s, f));
        let expr = default_expr(&f.ty, f.default.as_ref().expect("filtered on a default"));
        // A by-value field's zero value is unset to Go's defaulting, as `null` is.
        let read = if f.proto_by_value {
            quote!(::apimachinery::serde_util::null_or_zero(d, #d))
        } else {
            quote!(::apimachinery::serde_util::null_or(d, #d))
        };
        helpers.extend(quote! {
            #[doc(hidden)]
            fn #d() -> #ty { #expr }
            #[doc(hidden)]
            fn #de<'de, D: ::apimachinery::__private::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<#ty, D::Error> {
                #read
            }
        });
    }
    let object_derive = match &s.kind {
        Some(kind) => {
            let (group, ver, k) = (&version.group, &version.version, &kind.name);
            quote! {
                #[derive(::apimachinery::object::Object)]
                #[object(group = #group, version = #ver, kind = #k)]
            }
        }
        None => TokenStream::new(),
    };
    let header = if s.kind.is_some() {
        quote! {
            map.serialize_entry("apiVersion", <Self as ::apimachinery::object::Object>::API_VERSION)?;
            map.serialize_entry("kind", <Self as ::apimachinery::object::Object>::KIND)?;
        }
    } else {
        TokenStream::new()
    };
    let entries = s.fields.iter().map(serialize_entry);
    quote! {
        #docs
        #[derive(Clone, Debug, PartialEq, ::apimachinery::__private::serde::Deserialize)]
        #object_derive
        #[serde(crate = "::apimachinery::__private::serde", default)]
        pub struct #name { #(#fields)* }

        impl ::std::default::Default for #name {
            fn default() -> Self {
                Self { #(#defaults)* }
            }
        }

        #helpers

        impl #name {
            /// Writes this struct's JSON fields into a map being serialized (used for inline
            /// fields as well as by `Serialize`).
            #[doc(hidden)]
            pub fn serialize_fields<M: ::apimachinery::__private::serde::ser::SerializeMap>(&self, map: &mut M) -> ::std::result::Result<(), M::Error> {
                #header
                #(#entries)*
                ::std::result::Result::Ok(())
            }
        }

        impl ::apimachinery::__private::serde::Serialize for #name {
            fn serialize<S: ::apimachinery::__private::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::apimachinery::__private::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(::std::option::Option::None)?;
                self.serialize_fields(&mut map)?;
                map.end()
            }
        }
    }
}

/// Whether JSON leaves the field's zero value out: a Go by-value `omitempty` scalar (not a
/// time, whose zero is never held as `Some`), unless `#[json(keep_zero)]`.
fn omits_zero(f: &FieldModel) -> bool {
    f.omit_empty()
        && f.proto_by_value
        && !f.json_keep_zero
        && !f.json_inline
        && f.default.is_none()
        && matches!(&f.ty, TypeRef::Option(inner) if !matches!(inner.as_ref(), TypeRef::Time | TypeRef::MicroTime))
}

/// The statement writing one field, honouring omit-empty rules.
fn serialize_entry(f: &FieldModel) -> TokenStream {
    let fname = ident(&f.name);
    let json = &f.json_name;
    if f.json_inline {
        return quote! { self.#fname.serialize_fields(map)?; };
    }
    if let Some(float) = serialize_float(f) {
        return float;
    }
    if !f.omit_empty() {
        return quote! { map.serialize_entry(#json, &self.#fname)?; };
    }
    match &f.ty {
        // A Go by-value `omitempty` scalar: its zero value is left out too, as Go leaves it out
        // (unless `#[json(keep_zero)]`; a time's zero is Go's zero time, never held as `Some`).
        TypeRef::Option(inner)
            if f.proto_by_value
                && !f.json_keep_zero
                && !matches!(inner.as_ref(), TypeRef::Time | TypeRef::MicroTime) =>
        {
            let inner = rust_type(inner);
            quote! {
                if let ::std::option::Option::Some(v) = &self.#fname
                    && *v != <#inner as ::std::default::Default>::default()
                {
                    map.serialize_entry(#json, v)?;
                }
            }
        }
        TypeRef::Option(_) => quote! {
            if let ::std::option::Option::Some(v) = &self.#fname { map.serialize_entry(#json, v)?; }
        },
        _ => quote! {
            if !self.#fname.is_empty() { map.serialize_entry(#json, &self.#fname)?; }
        },
    }
}

/// The statement writing an `f64` field (or `Option<f64>`) as Go writes a `float64`: a whole
/// number without a fraction (`0`, not `0.0`), so that JSON read back writes the same.
fn serialize_float(f: &FieldModel) -> Option<TokenStream> {
    let fname = ident(&f.name);
    let json = &f.json_name;
    let go = quote!(::apimachinery::serde_util::GoFloat);
    match &f.ty {
        TypeRef::F64 => Some(quote! { map.serialize_entry(#json, &#go(self.#fname))?; }),
        TypeRef::Option(inner) if **inner == TypeRef::F64 => {
            let zero_left_out = f.proto_by_value && !f.json_keep_zero;
            Some(if !f.omit_empty() {
                quote! { map.serialize_entry(#json, &self.#fname.map(#go))?; }
            } else if zero_left_out {
                quote! {
                    if let ::std::option::Option::Some(v) = self.#fname && v != 0.0 {
                        map.serialize_entry(#json, &#go(v))?;
                    }
                }
            } else {
                quote! {
                    if let ::std::option::Option::Some(v) = self.#fname { map.serialize_entry(#json, &#go(v))?; }
                }
            })
        }
        _ => None,
    }
}

/// Emits the `…List` type of a kind.
fn emit_list(version: &VersionModel, kind: &str) -> TokenStream {
    let list_name = ident(&format!("{kind}List"));
    let item = ident(kind);
    let (group, ver, list_kind) = (&version.group, &version.version, format!("{kind}List"));
    let doc = format!(" A list of {kind} objects.");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, Default, PartialEq, ::apimachinery::__private::serde::Deserialize, ::apimachinery::object::Object)]
        #[object(group = #group, version = #ver, kind = #list_kind, list)]
        #[serde(crate = "::apimachinery::__private::serde", default)]
        pub struct #list_name {
            /// Standard list metadata.
            #[serde(rename = "metadata")]
            pub metadata: ::apimachinery::meta::ListMeta,
            /// The objects.
            #[serde(rename = "items", deserialize_with = "::apimachinery::serde_util::null_default")]
            pub items: ::std::vec::Vec<#item>,
        }

        impl ::apimachinery::__private::serde::Serialize for #list_name {
            fn serialize<S: ::apimachinery::__private::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::apimachinery::__private::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(::std::option::Option::Some(4))?;
                map.serialize_entry("apiVersion", <Self as ::apimachinery::object::ListObject>::API_VERSION)?;
                map.serialize_entry("kind", <Self as ::apimachinery::object::ListObject>::KIND)?;
                map.serialize_entry("metadata", &self.metadata)?;
                map.serialize_entry("items", &self.items)?;
                map.end()
            }
        }
    }
}
