//! Registration: one `ResourceInfo` per (kind, version), the `TypedObject` facts of every
//! kind's struct, one `Kind` table per kind (its versions, strategy and selectable fields), the
//! group's `register` function, and typed defaulting hooks.

use std::collections::BTreeSet;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::convert::{from_hub_fn, to_hub_fn};
use super::util::{const_ident, ident};
use crate::model::{
    ADMISSION_PLUGINS_FN, GroupModel, KindModel, Scope, StructModel, TypeRef, VersionModel,
    default_hook_name, strategy_type_name, validate_hook_name,
};

/// The name of a kind's `ResourceInfo` constant in its version module: `WIDGET_RESOURCE`.
pub fn resource_const(kind: &str) -> proc_macro2::Ident {
    format_ident!("{}_RESOURCE", const_ident(kind).to_string())
}

/// Emits the `ResourceInfo` constants of a served version's kinds.
pub fn emit_resource_infos(group: &GroupModel, version: &VersionModel) -> TokenStream {
    version
        .kinds()
        .filter_map(|s| s.kind.as_ref())
        .map(|k| {
            let name = resource_const(&k.name);
            let info = resource_info(group, version, k);
            let doc = format!(
                " The REST mapping and discovery facts of `{}` at `{}`.",
                k.name,
                version.api_version()
            );
            let kind = ident(&k.name);
            let plural = &k.plural;
            let scope = match k.scope {
                Scope::Namespaced => {
                    quote!(::apimachinery::kube::k8s_openapi::NamespaceResourceScope)
                }
                Scope::Cluster => quote!(::apimachinery::kube::k8s_openapi::ClusterResourceScope),
            };
            quote! {
                #[doc = #doc]
                pub const #name: ::apimachinery::ResourceInfo = #info;

                #[cfg(feature = "kube")]
                impl ::apimachinery::kube::KubeKind for #kind {
                    type Scope = #scope;
                    const PLURAL: &'static str = #plural;
                }
            }
        })
        .collect()
}

/// A `ResourceInfo` literal; `storage_version` is whether `version` is the kind's storage
/// version ([`GroupModel::kind_storage_version`]).
fn resource_info(group_model: &GroupModel, version: &VersionModel, k: &KindModel) -> TokenStream {
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
    let subresources = k.subresources.iter().map(|sub| {
        // An update subresource's body is the kind itself.
        let (g, v, kd) = if sub.kind.is_empty() {
            (&group_model.name, &version.version, &k.name)
        } else {
            (&sub.group, &sub.version, &sub.kind)
        };
        let (n, verbs) = (&sub.name, &sub.verbs);
        quote!(::apimachinery::SubresourceInfo { name: #n, group: #g, version: #v, kind: #kd, verbs: &[#(#verbs),*] })
    });
    let columns = k.print_columns.iter().map(|c| {
        let (n, t, f, d, p, j) = (&c.name, &c.type_, &c.format, &c.description, c.priority, &c.json_path);
        quote!(::apimachinery::PrinterColumn { name: #n, type_: #t, format: #f, description: #d, priority: #p, json_path: #j })
    });
    let field_selectors = &k.field_selectors;
    let storage = group_model
        .kind_storage_version(&k.name)
        .is_some_and(|st| st.version == version.version);
    let smp = k.strategic_merge_patch;
    let unconditional = k.unconditional_update;
    let create_on_update = k.create_on_update;
    let tracks_generation = !k.no_generation;
    let create_only = k.create_only;
    let proto_package = version.proto_package_or_default();
    let name_format = &k.name_format;
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
            subresources: &[#(#subresources),*],
            printer_columns: &[#(#columns),*],
            field_selectors: &[#(#field_selectors),*],
            storage_version: #storage,
            strategic_merge_patch: #smp,
            allow_unconditional_update: #unconditional,
            allow_create_on_update: #create_on_update,
            tracks_generation: #tracks_generation,
            create_only: #create_only,
            proto_package: #proto_package,
            name_format: #name_format,
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

/// The name of a kind's `Kind` table in its group module: `WIDGET_KIND`.
pub fn kind_table_ident(kind: &str) -> proc_macro2::Ident {
    format_ident!("{}_KIND", const_ident(kind).to_string())
}

/// Emits the `TypedObject` impls and `Kind` table of every kind of a group, and the group's
/// `register` function.
pub fn emit_group_registration(group: &GroupModel) -> TokenStream {
    let mut out = TokenStream::new();
    let mut adds = Vec::new();
    for kind in group.kind_names() {
        out.extend(emit_kind(group, &kind));
        let table = kind_table_ident(&kind);
        adds.push(quote!(scheme.add_kind(&#table);));
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
    let plugins = if group
        .admission
        .as_ref()
        .is_some_and(|a| a.has(ADMISSION_PLUGINS_FN))
    {
        let f = format_ident!("{}", ADMISSION_PLUGINS_FN);
        quote! {
            for plugin in admission::#f() {
                scheme.add_admission_plugin(plugin);
            }
        }
    } else {
        TokenStream::new()
    };
    let doc = format!(
        " Registers every kind, OpenAPI document and admission plugin of the `{}` group.",
        display_group(&group.name)
    );
    out.extend(quote! {
        #[doc = #doc]
        pub fn register(scheme: &mut ::apimachinery::Scheme) {
            #(#adds)*
            #(#docs)*
            #plugins
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

/// Emits the `TypedObject` impl of every served version of one kind, and its `Kind` table.
fn emit_kind(group: &GroupModel, kind: &str) -> TokenStream {
    let versions = kind_versions(group, kind);
    let kind_ident = ident(kind);
    let hub = group.kind_hub(kind);
    let hub_name = hub.map(|h| h.version.clone()).unwrap_or_default();
    let hub_mod = ident(&hub_name);
    let mut out = TokenStream::new();
    let mut codecs = Vec::new();
    for (v, s) in &versions {
        let Some(k) = &s.kind else { continue };
        let name = v.version.as_str();
        let m = ident(name);
        let ty = quote!(#m::#kind_ident);
        codecs.push(quote!(&::apimachinery::runtime::Codec::<#ty>::NEW));
        let info = resource_const(kind);
        let shape = super::schema::shape_ident(kind);
        let (to_hub, from_hub) = if name == hub_name {
            (
                quote!(::std::clone::Clone::clone(self)),
                quote!(::std::clone::Clone::clone(hub)),
            )
        } else {
            let (t, f) = (to_hub_fn(kind, &hub_name), from_hub_fn(kind, &hub_name));
            (quote!(#m::#t(self)), quote!(#m::#f(hub)))
        };
        let default_hooks = if hooked_structs(group, v).contains(kind) {
            let f = hooks_fn(kind);
            quote! { fn run_default_hooks(&mut self) { #m::#f(self) } }
        } else {
            TokenStream::new()
        };
        let vhook_name = validate_hook_name(name, kind);
        let vhook = if group.hooks.as_ref().is_some_and(|h| h.has(&vhook_name)) {
            let f = format_ident!("{}", vhook_name);
            quote!(hooks::#f(self, errors);)
        } else {
            TokenStream::new()
        };
        let proto_available = !crate::emit::proto::emit_proto_impls(group, v).is_empty();
        let metadata_field = match s.field("metadata").and_then(|f| f.proto) {
            Some(n) if proto_available => quote!(::std::option::Option::Some(#n)),
            _ => quote!(::std::option::Option::None),
        };
        let (encode, decode) = if proto_available {
            (
                quote! {
                    ::apimachinery::protobuf::ProtoMessage::encode_raw(self, out);
                    ::std::result::Result::Ok(())
                },
                quote! {
                    <Self as ::apimachinery::protobuf::ProtoMessage>::decode(bytes)
                        .map_err(::apimachinery::scheme::CodecError::from)
                },
            )
        } else {
            let msg = format!("{kind} has no protobuf encoding at {}", v.api_version());
            (
                quote!(::std::result::Result::Err(::apimachinery::scheme::CodecError::Protobuf(#msg.to_string()))),
                quote!(::std::result::Result::Err(::apimachinery::scheme::CodecError::Protobuf(#msg.to_string()))),
            )
        };
        // What `metadata.generation` follows: everything but metadata (and status when it has
        // its own subresource).
        let spec_fields: Vec<_> = s
            .fields
            .iter()
            .filter(|f| f.name != "metadata" && !(k.status && f.name == "status"))
            .map(|f| ident(&f.name))
            .collect();
        let spec_eq = if spec_fields.is_empty() {
            quote!(true)
        } else {
            quote!(#(self.#spec_fields == other.#spec_fields)&&*)
        };
        let status = if s.field("status").is_some() {
            quote! {
                fn reset_status(&mut self) {
                    self.status = ::std::default::Default::default();
                }
                fn copy_status(&mut self, from: &Self) {
                    self.status = ::std::clone::Clone::clone(&from.status);
                }
            }
        } else {
            TokenStream::new()
        };
        let hub_type = quote!(#hub_mod::#kind_ident);
        out.extend(quote! {
            impl ::apimachinery::runtime::TypedObject for #ty {
                const INFO: &'static ::apimachinery::ResourceInfo = &#m::#info;
                const SHAPE: &'static ::apimachinery::structure::StructShape = &#m::#shape;
                const METADATA_FIELD: ::std::option::Option<u32> = #metadata_field;
                type Hub = #hub_type;

                fn to_hub(&self) -> Self::Hub {
                    #to_hub
                }

                fn from_hub(hub: &Self::Hub) -> Self {
                    #from_hub
                }

                #default_hooks

                fn validate_fields(&self, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                    ::apimachinery::markers::Validate::validate(self, &::apimachinery::markers::FieldPath::Root, errors);
                    #vhook
                }

                fn validate_fields_update(&self, old: &Self, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                    ::apimachinery::markers::Validate::validate_update(self, old, &::apimachinery::markers::FieldPath::Root, errors);
                }

                fn encode_protobuf(&self, out: &mut ::std::vec::Vec<u8>) -> ::std::result::Result<(), ::apimachinery::scheme::CodecError> {
                    #encode
                }

                fn decode_protobuf(bytes: &[u8]) -> ::std::result::Result<Self, ::apimachinery::scheme::CodecError> {
                    #decode
                }

                fn spec_eq(&self, other: &Self) -> bool {
                    #spec_eq
                }

                #status
            }
        });
    }
    let table = kind_table_ident(kind);
    let strategy_name = strategy_type_name(kind);
    let strategy = if group
        .strategy
        .as_ref()
        .is_some_and(|s| s.has_type(&strategy_name))
    {
        let st = format_ident!("{}", strategy_name);
        quote!(&strategy::#st)
    } else {
        quote!(&::apimachinery::strategy::DefaultStrategy)
    };
    let (fields_fn, fields_item) = selectable_fields(group, kind);
    let doc = format!(
        " The served versions of `{kind}` (preferred first), its strategy and its selectable fields."
    );
    out.extend(quote! {
        #fields_item

        #[doc = #doc]
        pub static #table: ::apimachinery::runtime::Kind = ::apimachinery::runtime::Kind::new(
            &[#(#codecs),*],
            #strategy,
            #fields_fn,
        );
    });
    out
}

/// The selectable-fields function of a kind (its `field_selectors` markers, read from the
/// typed struct of the kind's storage version) and its item, or the shared empty one.
fn selectable_fields(group: &GroupModel, kind: &str) -> (TokenStream, TokenStream) {
    let Some(storage) = group.kind_storage_version(kind) else {
        return (
            quote!(::apimachinery::runtime::no_selectable_fields),
            TokenStream::new(),
        );
    };
    let Some(s) = storage.struct_named(kind) else {
        return (
            quote!(::apimachinery::runtime::no_selectable_fields),
            TokenStream::new(),
        );
    };
    let Some(k) = &s.kind else {
        return (
            quote!(::apimachinery::runtime::no_selectable_fields),
            TokenStream::new(),
        );
    };
    if k.field_selectors.is_empty() {
        return (
            quote!(::apimachinery::runtime::no_selectable_fields),
            TokenStream::new(),
        );
    }
    let m = ident(&storage.version);
    let kind_ident = ident(kind);
    let pushes = k.field_selectors.iter().map(|label| {
        let value = field_value_expr(storage, s, label).unwrap_or_else(|| {
            // Not a plain path of fields: read it from the JSON form.
            quote! {
                ::apimachinery::__private::serde_json::to_value(obj)
                    .map(|v| ::apimachinery::selectors::field_value(&v, #label))
                    .unwrap_or_default()
            }
        });
        quote! { out.push((#label, #value)); }
    });
    let f = format_ident!("{}_selectable_fields", kind.to_snake_case());
    let doc = format!(" The `field_selectors` of `{kind}`, read from its storage version.");
    (
        quote!(#f),
        quote! {
            #[doc = #doc]
            fn #f(obj: &dyn ::apimachinery::runtime::Object, out: &mut ::std::vec::Vec<(&'static str, ::std::string::String)>) {
                let ::std::option::Option::Some(obj) = obj.downcast_ref::<#m::#kind_ident>() else { return };
                #(#pushes)*
            }
        },
    )
}

/// The expression reading a dotted JSON path of fields from `obj` as a `String` (empty when
/// absent), or `None` when the path does not go through plain struct fields to a scalar.
fn field_value_expr(version: &VersionModel, root: &StructModel, path: &str) -> Option<TokenStream> {
    let mut expr = quote!(::std::option::Option::Some(obj));
    let mut current = root;
    let segments: Vec<&str> = path.split('.').collect();
    for (i, seg) in segments.iter().enumerate() {
        let field = version
            .json_fields(current)
            .into_iter()
            .find(|f| f.json_name == *seg)?;
        let fname = ident(&field.name);
        expr = quote!(#expr.map(|x| &x.#fname));
        let mut ty = &field.ty;
        if let TypeRef::Option(inner) = ty {
            expr = quote!(#expr.and_then(|x| x.as_ref()));
            ty = inner;
        }
        let last = i + 1 == segments.len();
        match (ty, last) {
            (TypeRef::Struct(n), false) => current = version.struct_named(n)?,
            (TypeRef::String, true) => return Some(quote!(#expr.cloned().unwrap_or_default())),
            (TypeRef::Quantity, true) => {
                return Some(quote!(#expr.map(|q| q.0.clone()).unwrap_or_default()));
            }
            (TypeRef::Bool | TypeRef::I32 | TypeRef::I64 | TypeRef::F64, true) => {
                return Some(quote!(#expr.map(|v| v.to_string()).unwrap_or_default()));
            }
            _ => return None,
        }
    }
    None
}
