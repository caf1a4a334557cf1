//! Table rendering for `kubectl get`: `meta.k8s.io` Tables built from a kind's printer
//! columns (`Name` first, then the kind's columns, then `Age`), with `includeObject` handling.

pub mod age;
pub mod jsonpath;
pub mod layout;

use apimachinery::ResourceInfo;
use apimachinery::status::ApiError;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

pub use age::human_duration;
pub use layout::{Column, columns_for};

/// What each row's `object` carries (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; other values are 400.
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(Self::Metadata),
            "None" => Ok(Self::None),
            "Object" => Ok(Self::Object),
            other => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

/// Builds `PartialObjectMetadata` of an object in the given `meta.k8s.io` version.
pub fn partial_metadata(object: &Value, meta_version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// Renders one row.
pub fn row(
    object: &Value,
    columns: &[Column],
    include: IncludeObject,
    meta_version: &str,
    now: DateTime<Utc>,
) -> Value {
    let cells: Vec<Value> = columns
        .iter()
        .map(|c| layout::cell(object, c, now))
        .collect();
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_metadata(object, meta_version));
        }
        IncludeObject::Object => {
            row.insert("object".into(), object.clone());
        }
    }
    Value::Object(row)
}

/// Builds a whole Table of objects of the kind `info` describes. `list_meta` is the list's
/// metadata (resourceVersion, continue, remainingItemCount); `with_columns` is false for watch
/// events after the first.
pub fn table(
    objects: &[Value],
    info: &ResourceInfo,
    include: IncludeObject,
    meta_version: &str,
    list_meta: Value,
    with_columns: bool,
) -> Value {
    let now = Utc::now();
    let columns = layout::columns_for(info);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row(o, &columns, include, meta_version, now))
        .collect();
    let mut t = Map::new();
    t.insert("kind".into(), Value::from("Table"));
    t.insert(
        "apiVersion".into(),
        Value::from(format!("meta.k8s.io/{meta_version}")),
    );
    t.insert("metadata".into(), list_meta);
    if with_columns {
        t.insert(
            "columnDefinitions".into(),
            Value::Array(layout::definitions(&columns)),
        );
    } else {
        t.insert("columnDefinitions".into(), Value::Null);
    }
    t.insert("rows".into(), Value::Array(rows));
    Value::Object(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::{PrinterColumn, Scope};

    const COLS: &[PrinterColumn] = &[
        PrinterColumn {
            name: "Replicas",
            type_: "integer",
            format: "",
            description: "",
            priority: 0,
            json_path: ".spec.replicas",
        },
        PrinterColumn {
            name: "Color",
            type_: "string",
            format: "",
            description: "",
            priority: 1,
            json_path: ".spec.color",
        },
    ];

    fn info(
        group: &'static str,
        kind: &'static str,
        printer_columns: &'static [PrinterColumn],
    ) -> ResourceInfo {
        ResourceInfo {
            group,
            version: "v1",
            kind,
            list_kind: "",
            plural: "",
            singular: "",
            scope: Scope::Namespaced,
            short_names: &[],
            categories: &[],
            verbs: &[],
            status_subresource: false,
            scale: None,
            printer_columns,
            field_selectors: &[],
            storage_version: true,
            strategic_merge_patch: false,
            allow_unconditional_update: false,
            allow_create_on_update: false,
            tracks_generation: true,
            create_only: false,
            proto_package: "",
        }
    }

    fn names(t: &Value) -> Vec<String> {
        t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn renders_rows_and_columns() {
        let created = (Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": created}, "spec": {"replicas": 3}});
        let t = table(
            &[obj],
            &info("example.dev", "Widget", COLS),
            IncludeObject::Metadata,
            "v1",
            json!({"resourceVersion": "5"}),
            true,
        );
        assert_eq!(names(&t), vec!["Name", "Replicas", "Color", "Age"]);
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[2]["priority"], 1);
        assert_eq!(t["rows"][0]["cells"], json!(["w", 3, null, "5m"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn builtin_kinds_use_kubernetes_columns() {
        let created = (Utc::now() - chrono::Duration::hours(3)).to_rfc3339();
        let cm = json!({"metadata": {"name": "c", "creationTimestamp": created}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        let t = table(
            &[cm],
            &info("", "ConfigMap", &[]),
            IncludeObject::None,
            "v1",
            json!({}),
            true,
        );
        assert_eq!(names(&t), vec!["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"], json!(["c", 3, "3h"]));
        assert!(t["rows"][0].get("object").is_none());
        let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
        let t = table(
            &[rb],
            &info("rbac.authorization.k8s.io", "RoleBinding", &[]),
            IncludeObject::None,
            "v1",
            json!({}),
            true,
        );
        assert_eq!(
            names(&t),
            vec!["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["rb", "ClusterRole/view", "<unknown>", "u", "", "ns/sa"])
        );
        let ev = json!({"metadata": {"name": "e"}, "type": "Normal", "reason": "Scaled", "message": "m", "involvedObject": {"kind": "Widget", "name": "w"}});
        let t = table(
            &[ev],
            &info("", "Event", &[]),
            IncludeObject::None,
            "v1",
            json!({}),
            true,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["<unknown>", "Normal", "Scaled", "widget/w", "m", "e"])
        );
    }

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
        assert_eq!(
            IncludeObject::parse(Some("Object")).unwrap(),
            IncludeObject::Object
        );
        assert_eq!(IncludeObject::parse(Some("x")).unwrap_err().code(), 400);
    }
}
