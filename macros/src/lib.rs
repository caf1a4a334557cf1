//! Derive macros for the per-type work of the generated API crate.
//!
//! `apimachinery` re-exports them (`apimachinery::object::Object`), and the generated code names
//! them there: a crate of generated types depends on `apimachinery` alone.
//!
//! Structured like `serde_derive`: this file only holds the entry points; each derive has
//! attribute parsing, a model, checks and emission in its own module. Every mistake becomes a
//! spanned `syn::Error`, all of them reported together; nothing panics on bad input.
//!
//! - `#[derive(Object)]` with `#[object(group = "…", version = "…", kind = "…")]` implements
//!   `apimachinery::object::Object` (GVK constants, metadata accessors, deep copy) for a kind;
//!   with `list` added it implements `apimachinery::object::ListObject` for `<Kind>List`.

mod object;

use proc_macro::TokenStream;

/// Implements `apimachinery::object::Object` (or `ListObject` with `list`) for a struct.
///
/// ```text
/// #[derive(apimachinery::object::Object)]
/// #[object(group = "example.dev", version = "v1", kind = "Widget")]
/// pub struct Widget { pub metadata: ObjectMeta, pub spec: WidgetSpec }
/// ```
#[proc_macro_derive(Object, attributes(object))]
pub fn derive_object(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    object::expand(&input)
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}
