//! `#[derive(Object)]`: attributes → model → checks → emission.

mod attr;
mod emit;
mod model;

use proc_macro2::TokenStream;

/// Expands the derive, or returns every error found.
pub fn expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let (attrs, attr_errors) = attr::parse(input);
    let model = model::build(input, attrs, attr_errors)?;
    Ok(emit::emit(&model))
}
