//! Per-struct walks over the typed form: `apimachinery::markers::Validate` (the
//! `#[validate]`, `#[list]` and `#[rule]` markers, and immutability), `MarkerValue` (how a
//! struct value reads in messages), and the `StructShape` statics that patches and
//! server-side apply read the list, map and patch markers from.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::util::{const_ident, ident};
use crate::model::{
    CelRule, FieldModel, ListType, MapType, StructModel, TypeRef, Validation, VersionModel,
};

/// Emits the validation walk, `MarkerValue` and shape of every struct of a served version.
pub fn emit_schemas(version: &VersionModel) -> TokenStream {
    version
        .structs
        .iter()
        .map(|s| {
            let mut out = emit_validate(version, s);
            out.extend(emit_shape(version, s));
            out
        })
        .collect()
}

/// Whether a type contains a struct, of this crate or an extern one (whose own walk may find
/// something).
fn has_local_struct(t: &TypeRef) -> bool {
    t.struct_name().is_some() || t.extern_ref().is_some()
}

/// The CEL rule statics of a struct or field.
fn rules_static(name: &proc_macro2::Ident, rules: &[CelRule]) -> TokenStream {
    let n = rules.len();
    let items = rules.iter().map(|r| {
        let (cel, msg) = (&r.cel, &r.message);
        quote!(::apimachinery::cel::CelRule::new(#cel, #msg))
    });
    quote! { static #name: [::apimachinery::cel::CelRule; #n] = [#(#items),*]; }
}

/// The name of a struct's shape static: `SHAPE_WIDGET_SPEC`.
pub fn shape_ident(struct_name: &str) -> proc_macro2::Ident {
    format_ident!("SHAPE_{}", const_ident(struct_name).to_string())
}

/// Emits one struct's `Validate` and `MarkerValue` impls.
fn emit_validate(version: &VersionModel, s: &StructModel) -> TokenStream {
    let name = ident(&s.name);
    let mut statics = TokenStream::new();
    let struct_rules = if s.rules.is_empty() {
        TokenStream::new()
    } else {
        let id = format_ident!("RULES_{}", const_ident(&s.name).to_string());
        statics.extend(rules_static(&id, &s.rules));
        quote! { ::apimachinery::cel::check_rules(&#id, self, path, errors); }
    };
    let mut validations = Vec::new();
    let mut updates = Vec::new();
    for f in &s.fields {
        let fname = ident(&f.name);
        if f.json_inline {
            // The inlined struct's fields sit at this struct's level.
            validations.push(
                quote! { ::apimachinery::markers::Validate::validate(&self.#fname, path, errors); },
            );
            updates.push(quote! { ::apimachinery::markers::Validate::validate_update(&self.#fname, &old.#fname, path, errors); });
            continue;
        }
        let rules_id = format_ident!(
            "RULES_{}_{}",
            const_ident(&s.name).to_string(),
            const_ident(&f.name).to_string()
        );
        if !f.rules.is_empty() {
            statics.extend(rules_static(&rules_id, &f.rules));
        }
        validations.push(emit_field_validation(f, &rules_id, version.crd_validation));
        let json = &f.json_name;
        if f.validation.immutable {
            updates.push(quote! {
                ::apimachinery::markers::check_immutable(&self.#fname, &old.#fname, &path.field(#json), errors);
            });
        }
        if has_local_struct(&f.ty) {
            updates.push(quote! {
                ::apimachinery::markers::Validate::validate_update(&self.#fname, &old.#fname, &path.field(#json), errors);
            });
        }
    }
    quote! {
        #statics
        impl ::apimachinery::markers::Validate for #name {
            #[allow(unused_variables)]
            fn validate(&self, path: &::apimachinery::markers::FieldPath<'_>, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                #(#validations)*
                #struct_rules
            }

            #[allow(unused_variables)]
            fn validate_update(&self, old: &Self, path: &::apimachinery::markers::FieldPath<'_>, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                #(#updates)*
            }
        }

        impl ::apimachinery::markers::MarkerValue for #name {
            fn to_json(&self) -> ::apimachinery::__private::serde_json::Value {
                ::apimachinery::__private::serde_json::to_value(self).unwrap_or(::apimachinery::__private::serde_json::Value::Null)
            }
        }
    }
}

/// The validation statements of one field.
/// With `crd`, a required `Option` needs only be present and bounds read as a CRD schema's.
fn emit_field_validation(f: &FieldModel, rules_id: &proc_macro2::Ident, crd: bool) -> TokenStream {
    let fname = ident(&f.name);
    let json = &f.json_name;
    let v = &f.validation;
    let required = if v.required && crd && matches!(f.ty, TypeRef::Option(_)) {
        quote! { ::apimachinery::markers::check_present(&self.#fname, &p, errors); }
    } else if v.required {
        quote! { ::apimachinery::markers::check_required(&self.#fname, &p, errors); }
    } else {
        TokenStream::new()
    };
    let base = f.ty.unwrap_option();
    // Checks on the present value `v` (of the type inside any `Option`).
    let mut on_value = container_checks(v, base);
    match &f.list {
        Some(l) if l.type_ == ListType::Map => {
            let keys = &l.map_keys;
            on_value.extend(quote! { ::apimachinery::markers::check_list_map_keys(v, &p, &[#(#keys),*], errors); });
        }
        Some(l) if l.type_ == ListType::Set => {
            on_value.extend(quote! { ::apimachinery::markers::check_list_set(v, &p, errors); });
        }
        _ => {}
    }
    let leaf = leaf_checks(v, crd);
    if !leaf.is_empty() {
        on_value.extend(match base {
            TypeRef::Vec(inner) if inner.is_scalar() => quote! {
                for (i, v) in v.iter().enumerate() {
                    let p = p.index(i);
                    #leaf
                }
            },
            TypeRef::Map(inner) if inner.is_scalar() => quote! {
                for (k, v) in v {
                    let p = p.key(k);
                    #leaf
                }
            },
            _ => leaf,
        });
    }
    if has_local_struct(&f.ty) {
        on_value.extend(quote! { ::apimachinery::markers::Validate::validate(v, &p, errors); });
    }
    if !f.rules.is_empty() {
        on_value.extend(quote! { ::apimachinery::cel::check_rules(&#rules_id, v, &p, errors); });
    }
    if required.is_empty() && on_value.is_empty() {
        return TokenStream::new();
    }
    let present = if on_value.is_empty() {
        TokenStream::new()
    } else if matches!(f.ty, TypeRef::Option(_)) {
        quote! { if let ::std::option::Option::Some(v) = &self.#fname { #on_value } }
    } else {
        quote! { { let v = &self.#fname; #on_value } }
    };
    quote! {
        {
            let p = path.field(#json);
            #required
            #present
        }
    }
}

/// Checks on lists and maps themselves.
fn container_checks(v: &Validation, base: &TypeRef) -> TokenStream {
    let mut out = TokenStream::new();
    let usize_of = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    match base {
        TypeRef::Vec(_) => {
            if let Some(n) = v.min_items.map(usize_of) {
                out.extend(quote! { ::apimachinery::markers::check_min_items(v, &p, #n, errors); });
            }
            if let Some(n) = v.max_items.map(usize_of) {
                out.extend(quote! { ::apimachinery::markers::check_max_items(v, &p, #n, errors); });
            }
        }
        TypeRef::Map(_) => {
            if let Some(n) = v.min_properties.map(usize_of) {
                out.extend(
                    quote! { ::apimachinery::markers::check_min_properties(v, &p, #n, errors); },
                );
            }
            if let Some(n) = v.max_properties.map(usize_of) {
                out.extend(
                    quote! { ::apimachinery::markers::check_max_properties(v, &p, #n, errors); },
                );
            }
        }
        _ => {}
    }
    out
}

/// Checks on scalar values (numbers and strings), on `v`.
fn leaf_checks(v: &Validation, crd: bool) -> TokenStream {
    let mut out = TokenStream::new();
    let bound = |n: &serde_json::Number| (n.as_f64().unwrap_or_default(), n.to_string());
    for (b, exclusive, max) in [
        (&v.minimum, false, false),
        (&v.exclusive_minimum, true, false),
        (&v.maximum, false, true),
        (&v.exclusive_maximum, true, true),
    ] {
        if let Some(n) = b {
            let (f, text) = bound(n);
            let func = match (max, crd) {
                (true, false) => quote!(check_maximum),
                (false, false) => quote!(check_minimum),
                (true, true) => quote!(check_schema_maximum),
                (false, true) => quote!(check_schema_minimum),
            };
            out.extend(
                quote! { ::apimachinery::markers::#func(v, &p, #f, #text, #exclusive, errors); },
            );
        }
    }
    let usize_of = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(n) = v.min_length.map(usize_of) {
        out.extend(quote! { ::apimachinery::markers::check_min_length(v, &p, #n, errors); });
    }
    if let Some(n) = v.max_length.map(usize_of) {
        out.extend(quote! { ::apimachinery::markers::check_max_length(v, &p, #n, errors); });
    }
    if let Some(pattern) = &v.pattern {
        out.extend(quote! { ::apimachinery::markers::check_pattern(v, &p, #pattern, errors); });
    }
    if !v.enum_values.is_empty() {
        let values = &v.enum_values;
        out.extend(quote! { ::apimachinery::markers::check_enum(v, &p, &[#(#values),*], errors); });
    }
    if let Some(format) = &v.format {
        out.extend(quote! { ::apimachinery::markers::check_format(v, &p, #format, errors); });
    }
    out
}

/// The `Shape` of a scalar of CEL type `t` (a `Scalar` variant).
fn scalar(t: TokenStream) -> TokenStream {
    quote!(::apimachinery::structure::Shape::Scalar(::apimachinery::structure::Scalar::#t))
}

/// The `Shape` expression of a field type. A struct whose JSON is hand-written
/// (`#[json(custom)]`) is not an object of its fields: its values are opaque (`Unknown`).
fn shape_of(version: &VersionModel, t: &TypeRef) -> TokenStream {
    match t {
        TypeRef::Struct(n) if version.struct_named(n).is_some_and(|s| s.json_custom) => {
            quote!(::apimachinery::structure::Shape::Unknown)
        }
        TypeRef::Struct(n) => {
            let s = shape_ident(n);
            quote!(::apimachinery::structure::Shape::Struct(&#s))
        }
        TypeRef::Meta(n) => {
            let s = shape_ident(n);
            quote!(::apimachinery::structure::Shape::Struct(&::apimachinery::meta::#s))
        }
        TypeRef::Extern(r) => {
            let s = super::util::extern_item(r, &shape_ident(&r.name));
            quote!(::apimachinery::structure::Shape::Struct(&#s))
        }
        TypeRef::Option(i) => shape_of(version, i),
        TypeRef::Vec(i) => {
            let items = shape_of(version, i);
            quote!(::apimachinery::structure::Shape::List(&::apimachinery::structure::ListShape { items: #items }))
        }
        TypeRef::Map(i) => {
            let values = shape_of(version, i);
            quote!(::apimachinery::structure::Shape::Map(&::apimachinery::structure::MapShape { values: #values }))
        }
        TypeRef::Json | TypeRef::RawExtension | TypeRef::FieldsV1 => {
            quote!(::apimachinery::structure::Shape::Unknown)
        }
        TypeRef::Bool => scalar(quote!(Bool)),
        TypeRef::I32 | TypeRef::I64 => scalar(quote!(Int)),
        TypeRef::F64 => scalar(quote!(Double)),
        TypeRef::String => scalar(quote!(String)),
        TypeRef::Bytes
        | TypeRef::Time
        | TypeRef::MicroTime
        | TypeRef::Quantity
        | TypeRef::IntOrString
        | TypeRef::Duration => scalar(quote!(Other)),
    }
}

/// Emits one struct's `StructShape` static.
fn emit_shape(version: &VersionModel, s: &StructModel) -> TokenStream {
    let id = shape_ident(&s.name);
    let name = &s.name;
    let atomic = s.map.is_some_and(|m| m.type_ == MapType::Atomic);
    let fields = version.json_fields(s).into_iter().map(|f| {
        let json = &f.json_name;
        let shape = shape_of(version, &f.ty);
        let list_type = f.list.as_ref().map(|l| l.type_.as_str()).unwrap_or("");
        let keys: Vec<&String> = f.list.iter().flat_map(|l| l.map_keys.iter()).collect();
        let map_type = f.map.as_ref().map(|m| m.type_.as_str()).unwrap_or("");
        let strategy = f.patch.as_ref().map(|p| p.strategy.as_str()).unwrap_or("");
        let merge_key = f
            .patch
            .as_ref()
            .and_then(|p| p.merge_key.as_deref())
            .unwrap_or("");
        quote! {
            ::apimachinery::structure::FieldShape {
                name: #json,
                shape: #shape,
                list_type: #list_type,
                list_map_keys: &[#(#keys),*],
                map_type: #map_type,
                patch_strategy: #strategy,
                patch_merge_key: #merge_key,
            }
        }
    });
    let doc = format!(" The structure of `{name}` for patches and server-side apply.");
    quote! {
        #[doc = #doc]
        pub static #id: ::apimachinery::structure::StructShape = ::apimachinery::structure::StructShape {
            name: #name,
            fields: &[#(#fields),*],
            atomic: #atomic,
        };
    }
}
