//! The Rust protobuf codecs of one version's structs: `ProtoMessage` impls (fields written in
//! field-number order, as gogo-protobuf writes them) and the per-kind entry points the
//! generated `TypedObject` impls call.
//!
//! Field encoding is delegated to `apimachinery::protobuf::ProtoField`, whose impls carry the
//! Go rules: plain values are always written, `Option`s when set, `Vec`s and maps per element.
//! Three cases need the model: an `Option<Time>` or `Option<MicroTime>` with `#[json(always)]`
//! or `#[proto(N, by_value)]` is a Go `metav1.Time` held by value, which gogo always writes,
//! as an empty message when zero; an `Option` of a scalar marked `#[proto(N, by_value)]`
//! is a Go by-value `omitempty` field, always written (the zero value for `None`) and read
//! back as `None` when zero; and a `#[proto(skip)]` field is not in the message at all.

use heck::ToSnakeCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use super::schema::field_numbers;
use crate::model::{FieldModel, StructModel, TypeRef, VersionModel};

/// Rust keywords that need a raw identifier as field names (as the type emitter writes them).
const KEYWORDS: [&str; 38] = [
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "final", "override", "gen",
];

/// An identifier, raw (`r#type`) when it is a keyword.
fn ident(name: &str) -> Ident {
    if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// Whether a field is a Go `metav1.Time`/`MicroTime` held by value (`#[json(always)]`, JSON
/// `null` when unset, or `#[proto(N, by_value)]`, left out of JSON when unset).
fn value_time(f: &FieldModel) -> Option<&'static str> {
    if !f.json_always && !f.proto_by_value {
        return None;
    }
    match &f.ty {
        TypeRef::Option(inner) => match inner.as_ref() {
            TypeRef::Time => Some("put_value_time"),
            TypeRef::MicroTime => Some("put_value_micro_time"),
            _ => None,
        },
        _ => None,
    }
}

/// The Rust type of a `#[proto(N, by_value)]` field's value: the scalar inside its `Option`.
fn by_value_type(f: &FieldModel) -> Option<TokenStream> {
    if !f.proto_by_value {
        return None;
    }
    match &f.ty {
        TypeRef::Option(inner) => match inner.as_ref() {
            TypeRef::String => Some(quote!(::std::string::String)),
            TypeRef::Bool => Some(quote!(bool)),
            TypeRef::I32 => Some(quote!(i32)),
            TypeRef::I64 => Some(quote!(i64)),
            TypeRef::F64 => Some(quote!(f64)),
            _ => None,
        },
        _ => None,
    }
}

/// The `ProtoMessage` impl of one struct.
fn message_impl(s: &StructModel) -> TokenStream {
    let name = ident(&s.name);
    let mut numbered: Vec<(u32, &FieldModel)> = field_numbers(s)
        .into_iter()
        .zip(&s.fields)
        .filter_map(|(n, f)| n.map(|n| (n, f)))
        .collect();
    numbered.sort_by_key(|(n, _)| *n);
    let encodes = numbered.iter().map(|(number, f)| {
        let fname = ident(&f.name);
        if let Some(ty) = by_value_type(f) {
            return quote! {
                match &self.#fname {
                    ::std::option::Option::Some(v) => ::apimachinery::protobuf::ProtoField::encode_field(v, #number, buf),
                    ::std::option::Option::None => ::apimachinery::protobuf::ProtoField::encode_field(
                        &<#ty as ::std::default::Default>::default(), #number, buf),
                }
            };
        }
        match value_time(f) {
            Some(helper) => {
                let helper = Ident::new(helper, Span::call_site());
                quote! { ::apimachinery::protobuf::meta::#helper(buf, #number, &self.#fname); }
            }
            None => quote! { ::apimachinery::protobuf::ProtoField::encode_field(&self.#fname, #number, buf); },
        }
    });
    let merges = numbered.iter().map(|(number, f)| {
        let fname = ident(&f.name);
        if let Some(ty) = by_value_type(f) {
            // Go cannot tell an unset by-value field from its zero value, and defaults it:
            // a zero value reads as the marker default when there is one.
            let zero = if f.default.is_some() {
                let d = crate::emit::rust::types::default_fn(s, f);
                quote!(#d())
            } else {
                quote!(::std::option::Option::None)
            };
            return quote! {
                #number => {
                    let mut v = <#ty as ::std::default::Default>::default();
                    ::apimachinery::protobuf::ProtoField::merge_field_value(&mut v, field, wire, dec)?;
                    self.#fname = if v == <#ty as ::std::default::Default>::default() {
                        #zero
                    } else {
                        ::std::option::Option::Some(v)
                    };
                    ::std::result::Result::Ok(())
                }
            };
        }
        quote! { #number => ::apimachinery::protobuf::ProtoField::merge_field_value(&mut self.#fname, field, wire, dec), }
    });
    quote! {
        impl ::apimachinery::protobuf::ProtoMessage for #name {
            fn encode_raw(&self, buf: &mut ::std::vec::Vec<u8>) {
                #(#encodes)*
            }

            fn merge_field(
                &mut self,
                field: u32,
                wire: ::apimachinery::protobuf::WireType,
                dec: &mut ::apimachinery::protobuf::Decoder<'_>,
            ) -> ::std::result::Result<(), ::apimachinery::protobuf::ProtoError> {
                match field {
                    #(#merges)*
                    _ => dec.skip(wire),
                }
            }
        }

        ::apimachinery::proto_message_field!(#name);
    }
}

/// The `ProtoMessage` impl of a kind's list and the kind's entry points.
fn kind_items(kind: &str) -> TokenStream {
    let kind_ident = ident(kind);
    let list = ident(&format!("{kind}List"));
    let snake = kind.to_snake_case();
    let encode = Ident::new(&format!("encode_protobuf_{snake}"), Span::call_site());
    let decode = Ident::new(&format!("decode_protobuf_{snake}"), Span::call_site());
    let encode_list = Ident::new(&format!("encode_protobuf_{snake}_list"), Span::call_site());
    let decode_list = Ident::new(&format!("decode_protobuf_{snake}_list"), Span::call_site());
    let doc_encode =
        format!(" Encodes a {kind} as its protobuf message (without the `k8s\\0` envelope).");
    let doc_decode = format!(" Decodes a {kind} from its protobuf message (without the envelope).");
    let doc_encode_list =
        format!(" Encodes a {kind}List as its protobuf message (without the envelope).");
    let doc_decode_list =
        format!(" Decodes a {kind}List from its protobuf message (without the envelope).");
    quote! {
        impl ::apimachinery::protobuf::ProtoMessage for #list {
            fn encode_raw(&self, buf: &mut ::std::vec::Vec<u8>) {
                ::apimachinery::protobuf::ProtoField::encode_field(&self.metadata, 1, buf);
                ::apimachinery::protobuf::ProtoField::encode_field(&self.items, 2, buf);
            }

            fn merge_field(
                &mut self,
                field: u32,
                wire: ::apimachinery::protobuf::WireType,
                dec: &mut ::apimachinery::protobuf::Decoder<'_>,
            ) -> ::std::result::Result<(), ::apimachinery::protobuf::ProtoError> {
                match field {
                    1 => ::apimachinery::protobuf::ProtoField::merge_field_value(&mut self.metadata, field, wire, dec),
                    2 => ::apimachinery::protobuf::ProtoField::merge_field_value(&mut self.items, field, wire, dec),
                    _ => dec.skip(wire),
                }
            }
        }

        #[doc = #doc_encode]
        pub fn #encode(obj: &#kind_ident) -> ::std::vec::Vec<u8> {
            ::apimachinery::protobuf::ProtoMessage::encode_to_vec(obj)
        }

        #[doc = #doc_decode]
        pub fn #decode(bytes: &[u8]) -> ::std::result::Result<#kind_ident, ::apimachinery::scheme::CodecError> {
            <#kind_ident as ::apimachinery::protobuf::ProtoMessage>::decode(bytes)
                .map_err(::apimachinery::scheme::CodecError::from)
        }

        #[doc = #doc_encode_list]
        pub fn #encode_list(list: &#list) -> ::std::vec::Vec<u8> {
            ::apimachinery::protobuf::ProtoMessage::encode_to_vec(list)
        }

        #[doc = #doc_decode_list]
        pub fn #decode_list(bytes: &[u8]) -> ::std::result::Result<#list, ::apimachinery::scheme::CodecError> {
            <#list as ::apimachinery::protobuf::ProtoMessage>::decode(bytes)
                .map_err(::apimachinery::scheme::CodecError::from)
        }
    }
}

/// Every codec item of a version.
pub fn emit(version: &VersionModel) -> TokenStream {
    let mut out = TokenStream::new();
    for s in &version.structs {
        out.extend(message_impl(s));
        if let Some(kind) = &s.kind {
            out.extend(kind_items(&kind.name));
        }
    }
    out
}
