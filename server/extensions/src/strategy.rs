//! [`CustomResourceStrategy`]: what a custom resource's registry does beyond the shared rules,
//! which its version's facts already say (generation, status subresource, no create on update,
//! a resourceVersion required on update): its Table from the version's printer columns, and
//! its selectable fields read from the object by their JSONPaths; and, once its CRD is being
//! deleted, the refusal of creates that come through a patch or an update.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use apimachinery::ResourceInfo;
use apimachinery::admission::{Attributes, Operation};
use apimachinery::resource::PrinterColumn;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use apimachinery::strategy::{Strategy, TableConvertor};
use apimachinery::table::NAME_COLUMN;
use chrono::{DateTime, Utc};
use serde_json::Value;
use server::runtime_kinds::keep_slice;
use server::table::jsonpath;
use server::table::layout::{Cell, Column, cell};

/// The strategy of one CustomResourceDefinition's kind.
#[derive(Debug)]
pub struct CustomResourceStrategy {
    /// `Name` and the storage version's columns (the columns of a kind without a version).
    columns: &'static [PrinterColumn],
    /// Set once the CRD is being deleted.
    terminating: AtomicBool,
}

impl CustomResourceStrategy {
    /// The strategy of a kind whose storage version prints `columns` after `Name` (its
    /// selectable fields are its versions' `field_selectors`).
    pub fn new(columns: &'static [PrinterColumn]) -> Self {
        Self {
            columns: keep_slice(with_name(columns)),
            terminating: AtomicBool::new(false),
        }
    }

    /// Marks the kind's CRD as being deleted: creates are refused from now on (the extension
    /// server refuses `POST`s before they are decoded; this refuses those made by a
    /// server-side apply or another patch or update of an object that does not exist).
    pub fn terminate(&self) {
        self.terminating.store(true, Ordering::Release);
    }
}

fn with_name(columns: &[PrinterColumn]) -> Vec<PrinterColumn> {
    let mut all = Vec::with_capacity(columns.len() + 1);
    all.push(NAME_COLUMN);
    all.extend(columns.iter().cloned());
    all
}

impl Strategy for CustomResourceStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(self)
    }

    /// Each version of a CRD has its own schema: a write is defaulted, admitted and
    /// validated in the version it was sent in, as kube-apiserver does.
    fn writes_in_request_version(&self) -> bool {
        true
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        if attributes.operation == Operation::Create && self.terminating.load(Ordering::Acquire) {
            let info = attributes.version;
            let resource = apimachinery::GroupResource::new(info.group.to_string(), info.plural);
            return Err(server::runtime_kinds::terminating_create_refused(
                &resource,
                attributes.name,
            ));
        }
        Ok(())
    }

    fn selectable_fields(&self, object: &dyn Object, out: &mut Vec<(&'static str, String)>) {
        let labels = object.info().field_selectors;
        if labels.is_empty() {
            return;
        }
        let Ok(value) = object.to_value() else {
            return;
        };
        for label in labels {
            let text = match jsonpath::select(&value, label) {
                Some(Value::String(s)) => s,
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            out.push((label, text));
        }
    }
}

impl TableConvertor for CustomResourceStrategy {
    fn columns(&self) -> &'static [PrinterColumn] {
        self.columns
    }

    fn columns_of(&self, info: &ResourceInfo) -> Cow<'static, [PrinterColumn]> {
        Cow::Owned(with_name(info.printer_columns))
    }

    fn cells(&self, object: &dyn Object, now: DateTime<Utc>) -> Vec<Value> {
        let Ok(value) = object.to_value() else {
            return Vec::new();
        };
        let mut cells = Vec::with_capacity(object.info().printer_columns.len() + 1);
        cells.push(
            value
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::from("")),
        );
        for c in object.info().printer_columns {
            let column = Column {
                name: c.name,
                type_: c.type_,
                format: c.format,
                description: c.description,
                priority: c.priority,
                cell: Cell::Path(c.json_path),
            };
            cells.push(typed_cell(cell(&value, &column, now), c.type_));
        }
        cells
    }
}

/// A cell as kube-apiserver types a custom resource's column: an `integer` column truncates a
/// number and drops anything else, a `number` column takes numbers, a `boolean` column booleans,
/// a `string` column prints whatever it found.
fn typed_cell(found: Value, type_: &str) -> Value {
    match (type_, found) {
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => n.as_f64().map_or(Value::Null, |f| Value::from(f as i64)),
        },
        ("integer", _) => Value::Null,
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("number", _) => Value::Null,
        ("boolean", Value::Bool(b)) => Value::Bool(b),
        ("boolean", _) => Value::Null,
        ("string", Value::String(s)) => Value::String(s),
        ("string", other) => Value::String(other.to_string()),
        (_, other) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_typed_as_kube_apiserver_types_them() {
        assert_eq!(typed_cell(Value::from(2.7), "integer"), Value::from(2));
        assert_eq!(typed_cell(Value::from("x"), "integer"), Value::Null);
        assert_eq!(typed_cell(Value::from(3), "number"), Value::from(3.0));
        assert_eq!(typed_cell(Value::from(true), "string"), Value::from("true"));
        assert_eq!(typed_cell(Value::from(3), "string"), Value::from("3"));
        assert_eq!(typed_cell(Value::from("yes"), "boolean"), Value::Null);
        assert_eq!(typed_cell(Value::Null, "string"), Value::Null);
    }
}
