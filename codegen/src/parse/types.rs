//! Parsing of field types into [`TypeRef`] trees.

use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, Type};

use crate::diagnostics::suggestion;
use crate::model::{ExternRef, SCALAR_TYPE_NAMES, TypeRef};
use crate::parse::markers::MarkerCx;

/// Parses a field type. Other names become [`TypeRef::Struct`]; linking
/// ([`crate::parse::link_shared`]) turns those naming a struct of the shared version into
/// [`TypeRef::Meta`], and the checks verify that the others exist in the file. A path of three
/// segments (`core::v1::ObjectReference`) names a struct of another crate's group version
/// ([`TypeRef::Extern`], resolved by [`crate::parse::link_externs`]).
pub fn parse_type(cx: &mut MarkerCx<'_>, ty: &Type) -> Option<TypeRef> {
    let Type::Path(tp) = ty else {
        cx.error(ty.span(), "field types are paths such as `String`, `Option<T>`, `Vec<T>` or `BTreeMap<String, T>`");
        return None;
    };
    if tp.qself.is_some() {
        cx.error(
            ty.span(),
            "qualified types are not supported; name the type directly",
        );
        return None;
    }
    if tp.path.leading_colon.is_some() || tp.path.segments.len() > 1 {
        return parse_extern(cx, ty, &tp.path);
    }
    let Some(seg) = tp.path.segments.last() else {
        cx.error(ty.span(), "empty type path");
        return None;
    };
    let name = seg.ident.to_string();
    let args: Vec<&Type> = match &seg.arguments {
        PathArguments::None => Vec::new(),
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        PathArguments::Parenthesized(_) => {
            cx.error(ty.span(), "function types are not field types");
            return None;
        }
    };
    let expect_args = |cx: &mut MarkerCx<'_>, n: usize, example: &str| -> bool {
        if args.len() == n {
            true
        } else {
            cx.error(ty.span(), format!("write `{example}`"));
            false
        }
    };
    let scalar = |t: TypeRef| if args.is_empty() { Some(t) } else { None };
    let parsed = match name.as_str() {
        "bool" => scalar(TypeRef::Bool),
        "i32" => scalar(TypeRef::I32),
        "i64" => scalar(TypeRef::I64),
        "f64" => scalar(TypeRef::F64),
        "String" => scalar(TypeRef::String),
        "Bytes" => scalar(TypeRef::Bytes),
        "Time" => scalar(TypeRef::Time),
        "MicroTime" => scalar(TypeRef::MicroTime),
        "Quantity" => scalar(TypeRef::Quantity),
        "IntOrString" => scalar(TypeRef::IntOrString),
        "RawExtension" => scalar(TypeRef::RawExtension),
        "Duration" => scalar(TypeRef::Duration),
        "FieldsV1" => scalar(TypeRef::FieldsV1),
        "Value" => scalar(TypeRef::Json),
        "u8" | "u16" | "u32" | "u64" | "i8" | "i16" | "usize" | "isize" | "u128" | "i128" => {
            cx.error(
                ty.span(),
                format!(
                    "`{name}` is not a Kubernetes integer type; use `i32` (int32) or `i64` (int64)"
                ),
            );
            return None;
        }
        "f32" => {
            cx.error(ty.span(), "`f32` is not supported; use `f64`");
            return None;
        }
        "str" | "Str" => {
            cx.error(ty.span(), "use `String`");
            return None;
        }
        "Vec" | "Box" => {
            if !expect_args(cx, 1, "Vec<T>") {
                return None;
            }
            if name == "Box" {
                cx.error(
                    ty.span(),
                    "`Box` is only for a struct that contains itself, as a whole field: `Box<T>` or `Option<Box<T>>`",
                );
                return None;
            }
            return parse_type(cx, args[0]).map(|t| TypeRef::Vec(Box::new(t)));
        }
        "Option" => {
            if !expect_args(cx, 1, "Option<T>") {
                return None;
            }
            let inner = parse_type(cx, args[0])?;
            if matches!(inner, TypeRef::Option(_)) {
                cx.error(
                    ty.span(),
                    "`Option<Option<T>>` is not supported; write `Option<T>`",
                );
                return None;
            }
            return Some(TypeRef::Option(Box::new(inner)));
        }
        "BTreeMap" => {
            if !expect_args(cx, 2, "BTreeMap<String, T>") {
                return None;
            }
            let key = parse_type(cx, args[0])?;
            if key != TypeRef::String {
                cx.error(
                    args[0].span(),
                    "map keys are strings in JSON: write `BTreeMap<String, T>`",
                );
                return None;
            }
            return parse_type(cx, args[1]).map(|t| TypeRef::Map(Box::new(t)));
        }
        "HashMap" | "IndexMap" => {
            cx.error(ty.span(), format!("`{name}` is not sorted; write `BTreeMap<String, T>` so map keys are encoded in order"));
            return None;
        }
        other => {
            if args.is_empty() {
                if other.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                    let known = SCALAR_TYPE_NAMES.iter().copied();
                    cx.error(
                        ty.span(),
                        format!("unknown type `{other}`{}", suggestion(other, known)),
                    );
                    return None;
                }
                Some(TypeRef::Struct(other.to_string()))
            } else {
                cx.error(ty.span(), format!("`{other}` takes no type arguments"));
                return None;
            }
        }
    };
    if parsed.is_none() {
        cx.error(ty.span(), format!("`{name}` takes no type arguments"));
    }
    parsed
}

/// Parses `<group module>::<version>::<Type>`, a struct of another crate's group version.
fn parse_extern(cx: &mut MarkerCx<'_>, ty: &Type, path: &syn::Path) -> Option<TypeRef> {
    const FORM: &str = "a type of another crate's group is written `<group module>::<version>::<Type>`, such as `core::v1::ObjectReference`";
    let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
    if path.leading_colon.is_some() || segments.len() != 3 {
        cx.error(ty.span(), FORM);
        return None;
    }
    if let Some(seg) = segments
        .iter()
        .find(|s| !matches!(s.arguments, PathArguments::None))
    {
        cx.error(
            seg.span(),
            format!("`{}` takes no type arguments; {FORM}", seg.ident),
        );
        return None;
    }
    Some(TypeRef::Extern(Box::new(ExternRef {
        group_module: segments[0].ident.to_string(),
        version: segments[1].ident.to_string(),
        name: segments[2].ident.to_string(),
        ..ExternRef::default()
    })))
}

/// Takes the box off a field type written `Box<T>` or `Option<Box<T>>` (a struct that contains
/// itself): returns the type without it and whether there was one. `T` must be a struct name;
/// a box anywhere else is refused by [`parse_type`].
pub fn unbox(cx: &mut MarkerCx<'_>, ty: &Type) -> (Type, bool) {
    /// The single type argument of a path segment named `name`, if `ty` is one.
    fn arg_of<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
        let Type::Path(tp) = ty else { return None };
        if tp.qself.is_some() || tp.path.segments.len() != 1 {
            return None;
        }
        let seg = tp.path.segments.first()?;
        if seg.ident != name {
            return None;
        }
        let PathArguments::AngleBracketed(a) = &seg.arguments else {
            return None;
        };
        match a.args.iter().collect::<Vec<_>>().as_slice() {
            [GenericArgument::Type(t)] => Some(t),
            _ => None,
        }
    }
    let checked = |cx: &mut MarkerCx<'_>, inner: &Type| {
        let is_struct = matches!(inner, Type::Path(tp) if tp.path.segments.len() == 1
            && matches!(tp.path.segments[0].arguments, PathArguments::None)
            && tp.path.segments[0].ident.to_string().starts_with(|c: char| c.is_ascii_uppercase())
            && !SCALAR_TYPE_NAMES.contains(&tp.path.segments[0].ident.to_string().as_str()));
        if !is_struct {
            cx.error(
                inner.span(),
                "`Box` holds a struct of this file that contains itself, such as `Option<Box<JSONSchemaProps>>`",
            );
        }
        is_struct
    };
    if let Some(inner) = arg_of(ty, "Box") {
        let ok = checked(cx, inner);
        return (inner.clone(), ok);
    }
    if let Some(opt) = arg_of(ty, "Option")
        && let Some(inner) = arg_of(opt, "Box")
    {
        let ok = checked(cx, inner);
        let rewritten: Type = syn::parse_quote!(Option<#inner>);
        return (rewritten, ok);
    }
    (ty.clone(), false)
}
