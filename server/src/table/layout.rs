//! The generic Table layout of kinds without a convertor of their own (as kube-apiserver lays
//! out CustomResourceDefinitions): `Name`, the kind's printer columns, then `Age`. Kinds whose
//! columns JSONPaths cannot say print through their strategy's `TableConvertor` instead.

use apimachinery::ResourceInfo;
use apimachinery::jsonpath::JsonPath;
use apimachinery::table::{CREATION_TIMESTAMP_DESCRIPTION, NAME_COLUMN, human_duration};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// How a cell is computed from an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// `metadata.name`.
    Name,
    /// The human age of `metadata.creationTimestamp`.
    Age,
    /// A printer column's JSONPath (Kubernetes' JSONPath, parsed as the extension server
    /// parses `additionalPrinterColumns[].jsonPath`); `date` columns render as human ages.
    Path(&'static str),
}

/// One column: its definition and its cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header.
    pub name: &'static str,
    /// The OpenAPI type of the cells.
    pub type_: &'static str,
    /// The OpenAPI format (`name` for the name column).
    pub format: &'static str,
    /// A description.
    pub description: &'static str,
    /// 0, or more for `-o wide` columns.
    pub priority: i32,
    /// How the cell is computed.
    pub cell: Cell,
}

/// The columns of a kind's Table: `Name`, its printer columns, `Age`.
pub fn columns_for(info: &ResourceInfo) -> Vec<Column> {
    let mut out = vec![Column {
        name: NAME_COLUMN.name,
        type_: NAME_COLUMN.type_,
        format: NAME_COLUMN.format,
        description: NAME_COLUMN.description,
        priority: 0,
        cell: Cell::Name,
    }];
    out.extend(info.printer_columns.iter().map(|c| Column {
        name: c.name,
        type_: c.type_,
        format: c.format,
        description: c.description,
        priority: c.priority,
        cell: Cell::Path(c.json_path),
    }));
    out.push(Column {
        name: "Age",
        type_: "date",
        format: "",
        description: CREATION_TIMESTAMP_DESCRIPTION,
        priority: 0,
        cell: Cell::Age,
    });
    out
}

/// The `columnDefinitions` of a Table.
pub fn definitions(columns: &[Column]) -> Vec<Value> {
    columns.iter().map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})).collect()
}

fn age_of(t: Option<&str>, now: DateTime<Utc>) -> Option<String> {
    let t = DateTime::parse_from_rfc3339(t?).ok()?;
    Some(human_duration(
        now.signed_duration_since(t.with_timezone(&Utc)),
    ))
}

/// Computes one cell.
pub fn cell(object: &Value, column: &Column, now: DateTime<Utc>) -> Value {
    match &column.cell {
        Cell::Name => object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::from("")),
        Cell::Age => Value::from(
            age_of(
                object
                    .pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str),
                now,
            )
            .unwrap_or_else(|| "<unknown>".into()),
        ),
        Cell::Path(p) => {
            // The first result, as Kubernetes' table converter takes it; a path that does not
            // parse or fails to evaluate, and a null, give an empty cell.
            let Some(v) = JsonPath::parse_printer_column(p)
                .ok()
                .and_then(|path| path.first(object).map(std::borrow::Cow::into_owned))
                .filter(|v| !v.is_null())
            else {
                return Value::Null;
            };
            if column.type_ == "date"
                && let Some(age) = age_of(v.as_str(), now)
            {
                return Value::from(age);
            }
            match v {
                Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
                other => other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(type_: &'static str, path: &'static str) -> Column {
        Column {
            name: "C",
            type_,
            format: "",
            description: "",
            priority: 0,
            cell: Cell::Path(path),
        }
    }

    /// Columns of real CRDs: filters, escaped dots, indexes; missing or failing paths and
    /// nulls are empty cells.
    #[test]
    fn path_cells_use_kubernetes_jsonpath() {
        let now = Utc::now();
        let created = (now - chrono::Duration::minutes(3)).to_rfc3339();
        let object = json!({
            "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 2, "hosts": ["a", "b"], "empty": null},
            "status": {"conditions": [
                {"type": "Issuing", "status": "False"},
                {"type": "Ready", "status": "True", "lastTransitionTime": created}
            ]}
        });
        let cell = |type_, path| super::cell(&object, &column(type_, path), now);
        assert_eq!(
            cell("string", r#".status.conditions[?(@.type=="Ready")].status"#),
            json!("True")
        );
        assert_eq!(
            cell("string", r".metadata.labels['app\.kubernetes\.io/name']"),
            json!("web")
        );
        assert_eq!(cell("integer", ".spec.replicas"), json!(2));
        assert_eq!(cell("string", ".spec.hosts[-1]"), json!("b"));
        assert_eq!(cell("string", ".spec.hosts"), json!(r#"["a","b"]"#));
        assert_eq!(
            cell(
                "date",
                r#".status.conditions[?(@.type=="Ready")].lastTransitionTime"#
            ),
            json!("3m")
        );
        assert_eq!(cell("string", ".spec.missing"), Value::Null);
        assert_eq!(cell("string", ".spec.empty"), Value::Null);
        assert_eq!(cell("string", ".spec.hosts[5]"), Value::Null);
        assert_eq!(cell("string", ".spec.hosts[?(@.x"), Value::Null);
    }
}
