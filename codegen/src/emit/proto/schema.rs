//! The `.proto` text of one group version, shaped like Kubernetes' `generated.proto`.
//!
//! Messages are sorted by name (as go-to-protobuf sorts them); fields keep declaration order
//! and carry their `#[proto(N)]` numbers; every kind gets its `<Kind>List { metadata = 1;
//! items = 2; }`. References to meta, runtime, resource and intstr types use Kubernetes'
//! fully qualified names and import paths, which [`super::support`] provides.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::model::{FieldModel, StructModel, TypeRef, VersionModel};

/// The import path and package of `k8s.io/apimachinery/pkg/apis/meta/v1`.
pub const META_IMPORT: &str = "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";
/// The import path of `k8s.io/apimachinery/pkg/runtime`.
pub const RUNTIME_IMPORT: &str = "k8s.io/apimachinery/pkg/runtime/generated.proto";
/// The import path of `k8s.io/apimachinery/pkg/api/resource`.
pub const RESOURCE_IMPORT: &str = "k8s.io/apimachinery/pkg/api/resource/generated.proto";
/// The import path of `k8s.io/apimachinery/pkg/util/intstr`.
pub const INTSTR_IMPORT: &str = "k8s.io/apimachinery/pkg/util/intstr/generated.proto";

const META_PKG: &str = ".k8s.io.apimachinery.pkg.apis.meta.v1";

/// The protobuf field number of every field of `s`: the `#[proto(N)]` number, or, for a field
/// without one, the next number after the largest used so far (in declaration order); `None`
/// for a `#[proto(skip)]` field, which is not part of the message.
pub fn field_numbers(s: &StructModel) -> Vec<Option<u32>> {
    let mut next = s.fields.iter().filter_map(|f| f.proto).max().unwrap_or(0);
    s.fields
        .iter()
        .map(|f| {
            (!f.proto_skip).then(|| {
                f.proto.unwrap_or_else(|| {
                    next += 1;
                    next
                })
            })
        })
        .collect()
}

/// The protobuf type of a field value (the element type for `Vec`, the value type for maps).
fn scalar_type(ty: &TypeRef, imports: &mut BTreeSet<String>) -> String {
    match ty {
        TypeRef::Bool => "bool".into(),
        TypeRef::I32 => "int32".into(),
        TypeRef::I64 => "int64".into(),
        TypeRef::F64 => "double".into(),
        TypeRef::String => "string".into(),
        TypeRef::Bytes => "bytes".into(),
        TypeRef::Time => {
            imports.insert(META_IMPORT.to_string());
            format!("{META_PKG}.Time")
        }
        TypeRef::MicroTime => {
            imports.insert(META_IMPORT.to_string());
            format!("{META_PKG}.MicroTime")
        }
        TypeRef::Quantity => {
            imports.insert(RESOURCE_IMPORT.to_string());
            ".k8s.io.apimachinery.pkg.api.resource.Quantity".into()
        }
        TypeRef::IntOrString => {
            imports.insert(INTSTR_IMPORT.to_string());
            ".k8s.io.apimachinery.pkg.util.intstr.IntOrString".into()
        }
        TypeRef::RawExtension | TypeRef::Json => {
            imports.insert(RUNTIME_IMPORT.to_string());
            ".k8s.io.apimachinery.pkg.runtime.RawExtension".into()
        }
        TypeRef::Duration => {
            imports.insert(META_IMPORT.to_string());
            format!("{META_PKG}.Duration")
        }
        TypeRef::FieldsV1 => {
            imports.insert(META_IMPORT.to_string());
            format!("{META_PKG}.FieldsV1")
        }
        TypeRef::Meta(m) => {
            imports.insert(META_IMPORT.to_string());
            format!("{META_PKG}.{m}")
        }
        TypeRef::Extern(r) => {
            imports.insert(format!("{}.proto", r.proto_package));
            format!(".{}.{}", r.proto_package, r.name)
        }
        TypeRef::Struct(name) => name.clone(),
        TypeRef::Option(inner) => scalar_type(inner, imports),
        // A list or map nested in a list or map value: only `map<string, []string>` exists
        // in Kubernetes, as `ExtraValue`.
        TypeRef::Vec(_) | TypeRef::Map(_) => "ExtraValue".into(),
    }
}

/// One field declaration line (without the doc comment).
fn field_line(f: &FieldModel, number: u32, imports: &mut BTreeSet<String>) -> String {
    let json = &f.proto_name();
    match &f.ty {
        TypeRef::Vec(inner) => format!(
            "repeated {} {json} = {number};",
            scalar_type(inner, imports)
        ),
        TypeRef::Map(value) => format!(
            "map<string, {}> {json} = {number};",
            scalar_type(value, imports)
        ),
        TypeRef::Option(inner) => match inner.as_ref() {
            TypeRef::Vec(el) => format!("repeated {} {json} = {number};", scalar_type(el, imports)),
            TypeRef::Map(value) => format!(
                "map<string, {}> {json} = {number};",
                scalar_type(value, imports)
            ),
            other => format!(
                "optional {} {json} = {number};",
                scalar_type(other, imports)
            ),
        },
        other => format!(
            "optional {} {json} = {number};",
            scalar_type(other, imports)
        ),
    }
}

fn write_docs(out: &mut String, docs: &str, indent: &str) {
    for line in docs.lines() {
        if line.is_empty() {
            let _ = writeln!(out, "{indent}//");
        } else {
            let _ = writeln!(out, "{indent}// {line}");
        }
    }
}

fn uses_extra_value(ty: &TypeRef) -> bool {
    match ty {
        TypeRef::Map(v) => matches!(v.as_ref(), TypeRef::Vec(_) | TypeRef::Map(_)),
        TypeRef::Option(inner) | TypeRef::Vec(inner) => uses_extra_value(inner),
        _ => false,
    }
}

/// Renders the `.proto` file of a served version (or of the shared version, which is
/// Kubernetes' meta package: it imports nothing of itself and adds the messages of the
/// hand-written meta types, [`super::support::SHARED_MESSAGES`]).
pub fn render(version: &VersionModel) -> String {
    let mut imports = BTreeSet::new();
    let mut messages: Vec<(String, String)> = Vec::new();
    let mut extra_value = false;
    for s in &version.structs {
        let mut body = String::new();
        write_docs(&mut body, &s.docs, "");
        let _ = writeln!(body, "message {} {{", s.name);
        let numbered = s
            .fields
            .iter()
            .zip(field_numbers(s))
            .filter_map(|(f, n)| n.map(|n| (f, n)));
        for (i, (f, number)) in numbered.enumerate() {
            if i > 0 {
                body.push('\n');
            }
            extra_value |= uses_extra_value(&f.ty);
            write_docs(&mut body, &f.docs, "  ");
            let mut line = field_line(f, number, &mut imports);
            if version.shared {
                // The meta package's own messages by their relative names, as Kubernetes'
                // generated.proto writes them.
                line = line.replace(&format!("{META_PKG}."), "");
            }
            let _ = writeln!(body, "  {line}");
        }
        body.push_str("}\n");
        messages.push((s.name.clone(), body));
        if let Some(kind) = &s.kind {
            imports.insert(META_IMPORT.to_string());
            let list = kind.list_name();
            let mut body = String::new();
            let _ = writeln!(body, "// {list} is a list of {}.", s.name);
            let _ = writeln!(body, "message {list} {{");
            body.push_str("  // Standard list metadata.\n");
            let _ = writeln!(body, "  optional {META_PKG}.ListMeta metadata = 1;\n");
            let _ = writeln!(body, "  // The {} objects of the list.", s.name);
            let _ = writeln!(body, "  repeated {} items = 2;", s.name);
            body.push_str("}\n");
            messages.push((list, body));
        }
    }
    if extra_value && version.struct_named("ExtraValue").is_none() {
        let body =
            "// ExtraValue holds a list of strings as a map value.\nmessage ExtraValue {\n  \
                    // The strings.\n  repeated string items = 1;\n}\n"
                .to_string();
        messages.push(("ExtraValue".into(), body));
    }
    if version.shared {
        imports.remove(META_IMPORT);
        for (name, body, import) in super::support::SHARED_MESSAGES {
            messages.push((name.to_string(), body.to_string()));
            imports.extend(import.iter().map(|i| i.to_string()));
        }
    }
    messages.sort_by(|a, b| a.0.cmp(&b.0));

    let mut out = String::new();
    out.push_str("// Generated by apiary's codegen from api-defs; do not edit.\n");
    let _ = writeln!(
        out,
        "// Group {:?}, version {:?}.\n",
        version.group, version.version
    );
    out.push_str("syntax = \"proto2\";\n\n");
    let _ = writeln!(out, "package {};\n", version.proto_package_or_default());
    for import in &imports {
        let _ = writeln!(out, "import \"{import}\";");
    }
    if !imports.is_empty() {
        out.push('\n');
    }
    for (i, (_, body)) in messages.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(body);
    }
    out
}
