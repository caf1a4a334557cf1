//! CustomResourceDefinition → definitions: `codegen import-crd <crd.yaml>`.
//!
//! [`import_crd`] reads one `apiextensions.k8s.io/v1` CustomResourceDefinition (YAML or JSON)
//! and writes the definitions of its group, one file per version (`<group>/<version>.rs`),
//! that build and serve the same objects with compiled types: the kind's names and scope,
//! the storage version (`#![storage]`), versions not served (`#![served = false]`), version
//! priorities in kube-apiserver's order, the status and scale subresources, printer columns,
//! selectable fields, and from each version's schema one struct per object node (named from
//! its path) with the types, defaults, checks, CEL rules and list/map markers the schema says.
//! When versions differ, `<group>/hooks.rs` converts them as kube-apiserver converts custom
//! resources with strategy `None`: the JSON is kept and what the target version does not
//! declare is dropped.
//!
//! What the CRD says that the definitions cannot is listed in [`Imported::losses`], each with
//! its path in the CRD: nothing is dropped silently. The output is parsed and checked with
//! the generator before it is returned; a definition the generator refuses is an importer bug
//! ([`ImportError::Generated`]).
//!
//! Types: `integer` is `i64` (`i32` with format `int32`), `number` `f64`, `string` `String`
//! (formats `date-time`, `byte` and `uuid` stay strings with `#[validate(format)]`: `Time` would
//! rewrite the text to second precision in UTC and `Bytes` re-encode the base64, while
//! kube-apiserver keeps what was written), `x-kubernetes-int-or-string` `IntOrString`,
//! `additionalProperties` `BTreeMap<String, T>`, and a node that keeps unknown fields or is an
//! embedded resource `Value`: any JSON, as `RawExtension` is, but with the markers a value takes
//! (`#[validate(required)]`), so an embedded object's own checks are reported lost. A property
//! is `Option<T>`, or `T` when it has a default (`{}` for an object or map, literals for
//! scalars and lists).
//!
//! Every file is `#![crd_validation]`: its markers check as kube-apiserver checks the CRD's
//! schema (a required value need only be present; bounds read `<path> in body should be …`).
//!
//! Protobuf: a CRD has no field numbers, so every struct's fields are numbered `1..n` in the
//! order they are written (the kind's `metadata` first, then JSON-name order).

mod render;
mod schema;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

pub use super::Loss;
use crate::diagnostics::Diagnostics;
use crate::model::ApiModel;
use schema::Schemas;

/// The definitions imported from a CRD.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The files to write, by path relative to the definitions directory
    /// (`stable.example.com/v1.rs`), with their contents.
    pub files: BTreeMap<String, String>,
    /// What the definitions cannot say, in CRD order.
    pub losses: Vec<Loss>,
}

impl Imported {
    /// The loss report: one line per loss, or a line saying there is none.
    pub fn report(&self) -> String {
        let mut out = format!(
            "imported {} ({}) into {} file(s); protobuf field numbers are 1..n in each struct's field order (a CRD has none)\n",
            self.kind,
            self.group,
            self.files.len()
        );
        if self.losses.is_empty() {
            out.push_str("nothing of the CRD is lost\n");
        } else {
            out.push_str(&format!(
                "{} thing(s) the definitions cannot say:\n",
                self.losses.len()
            ));
            for l in &self.losses {
                out.push_str(&format!("  {l}\n"));
            }
        }
        out
    }
}

/// Why a CRD could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The text is not YAML (or JSON).
    #[error("the CRD is not valid YAML: {0}")]
    Yaml(String),
    /// The document is not an `apiextensions.k8s.io/v1` CustomResourceDefinition.
    #[error("expected an apiextensions.k8s.io/v1 CustomResourceDefinition, found {0}")]
    NotACrd(String),
    /// The file holds more than one CustomResourceDefinition.
    #[error(
        "the file holds {0} CustomResourceDefinitions; import one at a time (every CRD has a storage version of its own, a group's definitions have one)"
    )]
    SeveralCrds(usize),
    /// A field the import needs is missing or has the wrong type.
    #[error("{0} is missing or invalid")]
    Missing(String),
    /// The CRD says something the definitions cannot hold at all.
    #[error("{path}: {what}")]
    Unsupported {
        /// Where, in the CRD.
        path: String,
        /// What and why.
        what: String,
    },
    /// The generator refused the imported definitions: a bug of the importer.
    #[error("the imported definitions do not check (an importer bug):\n{0}")]
    Generated(Diagnostics),
}

/// One version of the CRD, as read.
struct Version<'a> {
    name: String,
    index: usize,
    served: bool,
    storage: bool,
    node: &'a Value,
}

/// Reads a CRD (YAML or JSON, one document; other documents than CRDs are refused) and
/// returns the definitions of its group and the loss report.
pub fn import_crd(yaml: &str) -> Result<Imported, ImportError> {
    let crd = read_crd(yaml)?;
    let mut losses = Vec::new();
    let spec = crd
        .get("spec")
        .filter(|s| s.is_object())
        .ok_or_else(|| ImportError::Missing("spec".into()))?;
    let s = |key: &str| spec.get(key).and_then(Value::as_str);
    let group = s("group")
        .filter(|g| !g.is_empty())
        .ok_or_else(|| ImportError::Missing("spec.group".into()))?
        .to_string();
    let names = spec
        .get("names")
        .ok_or_else(|| ImportError::Missing("spec.names".into()))?;
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ImportError::Missing("spec.names.kind".into()))?
        .to_string();
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .ok_or_else(|| ImportError::Missing("spec.names.plural".into()))?;
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strings(names.get("shortNames"));
    let categories = strings(names.get("categories"));
    if let Some(list_kind) = names.get("listKind").and_then(Value::as_str)
        && list_kind != format!("{kind}List")
    {
        losses.push(Loss {
            at: "spec.names.listKind".into(),
            what: format!("the list kind `{list_kind}` is not `{kind}List`, which the definitions always generate"),
        });
    }
    let scope = match s("scope") {
        Some("Namespaced") => "namespaced",
        Some("Cluster") => "cluster",
        _ => {
            return Err(ImportError::Missing(
                "spec.scope (Namespaced or Cluster)".into(),
            ));
        }
    };
    let crd_name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !crd_name.is_empty() && crd_name != format!("{plural}.{group}") {
        losses.push(Loss {
            at: "metadata.name".into(),
            what: format!(
                "`{crd_name}` is not `<plural>.<group>`; the definitions serve `{plural}.{group}`"
            ),
        });
    }
    for key in ["annotations", "labels"] {
        if crd.pointer(&format!("/metadata/{key}")).is_some() {
            losses.push(Loss {
                at: format!("metadata.{key}"),
                what: "the CRD object's own metadata has no place in the definitions: not carried"
                    .into(),
            });
        }
    }
    if spec.get("preserveUnknownFields") == Some(&Value::Bool(true)) {
        losses.push(Loss {
            at: "spec.preserveUnknownFields".into(),
            what: "unknown fields are dropped by the compiled types (kube-apiserver keeps them)"
                .into(),
        });
    }
    if let Some(conv) = spec.get("conversion")
        && conv.get("strategy").and_then(Value::as_str) == Some("Webhook")
    {
        losses.push(Loss {
            at: "spec.conversion".into(),
            what: "the conversion webhook is not called: versions convert field by field (same name and type), the rest as with strategy None (hooks.rs)".into(),
        });
    }
    let versions = read_versions(spec)?;
    let storage_count = versions.iter().filter(|v| v.storage).count();
    if storage_count != 1 {
        return Err(ImportError::Unsupported {
            path: "spec.versions".into(),
            what: format!("{storage_count} versions have `storage: true`; exactly one must"),
        });
    }
    losses.push(Loss {
        at: "spec.versions[*].schema.openAPIV3Schema".into(),
        what: format!("a value of the wrong JSON type is refused when the body is decoded (400 BadRequest, `{kind} in version \"<v>\" cannot be handled as a {kind}: …`) where kube-apiserver answers 422 Invalid (`<path> in body must be of type <type>`)"),
    });
    losses.push(Loss {
        at: "spec.versions[*].schema.openAPIV3Schema".into(),
        what: "when several checks fail, their errors are listed field by field and every CEL rule runs; kube-apiserver lists the schema's errors before list-type and CEL errors, and skips the CEL rules after a Required, Unsupported, Too long, Too many or wrong-type error".into(),
    });
    let priorities = priorities(&versions);
    let reserved = reserved_names(&kind);
    let mut files = BTreeMap::new();
    for v in &versions {
        let vpath = format!("spec.versions[name={}]", v.name);
        for key in ["deprecated", "deprecationWarning"] {
            if let Some(x) = v.node.get(key)
                && x != &Value::Bool(false)
            {
                losses.push(Loss {
                    at: format!("{vpath}.{key}"),
                    what: format!(
                        "version deprecation ({x}) has no marker: no deprecation warning is sent"
                    ),
                });
            }
        }
        let root = v
            .node
            .pointer("/schema/openAPIV3Schema")
            .ok_or_else(|| ImportError::Missing(format!("{vpath}.schema.openAPIV3Schema")))?;
        let mut schemas = Schemas::new(&mut losses, reserved.iter().cloned());
        let kind_idx = schemas.kind(&kind, root, &format!("{vpath}.schema.openAPIV3Schema"));
        let defs = std::mem::take(&mut schemas.defs);
        let kind_def = &defs[kind_idx];
        let markers = render::KindMarkers::read(
            v.node,
            &vpath,
            render::Names {
                scope,
                plural,
                singular: &singular,
                short_names: &short_names,
                categories: &categories,
            },
            &defs,
            kind_def,
            &mut losses,
        );
        let header = render::Header {
            group: &group,
            version: &v.name,
            crd_name: &crd_name,
            storage: v.storage,
            served: v.served,
            priority: priorities[v.index],
        };
        files.insert(
            format!("{group}/{}.rs", v.name),
            render::version_file(&header, &markers, &defs),
        );
    }
    let mut imported = Imported {
        group,
        kind,
        files,
        losses,
    };
    add_conversion_hooks(&mut imported)?;
    verify(&imported)?;
    Ok(imported)
}

/// The one CRD of the text.
fn read_crd(yaml: &str) -> Result<Value, ImportError> {
    use serde::Deserialize;
    let mut docs = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(yaml) {
        let v = Value::deserialize(doc).map_err(|e| ImportError::Yaml(e.to_string()))?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    let crds: Vec<Value> = docs
        .into_iter()
        .filter(|d| {
            d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && d.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1")
        })
        .collect();
    match crds.len() {
        1 => Ok(crds.into_iter().next().unwrap_or_default()),
        0 => {
            let first = serde_yaml_ng::Deserializer::from_str(yaml)
                .next()
                .and_then(|d| Value::deserialize(d).ok())
                .unwrap_or_default();
            let what = format!(
                "{}/{}",
                first
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("<no apiVersion>"),
                first
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("<no kind>")
            );
            Err(ImportError::NotACrd(what))
        }
        n => Err(ImportError::SeveralCrds(n)),
    }
}

/// The versions of the CRD spec.
fn read_versions(spec: &Value) -> Result<Vec<Version<'_>>, ImportError> {
    let list = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ImportError::Missing("spec.versions".into()))?;
    let mut out = Vec::new();
    for (index, node) in list.iter().enumerate() {
        let name = node
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ImportError::Missing(format!("spec.versions[{index}].name")))?
            .to_string();
        if !crate::check::valid_version_name(&name) {
            return Err(ImportError::Unsupported {
                path: format!("spec.versions[{index}].name"),
                what: format!(
                    "`{name}` is not a Kubernetes version name (v1, v1beta1, v2alpha3, …), which the definitions require"
                ),
            });
        }
        let flag = |k: &str| node.get(k).and_then(Value::as_bool).unwrap_or(false);
        out.push(Version {
            name,
            index,
            served: flag("served"),
            storage: flag("storage"),
            node,
        });
    }
    Ok(out)
}

/// Each version's `#![priority]`, by index: kube-apiserver's order (GA before beta before
/// alpha, higher numbers first) as 10, 20, … with the preferred version highest.
fn priorities(versions: &[Version<'_>]) -> Vec<i32> {
    let key = |name: &str| -> (u8, u64, u64) {
        let rest = &name[1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major = digits.parse().unwrap_or(0);
        let tail = &rest[digits.len()..];
        let (level, minor) = if let Some(n) = tail.strip_prefix("alpha") {
            (0, n.parse().unwrap_or(0))
        } else if let Some(n) = tail.strip_prefix("beta") {
            (1, n.parse().unwrap_or(0))
        } else {
            (2, 0)
        };
        (level, major, minor)
    };
    let mut order: Vec<usize> = (0..versions.len()).collect();
    order.sort_by_key(|&i| key(&versions[i].name));
    let mut out = vec![0; versions.len()];
    for (rank, i) in order.into_iter().enumerate() {
        out[i] = 10 * (i32::try_from(rank).unwrap_or(i32::MAX / 10) + 1);
    }
    out
}

/// The struct names a version file may not use: the kind's list, and the shared meta structs
/// (a struct of the file would shadow them).
fn reserved_names(kind: &str) -> Vec<String> {
    let (_, _, text) = crate::parse::BUILTIN_SHARED;
    let mut out = vec![format!("{kind}List")];
    out.extend(text.lines().filter_map(|l| {
        l.trim()
            .strip_prefix("pub struct ")
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_alphanumeric()).next())
            .map(String::from)
    }));
    out
}

/// Parses and links the imported files with the built-in shared definitions, as
/// [`crate::Generator::load`] does for a directory; returns the diagnostics of parsing and the
/// model (checks not run).
fn load(files: &BTreeMap<String, String>) -> (ApiModel, Diagnostics) {
    let mut diags = Diagnostics::default();
    let mut model = ApiModel::default();
    let mut by_group: BTreeMap<&str, Vec<(PathBuf, String)>> = BTreeMap::new();
    for (path, text) in files {
        let group = path.split('/').next().unwrap_or_default();
        by_group
            .entry(group)
            .or_default()
            .push((PathBuf::from(path), text.clone()));
    }
    for (group, sources) in by_group {
        model.groups.extend(crate::parse::parse_group(
            &PathBuf::from(group),
            &sources,
            &mut diags,
        ));
    }
    let (name, file, text) = crate::parse::BUILTIN_SHARED;
    let shared_dir = PathBuf::from(name);
    let sources = [(shared_dir.join(file), text.to_string())];
    model
        .groups
        .extend(crate::parse::parse_group(&shared_dir, &sources, &mut diags));
    model.groups.sort_by(|a, b| a.dir.cmp(&b.dir));
    crate::parse::link_shared(&mut model);
    (model, diags)
}

/// Adds `<group>/hooks.rs` when versions differ: every struct whose fields do not all match
/// the storage version's converts through its JSON, as kube-apiserver converts a custom
/// resource with strategy `None`.
fn add_conversion_hooks(imported: &mut Imported) -> Result<(), ImportError> {
    let (model, diags) = load(&imported.files);
    if !diags.is_empty() {
        return Err(ImportError::Generated(diags));
    }
    let Some(group) = model.group(&imported.group) else {
        return Ok(());
    };
    let Some(hub) = group.hub() else {
        return Ok(());
    };
    let mut pairs = Vec::new();
    for v in &group.versions {
        if v.version == hub.version {
            continue;
        }
        for p in crate::convert::plan(v, hub) {
            if p.needs_hooks() {
                pairs.push((
                    v.version.clone(),
                    p.from.name.clone(),
                    p.version_only
                        .iter()
                        .chain(&p.hub_only)
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>(),
                ));
            }
        }
    }
    if pairs.is_empty() {
        return Ok(());
    }
    imported.files.insert(
        format!("{}/hooks.rs", imported.group),
        render::hooks_file(&hub.version, &pairs),
    );
    Ok(())
}

/// Parses and checks the imported files with the generator.
fn verify(imported: &Imported) -> Result<(), ImportError> {
    let (model, mut diags) = load(&imported.files);
    crate::check::check(&model, &mut diags);
    if diags.is_empty() {
        Ok(())
    } else {
        Err(ImportError::Generated(diags))
    }
}
