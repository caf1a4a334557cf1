//! The structure of a custom resource's version for patches and server-side apply, from the
//! markers of its schema (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`), as kube-apiserver derives a CRD's structured-merge-diff type from
//! its structural schema: an object with `properties` is a struct (atomic with
//! `x-kubernetes-map-type: atomic`), an object with `additionalProperties` a map, an array a
//! list whose field carries the list markers (atomic without one), and a node without a type
//! (or free-form with `x-kubernetes-preserve-unknown-fields`) unknown. `metadata` at the root is
//! always `ObjectMeta`.
//!
//! The shapes are `'static` tables (what compiled kinds' generated code states); those of a
//! run-time kind are built once per definition and kept ([`server::runtime_kinds::keep`]).
//!
//! ```
//! use apiextensions_api::apiextensions_k8s_io::v1::JSONSchemaProps;
//! use apimachinery::structure::Shape;
//!
//! let schema: JSONSchemaProps = serde_json::from_value(serde_json::json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "properties": {"ports": {
//!         "type": "array",
//!         "x-kubernetes-list-type": "map",
//!         "x-kubernetes-list-map-keys": ["port"],
//!         "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
//!     }}}},
//! }))
//! .unwrap();
//! let root = apiextensions_server::shape::of_schema(&schema);
//! let Shape::Struct(spec) = root.field("spec").unwrap().shape else { panic!() };
//! let ports = spec.field("ports").unwrap();
//! assert_eq!((ports.list_type, ports.list_map_keys), ("map", &["port"][..]));
//! ```

use apiextensions_api::apiextensions_k8s_io::v1::JSONSchemaProps;
use apimachinery::meta::SHAPE_OBJECT_META;
use apimachinery::structure::{FieldShape, ListShape, MapShape, Scalar, Shape, StructShape};
use server::runtime_kinds::{intern, intern_all, keep, keep_slice};

/// How deep shapes are built; below it values are unknown (free-form). Schemas are already
/// bounded by the CRD validation's depth limit; this keeps the walk bounded on its own.
const MAX_DEPTH: usize = 64;

/// The root structure of a version whose schema is `schema`.
pub fn of_schema(schema: &JSONSchemaProps) -> &'static StructShape {
    let mut fields = vec![FieldShape::plain(
        "metadata",
        Shape::Struct(&SHAPE_OBJECT_META),
    )];
    fields.extend(
        schema
            .properties
            .iter()
            .filter(|(name, _)| name.as_str() != "metadata")
            .map(|(name, p)| field(name, p, 1)),
    );
    keep(StructShape {
        name: "CustomResource",
        fields: keep_slice(fields),
        atomic: false,
    })
}

fn field(name: &str, p: &JSONSchemaProps, depth: usize) -> FieldShape {
    FieldShape {
        name: intern(name),
        shape: shape(p, depth),
        list_type: p.x_kubernetes_list_type.as_deref().map_or("", intern),
        list_map_keys: intern_all(&p.x_kubernetes_list_map_keys),
        map_type: p.x_kubernetes_map_type.as_deref().map_or("", intern),
        patch_strategy: "",
        patch_merge_key: "",
    }
}

fn shape(p: &JSONSchemaProps, depth: usize) -> Shape {
    if depth > MAX_DEPTH || p.x_kubernetes_int_or_string == Some(true) {
        return if depth > MAX_DEPTH {
            Shape::Unknown
        } else {
            Shape::Scalar(Scalar::Other)
        };
    }
    match p.type_.as_deref().unwrap_or("") {
        "object" if !p.properties.is_empty() => Shape::Struct(keep(StructShape {
            name: "",
            fields: keep_slice(
                p.properties
                    .iter()
                    .map(|(name, child)| field(name, child, depth + 1))
                    .collect(),
            ),
            atomic: p.x_kubernetes_map_type.as_deref() == Some("atomic"),
        })),
        "object" => match p
            .additional_properties
            .as_ref()
            .and_then(|a| a.schema.as_deref())
        {
            Some(values) => Shape::Map(keep(MapShape {
                values: shape(values, depth + 1),
            })),
            None if p.x_kubernetes_map_type.as_deref() == Some("atomic") => {
                Shape::Struct(keep(StructShape {
                    name: "",
                    fields: &[],
                    atomic: true,
                }))
            }
            None => Shape::Unknown,
        },
        "array" => Shape::List(keep(ListShape {
            items: p
                .items
                .as_ref()
                .and_then(|i| i.schema.as_deref())
                .map_or(Shape::Unknown, |items| shape(items, depth + 1)),
        })),
        "boolean" => Shape::Scalar(Scalar::Bool),
        "integer" => Shape::Scalar(Scalar::Int),
        "number" => Shape::Scalar(Scalar::Double),
        "string" => match p.format.as_deref().unwrap_or("") {
            "" => Shape::Scalar(Scalar::String),
            _ => Shape::Scalar(Scalar::Other),
        },
        _ => Shape::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: serde_json::Value) -> JSONSchemaProps {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn markers_and_types_become_the_shape() {
        let root = of_schema(&schema(json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                    "tags": {"type": "array", "x-kubernetes-list-type": "set",
                             "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "when": {"type": "string", "format": "date-time"},
                }},
            },
        })));
        assert!(matches!(
            root.field("metadata").unwrap().shape,
            Shape::Struct(s) if std::ptr::eq(s, &SHAPE_OBJECT_META)
        ));
        let Shape::Struct(spec) = root.field("spec").unwrap().shape else {
            panic!("spec is a struct");
        };
        assert!(spec.atomic);
        let tags = spec.field("tags").unwrap();
        assert_eq!(tags.list_type, "set");
        assert!(
            matches!(tags.shape, Shape::List(l) if matches!(l.items, Shape::Scalar(Scalar::String)))
        );
        assert!(matches!(
            spec.field("labels").unwrap().shape,
            Shape::Map(m) if matches!(m.values, Shape::Scalar(Scalar::Int))
        ));
        assert!(matches!(
            spec.field("port").unwrap().shape,
            Shape::Scalar(Scalar::Other)
        ));
        assert!(matches!(spec.field("free").unwrap().shape, Shape::Unknown));
        assert!(matches!(
            spec.field("when").unwrap().shape,
            Shape::Scalar(Scalar::Other)
        ));
    }
}
