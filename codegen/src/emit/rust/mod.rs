//! Rust emission: typed structs, conversions, schema walkers and kind registrations.
//!
//! Layout of the output, per group `<g>` (module name of the group, such as `example_dev`):
//!
//! - `<g>.rs`: `pub mod <version> { … }` per served version and `pub mod internal { … }` for
//!   the hub, the private `hooks` module (the items of `hooks.rs`), the `strategy` and
//!   `admission` modules (`strategy.rs`, `admission.rs`), the `TypedObject` impl of every
//!   kind's struct, one `<KIND>_KIND` table per kind, and `pub fn register(&mut Scheme)`.
//! - `apiary_generated.rs`: `pub mod <g>` including each group file, and `register_all`.
//!
//! Each version module holds, per struct: the struct (serde as Kubernetes encodes it, its
//! `Default` with the marker defaults), its `apimachinery::markers::Validate` walk and
//! `SHAPE_<STRUCT>` structure, the conversions to and from the hub; per kind: the `<Kind>List`
//! type and the `<KIND>_RESOURCE` `ResourceInfo`.

pub mod convert;
pub mod kinds;
pub mod sample;
pub mod schema;
pub mod types;
pub mod util;

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::{ApiModel, GroupModel, VersionModel};
use util::{doc_attrs, ident};

/// Formats a token stream as a Rust file with `prettyplease`.
pub fn format_file(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}

/// The items of one version's module.
pub fn version_items(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let mut out = types::emit_types(version);
    if !version.is_internal {
        out.extend(schema::emit_schemas(version));
        out.extend(sample::emit_samples(version));
        out.extend(kinds::emit_resource_infos(group, version));
        out.extend(kinds::emit_default_hooks(group, version));
        out.extend(crate::emit::proto::emit_proto_impls(group, version));
    }
    out.extend(convert::emit_conversions(group, version));
    out
}

/// The items of the shared version (`meta.k8s.io/v1`), which apimachinery's build script
/// includes into `apimachinery::meta`: per struct, the struct with its serde, `Validate`,
/// `MarkerValue`, `SHAPE_<STRUCT>`, `Sample` and `ProtoMessage`. The shared version has no
/// kinds, hub, conversions or registration.
pub fn shared_items(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let mut out = types::emit_types(version);
    out.extend(schema::emit_schemas(version));
    out.extend(sample::emit_samples(version));
    out.extend(crate::emit::proto::emit_proto_impls(group, version));
    out
}

/// The Rust source of the shared version (see [`shared_items`]).
pub fn shared_file(group: &GroupModel, version: &VersionModel) -> String {
    format_file(shared_items(group, version))
}

/// One version's module item.
fn version_module(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let name = ident(&version.version);
    let docs = if version.docs.is_empty() {
        doc_attrs(&format!("The `{}` version of the group.", version.version))
    } else {
        doc_attrs(&version.docs)
    };
    let items = version_items(group, version);
    quote! {
        #docs
        #[allow(clippy::all, unused_mut, unused_variables)]
        pub mod #name {
            #items
        }
    }
}

/// The tokens of one group's file.
fn group_tokens(group: &GroupModel) -> TokenStream {
    let mut out = TokenStream::new();
    for v in group.versions.iter().chain(group.internal.iter()) {
        out.extend(version_module(group, v));
    }
    let mods: Vec<_> = group
        .versions
        .iter()
        .chain(group.internal.iter())
        .map(|v| ident(&v.version))
        .collect();
    if let Some(hooks) = &group.hooks {
        let items = &hooks.items;
        out.extend(quote! {
            /// The hand-written hooks of `hooks.rs`.
            #[allow(dead_code, unused_imports, clippy::all)]
            mod hooks {
                use super::{#(#mods),*};
                use ::apimachinery::errors::FieldError;
                #(#items)*
            }
        });
    }
    if let Some(strategy) = &group.strategy {
        let items = &strategy.items;
        out.extend(quote! {
            /// The hand-written strategies of `strategy.rs`.
            #[allow(unused_imports)]
            pub mod strategy {
                use super::{#(#mods),*};
                #(#items)*
            }
        });
    }
    if let Some(admission) = &group.admission {
        let items = &admission.items;
        out.extend(quote! {
            /// The hand-written admission plugins of `admission.rs`.
            #[allow(unused_imports)]
            pub mod admission {
                use super::{#(#mods),*};
                #(#items)*
            }
        });
    }
    out.extend(kinds::emit_group_registration(group));
    out.extend(sample::emit_sample_dispatch(group));
    out
}

/// The Rust source of one group's module body.
pub fn group_file(group: &GroupModel) -> String {
    format_file(group_tokens(group))
}

/// The Rust source of one version's module body alone (for `codegen show`).
pub fn version_file(group: &GroupModel, version: &VersionModel) -> String {
    format_file(version_items(group, version))
}

/// The crate-level file that includes every group and registers them (core first); the shared
/// group is not among them (its Rust is `apimachinery::meta`).
pub fn root_file(model: &ApiModel) -> String {
    let mut groups: Vec<&GroupModel> = model.api_groups().collect();
    groups.sort_by_key(|g| (!g.name.is_empty(), g.name.clone()));
    let mods = groups.iter().map(|g| {
        let m = ident(&g.module_name());
        let file = format!("/{}.rs", g.module_name());
        let shown = if g.name.is_empty() {
            "core"
        } else {
            g.name.as_str()
        };
        let docs = g
            .versions
            .first()
            .map(|v| v.docs.clone())
            .unwrap_or_default();
        let doc = doc_attrs(&if docs.is_empty() {
            format!("The `{shown}` API group.")
        } else {
            docs
        });
        quote! {
            #doc
            pub mod #m { include!(concat!(env!("OUT_DIR"), #file)); }
        }
    });
    let regs = groups.iter().map(|g| {
        let m = ident(&g.module_name());
        quote!(#m::register(scheme);)
    });
    let samples = groups.iter().map(|g| {
        let m = ident(&g.module_name());
        let name = &g.name;
        quote!(#name => #m::sample_object(version, kind, sampler),)
    });
    format_file(quote! {
        #(#mods)*

        /// A random object of a served (group, version, kind) in its JSON form, for property tests.
        pub fn sample_object(group: &str, version: &str, kind: &str, sampler: &mut ::apimachinery::sample::Sampler) -> ::std::option::Option<::apimachinery::__private::serde_json::Value> {
            match group {
                #(#samples)*
                _ => ::std::option::Option::None,
            }
        }

        /// Registers every group's kinds and OpenAPI documents, the core group first.
        pub fn register_all(scheme: &mut ::apimachinery::Scheme) {
            #(#regs)*
        }
    })
}
