//! Registration: one `ResourceInfo` per (kind, version), one `KindOps` per kind, the group's
//! `register` function, and typed defaulting hooks.

use std::collections::BTreeSet;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::convert::{from_hub_fn, to_hub_fn};
use super::util::{const_ident, ident};
use crate::model::{
    GroupModel, KindModel, Scope, StructModel, TypeRef, VersionModel, default_hook_name,
    ops_type_name, validate_hook_name,
};

/// The name of a kind's `ResourceInfo` constant in its version module: `WIDGET_RESOURCE`.
pub fn resource_const(kind: &str) -> proc_macro2::Ident {
    format_ident!("{}_RESOURCE", const_ident(kind).to_string())
}

/// Emits the `ResourceInfo` constants of a served version's kinds.
pub fn emit_resource_infos(version: &VersionModel) -> TokenStream {
    version
        .kinds()
        .filter_map(|s| s.kind.as_ref())
        .map(|k| {
            let name = resource_const(&k.name);
            let info = resource_info(version, k);
            let doc = format!(
                " The REST mapping and discovery facts of `{}` at `{}`.",
                k.name,
                version.api_version()
            );
            let kind = ident(&k.name);
            let plural = &k.plural;
            let scope = match k.scope {
                Scope::Namespaced => quote!(::k8s_openapi::NamespaceResourceScope),
                Scope::Cluster => quote!(::k8s_openapi::ClusterResourceScope),
            };
            quote! {
                #[doc = #doc]
                pub const #name: ::apimachinery::ResourceInfo = #info;

                #[cfg(feature = "kube")]
                impl crate::kube::KubeKind for #kind {
                    type Scope = #scope;
                    const PLURAL: &'static str = #plural;
                }
            }
        })
        .collect()
}

/// A `ResourceInfo` literal.
fn resource_info(version: &VersionModel, k: &KindModel) -> TokenStream {
    let (group, ver, kind, list_kind) = (&version.group, &version.version, &k.name, k.list_name());
    let (plural, singular) = (&k.plural, &k.singular);
    let scope = match k.scope {
        Scope::Namespaced => quote!(::apimachinery::Scope::Namespaced),
        Scope::Cluster => quote!(::apimachinery::Scope::Cluster),
    };
    let short_names = &k.short_names;
    let categories = &k.categories;
    let verbs = &k.verbs;
    let status = k.status;
    let scale = match &k.scale {
        Some(s) => {
            let (a, b, c) = (&s.spec_replicas, &s.status_replicas, &s.selector);
            quote!(::std::option::Option::Some(::apimachinery::ScaleInfo {
                spec_replicas_path: #a, status_replicas_path: #b, label_selector_path: #c,
            }))
        }
        None => quote!(::std::option::Option::None),
    };
    let columns = k.print_columns.iter().map(|c| {
        let (n, t, f, d, p, j) = (&c.name, &c.type_, &c.format, &c.description, c.priority, &c.json_path);
        quote!(::apimachinery::PrinterColumn { name: #n, type_: #t, format: #f, description: #d, priority: #p, json_path: #j })
    });
    let field_selectors = &k.field_selectors;
    let storage = version.storage;
    let smp = k.strategic_merge_patch;
    let unconditional = k.unconditional_update;
    let create_on_update = k.create_on_update;
    let tracks_generation = !k.no_generation;
    let create_only = k.create_only;
    let proto_package = version.proto_package_or_default();
    quote! {
        ::apimachinery::ResourceInfo {
            group: #group,
            version: #ver,
            kind: #kind,
            list_kind: #list_kind,
            plural: #plural,
            singular: #singular,
            scope: #scope,
            short_names: &[#(#short_names),*],
            categories: &[#(#categories),*],
            verbs: &[#(#verbs),*],
            status_subresource: #status,
            scale: #scale,
            printer_columns: &[#(#columns),*],
            field_selectors: &[#(#field_selectors),*],
            storage_version: #storage,
            strategic_merge_patch: #smp,
            allow_unconditional_update: #unconditional,
            allow_create_on_update: #create_on_update,
            tracks_generation: #tracks_generation,
            create_only: #create_only,
            proto_package: #proto_package,
        }
    }
}

/// The structs of a version whose typed defaulting walk does something: those with a
/// `default_<version>_<struct>` hook, and those containing such a struct.
pub fn hooked_structs(group: &GroupModel, version: &VersionModel) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = version
        .structs
        .iter()
        .filter(|s| {
            group
                .hooks
                .as_ref()
                .is_some_and(|h| h.has(&default_hook_name(&version.version, &s.name)))
        })
        .map(|s| s.name.clone())
        .collect();
    loop {
        let before = set.len();
        for s in &version.structs {
            if s.fields
                .iter()
                .any(|f| f.ty.struct_name().is_some_and(|n| set.contains(n)))
            {
                set.insert(s.name.clone());
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// The name of the typed defaulting walk of a struct: `run_default_hooks_widget_spec`.
fn hooks_fn(struct_name: &str) -> proc_macro2::Ident {
    format_ident!("run_default_hooks_{}", struct_name.to_snake_case())
}

/// Emits the typed defaulting walks of a version's hooked structs.
pub fn emit_default_hooks(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let hooked = hooked_structs(group, version);
    version
        .structs
        .iter()
        .filter(|s| hooked.contains(&s.name))
        .map(|s| {
            let f = hooks_fn(&s.name);
            let ty = ident(&s.name);
            let own = if group.hooks.as_ref().is_some_and(|h| h.has(&default_hook_name(&version.version, &s.name))) {
                let hook = format_ident!("{}", default_hook_name(&version.version, &s.name));
                quote!(super::hooks::#hook(obj);)
            } else {
                TokenStream::new()
            };
            let children = s.fields.iter().filter_map(|field| {
                let n = field.ty.struct_name().filter(|n| hooked.contains(*n))?;
                let child = hooks_fn(n);
                let fname = ident(&field.name);
                Some(match &field.ty {
                    TypeRef::Struct(_) => quote!(#child(&mut obj.#fname);),
                    TypeRef::Option(i) if matches!(**i, TypeRef::Struct(_)) => {
                        quote!(if let ::std::option::Option::Some(x) = obj.#fname.as_mut() { #child(x); })
                    }
                    TypeRef::Vec(i) if matches!(**i, TypeRef::Struct(_)) => quote!(obj.#fname.iter_mut().for_each(#child);),
                    TypeRef::Map(i) if matches!(**i, TypeRef::Struct(_)) => {
                        quote!(obj.#fname.values_mut().for_each(#child);)
                    }
                    _ => TokenStream::new(),
                })
            });
            let doc = format!(" Runs the hand-written defaulting hooks of `{}` and of the structs inside it.", s.name);
            quote! {
                #[doc = #doc]
                pub fn #f(obj: &mut #ty) {
                    #(#children)*
                    #own
                }
            }
        })
        .collect()
}

/// Emits the `KindOps` of every kind of a group and the group's `register` function.
pub fn emit_group_registration(group: &GroupModel) -> TokenStream {
    let mut out = TokenStream::new();
    let mut adds = Vec::new();
    for kind in group.kind_names() {
        out.extend(emit_kind_ops(group, &kind));
        let ops = format_ident!("{}", ops_type_name(&kind));
        adds.push(quote!(scheme.add_kind(::std::sync::Arc::new(#ops));));
    }
    let docs = group.served_versions().map(|v| {
        let (g, ver) = (&v.group, &v.version);
        let v3 = format!("/{}", super::super::openapi_path(group, v, "v3"));
        let v2 = format!("/{}", super::super::openapi_path(group, v, "v2"));
        quote! {
            scheme.add_openapi(::apimachinery::scheme::OpenApiDocs {
                group: #g,
                version: #ver,
                v3: include_str!(concat!(env!("OUT_DIR"), #v3)),
                v2: include_str!(concat!(env!("OUT_DIR"), #v2)),
            });
        }
    });
    let doc = format!(
        " Registers every kind and OpenAPI document of the `{}` group.",
        display_group(&group.name)
    );
    out.extend(quote! {
        #[doc = #doc]
        pub fn register(scheme: &mut ::apimachinery::Scheme) {
            #(#adds)*
            #(#docs)*
        }
    });
    out
}

/// `core` for the empty group name.
fn display_group(name: &str) -> &str {
    if name.is_empty() { "core" } else { name }
}

/// The versions serving a kind, in priority order, with the kind's struct.
fn kind_versions<'a>(
    group: &'a GroupModel,
    kind: &str,
) -> Vec<(&'a VersionModel, &'a StructModel)> {
    group
        .served_versions()
        .filter_map(|v| {
            v.struct_named(kind)
                .filter(|s| s.kind.is_some())
                .map(|s| (v, s))
        })
        .collect()
}

/// Emits the `KindOps` impl of one kind.
fn emit_kind_ops(group: &GroupModel, kind: &str) -> TokenStream {
    let ops = format_ident!("{}", ops_type_name(kind));
    let versions = kind_versions(group, kind);
    let n = versions.len();
    let statics_name = format_ident!("{}_VERSIONS", const_ident(kind).to_string());
    let infos = versions.iter().map(|(v, _)| {
        let m = ident(&v.version);
        let c = resource_const(kind);
        quote!(#m::#c)
    });
    let kind_ident = ident(kind);
    let list_ident = format_ident!("{}List", kind);
    let hub = group.hub();
    let hub_name = hub.map(|h| h.version.clone()).unwrap_or_default();
    let hub_mod = ident(&hub_name);

    let mut decode = Vec::new();
    let mut default = Vec::new();
    let mut to_hub = Vec::new();
    let mut from_hub = Vec::new();
    let mut validate = Vec::new();
    let mut validate_update = Vec::new();
    let mut enc = Vec::new();
    let mut dec = Vec::new();
    let mut enc_list = Vec::new();
    let mut to_json = Vec::new();
    let mut enc_storage = Vec::new();
    let mut validate_encode = Vec::new();
    for (v, s) in &versions {
        let Some(k) = &s.kind else { continue };
        let name = v.version.as_str();
        let m = ident(name);
        let ty = quote!(#m::#kind_ident);
        let hooked = hooked_structs(group, v).contains(kind);
        let hook = if hooked {
            let f = hooks_fn(kind);
            quote!(#m::#f)
        } else {
            quote!(crate::runtime::no_hooks)
        };
        decode.push(quote!(#name => crate::runtime::decode::<#ty>(value, #hook),));
        default.push(quote!(#name => crate::runtime::default::<#ty>(value, #hook),));
        if name == hub_name {
            to_hub.push(quote!(#name => crate::runtime::from_json::<#ty>(value)?,));
            from_hub.push(quote!(#name => crate::runtime::to_json(&hub),));
        } else {
            let t = to_hub_fn(kind, &hub_name);
            let f = from_hub_fn(kind, &hub_name);
            to_hub.push(quote!(#name => #m::#t(&crate::runtime::from_json::<#ty>(value)?),));
            from_hub.push(quote!(#name => crate::runtime::to_json(&#m::#f(&hub)),));
        }
        let namespaced = k.scope == Scope::Namespaced;
        let name_format = &k.name_format;
        let create_only = k.create_only;
        let rules = quote!(crate::runtime::MetaRules { namespaced: #namespaced, name_format: #name_format, create_only: #create_only });
        let vhook_name = validate_hook_name(name, kind);
        let has_vhook = group.hooks.as_ref().is_some_and(|h| h.has(&vhook_name));
        let vhook = if has_vhook {
            let f = format_ident!("{}", vhook_name);
            quote!(::std::option::Option::Some(hooks::#f))
        } else {
            quote!(::std::option::Option::None)
        };
        validate.push(quote!(#name => ::std::result::Result::Ok(crate::runtime::validate::<#ty>(value, #rules, #vhook)),));
        validate_update
            .push(quote!(#name => ::std::result::Result::Ok(crate::runtime::validate_update::<#ty>(value, old, #rules, #vhook)),));
        let proto_available = !crate::emit::proto::emit_proto_impls(group, v).is_empty();
        if proto_available {
            let snake = kind.to_snake_case();
            let (e, d, el) = (
                format_ident!("encode_protobuf_{}", snake),
                format_ident!("decode_protobuf_{}", snake),
                format_ident!("encode_protobuf_{}_list", snake),
            );
            enc.push(quote!(#name => ::std::result::Result::Ok(#m::#e(&crate::runtime::from_json_ref::<#ty>(value)?)),));
            dec.push(quote!(#name => crate::runtime::to_json(&#m::#d(bytes)?),));
            enc_list.push(
                quote!(#name => ::std::result::Result::Ok(#m::#el(&crate::runtime::from_json_ref::<#m::#list_ident>(list)?)),),
            );
            // Only a validation hook decodes the typed object that encoding can reuse.
            if has_object_meta(s) && has_vhook {
                validate_encode.push(quote! {
                    #name => ::std::result::Result::Ok(crate::runtime::validate_and_encode::<#ty>(value, #rules, #vhook, |mut obj| {
                        obj.metadata.resource_version = ::std::option::Option::None;
                        #m::#e(&obj)
                    })),
                });
            }
            if has_object_meta(s) {
                enc_storage.push(quote! {
                    #name => {
                        let mut obj = crate::runtime::from_json_ref::<#ty>(value)?;
                        obj.metadata.resource_version = ::std::option::Option::None;
                        ::std::result::Result::Ok(#m::#e(&obj))
                    }
                });
                to_json.push(quote! {
                    #name => {
                        let mut obj = #m::#d(bytes)?;
                        obj.metadata.resource_version = ::std::option::Option::Some(resource_version.to_string());
                        // JSON is rarely more than twice the protobuf: one allocation, no regrowth.
                        let mut out = ::std::vec::Vec::with_capacity(2 * bytes.len() + 64);
                        ::serde_json::to_writer(&mut out, &obj).map_err(|e| ::apimachinery::scheme::CodecError::Json(e.to_string()))?;
                        ::std::result::Result::Ok(out)
                    }
                });
            }
        } else {
            let msg = format!("{kind} has no protobuf encoding at {}", v.api_version());
            enc.push(quote!(#name => ::std::result::Result::Err(::apimachinery::scheme::CodecError::Protobuf(#msg.to_string())),));
            dec.push(quote!(#name => ::std::result::Result::Err(::apimachinery::scheme::CodecError::Protobuf(#msg.to_string())),));
            enc_list.push(quote!(#name => ::std::result::Result::Err(::apimachinery::scheme::CodecError::Protobuf(#msg.to_string())),));
        }
    }
    let unknown =
        quote!(_ => ::std::result::Result::Err(crate::runtime::unknown_version(#kind, version)),);
    let unknown_from = quote!(_ => return ::std::result::Result::Err(crate::runtime::unknown_version(#kind, from)),);
    let unknown_to =
        quote!(_ => ::std::result::Result::Err(crate::runtime::unknown_version(#kind, to)),);
    // Versions without a typed transcoding use the trait's default (through a JSON value).
    let protobuf_to_json = if to_json.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            fn protobuf_to_json(&self, version: &str, bytes: &[u8], resource_version: &str) -> ::std::result::Result<::std::vec::Vec<u8>, ::apimachinery::scheme::CodecError> {
                match version {
                    #(#to_json)*
                    _ => {
                        let mut value = self.decode_protobuf(version, bytes)?;
                        ::apimachinery::scheme::set_resource_version(&mut value, resource_version);
                        ::serde_json::to_vec(&value).map_err(|e| ::apimachinery::scheme::CodecError::Json(e.to_string()))
                    }
                }
            }
        }
    };
    let encode_for_storage = if enc_storage.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            fn encode_protobuf_for_storage(&self, version: &str, value: &::serde_json::Value) -> ::std::result::Result<::std::vec::Vec<u8>, ::apimachinery::scheme::CodecError> {
                match version {
                    #(#enc_storage)*
                    _ => self.encode_protobuf(version, value),
                }
            }
        }
    };
    // Versions that encode for storage from the object their validation decoded.
    let validate_and_encode = if validate_encode.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            fn validate_create_and_encode(&self, version: &str, value: &::serde_json::Value) -> ::std::result::Result<(::std::vec::Vec<::apimachinery::errors::FieldError>, ::std::option::Option<::std::vec::Vec<u8>>), ::apimachinery::scheme::CodecError> {
                match version {
                    #(#validate_encode)*
                    _ => ::std::result::Result::Ok((self.validate_create(version, value)?, ::std::option::Option::None)),
                }
            }
        }
    };
    let doc = format!(" The typed operations of `{kind}` in every served version.");
    let hub_type = quote!(#hub_mod::#kind_ident);
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct #ops;

        static #statics_name: [::apimachinery::ResourceInfo; #n] = [#(#infos),*];

        impl ::apimachinery::KindOps for #ops {
            fn versions(&self) -> &[::apimachinery::ResourceInfo] {
                &#statics_name
            }

            fn decode(&self, version: &str, value: ::serde_json::Value) -> ::std::result::Result<::apimachinery::scheme::Decoded, ::apimachinery::scheme::CodecError> {
                match version { #(#decode)* #unknown }
            }

            fn default(&self, version: &str, value: ::serde_json::Value) -> ::std::result::Result<::serde_json::Value, ::apimachinery::scheme::CodecError> {
                match version { #(#default)* #unknown }
            }

            fn convert(&self, value: ::serde_json::Value, from: &str, to: &str) -> ::std::result::Result<::serde_json::Value, ::apimachinery::scheme::CodecError> {
                let hub: #hub_type = match from { #(#to_hub)* #unknown_from };
                match to { #(#from_hub)* #unknown_to }
            }

            fn validate_create(&self, version: &str, value: &::serde_json::Value) -> ::std::result::Result<::std::vec::Vec<::apimachinery::errors::FieldError>, ::apimachinery::scheme::CodecError> {
                match version { #(#validate)* #unknown }
            }

            fn validate_update(&self, version: &str, value: &::serde_json::Value, old: &::serde_json::Value) -> ::std::result::Result<::std::vec::Vec<::apimachinery::errors::FieldError>, ::apimachinery::scheme::CodecError> {
                match version { #(#validate_update)* #unknown }
            }

            fn encode_protobuf(&self, version: &str, value: &::serde_json::Value) -> ::std::result::Result<::std::vec::Vec<u8>, ::apimachinery::scheme::CodecError> {
                match version { #(#enc)* #unknown }
            }

            fn decode_protobuf(&self, version: &str, bytes: &[u8]) -> ::std::result::Result<::serde_json::Value, ::apimachinery::scheme::CodecError> {
                match version { #(#dec)* #unknown }
            }

            fn encode_protobuf_list(&self, version: &str, list: &::serde_json::Value) -> ::std::result::Result<::std::vec::Vec<u8>, ::apimachinery::scheme::CodecError> {
                match version { #(#enc_list)* #unknown }
            }

            #protobuf_to_json

            #encode_for_storage

            #validate_and_encode
        }
    }
}

/// Whether a kind's struct has `metadata: ObjectMeta` (so its typed form can carry a
/// resourceVersion).
fn has_object_meta(s: &StructModel) -> bool {
    s.fields.iter().any(|f| {
        f.name == "metadata" && matches!(f.ty, TypeRef::Meta(crate::model::MetaType::ObjectMeta))
    })
}
