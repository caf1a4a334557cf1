//! Table rendering for `kubectl get`: `meta.k8s.io` Tables built by the kind's own
//! `TableConvertor` (its strategy's) or else from its printer columns (`Name` first, then the
//! kind's columns, then `Age`), with `includeObject` handling.

pub mod jsonpath;
pub mod layout;

use apimachinery::ResourceInfo;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use apimachinery::strategy::TableConvertor;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

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

/// The object a row carries for `includeObject`.
fn row_object(
    object: &dyn Object,
    include: IncludeObject,
    meta_version: &str,
) -> Result<Option<Value>, ApiError> {
    Ok(match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": format!("meta.k8s.io/{meta_version}"),
            "metadata": serde_json::to_value(object.metadata()).map_err(ApiError::internal)?,
        })),
        IncludeObject::Object => Some(object.to_value().map_err(ApiError::internal)?),
    })
}

/// Builds a whole Table of objects of the kind `info` describes, with the kind's own
/// `convertor` when its strategy has one, else from its printer columns. `list_meta` is the
/// list's metadata (resourceVersion, continue, remainingItemCount); `with_columns` is false for
/// watch events after the first.
pub fn table(
    objects: &[&dyn Object],
    info: &ResourceInfo,
    convertor: Option<&dyn TableConvertor>,
    include: IncludeObject,
    meta_version: &str,
    list_meta: Value,
    with_columns: bool,
) -> Result<Value, ApiError> {
    let now = Utc::now();
    let (definitions, rows) = match convertor {
        Some(c) => {
            let definitions: Vec<Value> = c
                .columns_of(info)
                .iter()
                .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}))
                .collect();
            let rows = objects
                .iter()
                .map(|o| {
                    let mut row = Map::new();
                    row.insert("cells".into(), Value::Array(c.cells(*o, now)));
                    if let Some(obj) = row_object(*o, include, meta_version)? {
                        row.insert("object".into(), obj);
                    }
                    Ok(Value::Object(row))
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            (definitions, rows)
        }
        None => {
            let columns = layout::columns_for(info);
            let rows = objects
                .iter()
                .map(|o| {
                    let value = o.to_value().map_err(ApiError::internal)?;
                    Ok(row(&value, &columns, include, meta_version, now))
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            (layout::definitions(&columns), rows)
        }
    };
    let mut t = Map::new();
    t.insert("kind".into(), Value::from("Table"));
    t.insert(
        "apiVersion".into(),
        Value::from(format!("meta.k8s.io/{meta_version}")),
    );
    t.insert("metadata".into(), list_meta);
    if with_columns {
        t.insert("columnDefinitions".into(), Value::Array(definitions));
    } else {
        t.insert("columnDefinitions".into(), Value::Null);
    }
    t.insert("rows".into(), Value::Array(rows));
    Ok(Value::Object(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed object of the scheme from its JSON.
    fn object(group: &str, kind: &str, value: Value) -> Box<dyn Object> {
        let scheme = demo_api::scheme();
        let kind = scheme.by_kind(group, kind).unwrap();
        kind.storage().decode_value(&value).unwrap().object
    }

    /// The Table of `objects` as the endpoints build it, with their kind's convertor if any.
    fn render(objects: &[Box<dyn Object>], include: IncludeObject) -> Value {
        let refs: Vec<&dyn Object> = objects.iter().map(|o| &**o).collect();
        let info = objects[0].info();
        let scheme = demo_api::scheme();
        let kind = scheme.by_kind(info.group, info.kind).unwrap();
        table(
            &refs,
            info,
            kind.strategy().table(),
            include,
            "v1",
            json!({"resourceVersion": "5"}),
            true,
        )
        .unwrap()
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
        let w = object(
            "example.dev",
            "Widget",
            json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "creationTimestamp": created}, "spec": {"replicas": 3}}),
        );
        let t = render(&[w], IncludeObject::Metadata);
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
        let cm = object(
            "",
            "ConfigMap",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": created}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}}),
        );
        let t = render(&[cm], IncludeObject::None);
        assert_eq!(names(&t), vec!["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"], json!(["c", 3, "3h"]));
        assert!(t["rows"][0].get("object").is_none());
        let rb = object(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}),
        );
        let t = render(&[rb], IncludeObject::None);
        assert_eq!(
            names(&t),
            vec!["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["rb", "ClusterRole/view", "<unknown>", "u", "", "ns/sa"])
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
