//! The text of the imported definition files: a version file's inner attributes, the kind's
//! markers (names, subresources, printer columns, selectable fields) and its structs, and the
//! conversion hooks of versions that differ.

use heck::ToSnakeCase;
use serde_json::Value;

use super::Loss;
use super::schema::{Def, lit, lit_list};

/// The kind's names and scope (the same in every version).
pub(super) struct Names<'a> {
    /// `namespaced` or `cluster`.
    pub scope: &'a str,
    /// The plural resource name.
    pub plural: &'a str,
    /// The singular resource name.
    pub singular: &'a str,
    /// Short names.
    pub short_names: &'a [String],
    /// Categories.
    pub categories: &'a [String],
}

/// A version file's inner attributes.
pub(super) struct Header<'a> {
    /// The group.
    pub group: &'a str,
    /// The version.
    pub version: &'a str,
    /// The CRD's name, for the file's doc comment.
    pub crd_name: &'a str,
    /// `#![storage]`.
    pub storage: bool,
    /// Served (else `#![served = false]`).
    pub served: bool,
    /// `#![priority]`.
    pub priority: i32,
}

/// The kind's markers in one version, rendered.
pub(super) struct KindMarkers {
    lines: Vec<String>,
}

/// The description kube-apiserver gives a printer column that has none.
fn column_description(path: &str) -> String {
    format!("Custom resource definition column (in JSONPath format): {path}")
}

/// Whether `path` (`.spec.replicas`) names fields of the kind as the generator checks it:
/// every segment a field of the struct it reaches, until a field that is not a struct (or a
/// `[` when `filters`).
fn path_fits(defs: &[Def], kind: &Def, path: &str, filters: bool) -> bool {
    let Some(rest) = path.strip_prefix('.') else {
        return false;
    };
    let (rest, more) = match rest.find('[') {
        Some(i) if filters => (&rest[..i], true),
        _ => (rest, false),
    };
    let mut current = Some(kind);
    for segment in rest.split('.') {
        let Some(st) = current else { return true };
        if more && segment.is_empty() {
            return true;
        }
        let Some(f) = st.fields.iter().find(|f| f.json == segment) else {
            return false;
        };
        if f.ty == "ObjectMeta" {
            return true;
        }
        let inner =
            f.ty.strip_prefix("Option<")
                .and_then(|t| t.strip_suffix('>'))
                .unwrap_or(&f.ty);
        current = defs.iter().find(|d| d.name == inner);
    }
    true
}

impl KindMarkers {
    /// Reads a version's subresources, printer columns and selectable fields.
    pub fn read(
        version: &Value,
        vpath: &str,
        names: Names<'_>,
        defs: &[Def],
        kind: &Def,
        losses: &mut Vec<Loss>,
    ) -> Self {
        let mut lines = Vec::new();
        let status = version.pointer("/subresources/status").is_some();
        let has_status_field = kind.fields.iter().any(|f| f.json == "status");
        let mut kind_keys = vec![names.scope.to_string()];
        if status {
            if has_status_field {
                kind_keys.push("status".into());
            } else {
                losses.push(Loss {
                    at: format!("{vpath}.subresources.status"),
                    what: "the schema has no `status` property, so the status subresource has nothing to serve: left out".into(),
                });
            }
        }
        kind_keys.push(format!("plural = {}", lit(names.plural)));
        kind_keys.push(format!("singular = {}", lit(names.singular)));
        if !names.short_names.is_empty() {
            kind_keys.push(format!("short_names = {}", lit_list(names.short_names)));
        }
        if !names.categories.is_empty() {
            kind_keys.push(format!("categories = {}", lit_list(names.categories)));
        }
        let mut selectable = Vec::new();
        if let Some(list) = version.get("selectableFields").and_then(Value::as_array) {
            for (i, f) in list.iter().enumerate() {
                let path = f
                    .get("jsonPath")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if path_fits(defs, kind, path, false) {
                    selectable.push(path.trim_start_matches('.').to_string());
                } else {
                    losses.push(Loss {
                        at: format!("{vpath}.selectableFields[{i}]"),
                        what: format!(
                            "`{path}` is not a path of fields of the kind: not selectable"
                        ),
                    });
                }
            }
        }
        if !selectable.is_empty() {
            kind_keys.push(format!("field_selectors = {}", lit_list(&selectable)));
        }
        lines.push(format!("#[kind({})]", kind_keys.join(", ")));
        if let Some(scale) = version.pointer("/subresources/scale") {
            let get = |k: &str| scale.get(k).and_then(Value::as_str).unwrap_or_default();
            let (spec, stat, sel) = (
                get("specReplicasPath"),
                get("statusReplicasPath"),
                get("labelSelectorPath"),
            );
            let fits = [spec, stat, sel]
                .iter()
                .all(|p| p.is_empty() || path_fits(defs, kind, p, false));
            if fits && !spec.is_empty() && !stat.is_empty() {
                let mut keys = vec![
                    format!("spec_replicas = {}", lit(spec)),
                    format!("status_replicas = {}", lit(stat)),
                ];
                if !sel.is_empty() {
                    keys.push(format!("selector = {}", lit(sel)));
                }
                lines.push(format!("#[scale({})]", keys.join(", ")));
            } else {
                losses.push(Loss {
                    at: format!("{vpath}.subresources.scale"),
                    what: "a replicas or selector path names no field of the schema: the scale subresource is left out".into(),
                });
            }
        }
        lines.extend(columns(version, vpath, defs, kind, losses));
        Self { lines }
    }
}

/// The `#[print_column]` markers of a version. The compiled kind's Table always ends with
/// `Age`, so a declared `Age` of `.metadata.creationTimestamp` is left to it.
fn columns(
    version: &Value,
    vpath: &str,
    defs: &[Def],
    kind: &Def,
    losses: &mut Vec<Loss>,
) -> Vec<String> {
    let Some(list) = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let is_age = |c: &Value| {
        c.get("jsonPath").and_then(Value::as_str) == Some(".metadata.creationTimestamp")
            && c.get("type").and_then(Value::as_str) == Some("date")
            && c.get("name").and_then(Value::as_str) == Some("Age")
    };
    let last = list.len().saturating_sub(1);
    let mut out = Vec::new();
    let mut age_seen = false;
    for (i, c) in list.iter().enumerate() {
        let cpath = format!("{vpath}.additionalPrinterColumns[{i}]");
        if is_age(c) {
            age_seen = true;
            if i != last || c.get("priority").and_then(Value::as_i64).unwrap_or(0) != 0 {
                losses.push(Loss {
                    at: cpath,
                    what: "the Age column of a compiled kind is always last and always shown: it moves there".into(),
                });
            }
            continue;
        }
        let get = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        let (name, ty, path) = (get("name"), get("type"), get("jsonPath"));
        if !path_fits(defs, kind, path, true) {
            losses.push(Loss {
                at: cpath,
                what: format!("the column `{name}` reads `{path}`, which names no field of the schema: left out"),
            });
            continue;
        }
        let description = match get("description") {
            "" => column_description(path),
            d => d.to_string(),
        };
        let mut keys = vec![
            format!("name = {}", lit(name)),
            format!("type = {}", lit(ty)),
            format!("json_path = {}", lit(path)),
        ];
        if !get("format").is_empty() {
            keys.push(format!("format = {}", lit(get("format"))));
        }
        keys.push(format!("description = {}", lit(&description)));
        if let Some(p) = c
            .get("priority")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0)
        {
            keys.push(format!("priority = {p}"));
        }
        out.push(format!("#[print_column({})]", keys.join(", ")));
    }
    if !list.is_empty() && !age_seen {
        losses.push(Loss {
            at: format!("{vpath}.additionalPrinterColumns"),
            what: "no Age column is declared, but a compiled kind's Table always ends with Age"
                .into(),
        });
    }
    out
}

/// Doc comment lines (`/// …`) at `indent`.
fn doc_lines(out: &mut String, docs: &str, indent: &str) {
    for line in docs.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            out.push_str(&format!("{indent}///\n"));
        } else {
            out.push_str(&format!("{indent}/// {line}\n"));
        }
    }
}

/// A version's definition file.
pub(super) fn version_file(h: &Header<'_>, kind: &KindMarkers, defs: &[Def]) -> String {
    let mut out = String::new();
    let from = if h.crd_name.is_empty() {
        "a CustomResourceDefinition".to_string()
    } else {
        format!("the CustomResourceDefinition `{}`", h.crd_name)
    };
    out.push_str(&format!(
        "//! {}/{}: imported from {from} by `codegen import-crd`.\n",
        h.group, h.version
    ));
    out.push_str(&format!("#![group = {}]\n", lit(h.group)));
    out.push_str(&format!("#![version = {}]\n", lit(h.version)));
    if h.storage {
        out.push_str("#![storage]\n");
    }
    if !h.served {
        out.push_str("#![served = false]\n");
    }
    out.push_str(&format!("#![priority = {}]\n", h.priority));
    out.push_str("#![crd_validation]\n");
    for (i, d) in defs.iter().enumerate() {
        out.push('\n');
        doc_lines(&mut out, &d.docs, "");
        if i == 0 {
            for l in &kind.lines {
                out.push_str(l);
                out.push('\n');
            }
        }
        if d.atomic {
            out.push_str("#[map(type = \"atomic\")]\n");
        }
        for r in &d.rules {
            out.push_str(r);
            out.push('\n');
        }
        if d.fields.is_empty() {
            out.push_str(&format!("pub struct {} {{}}\n", d.name));
            continue;
        }
        out.push_str(&format!("pub struct {} {{\n", d.name));
        for (n, f) in d.fields.iter().enumerate() {
            doc_lines(&mut out, &f.docs, "    ");
            out.push_str(&format!("    #[proto({})]\n", n + 1));
            let bare = f.rust.trim_start_matches("r#");
            let mut json_keys = Vec::new();
            if crate::parse::json_name_of(bare) != f.json {
                json_keys.push(format!("name = {}", lit(&f.json)));
            }
            if f.always {
                json_keys.push("always".to_string());
            }
            if !json_keys.is_empty() {
                out.push_str(&format!("    #[json({})]\n", json_keys.join(", ")));
            }
            for m in &f.markers {
                out.push_str(&format!("    {m}\n"));
            }
            out.push_str(&format!("    pub {}: {},\n", f.rust, f.ty));
        }
        out.push_str("}\n");
    }
    out
}

/// `hooks.rs`: for each `(version, struct, fields)` that does not match the hub field by
/// field, the pair of conversions through JSON.
pub(super) fn hooks_file(hub: &str, pairs: &[(String, String, Vec<String>)]) -> String {
    let mut out = String::from(
        "//! Conversions of the structs whose fields differ between versions, imported by `codegen\n\
         //! import-crd`: as kube-apiserver converts a custom resource whose CRD has conversion\n\
         //! strategy `None`, the JSON is kept and what the target version does not declare is\n\
         //! dropped. Replace them with conversions of your own where the versions mean different\n\
         //! things.\n\n\
         /// Decodes `dst` from the JSON of `src`; `dst` keeps the fields converted by name when the\n\
         /// JSON does not decode.\n\
         fn convert_json<S, D>(src: &S, dst: &mut D)\n\
         where\n    \
             S: ::apimachinery::__private::serde::Serialize,\n    \
             D: ::apimachinery::__private::serde::de::DeserializeOwned,\n\
         {\n    \
             let json = ::apimachinery::__private::serde_json::to_value(src);\n    \
             if let Ok(value) = json.and_then(::apimachinery::__private::serde_json::from_value) {\n        \
                 *dst = value;\n    \
             }\n\
         }\n",
    );
    for (version, name, fields) in pairs {
        let snake = name.to_snake_case();
        let differ = fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ");
        for (from, to) in [(version.as_str(), hub), (hub, version.as_str())] {
            out.push_str(&format!(
                "\n/// `{from}`'s `{name}` to `{to}`'s, through JSON (the versions differ in {differ}).\n\
                 pub fn {from}_{snake}_to_{to}(src: &{from}::{name}, dst: &mut {to}::{name}) {{\n    \
                     convert_json(src, dst);\n\
                 }}\n"
            ));
        }
    }
    out
}
