//! The structure of a kind as patches and server-side apply need it: which values are
//! structs, lists or maps, and the definitions' list, map and patch markers
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`,
//! `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`).
//!
//! The generated code states it as statics, one [`StructShape`] per struct, so nothing is
//! re-discovered at run time; those of the `meta.k8s.io/v1` structs are generated into
//! [`crate::meta`] (`SHAPE_OBJECT_META`, `SHAPE_LABEL_SELECTOR`, …).

/// The shape of one value.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Nothing is known (free-form JSON): lists are atomic, maps granular.
    Unknown,
    /// A string, number or boolean (or a type encoded as one, such as `Time`).
    Scalar(Scalar),
    /// A struct with named fields.
    Struct(&'static StructShape),
    /// A list.
    List(&'static ListShape),
    /// A map with string keys.
    Map(&'static MapShape),
}

/// The CEL type of a scalar, as Kubernetes maps a schema's `type` to CEL: what admission
/// policies' type checking compares operands with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// `boolean`: CEL `bool`.
    Bool,
    /// `integer`: CEL `int`.
    Int,
    /// `number`: CEL `double`.
    Double,
    /// `string` without a format of its own: CEL `string`.
    String,
    /// A scalar with a type of its own in CEL or more than one JSON type (`Time`,
    /// `Quantity`, `IntOrString`, `Duration`, bytes): not checked, as CEL's `dyn`.
    Other,
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
