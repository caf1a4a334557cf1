//! Emission of the `Object` / `ListObject` impls.

use proc_macro2::TokenStream;
use quote::quote;

use super::model::ObjectModel;

/// Emits the trait impl.
pub fn emit(m: &ObjectModel) -> TokenStream {
    let ident = &m.ident;
    let (impl_generics, ty_generics, where_clause) = m.generics.split_for_impl();
    let (group, version, kind) = (&m.group, &m.version, &m.kind);
    let api_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    match &m.list_item {
        None => quote! {
            impl #impl_generics ::apimachinery::object::Object for #ident #ty_generics #where_clause {
                const GROUP: &'static str = #group;
                const VERSION: &'static str = #version;
                const KIND: &'static str = #kind;
                const API_VERSION: &'static str = #api_version;
                fn metadata(&self) -> &::apimachinery::meta::ObjectMeta { &self.metadata }
                fn metadata_mut(&mut self) -> &mut ::apimachinery::meta::ObjectMeta { &mut self.metadata }
            }
        },
        Some(item) => quote! {
            impl #impl_generics ::apimachinery::object::ListObject for #ident #ty_generics #where_clause {
                type Item = #item;
                const GROUP: &'static str = #group;
                const VERSION: &'static str = #version;
                const KIND: &'static str = #kind;
                const API_VERSION: &'static str = #api_version;
                fn list_metadata(&self) -> &::apimachinery::meta::ListMeta { &self.metadata }
                fn items(&self) -> &[#item] { &self.items }
            }
        },
    }
}
