//! `apimachinery::schema::Schema` impls: unknown fields, marker defaults, marker validation,
//! CEL rules and immutability, all as walks over the JSON form.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::util::{json_tokens, rust_type};
use crate::model::{CelRule, FieldModel, StructModel, TypeRef, Validation, VersionModel};

/// Emits the `Schema` impl of every struct of a served version.
pub fn emit_schemas(version: &VersionModel) -> TokenStream {
    version
        .structs
        .iter()
        .map(|s| emit_schema(version, s))
        .collect()
}

/// Whether walking into values of this type can find anything (structs only).
fn has_structure(t: &TypeRef) -> bool {
    match t {
        TypeRef::Struct(_) | TypeRef::Meta(_) => true,
        TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => has_structure(i),
        _ => false,
    }
}

/// Whether this type contains a local struct (whose defaults/validation may do something).
fn has_local_struct(t: &TypeRef) -> bool {
    t.struct_name().is_some()
}

/// The CEL rule statics of a struct or field.
fn rules_static(name: &proc_macro2::Ident, rules: &[CelRule]) -> TokenStream {
    let n = rules.len();
    let items = rules.iter().map(|r| {
        let (cel, msg) = (&r.cel, &r.message);
        quote!(crate::runtime::CelRule::new(#cel, #msg))
    });
    quote! { static #name: [crate::runtime::CelRule; #n] = [#(#items),*]; }
}

/// Emits one struct's `Schema` impl.
fn emit_schema(version: &VersionModel, s: &StructModel) -> TokenStream {
    let name = super::util::ident(&s.name);
    let fields = version.json_fields(s);
    let mut keys: Vec<&str> = Vec::new();
    if s.kind.is_some() {
        keys.extend(["apiVersion", "kind"]);
    }
    keys.extend(fields.iter().map(|f| f.json_name.as_str()));

    let mut statics = TokenStream::new();
    let struct_rules_ident =
        format_ident!("RULES_{}", super::util::const_ident(&s.name).to_string());
    let struct_rules = if s.rules.is_empty() {
        TokenStream::new()
    } else {
        statics.extend(rules_static(&struct_rules_ident, &s.rules));
        quote! { crate::runtime::check_rules(&#struct_rules_ident, value, path, errors); }
    };

    let unknown = fields.iter().filter(|f| has_structure(&f.ty)).map(|f| {
        let (json, ty) = (&f.json_name, rust_type(&f.ty));
        quote! {
            if let ::std::option::Option::Some(v) = value.get(#json) {
                <#ty as ::apimachinery::schema::Schema>::unknown_fields(v, &::apimachinery::schema::field_path(path, #json), out);
            }
        }
    });

    let defaults = fields.iter().filter_map(|f| emit_default(f));

    let mut validations = Vec::new();
    for f in &fields {
        let field_rules_ident = format_ident!(
            "RULES_{}_{}",
            super::util::const_ident(&s.name).to_string(),
            super::util::const_ident(&f.name).to_string()
        );
        if !f.rules.is_empty() {
            statics.extend(rules_static(&field_rules_ident, &f.rules));
        }
        validations.push(emit_validation(f, &field_rules_ident));
    }

    let immutables = fields.iter().filter(|f| f.validation.immutable).map(|f| {
        let json = &f.json_name;
        quote! {
            ::apimachinery::validation::check_immutable(value.get(#json), old.get(#json), &::apimachinery::schema::field_path(path, #json), errors);
        }
    });
    let update_recursion = fields.iter().filter(|f| has_local_struct(&f.ty)).map(|f| {
        let (json, ty) = (&f.json_name, rust_type(&f.ty));
        quote! {
            if let (::std::option::Option::Some(v), ::std::option::Option::Some(o)) = (value.get(#json), old.get(#json)) {
                <#ty as ::apimachinery::schema::Schema>::validate_update(v, o, &::apimachinery::schema::field_path(path, #json), errors);
            }
        }
    });

    quote! {
        #statics
        impl ::apimachinery::schema::Schema for #name {
            fn unknown_fields(value: &::serde_json::Value, path: &str, out: &mut ::std::vec::Vec<::std::string::String>) {
                ::apimachinery::schema::unknown_keys(value, &[#(#keys),*], path, out);
                #(#unknown)*
            }

            #[allow(unused_variables)]
            fn apply_defaults(value: &mut ::serde_json::Value) {
                let ::std::option::Option::Some(obj) = value.as_object_mut() else { return };
                #(#defaults)*
            }

            #[allow(unused_variables)]
            fn validate(value: &::serde_json::Value, path: &str, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                #(#validations)*
                #struct_rules
            }

            #[allow(unused_variables)]
            fn validate_update(value: &::serde_json::Value, old: &::serde_json::Value, path: &str, errors: &mut ::std::vec::Vec<::apimachinery::errors::FieldError>) {
                #(#immutables)*
                #(#update_recursion)*
            }
        }
    }
}

/// The defaulting statements of one field: set the marker default when absent, create absent
/// required sub-objects (so their own defaults apply, as Go's defaulters see a zero struct), and
/// recurse.
fn emit_default(f: &FieldModel) -> Option<TokenStream> {
    let json = &f.json_name;
    let mut out = TokenStream::new();
    if let Some(d) = &f.default {
        let value = json_tokens(d);
        out.extend(quote! {
            if obj.get(#json).is_none_or(::serde_json::Value::is_null) {
                obj.insert(::std::string::String::from(#json), #value);
            }
        });
    } else if matches!(f.ty, TypeRef::Struct(_)) {
        out.extend(quote! {
            if obj.get(#json).is_none_or(::serde_json::Value::is_null) {
                obj.insert(::std::string::String::from(#json), ::serde_json::Value::Object(::serde_json::Map::new()));
            }
        });
    }
    if has_local_struct(&f.ty) {
        let ty = rust_type(&f.ty);
        out.extend(quote! {
            if let ::std::option::Option::Some(v) = obj.get_mut(#json) {
                <#ty as ::apimachinery::schema::Schema>::apply_defaults(v);
            }
        });
    }
    if out.is_empty() { None } else { Some(out) }
}

/// The validation statements of one field.
fn emit_validation(f: &FieldModel, rules_ident: &proc_macro2::Ident) -> TokenStream {
    let json = &f.json_name;
    let v = &f.validation;
    let mut out = TokenStream::new();
    if v.required {
        out.extend(
            quote! { ::apimachinery::validation::check_required(value, #json, path, errors); },
        );
    }
    let mut container = container_checks(v);
    match &f.list {
        Some(l) if l.type_ == crate::model::ListType::Map => {
            let keys = &l.map_keys;
            container.extend(quote! { ::apimachinery::validation::check_list_map_keys(v, &p, &[#(#keys),*], errors); });
        }
        Some(l) if l.type_ == crate::model::ListType::Set => {
            container.extend(quote! { ::apimachinery::validation::check_list_set(v, &p, errors); });
        }
        _ => {}
    }
    let leaf = leaf_checks(v);
    let base = f.ty.unwrap_option();
    let leaf_walk = if leaf.is_empty() {
        TokenStream::new()
    } else {
        match base {
            TypeRef::Vec(inner) if inner.is_scalar() => quote! {
                if let ::std::option::Option::Some(items) = v.as_array() {
                    for (i, v) in items.iter().enumerate() {
                        let p = ::apimachinery::schema::index_path(&p, i);
                        #leaf
                    }
                }
            },
            TypeRef::Map(inner) if inner.is_scalar() => quote! {
                if let ::std::option::Option::Some(entries) = v.as_object() {
                    for (k, v) in entries {
                        let p = ::apimachinery::schema::key_path(&p, k);
                        #leaf
                    }
                }
            },
            _ => leaf,
        }
    };
    let recurse = if has_local_struct(&f.ty) {
        let ty = rust_type(&f.ty);
        quote! { <#ty as ::apimachinery::schema::Schema>::validate(v, &p, errors); }
    } else {
        TokenStream::new()
    };
    let rules = if f.rules.is_empty() {
        TokenStream::new()
    } else {
        quote! { crate::runtime::check_rules(&#rules_ident, v, &p, errors); }
    };
    if !(container.is_empty() && leaf_walk.is_empty() && recurse.is_empty() && rules.is_empty()) {
        out.extend(quote! {
            if let ::std::option::Option::Some(v) = value.get(#json).filter(|v| !v.is_null()) {
                let p = ::apimachinery::schema::field_path(path, #json);
                #container
                #leaf_walk
                #recurse
                #rules
            }
        });
    }
    out
}

/// Checks on lists and maps themselves.
fn container_checks(v: &Validation) -> TokenStream {
    let mut out = TokenStream::new();
    let usize_of = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(n) = v.min_items.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_min_items(v, &p, #n, errors); });
    }
    if let Some(n) = v.max_items.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_max_items(v, &p, #n, errors); });
    }
    if let Some(n) = v.min_properties.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_min_properties(v, &p, #n, errors); });
    }
    if let Some(n) = v.max_properties.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_max_properties(v, &p, #n, errors); });
    }
    out
}

/// Checks on scalar values (numbers and strings).
fn leaf_checks(v: &Validation) -> TokenStream {
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
            let func = if max {
                quote!(check_maximum)
            } else {
                quote!(check_minimum)
            };
            out.extend(
                quote! { ::apimachinery::validation::#func(v, &p, #f, #text, #exclusive, errors); },
            );
        }
    }
    let usize_of = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(n) = v.min_length.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_min_length(v, &p, #n, errors); });
    }
    if let Some(n) = v.max_length.map(usize_of) {
        out.extend(quote! { ::apimachinery::validation::check_max_length(v, &p, #n, errors); });
    }
    if let Some(pattern) = &v.pattern {
        out.extend(quote! { ::apimachinery::validation::check_pattern(v, &p, #pattern, errors); });
    }
    if !v.enum_values.is_empty() {
        let values = &v.enum_values;
        out.extend(
            quote! { ::apimachinery::validation::check_enum(v, &p, &[#(#values),*], errors); },
        );
    }
    if let Some(format) = &v.format {
        out.extend(quote! { ::apimachinery::validation::check_format(v, &p, #format, errors); });
    }
    out
}
