//! Conversion functions between a version and its group's hub.
//!
//! For each struct `S` planned by [`crate::convert::plan`], the version module gets
//! `pub fn s_to_<hub>(src: &S) -> <hub>::S` and `pub fn s_from_<hub>(src: &<hub>::S) -> S`,
//! converting matching fields and then calling the hand-written hooks when needed.

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::util::ident;
use crate::convert::{StructPlan, hook_names, plan};
use crate::model::{GroupModel, TypeRef, VersionModel};

/// The name of the conversion function of a struct: `widget_spec_to_internal`.
pub fn to_hub_fn(struct_name: &str, hub: &str) -> proc_macro2::Ident {
    format_ident!("{}_to_{}", struct_name.to_snake_case(), hub)
}

/// The name of the reverse conversion function: `widget_spec_from_internal`.
pub fn from_hub_fn(struct_name: &str, hub: &str) -> proc_macro2::Ident {
    format_ident!("{}_from_{}", struct_name.to_snake_case(), hub)
}

/// Emits the conversion functions of a version (nothing for the hub itself). Only structs with
/// a same-named struct in the hub are converted, so a kind that is its own hub
/// ([`GroupModel::kind_own_version`]), and the structs of its version that the hub lacks, get
/// none.
pub fn emit_conversions(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let Some(hub) = group.hub() else {
        return TokenStream::new();
    };
    if hub.version == version.version {
        return TokenStream::new();
    }
    let hub_mod = ident(&hub.version);
    let hub_name = hub.version.as_str();
    plan(version, hub)
        .iter()
        .map(|p| {
            let s = ident(&p.from.name);
            let to_fn = to_hub_fn(&p.from.name, hub_name);
            let from_fn = from_hub_fn(&p.from.name, hub_name);
            let to_fields = field_inits(p, true, hub_name);
            let from_fields = field_inits(p, false, hub_name);
            let (to_hook, from_hook) = hook_names(&version.version, hub_name, &p.from.name);
            let (to_call, from_call) = if p.needs_hooks() {
                let (a, b) = (format_ident!("{}", to_hook), format_ident!("{}", from_hook));
                (
                    quote! { super::hooks::#a(src, &mut dst); },
                    quote! { super::hooks::#b(src, &mut dst); },
                )
            } else {
                (TokenStream::new(), TokenStream::new())
            };
            let fill = |all: bool| {
                if all {
                    TokenStream::new()
                } else {
                    quote!(..::std::default::Default::default())
                }
            };
            let to_fill = fill(p.hub_only.is_empty());
            let from_fill = fill(p.version_only.is_empty());
            let mutability = |hooks: bool| {
                if hooks {
                    quote!(mut)
                } else {
                    TokenStream::new()
                }
            };
            let m = mutability(p.needs_hooks());
            let to_doc = format!(
                " Converts `{}` to the hub version `{hub_name}`.",
                p.from.name
            );
            let from_doc = format!(
                " Converts `{}` from the hub version `{hub_name}`.",
                p.from.name
            );
            quote! {
                #[doc = #to_doc]
                pub fn #to_fn(src: &#s) -> super::#hub_mod::#s {
                    let #m dst = super::#hub_mod::#s { #(#to_fields,)* #to_fill };
                    #to_call
                    dst
                }

                #[doc = #from_doc]
                pub fn #from_fn(src: &super::#hub_mod::#s) -> #s {
                    let #m dst = #s { #(#from_fields,)* #from_fill };
                    #from_call
                    dst
                }
            }
        })
        .collect()
}

/// The `field: expr` initializers of the matched fields, converting toward or from the hub.
fn field_inits(p: &StructPlan<'_>, to_hub: bool, hub: &str) -> Vec<TokenStream> {
    let src_struct = if to_hub { p.from } else { p.to };
    p.matched
        .iter()
        .filter_map(|name| {
            let f = src_struct.field(name)?;
            let fname = ident(&f.name);
            let expr = convert_expr(quote!(&src.#fname), &f.ty, to_hub, hub);
            Some(quote!(#fname: #expr))
        })
        .collect()
}

/// An expression converting the value behind reference `src` of type `t`.
fn convert_expr(src: TokenStream, t: &TypeRef, to_hub: bool, hub: &str) -> TokenStream {
    if t.struct_name().is_none() {
        return quote!(::std::clone::Clone::clone(#src));
    }
    match t {
        TypeRef::Struct(n) => {
            let f = if to_hub {
                to_hub_fn(n, hub)
            } else {
                from_hub_fn(n, hub)
            };
            quote!(#f(#src))
        }
        TypeRef::Option(i) => {
            let inner = convert_expr(quote!(x), i, to_hub, hub);
            quote!((#src).as_ref().map(|x| #inner))
        }
        TypeRef::Vec(i) => {
            let inner = convert_expr(quote!(x), i, to_hub, hub);
            quote!((#src).iter().map(|x| #inner).collect())
        }
        TypeRef::Map(i) => {
            let inner = convert_expr(quote!(x), i, to_hub, hub);
            quote!((#src).iter().map(|(k, x)| (::std::clone::Clone::clone(k), #inner)).collect())
        }
        _ => quote!(::std::clone::Clone::clone(#src)),
    }
}
