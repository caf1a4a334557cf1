//! The structure of a kind as patches and server-side apply need it: which values are
//! structs, lists or maps, and the definitions' list, map and patch markers
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`,
//! `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`).
//!
//! The generated code states it as statics, one [`StructShape`] per struct, so nothing is
//! re-discovered at run time; this module holds the shapes of the `meta.k8s.io/v1` types.

/// The shape of one value.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Nothing is known (free-form JSON): lists are atomic, maps granular.
    Unknown,
    /// A string, number or boolean (or a type encoded as one, such as `Time`).
    Scalar,
    /// A struct with named fields.
    Struct(&'static StructShape),
    /// A list.
    List(&'static ListShape),
    /// A map with string keys.
    Map(&'static MapShape),
}

/// The fields of a struct.
#[derive(Debug)]
pub struct StructShape {
    /// The struct's name (for debugging).
    pub name: &'static str,
    /// The fields, by JSON name (inline fields flattened in).
    pub fields: &'static [FieldShape],
    /// `x-kubernetes-map-type: atomic`: replaced as a whole by merges.
    pub atomic: bool,
}

impl StructShape {
    /// The field of a JSON name.
    pub fn field(&self, name: &str) -> Option<&'static FieldShape> {
        // Searched on every merge step; structs have a few dozen fields at most.
        let fields: &'static [FieldShape] = self.fields;
        fields.iter().find(|f| f.name == name)
    }
}

/// One field of a struct, with the markers written on it.
#[derive(Debug)]
pub struct FieldShape {
    /// The JSON name.
    pub name: &'static str,
    /// The value's shape.
    pub shape: Shape,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`), or empty.
    pub list_type: &'static str,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type` (`atomic`, `granular`), or empty.
    pub map_type: &'static str,
    /// `x-kubernetes-patch-strategy` (comma-separated), or empty.
    pub patch_strategy: &'static str,
    /// `x-kubernetes-patch-merge-key`, or empty.
    pub patch_merge_key: &'static str,
}

impl FieldShape {
    /// A field without markers.
    pub const fn plain(name: &'static str, shape: Shape) -> Self {
        Self {
            name,
            shape,
            list_type: "",
            list_map_keys: &[],
            map_type: "",
            patch_strategy: "",
            patch_merge_key: "",
        }
    }
}

/// The items of a list.
#[derive(Debug)]
pub struct ListShape {
    /// The items' shape.
    pub items: Shape,
}

/// The values of a map.
#[derive(Debug)]
pub struct MapShape {
    /// The values' shape.
    pub values: Shape,
}

const STRINGS: Shape = Shape::List(&ListShape {
    items: Shape::Scalar,
});
const STRING_MAP: Shape = Shape::Map(&MapShape {
    values: Shape::Scalar,
});

/// `metav1.OwnerReference` (atomic).
pub static OWNER_REFERENCE: StructShape = StructShape {
    name: "OwnerReference",
    fields: &[
        FieldShape::plain("apiVersion", Shape::Scalar),
        FieldShape::plain("blockOwnerDeletion", Shape::Scalar),
        FieldShape::plain("controller", Shape::Scalar),
        FieldShape::plain("kind", Shape::Scalar),
        FieldShape::plain("name", Shape::Scalar),
        FieldShape::plain("uid", Shape::Scalar),
    ],
    atomic: true,
};

/// `metav1.ManagedFieldsEntry`.
pub static MANAGED_FIELDS_ENTRY: StructShape = StructShape {
    name: "ManagedFieldsEntry",
    fields: &[
        FieldShape::plain("apiVersion", Shape::Scalar),
        FieldShape::plain("fieldsType", Shape::Scalar),
        FieldShape::plain("fieldsV1", Shape::Unknown),
        FieldShape::plain("manager", Shape::Scalar),
        FieldShape::plain("operation", Shape::Scalar),
        FieldShape::plain("subresource", Shape::Scalar),
        FieldShape::plain("time", Shape::Scalar),
    ],
    atomic: false,
};

/// `metav1.ObjectMeta`.
pub static OBJECT_META: StructShape = StructShape {
    name: "ObjectMeta",
    fields: &[
        FieldShape::plain("annotations", STRING_MAP),
        FieldShape::plain("creationTimestamp", Shape::Scalar),
        FieldShape::plain("deletionGracePeriodSeconds", Shape::Scalar),
        FieldShape::plain("deletionTimestamp", Shape::Scalar),
        FieldShape {
            list_type: "set",
            patch_strategy: "merge",
            ..FieldShape::plain("finalizers", STRINGS)
        },
        FieldShape::plain("generateName", Shape::Scalar),
        FieldShape::plain("generation", Shape::Scalar),
        FieldShape::plain("labels", STRING_MAP),
        FieldShape {
            list_type: "atomic",
            ..FieldShape::plain(
                "managedFields",
                Shape::List(&ListShape {
                    items: Shape::Struct(&MANAGED_FIELDS_ENTRY),
                }),
            )
        },
        FieldShape::plain("name", Shape::Scalar),
        FieldShape::plain("namespace", Shape::Scalar),
        FieldShape {
            list_type: "map",
            list_map_keys: &["uid"],
            patch_strategy: "merge",
            patch_merge_key: "uid",
            ..FieldShape::plain(
                "ownerReferences",
                Shape::List(&ListShape {
                    items: Shape::Struct(&OWNER_REFERENCE),
                }),
            )
        },
        FieldShape::plain("resourceVersion", Shape::Scalar),
        FieldShape::plain("selfLink", Shape::Scalar),
        FieldShape::plain("uid", Shape::Scalar),
    ],
    atomic: false,
};

/// `metav1.ListMeta`.
pub static LIST_META: StructShape = StructShape {
    name: "ListMeta",
    fields: &[
        FieldShape::plain("continue", Shape::Scalar),
        FieldShape::plain("remainingItemCount", Shape::Scalar),
        FieldShape::plain("resourceVersion", Shape::Scalar),
        FieldShape::plain("selfLink", Shape::Scalar),
    ],
    atomic: false,
};

/// `metav1.LabelSelectorRequirement`.
pub static LABEL_SELECTOR_REQUIREMENT: StructShape = StructShape {
    name: "LabelSelectorRequirement",
    fields: &[
        FieldShape::plain("key", Shape::Scalar),
        FieldShape::plain("operator", Shape::Scalar),
        FieldShape {
            list_type: "atomic",
            ..FieldShape::plain("values", STRINGS)
        },
    ],
    atomic: false,
};

/// `metav1.LabelSelector` (atomic).
pub static LABEL_SELECTOR: StructShape = StructShape {
    name: "LabelSelector",
    fields: &[
        FieldShape {
            list_type: "atomic",
            ..FieldShape::plain(
                "matchExpressions",
                Shape::List(&ListShape {
                    items: Shape::Struct(&LABEL_SELECTOR_REQUIREMENT),
                }),
            )
        },
        FieldShape::plain("matchLabels", STRING_MAP),
    ],
    atomic: true,
};

/// `metav1.Condition`.
pub static CONDITION: StructShape = StructShape {
    name: "Condition",
    fields: &[
        FieldShape::plain("lastTransitionTime", Shape::Scalar),
        FieldShape::plain("message", Shape::Scalar),
        FieldShape::plain("observedGeneration", Shape::Scalar),
        FieldShape::plain("reason", Shape::Scalar),
        FieldShape::plain("status", Shape::Scalar),
        FieldShape::plain("type", Shape::Scalar),
    ],
    atomic: false,
};

/// `metav1.TypeMeta`.
pub static TYPE_META: StructShape = StructShape {
    name: "TypeMeta",
    fields: &[
        FieldShape::plain("apiVersion", Shape::Scalar),
        FieldShape::plain("kind", Shape::Scalar),
    ],
    atomic: false,
};
