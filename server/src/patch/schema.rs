//! Navigation of a kind's structure for the merge facts patches and server-side apply need:
//! `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.
//!
//! A [`SchemaNode`] is a position in the kind's generated `StructShape` statics (the
//! definitions' markers, stated at build time): copying one is copying two pointers.

use apimachinery::structure::{FieldShape, Shape, StructShape};

/// A position in a kind's structure: the shape of the value there, and the field it is the
/// value of (which carries the list and patch markers). An unknown position means "no facts
/// known" (everything atomic or replaced, as for untyped JSON).
#[derive(Clone, Copy, Debug)]
pub struct SchemaNode {
    shape: Shape,
    field: Option<&'static FieldShape>,
}

impl Default for SchemaNode {
    fn default() -> Self {
        Self::untyped()
    }
}

impl SchemaNode {
    /// A node that knows nothing: every list is atomic, every map granular.
    pub fn untyped() -> Self {
        Self {
            shape: Shape::Unknown,
            field: None,
        }
    }

    /// The root of a kind's structure.
    pub fn of(shape: &'static StructShape) -> Self {
        Self {
            shape: Shape::Struct(shape),
            field: None,
        }
    }

    /// Whether anything is known about this position.
    pub fn is_known(&self) -> bool {
        !matches!(self.shape, Shape::Unknown)
    }

    /// The schema of a named field of a struct (or of the map values if this is a map).
    pub fn field(&self, name: &str) -> Self {
        match self.shape {
            Shape::Struct(s) => match s.field(name) {
                Some(f) => Self {
                    shape: f.shape,
                    field: Some(f),
                },
                None => Self::untyped(),
            },
            Shape::Map(_) => self.values(),
            _ => Self::untyped(),
        }
    }

    /// The schema of the values of a map.
    pub fn values(&self) -> Self {
        match self.shape {
            Shape::Map(m) => Self {
                shape: m.values,
                field: None,
            },
            _ => Self::untyped(),
        }
    }

    /// Whether this node describes a map.
    pub fn is_map(&self) -> bool {
        matches!(self.shape, Shape::Map(_))
    }

    /// The schema of the items of a list.
    pub fn items(&self) -> Self {
        match self.shape {
            Shape::List(l) => Self {
                shape: l.items,
                field: None,
            },
            _ => Self::untyped(),
        }
    }

    /// The `x-kubernetes-patch-strategy` values (comma-separated upstream), such as `merge`
    /// or `retainKeys`.
    pub fn patch_strategies(&self) -> Vec<String> {
        self.field
            .map(|f| f.patch_strategy)
            .filter(|s| !s.is_empty())
            .map(|s| s.split(',').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default()
    }

    /// The `x-kubernetes-patch-merge-key`, if any.
    pub fn merge_key(&self) -> Option<String> {
        self.field
            .map(|f| f.patch_merge_key)
            .filter(|k| !k.is_empty())
            .map(str::to_string)
    }

    /// The `x-kubernetes-list-type` (`atomic`, `set`, `map`); lists default to atomic.
    pub fn list_type(&self) -> String {
        if let Some(t) = self.field.map(|f| f.list_type).filter(|t| !t.is_empty()) {
            return t.to_string();
        }
        // Kubernetes' built-in kinds carry only patch markers; apply treats a merge-strategy
        // list with a merge key as a map list keyed by it.
        if self.patch_strategies().iter().any(|s| s == "merge") {
            return if self.merge_key().is_some() {
                "map".into()
            } else {
                "set".into()
            };
        }
        "atomic".to_string()
    }

    /// The `x-kubernetes-list-map-keys` (or the patch merge key) of a map list.
    pub fn list_map_keys(&self) -> Vec<String> {
        match self.field {
            Some(f) if !f.list_map_keys.is_empty() => {
                f.list_map_keys.iter().map(|k| k.to_string()).collect()
            }
            _ => self.merge_key().into_iter().collect(),
        }
    }

    /// Whether `x-kubernetes-map-type` is `atomic` for this struct or map.
    pub fn map_atomic(&self) -> bool {
        self.field.is_some_and(|f| f.map_type == "atomic")
            || matches!(self.shape, Shape::Struct(s) if s.atomic)
    }

    /// The names of the fields, if this node is a struct.
    pub fn property_names(&self) -> Option<Vec<String>> {
        match self.shape {
            Shape::Struct(s) => Some(s.fields.iter().map(|f| f.name.to_string()).collect()),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod test_shapes {
    //! Shapes for the merge tests, as the generator states them.

    use apimachinery::structure::{FieldShape, ListShape, Scalar, Shape, StructShape};

    const EMPTY: StructShape = StructShape {
        name: "Item",
        fields: &[],
        atomic: false,
    };

    /// `spec` with a map list `ports` (key `name`), a set `tags` and an atomic `args`.
    pub static SPEC: StructShape = StructShape {
        name: "Spec",
        fields: &[
            FieldShape {
                list_type: "map",
                list_map_keys: &["name"],
                ..FieldShape::plain(
                    "ports",
                    Shape::List(&ListShape {
                        items: Shape::Struct(&EMPTY),
                    }),
                )
            },
            FieldShape {
                list_type: "set",
                ..FieldShape::plain(
                    "tags",
                    Shape::List(&ListShape {
                        items: Shape::Scalar(Scalar::String),
                    }),
                )
            },
            FieldShape::plain(
                "args",
                Shape::List(&ListShape {
                    items: Shape::Scalar(Scalar::String),
                }),
            ),
        ],
        atomic: false,
    };

    /// An object whose `spec` is [`SPEC`].
    pub static OBJECT: StructShape = StructShape {
        name: "Object",
        fields: &[FieldShape::plain("spec", Shape::Struct(&SPEC))],
        atomic: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_markers_of_fields() {
        let root = SchemaNode::of(&test_shapes::OBJECT);
        let spec = root.field("spec");
        assert!(spec.is_known());
        assert_eq!(spec.field("ports").list_type(), "map");
        assert_eq!(spec.field("ports").list_map_keys(), ["name"]);
        assert_eq!(spec.field("tags").list_type(), "set");
        assert_eq!(spec.field("args").list_type(), "atomic");
        assert!(!spec.field("nope").is_known());
        assert_eq!(root.property_names().unwrap(), vec!["spec".to_string()]);
        let meta = SchemaNode::of(&apimachinery::meta::SHAPE_OBJECT_META);
        let owners = meta.field("ownerReferences");
        assert_eq!(owners.merge_key().as_deref(), Some("uid"));
        assert_eq!(owners.patch_strategies(), ["merge"]);
        assert!(owners.items().map_atomic());
        assert!(meta.field("labels").is_map());
    }
}
