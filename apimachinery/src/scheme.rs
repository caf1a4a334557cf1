//! The scheme: every kind the binary knows, and the typed operations on its objects.
//!
//! The server handles objects as `serde_json::Value`s in the JSON form of some version; the
//! generated crate implements [`KindOps`] for each (group, kind) by decoding those values into
//! its typed structs, so that defaulting, validation, conversion through the internal hub
//! version and protobuf encoding are all done by generated, typed code.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::errors::FieldError;
use crate::resource::ResourceInfo;

/// Why a value could not be decoded into, or encoded from, a typed object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The JSON did not match the type (wrong type of a field, bad time, ...).
    #[error("{0}")]
    Json(String),
    /// The protobuf bytes were malformed or did not match the type.
    #[error("protobuf: {0}")]
    Protobuf(String),
    /// The requested version is not served for this kind.
    #[error("no kind {kind} is registered for version {version}")]
    UnknownVersion {
        /// The kind.
        kind: String,
        /// The version asked for.
        version: String,
    },
    /// A conversion between versions failed.
    #[error("conversion: {0}")]
    Conversion(String),
}

/// The result of decoding a JSON document into the typed form of one version.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The object re-encoded from its typed form (unknown fields dropped, canonical shape).
    pub object: Value,
    /// Paths of fields the type does not know, such as `spec.foo`, for strict decoding
    /// (`fieldValidation=Strict` fails on them, `Warn` turns each into a warning).
    pub unknown_fields: Vec<String>,
}

/// Typed operations for one kind (all its versions), implemented by the generated crate.
///
/// Every `version` argument names one of [`KindOps::versions`]; values are the JSON form of
/// that version, with `apiVersion` and `kind` set.
pub trait KindOps: Send + Sync + 'static {
    /// The served versions of this kind in priority order (preferred first); exactly one has
    /// `storage_version` set.
    fn versions(&self) -> &[ResourceInfo];

    /// Decodes JSON of `version` into its typed form and encodes it back. Like Kubernetes'
    /// decoder, it applies the defaulters of `version` on the way (a field with a default is
    /// one that is absent from the JSON, which the typed re-encoding can no longer tell), so
    /// `Decoded::object` is defaulted; `unknown_fields` are collected from the input as given.
    fn decode(&self, version: &str, value: Value) -> Result<Decoded, CodecError>;

    /// Applies the defaulters of `version` (markers and hand-written hooks, recursively).
    fn default(&self, version: &str, value: Value) -> Result<Value, CodecError>;

    /// Converts an object from one version to another through the internal hub version;
    /// `apiVersion` of the result is `to`'s.
    fn convert(&self, value: Value, from: &str, to: &str) -> Result<Value, CodecError>;

    /// Validates an object being created (in `version`'s form): field markers, formats,
    /// CEL rules. Returns every error found.
    fn validate_create(&self, version: &str, value: &Value) -> Result<Vec<FieldError>, CodecError>;

    /// Validates an object being created, as [`KindOps::validate_create`], and, when it is
    /// valid and the validation decoded the typed object anyway, also returns what
    /// [`KindOps::encode_protobuf_for_storage`] returns for it, encoded from that same typed
    /// object instead of decoding it again. `None` means the caller encodes it itself.
    fn validate_create_and_encode(
        &self,
        version: &str,
        value: &Value,
    ) -> Result<(Vec<FieldError>, Option<Vec<u8>>), CodecError> {
        Ok((self.validate_create(version, value)?, None))
    }

    /// Validates an update: everything `validate_create` checks plus immutable fields and CEL
    /// transition rules against `old`.
    fn validate_update(
        &self,
        version: &str,
        value: &Value,
        old: &Value,
    ) -> Result<Vec<FieldError>, CodecError>;

    /// Encodes an object of `version` as its protobuf message (the bytes that go in
    /// `runtime.Unknown.raw`, without the envelope).
    fn encode_protobuf(&self, version: &str, value: &Value) -> Result<Vec<u8>, CodecError>;

    /// Decodes a protobuf message of `version` into JSON.
    fn decode_protobuf(&self, version: &str, bytes: &[u8]) -> Result<Value, CodecError>;

    /// Encodes a list (`{apiVersion, kind: <Kind>List, metadata, items}`) of `version` as
    /// protobuf.
    fn encode_protobuf_list(&self, version: &str, list: &Value) -> Result<Vec<u8>, CodecError>;

    /// Encodes an object of `version` as its protobuf message for storage: like
    /// [`KindOps::encode_protobuf`] but without `metadata.resourceVersion`, which a stored
    /// object never carries (it is the storage revision).
    fn encode_protobuf_for_storage(
        &self,
        version: &str,
        value: &Value,
    ) -> Result<Vec<u8>, CodecError> {
        match value.pointer("/metadata/resourceVersion") {
            Some(rv) if !rv.is_null() => {
                let mut value = value.clone();
                if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
                self.encode_protobuf(version, &value)
            }
            _ => self.encode_protobuf(version, value),
        }
    }

    /// Transcodes a protobuf message of `version` (without the envelope) straight into the
    /// JSON bytes of the object with `metadata.resourceVersion` set to `resource_version`, as
    /// a read from storage serves it. The generated kinds decode into their typed form and
    /// serialize that, without building a `serde_json::Value`; this default goes through
    /// [`KindOps::decode_protobuf`].
    fn protobuf_to_json(
        &self,
        version: &str,
        bytes: &[u8],
        resource_version: &str,
    ) -> Result<Vec<u8>, CodecError> {
        let mut value = self.decode_protobuf(version, bytes)?;
        set_resource_version(&mut value, resource_version);
        serde_json::to_vec(&value).map_err(|e| CodecError::Json(e.to_string()))
    }

    /// Returns the storage version's entry.
    fn storage_version(&self) -> &ResourceInfo {
        self.versions()
            .iter()
            .find(|v| v.storage_version)
            .unwrap_or_else(|| &self.versions()[0])
    }

    /// Returns the entry of `version`, if served.
    fn version(&self, version: &str) -> Option<&ResourceInfo> {
        self.versions().iter().find(|v| v.version == version)
    }
}

/// Sets `metadata.resourceVersion` of a JSON object (creating `metadata` when absent); other
/// values are left alone.
pub fn set_resource_version(object: &mut Value, resource_version: &str) {
    if let Some(object) = object.as_object_mut() {
        let meta = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".to_string(), Value::from(resource_version));
        }
    }
}

/// OpenAPI documents of one group version, as produced by the generator.
#[derive(Debug, Clone)]
pub struct OpenApiDocs {
    /// The group (empty for core).
    pub group: &'static str,
    /// The version.
    pub version: &'static str,
    /// The OpenAPI v3 document of this group version (JSON text): `components.schemas` plus
    /// the path operations the server serves.
    pub v3: &'static str,
    /// The OpenAPI v2 `definitions` and `paths` of this group version (JSON text: an object
    /// with those two members), merged into `/openapi/v2` by the server.
    pub v2: &'static str,
}

/// Every kind the binary serves, keyed for the lookups the server makes.
#[derive(Clone, Default)]
pub struct Scheme {
    kinds: Vec<Arc<dyn KindOps>>,
    /// Group → kind → index into `kinds` (nested so lookups borrow the names, no allocation).
    by_group_kind: BTreeMap<String, BTreeMap<String, usize>>,
    /// Group → plural resource → index into `kinds`.
    by_group_resource: BTreeMap<String, BTreeMap<String, usize>>,
    openapi: Vec<OpenApiDocs>,
    group_order: Vec<String>,
}

impl Scheme {
    /// Creates an empty scheme.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a kind. Groups are listed in discovery in the order they are first added.
    pub fn add_kind(&mut self, ops: Arc<dyn KindOps>) {
        let index = self.kinds.len();
        let first = &ops.versions()[0];
        let (group, kind, plural) = (
            first.group.to_string(),
            first.kind.to_string(),
            first.plural.to_string(),
        );
        if !self.group_order.contains(&group) {
            self.group_order.push(group.clone());
        }
        self.by_group_kind
            .entry(group.clone())
            .or_default()
            .insert(kind, index);
        self.by_group_resource
            .entry(group)
            .or_default()
            .insert(plural, index);
        self.kinds.push(ops);
    }

    /// Registers the OpenAPI documents of one group version.
    pub fn add_openapi(&mut self, docs: OpenApiDocs) {
        self.openapi.push(docs);
    }

    /// All registered kinds, in registration order.
    pub fn kinds(&self) -> &[Arc<dyn KindOps>] {
        &self.kinds
    }

    /// Group names in registration order (the core group is `""`).
    pub fn groups(&self) -> &[String] {
        &self.group_order
    }

    /// Looks a kind up by group and kind name.
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<dyn KindOps>> {
        self.by_group_kind
            .get(group)
            .and_then(|kinds| kinds.get(kind))
            .map(|&i| &self.kinds[i])
    }

    /// Looks a kind up by group and plural resource name.
    pub fn by_resource(&self, group: &str, resource: &str) -> Option<&Arc<dyn KindOps>> {
        self.by_group_resource
            .get(group)
            .and_then(|resources| resources.get(resource))
            .map(|&i| &self.kinds[i])
    }

    /// The OpenAPI documents of every group version.
    pub fn openapi(&self) -> &[OpenApiDocs] {
        &self.openapi
    }
}
