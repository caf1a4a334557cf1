//! A CustomResourceDefinition made into the tables the server serves a kind from: one
//! [`ResourceInfo`] and [`UnstructuredCodec`] per version, the kind's [`Kind`] and its
//! [`CustomResourceStrategy`]. Names are the CRD's *accepted* names (`status.acceptedNames`), as
//! kube-apiserver serves them.

use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use apimachinery::resource::{PrinterColumn, ResourceInfo, ScaleInfo, Scope};
use apimachinery::runtime::unstructured::{
    UnstructuredCodec, UnstructuredConverter, UnstructuredSchema, UnstructuredVersion,
};
use apimachinery::runtime::{Kind, VersionCodec, no_selectable_fields};
use apimachinery::table::CREATION_TIMESTAMP_DESCRIPTION;
use server::genericserver::discovery::compare_kube_versions;
use server::registry::Registry;
use server::runtime_kinds::{intern, intern_all, keep, keep_slice};

use crate::conversion::WebhookConverter;
use crate::strategy::CustomResourceStrategy;

/// The verbs of a custom resource, in the order kube-apiserver's discovery lists them.
pub const VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The column a version without `additionalPrinterColumns` prints after `Name`.
const AGE_COLUMN: PrinterColumn = PrinterColumn {
    name: "Age",
    type_: "date",
    format: "",
    description: CREATION_TIMESTAMP_DESCRIPTION,
    priority: 0,
    json_path: ".metadata.creationTimestamp",
};

/// Compiles the schema of one version of a CRD (none: everything is kept as sent).
pub type SchemaOf<'a> = dyn Fn(&CustomResourceDefinitionVersion) -> Option<Arc<dyn UnstructuredSchema>>
    + Send
    + Sync
    + 'a;

/// A CRD as served: its kind and the codecs to retire when it stops being served.
pub struct ServedDefinition {
    /// The CRD's uid.
    pub uid: String,
    /// What the tables were built from: the CRD's generation and accepted names.
    pub fingerprint: String,
    /// The kind served.
    pub kind: &'static Kind,
    /// The kind's strategy.
    pub strategy: &'static CustomResourceStrategy,
    codecs: Vec<&'static UnstructuredCodec>,
}

impl std::fmt::Debug for ServedDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedDefinition")
            .field("uid", &self.uid)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl ServedDefinition {
    /// Retires the codecs: their schemas are freed and later decodes through them fail.
    pub fn retire(&self) {
        for codec in &self.codecs {
            codec.retire();
        }
    }
}

/// What the served tables of `crd` depend on (its uid, spec and accepted names, as
/// kube-apiserver rebuilds a CRD's storage when they change): when it changes, the kind is
/// built again.
pub fn fingerprint(crd: &CustomResourceDefinition) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&crd.spec)
        .unwrap_or_default()
        .hash(&mut hasher);
    serde_json::to_string(&crd.status.accepted_names)
        .unwrap_or_default()
        .hash(&mut hasher);
    format!(
        "{}/{:016x}",
        crd.metadata.uid.as_deref().unwrap_or_default(),
        hasher.finish()
    )
}

/// The tables of `crd` (whose names have been accepted), with the schemas `schema_of` compiles;
/// a conversion webhook's service is resolved by `registry`'s service resolver. `None` when the
/// CRD serves no version.
pub fn build(
    crd: &CustomResourceDefinition,
    schema_of: &SchemaOf<'_>,
    registry: &Arc<Registry>,
) -> Option<ServedDefinition> {
    let spec = &crd.spec;
    let names = &crd.status.accepted_names;
    let group = intern(&spec.group);
    let kind = intern(&names.kind);
    let list_kind = match names.list_kind.as_deref() {
        Some(l) if !l.is_empty() => intern(l),
        _ => intern(&format!("{}List", names.kind)),
    };
    let plural = intern(&names.plural);
    let singular = match names.singular.as_deref() {
        Some(s) if !s.is_empty() => intern(s),
        _ => intern(&names.kind.to_ascii_lowercase()),
    };
    let scope = if spec.scope == "Cluster" {
        Scope::Cluster
    } else {
        Scope::Namespaced
    };
    let short_names = intern_all(&names.short_names);
    let categories = intern_all(&names.categories);
    let mut versions: Vec<&CustomResourceDefinitionVersion> = spec
        .versions
        .iter()
        .filter(|v| v.served || v.storage)
        .collect();
    if !versions.iter().any(|v| v.served) {
        return None;
    }
    versions.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
    // One converter for every version (strategy `Webhook`); none: `apiVersion` is rewritten.
    let converter: Option<Arc<dyn UnstructuredConverter>> =
        WebhookConverter::of(crd, kind, list_kind, registry).map(|c| Arc::new(c) as _);
    let mut codecs = Vec::new();
    let mut columns_of_storage = &[][..];
    for v in &versions {
        let subresources = v.subresources.as_ref();
        let printer_columns = printer_columns(&v.additional_printer_columns);
        let field_selectors = intern_all(
            &v.selectable_fields
                .iter()
                .map(|f| f.json_path.trim_start_matches('.').to_string())
                .collect::<Vec<_>>(),
        );
        if v.storage {
            columns_of_storage = printer_columns;
        }
        let info: &'static ResourceInfo = keep(ResourceInfo {
            group,
            version: intern(&v.name),
            kind,
            list_kind,
            plural,
            singular,
            scope,
            short_names,
            categories,
            verbs: VERBS,
            status_subresource: subresources.is_some_and(|s| s.status.is_some()),
            scale: subresources
                .and_then(|s| s.scale.as_ref())
                .map(|scale| ScaleInfo {
                    spec_replicas_path: intern(&scale.spec_replicas_path),
                    status_replicas_path: intern(&scale.status_replicas_path),
                    label_selector_path: intern(
                        scale.label_selector_path.as_deref().unwrap_or_default(),
                    ),
                }),
            subresources: &[],
            printer_columns,
            field_selectors,
            storage_version: v.storage,
            strategic_merge_patch: false,
            allow_unconditional_update: false,
            allow_create_on_update: false,
            tracks_generation: true,
            create_only: false,
            proto_package: "",
            name_format: "dns1123-subdomain",
        });
        let mut served = UnstructuredVersion::new(info, schema_of(v));
        if let Some(schema) = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        {
            served = served.with_shape(crate::shape::of_schema(schema));
        }
        if let Some(converter) = &converter {
            served = served.with_converter(converter.clone());
        }
        codecs.push(keep(UnstructuredCodec::new(Arc::new(served))));
    }
    let strategy = keep(CustomResourceStrategy::new(columns_of_storage));
    let tables: Vec<&'static dyn VersionCodec> = codecs
        .iter()
        .map(|c| *c as &'static dyn VersionCodec)
        .collect();
    let kind = keep(Kind::new(
        keep_slice(tables),
        strategy,
        no_selectable_fields,
    ));
    Some(ServedDefinition {
        uid: crd.metadata.uid.clone().unwrap_or_default(),
        fingerprint: fingerprint(crd),
        kind,
        strategy,
        codecs,
    })
}

/// The `Warning` of each deprecated served version (kube-apiserver's text: the version's
/// `deprecationWarning`, an empty one meaning none, else `<group>/<version> <Kind> is
/// deprecated`, with `; use <group>/<version> <Kind>` naming the highest-priority served
/// version that is not deprecated, when it sorts before this one).
pub fn deprecation_warnings(crd: &CustomResourceDefinition) -> Vec<(String, String)> {
    let spec = &crd.spec;
    let kind = &spec.names.kind;
    let mut current: Vec<&CustomResourceDefinitionVersion> = spec
        .versions
        .iter()
        .filter(|v| v.served && !v.deprecated.unwrap_or(false))
        .collect();
    current.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
    spec.versions
        .iter()
        .filter(|v| v.served && v.deprecated.unwrap_or(false))
        .filter_map(|v| {
            let text = match v.deprecation_warning.as_deref() {
                Some("") => return None,
                Some(text) => text.to_string(),
                None => {
                    let mut text = format!("{}/{} {kind} is deprecated", spec.group, v.name);
                    if let Some(best) = current.first()
                        && compare_kube_versions(&best.name, &v.name).is_lt()
                    {
                        text.push_str(&format!("; use {}/{} {kind}", spec.group, best.name));
                    }
                    text
                }
            };
            Some((v.name.clone(), text))
        })
        .collect()
}

/// A version's columns after `Name`: those declared, or `Age` when none is.
fn printer_columns(declared: &[CustomResourceColumnDefinition]) -> &'static [PrinterColumn] {
    if declared.is_empty() {
        return keep_slice(vec![AGE_COLUMN]);
    }
    keep_slice(
        declared
            .iter()
            .map(|c| PrinterColumn {
                name: intern(&c.name),
                type_: intern(&c.type_),
                format: intern(c.format.as_deref().unwrap_or_default()),
                description: match c.description.as_deref() {
                    Some(d) if !d.is_empty() => intern(d),
                    _ => intern(&format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        c.json_path
                    )),
                },
                priority: c.priority.unwrap_or_default(),
                json_path: intern(&c.json_path),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab"}, "versions": versions}
        }))
        .expect("a CRD")
    }

    #[test]
    fn deprecated_versions_warn_as_kube_apiserver_does() {
        let c = crd(serde_json::json!([
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
             "deprecationWarning": "v1alpha1 goes away in 2027"},
            {"name": "v1alpha2", "served": true, "storage": false, "deprecated": true,
             "deprecationWarning": ""},
            {"name": "v1", "served": true, "storage": true},
            {"name": "v2beta1", "served": false, "storage": false}
        ]));
        assert_eq!(
            deprecation_warnings(&c),
            vec![
                (
                    "v1beta1".to_string(),
                    "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"
                        .to_string()
                ),
                ("v1alpha1".to_string(), "v1alpha1 goes away in 2027".to_string()),
            ]
        );
        let only = crd(serde_json::json!([
            {"name": "v1", "served": true, "storage": true, "deprecated": true}
        ]));
        assert_eq!(
            deprecation_warnings(&only),
            vec![(
                "v1".to_string(),
                "stable.example.com/v1 CronTab is deprecated".to_string()
            )]
        );
    }
}
