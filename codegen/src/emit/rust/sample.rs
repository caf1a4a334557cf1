//! `apimachinery::sample::Sample` impls (random instances for property tests) and the group's
//! `sample_object` dispatcher.

use proc_macro2::TokenStream;
use quote::quote;

use super::util::ident;
use crate::model::{GroupModel, VersionModel};

/// Emits the `Sample` impl of every struct of a version.
pub fn emit_samples(version: &VersionModel) -> TokenStream {
    version
        .structs
        .iter()
        .map(|s| {
            let name = ident(&s.name);
            let fields = s.fields.iter().map(|f| {
                let f = ident(&f.name);
                quote!(#f: ::apimachinery::sample::Sample::sample(s),)
            });
            quote! {
                impl ::apimachinery::sample::Sample for #name {
                    fn sample(s: &mut ::apimachinery::sample::Sampler) -> Self {
                        Self { #(#fields)* }
                    }
                }
            }
        })
        .collect()
}

/// Emits `pub fn sample_object(version, kind, sampler) -> Option<Value>` for a group.
pub fn emit_sample_dispatch(group: &GroupModel) -> TokenStream {
    let arms = group.versions.iter().flat_map(|v| {
        v.kinds().map(move |k| {
            let (ver, kind) = (v.version.as_str(), k.name.as_str());
            let (m, t) = (ident(ver), ident(kind));
            quote! {
                (#ver, #kind) => ::apimachinery::__private::serde_json::to_value(<#m::#t as ::apimachinery::sample::Sample>::sample(sampler)).ok(),
            }
        })
    });
    quote! {
        /// A random object of `kind` at `version` in its JSON form, for property tests.
        pub fn sample_object(version: &str, kind: &str, sampler: &mut ::apimachinery::sample::Sampler) -> ::std::option::Option<::apimachinery::__private::serde_json::Value> {
            match (version, kind) {
                #(#arms)*
                _ => ::std::option::Option::None,
            }
        }
    }
}
