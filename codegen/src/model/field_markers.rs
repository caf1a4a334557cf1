//! The field markers of the model: `#[validate(…)]` constraints and the list, map and patch
//! markers that server-side apply and strategic merge patch read.

/// `#[validate(…)]` constraints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Validation {
    /// `required`.
    pub required: bool,
    /// `minimum = N`.
    pub minimum: Option<serde_json::Number>,
    /// `maximum = N`.
    pub maximum: Option<serde_json::Number>,
    /// `exclusive_minimum = N` (a bound that the value must be greater than).
    pub exclusive_minimum: Option<serde_json::Number>,
    /// `exclusive_maximum = N` (a bound that the value must be less than).
    pub exclusive_maximum: Option<serde_json::Number>,
    /// `pattern = "…"` (a regular expression the string must match).
    pub pattern: Option<String>,
    /// `enum = ["A", …]`.
    pub enum_values: Vec<String>,
    /// `min_length = N` (Unicode characters).
    pub min_length: Option<u64>,
    /// `max_length = N` (Unicode characters; Kubernetes says "bytes" in the message).
    pub max_length: Option<u64>,
    /// `min_items = N`.
    pub min_items: Option<u64>,
    /// `max_items = N`.
    pub max_items: Option<u64>,
    /// `min_properties = N` (maps).
    pub min_properties: Option<u64>,
    /// `max_properties = N` (maps).
    pub max_properties: Option<u64>,
    /// `format = "…"`: one of [`FORMATS`].
    pub format: Option<String>,
    /// `immutable`: may not change on update once set.
    pub immutable: bool,
}

impl Validation {
    /// Whether no constraint is set.
    pub fn is_empty(&self) -> bool {
        *self == Validation::default()
    }
}

/// The supported string formats of `#[validate(format = …)]`.
pub const FORMATS: [&str; 9] = [
    "dns1123-label",
    "dns1123-subdomain",
    "date-time",
    "uuid",
    "byte",
    "int-or-string",
    "qualified-name",
    "label-value",
    "path-segment",
];

/// `#[list(type = …, map_keys = […])]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListMarker {
    /// `atomic`, `set` or `map`.
    pub type_: ListType,
    /// `map_keys` for `map` lists.
    pub map_keys: Vec<String>,
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListType {
    /// `atomic`.
    Atomic,
    /// `set`.
    Set,
    /// `map`.
    Map,
}

impl ListType {
    /// The OpenAPI value.
    pub fn as_str(self) -> &'static str {
        match self {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        }
    }
}

/// `#[map(type = …)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapMarker {
    /// `atomic` or `granular`.
    pub type_: MapType,
}

/// `x-kubernetes-map-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapType {
    /// `atomic`.
    Atomic,
    /// `granular`.
    Granular,
}

impl MapType {
    /// The OpenAPI value.
    pub fn as_str(self) -> &'static str {
        match self {
            MapType::Atomic => "atomic",
            MapType::Granular => "granular",
        }
    }
}

/// `#[patch(strategy = "merge", merge_key = "name")]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchMarker {
    /// `x-kubernetes-patch-strategy`, such as `merge` or `merge,retainKeys`.
    pub strategy: String,
    /// `x-kubernetes-patch-merge-key`, if any.
    pub merge_key: Option<String>,
}
