//! Objects of kinds known only at run time (custom resources): [`Unstructured`], an object whose
//! `metadata` is typed and whose other fields are JSON, and [`UnstructuredCodec`], the
//! [`VersionCodec`] of one version of such a kind. What a version's schema does to its objects
//! (pruning unknown fields, defaulting, validation) comes from an [`UnstructuredSchema`].
//!
//! The server's tables are `'static` (a [`super::Kind`] names its codecs by `&'static`
//! reference), so the codec of a run-time version is allocated once and kept, and what is heavy
//! about it (the schema and everything compiled from it) sits in a slot the codec's owner
//! empties with [`UnstructuredCodec::retire`] when the version stops being served: the codec
//! then refuses to decode (a request that still reaches it gets an error, never an old schema),
//! and the schema is freed with its last object.
//!
//! ```
//! use std::sync::Arc;
//! use apimachinery::runtime::unstructured::{UnstructuredCodec, UnstructuredVersion};
//! use apimachinery::runtime::VersionCodec;
//! # let info: &'static apimachinery::ResourceInfo =
//! #     apimachinery::runtime::unstructured::tests_support::widget_info();
//!
//! let codec = UnstructuredCodec::new(Arc::new(UnstructuredVersion::new(info, None)));
//! let decoded = codec
//!     .decode_json(br#"{"apiVersion":"example.dev/v1","kind":"Gadget",
//!                       "metadata":{"name":"a"},"spec":{"size":3}}"#)
//!     .unwrap();
//! assert_eq!(decoded.object.metadata().name.as_deref(), Some("a"));
//! assert_eq!(
//!     String::from_utf8(decoded.object.to_json().unwrap()).unwrap(),
//!     r#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"a"},"spec":{"size":3}}"#
//! );
//! ```

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::RwLock;

use super::decode::{self, DecodeError, FieldProblem, MAX_REPORTED};
use super::kind::{DecodedObject, VersionCodec};
use super::object::{Hub, Object};
use crate::errors::FieldError;
use crate::meta::ObjectMeta;
use crate::resource::ResourceInfo;
use crate::scheme::CodecError;
use crate::structure::StructShape;

/// What the schema of one version of a run-time kind does to its objects. Paths are
/// Kubernetes' field paths without a leading dot (`spec.replicas`).
pub trait UnstructuredSchema: Send + Sync + fmt::Debug + 'static {
    /// Removes the fields the schema does not know from the object's fields (a JSON object of
    /// everything but `apiVersion`, `kind` and `metadata`) and appends their paths to `pruned`
    /// (a strict request refuses them, a warning request reports them as unknown fields).
    fn prune(&self, fields: &mut Value, pruned: &mut Vec<String>);

    /// Applies the schema's defaults to the object's fields.
    fn default(&self, fields: &mut Value);

    /// Checks a created object against the schema.
    fn validate(&self, object: &Unstructured) -> Vec<FieldError>;

    /// Checks an updated object against the schema, given the object it replaces.
    fn validate_update(&self, object: &Unstructured, old: &Unstructured) -> Vec<FieldError>;
}

/// How the objects of a run-time kind change version when the conversion is not the
/// rewrite of `apiVersion` alone (a CustomResourceDefinition's conversion strategy `Webhook`).
///
/// The conversion entry points of [`super::Kind`] are synchronous (every handler, the watch and
/// the list call them), so an implementation that waits for I/O must not stall an async
/// runtime's worker while it waits (see the extension server's converter).
pub trait UnstructuredConverter: Send + Sync + fmt::Debug + 'static {
    /// Converts `objects` (each of another version of the kind than `to`) into `to`, in order.
    /// `list` tells whether they are the items of one list (Kubernetes words the errors of a
    /// list's conversion after the list). The objects returned are of `to`; their fields are
    /// pruned by `to`'s schema afterwards.
    fn convert(
        &self,
        objects: Vec<Unstructured>,
        to: &Arc<UnstructuredVersion>,
        list: bool,
    ) -> Result<Vec<Unstructured>, CodecError>;
}

/// One served version of a run-time kind: its REST facts, its structure for patches and
/// apply, its schema (none: every field is kept, nothing is defaulted or checked) and its
/// converter (none: a conversion rewrites `apiVersion` alone).
pub struct UnstructuredVersion {
    info: &'static ResourceInfo,
    shape: &'static StructShape,
    schema: Option<Arc<dyn UnstructuredSchema>>,
    converter: Option<Arc<dyn UnstructuredConverter>>,
}

impl fmt::Debug for UnstructuredVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnstructuredVersion")
            .field("group", &self.info.group)
            .field("version", &self.info.version)
            .field("kind", &self.info.kind)
            .finish_non_exhaustive()
    }
}

/// The structure of a run-time kind whose schema states no list or map markers: `metadata` is
/// `ObjectMeta`, everything else free-form (lists atomic, maps granular, as Kubernetes treats
/// a custom resource's fields without markers).
pub static SHAPE_FREE_FORM: StructShape = StructShape {
    name: "Unstructured",
    fields: &[crate::structure::FieldShape::plain(
        "metadata",
        crate::structure::Shape::Struct(&crate::meta::SHAPE_OBJECT_META),
    )],
    atomic: false,
};

impl UnstructuredVersion {
    /// A version with the free-form structure ([`SHAPE_FREE_FORM`]).
    pub fn new(info: &'static ResourceInfo, schema: Option<Arc<dyn UnstructuredSchema>>) -> Self {
        Self {
            info,
            shape: &SHAPE_FREE_FORM,
            schema,
            converter: None,
        }
    }

    /// The same version converted into by `converter` (see [`UnstructuredConverter`]).
    pub fn with_converter(mut self, converter: Arc<dyn UnstructuredConverter>) -> Self {
        self.converter = Some(converter);
        self
    }

    /// The converter of objects into this version, if the conversion is not a rewrite of
    /// `apiVersion` alone.
    pub fn converter(&self) -> Option<&Arc<dyn UnstructuredConverter>> {
        self.converter.as_ref()
    }

    /// The same version with the structure its schema's markers give.
    pub fn with_shape(mut self, shape: &'static StructShape) -> Self {
        self.shape = shape;
        self
    }

    /// The REST facts of the version.
    pub fn info(&self) -> &'static ResourceInfo {
        self.info
    }

    /// The version's schema, if it has one.
    pub fn schema(&self) -> Option<&Arc<dyn UnstructuredSchema>> {
        self.schema.as_ref()
    }
}

/// An object of a run-time kind: typed `metadata`, the other fields as JSON, and the version
/// it is of.
#[derive(Clone)]
pub struct Unstructured {
    version: Arc<UnstructuredVersion>,
    metadata: ObjectMeta,
    /// Always a JSON object.
    fields: Value,
}

impl fmt::Debug for Unstructured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unstructured")
            .field("apiVersion", &self.version.info.api_version())
            .field("kind", &self.version.info.kind)
            .field("metadata", &self.metadata)
            .field("fields", &self.fields)
            .finish()
    }
}

impl PartialEq for Unstructured {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.version.info, other.version.info)
            && self.metadata == other.metadata
            && self.fields == other.fields
    }
}

impl Unstructured {
    /// An object of `version` with `metadata` and the other fields.
    pub fn new(
        version: Arc<UnstructuredVersion>,
        metadata: ObjectMeta,
        fields: Map<String, Value>,
    ) -> Self {
        Self {
            version,
            metadata,
            fields: Value::Object(fields),
        }
    }

    /// The version the object is of.
    pub fn version(&self) -> &Arc<UnstructuredVersion> {
        &self.version
    }

    /// The fields other than `apiVersion`, `kind` and `metadata`.
    pub fn fields(&self) -> &Map<String, Value> {
        match &self.fields {
            Value::Object(map) => map,
            _ => unreachable!("the fields are a JSON object"),
        }
    }

    /// The fields other than `apiVersion`, `kind` and `metadata`, mutably.
    pub fn fields_mut(&mut self) -> &mut Map<String, Value> {
        match &mut self.fields {
            Value::Object(map) => map,
            _ => unreachable!("the fields are a JSON object"),
        }
    }

    /// The fields other than `apiVersion`, `kind` and `metadata`, as one JSON object (what a
    /// schema prunes, defaults and validates).
    pub fn fields_value(&self) -> &Value {
        &self.fields
    }

    /// The object as another version of its kind (a conversion that changes nothing but the
    /// `apiVersion`, Kubernetes' conversion strategy `None`).
    pub fn with_version(mut self, version: Arc<UnstructuredVersion>) -> Self {
        self.version = version;
        self
    }

    /// Whether the object holds nothing but its `apiVersion` and `kind` (Kubernetes converts
    /// such an object by rewriting `apiVersion`, never through a webhook).
    pub fn is_empty(&self) -> bool {
        self.metadata == ObjectMeta::default() && self.fields().is_empty()
    }

    /// Prunes the fields with the version's schema after a conversion into it (as
    /// kube-apiserver's schema-coercing converter does; defaults are not applied: only a
    /// decode applies them).
    fn prune_converted(&mut self) {
        if let Some(schema) = self.version.schema.clone() {
            schema.prune(&mut self.fields, &mut Vec::new());
        }
    }

    /// The object's JSON bytes.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("JSON maps always serialize")
    }

    fn has_status_subresource(&self) -> bool {
        self.version.info.status_subresource
    }

    /// Whether two objects' fields are equal apart from `status` when the kind has a status
    /// subresource (which is what moves `metadata.generation`).
    fn spec_equal(&self, other: &Self) -> bool {
        if !self.has_status_subresource() {
            return self.fields == other.fields;
        }
        let (mine, theirs) = (self.fields(), other.fields());
        let visible = |m: &Map<String, Value>| m.keys().filter(|k| *k != "status").count();
        visible(mine) == visible(theirs)
            && mine
                .iter()
                .filter(|(k, _)| *k != "status")
                .all(|(k, v)| theirs.get(k) == Some(v))
    }
}

impl Serialize for Unstructured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let info = self.version.info;
        let fields = self.fields();
        let mut map = serializer.serialize_map(Some(3 + fields.len()))?;
        map.serialize_entry("apiVersion", &ApiVersion(info))?;
        map.serialize_entry("kind", info.kind)?;
        map.serialize_entry("metadata", &self.metadata)?;
        for (key, value) in fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A version's `apiVersion` string, written without building it.
struct ApiVersion(&'static ResourceInfo);

impl Serialize for ApiVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.group.is_empty() {
            serializer.serialize_str(self.0.version)
        } else {
            serializer.collect_str(&format_args!("{}/{}", self.0.group, self.0.version))
        }
    }
}

fn json_error(e: serde_json::Error) -> CodecError {
    CodecError::Json(e.to_string())
}

impl Object for Unstructured {
    fn info(&self) -> &'static ResourceInfo {
        self.version.info
    }

    fn shape(&self) -> &'static StructShape {
        self.version.shape
    }

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        serde_json::to_writer(out, self).map_err(json_error)
    }

    fn to_value(&self) -> Result<Value, CodecError> {
        serde_json::to_value(self).map_err(json_error)
    }

    fn walk_json(&self, visitor: &mut dyn super::walk::JsonVisitor) -> Result<(), CodecError> {
        super::walk::walk(self, visitor).map_err(json_error)
    }

    fn write_protobuf(&self, _out: &mut Vec<u8>) -> Result<(), CodecError> {
        Err(CodecError::Protobuf(format!(
            "{} has no protobuf encoding",
            self.version.info.kind
        )))
    }

    fn clone_object(&self) -> Box<dyn Object> {
        Box::new(self.clone())
    }

    fn eq_object(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<Self>() == Some(self)
    }

    fn spec_eq(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| self.spec_equal(o))
    }

    fn reset_status(&mut self) {
        self.fields_mut().shift_remove("status");
    }

    fn copy_status(&mut self, from: &dyn Object) {
        let Some(from) = from.as_any().downcast_ref::<Self>() else {
            return;
        };
        match from.fields().get("status") {
            Some(status) => {
                self.fields_mut()
                    .insert("status".to_string(), status.clone());
            }
            None => {
                self.fields_mut().shift_remove("status");
            }
        }
    }

    fn validate(&self) -> Vec<FieldError> {
        match &self.version.schema {
            Some(schema) => schema.validate(self),
            None => Vec::new(),
        }
    }

    fn validate_update(&self, old: &dyn Object) -> Vec<FieldError> {
        match (&self.version.schema, old.as_any().downcast_ref::<Self>()) {
            (Some(schema), Some(old)) => schema.validate_update(self, old),
            (Some(schema), None) => schema.validate(self),
            (None, _) => Vec::new(),
        }
    }

    fn run_default_hooks(&mut self) {
        if let Some(schema) = &self.version.schema {
            schema.default(&mut self.fields);
        }
    }

    fn to_hub(&self) -> Hub {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send + Sync> {
        self
    }
}

/// The parts of a decoded document: `metadata` typed, every other member kept as JSON (the
/// top-level `apiVersion` and `kind` are captured by the decoder's tracker and dropped).
struct Parts {
    metadata: ObjectMeta,
    fields: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // As a struct, so the decoder's tracker captures the top-level `apiVersion` and `kind`.
        deserializer.deserialize_struct(
            "Unstructured",
            &["apiVersion", "kind", "metadata"],
            PartsVisitor,
        )
    }
}

struct PartsVisitor;

impl<'de> Visitor<'de> for PartsVisitor {
    type Value = Parts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
        let mut parts = Parts {
            metadata: ObjectMeta::default(),
            fields: Map::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => {
                    parts.metadata = map.next_value::<Option<ObjectMeta>>()?.unwrap_or_default()
                }
                "apiVersion" | "kind" => {
                    map.next_value::<de::IgnoredAny>()?;
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    parts.fields.insert(key, value);
                }
            }
        }
        Ok(parts)
    }
}

/// The [`VersionCodec`] of one version of a run-time kind (see the module documentation).
pub struct UnstructuredCodec {
    info: &'static ResourceInfo,
    shape: &'static StructShape,
    version: RwLock<Option<Arc<UnstructuredVersion>>>,
}

impl fmt::Debug for UnstructuredCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnstructuredCodec")
            .field("info", &self.info.api_version())
            .field("kind", &self.info.kind)
            .field(
                "retired",
                &self
                    .version
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_none(),
            )
            .finish()
    }
}

impl UnstructuredCodec {
    /// The codec of `version`.
    pub fn new(version: Arc<UnstructuredVersion>) -> Self {
        Self {
            info: version.info,
            shape: version.shape,
            version: RwLock::new(Some(version)),
        }
    }

    /// The version decoded objects are of; an error once the codec is retired.
    pub fn version(&self) -> Result<Arc<UnstructuredVersion>, CodecError> {
        self.version
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                CodecError::Conversion(format!(
                    "the definition of {} {} changed while the request was served",
                    self.info.kind,
                    self.info.api_version()
                ))
            })
    }

    /// Stops serving: the schema is dropped (with the last object decoded by it) and every
    /// later decode fails.
    pub fn retire(&self) {
        self.version
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    fn hub_object<'h>(&self, hub: &'h Hub) -> Result<&'h Unstructured, CodecError> {
        hub.downcast_ref::<Unstructured>().ok_or_else(|| {
            CodecError::Conversion(format!(
                "the hub object is not an object of {}",
                self.info.kind
            ))
        })
    }

    /// Converts objects into this codec's version: through the version's converter when it has
    /// one (objects of the version already, and empty ones, are only relabelled, as
    /// Kubernetes never sends them), else by relabelling them.
    fn convert_objects(
        &self,
        objects: Vec<Unstructured>,
        list: bool,
    ) -> Result<Vec<Unstructured>, CodecError> {
        let to = self.version()?;
        let Some(converter) = to.converter.clone() else {
            // Strategy `None`: only `apiVersion` changes, and the version's schema prunes what
            // it does not know (kube-apiserver's schema-coercing converter).
            return Ok(objects
                .into_iter()
                .map(|o| {
                    let moved = o.version.info.version != to.info.version;
                    let mut o = o.with_version(to.clone());
                    if moved {
                        o.prune_converted();
                    }
                    o
                })
                .collect());
        };
        let sent = |o: &Unstructured| o.version.info.version != to.info.version && !o.is_empty();
        let pending: Vec<usize> = (0..objects.len()).filter(|&i| sent(&objects[i])).collect();
        let mut converted = if pending.is_empty() {
            Vec::new()
        } else {
            let batch = pending.iter().map(|&i| objects[i].clone()).collect();
            converter.convert(batch, &to, list)?
        };
        if converted.len() != pending.len() {
            return Err(CodecError::Conversion(format!(
                "the converter returned {} objects, expected {}",
                converted.len(),
                pending.len()
            )));
        }
        let mut out: Vec<Unstructured> = objects
            .into_iter()
            .map(|o| o.with_version(to.clone()))
            .collect();
        for (i, mut object) in pending.into_iter().zip(converted.drain(..)) {
            object.version = to.clone();
            object.prune_converted();
            out[i] = object;
        }
        Ok(out)
    }

    /// Builds the object of decoded parts: prunes the fields the schema does not know (noting
    /// them as unknown in the tracker) and applies the defaults.
    fn finish(
        &self,
        parts: Parts,
        mut tracker: decode::Tracker,
    ) -> Result<DecodedObject, DecodeError> {
        let version = self.version().map_err(|e| DecodeError {
            path: String::new(),
            message: e.to_string(),
            syntax: false,
        })?;
        let mut object = Unstructured::new(version, parts.metadata, parts.fields);
        if let Some(schema) = object.version.schema.clone() {
            let mut pruned = Vec::new();
            schema.prune(&mut object.fields, &mut pruned);
            for path in pruned {
                let problem = FieldProblem::Unknown(path);
                if tracker.problems.len() < MAX_REPORTED && !tracker.problems.contains(&problem) {
                    tracker.problems.push(problem);
                }
            }
            schema.default(&mut object.fields);
        }
        Ok(DecodedObject {
            object: Box::new(object),
            tracker,
        })
    }
}

impl VersionCodec for UnstructuredCodec {
    fn info(&self) -> &'static ResourceInfo {
        self.info
    }

    fn shape(&self) -> &'static StructShape {
        self.shape
    }

    fn metadata_field(&self) -> Option<u32> {
        None
    }

    fn changes_stored_json_on_read(&self) -> bool {
        self.version().is_ok_and(|v| v.schema.is_some())
    }

    fn decode_json(&self, bytes: &[u8]) -> Result<DecodedObject, DecodeError> {
        let decoded = decode::decode_json::<Parts>(bytes)?;
        self.finish(decoded.object, decoded.tracker)
    }

    fn decode_value(&self, value: &Value) -> Result<DecodedObject, DecodeError> {
        let decoded = decode::decode_value::<Parts>(value)?;
        self.finish(decoded.object, decoded.tracker)
    }

    fn decode_protobuf(&self, _bytes: &[u8]) -> Result<Box<dyn Object>, CodecError> {
        Err(CodecError::Protobuf(format!(
            "{} has no protobuf encoding",
            self.info.kind
        )))
    }

    fn convert_from_hub(&self, hub: &Hub) -> Result<Box<dyn Object>, CodecError> {
        let object = self.hub_object(hub)?;
        let mut converted = self.convert_objects(vec![object.clone()], false)?;
        Ok(Box::new(converted.pop().ok_or_else(|| {
            CodecError::Conversion("the conversion returned no object".into())
        })?))
    }

    fn convert_all_from_hub(&self, hubs: Vec<Hub>) -> Result<Vec<Box<dyn Object>>, CodecError> {
        let objects = hubs
            .iter()
            .map(|h| self.hub_object(h).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .convert_objects(objects, true)?
            .into_iter()
            .map(|o| Box::new(o) as Box<dyn Object>)
            .collect())
    }

    fn new_object(&self) -> Box<dyn Object> {
        let version = self
            .version
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| Arc::new(UnstructuredVersion::new(self.info, None)));
        Box::new(Unstructured::new(
            version,
            ObjectMeta::default(),
            Map::new(),
        ))
    }
}

#[doc(hidden)]
pub mod tests_support {
    //! A resource for the examples of this module's documentation.
    use crate::resource::{ResourceInfo, Scope};

    static GADGET: ResourceInfo = ResourceInfo {
        group: "example.dev",
        version: "v1",
        kind: "Gadget",
        list_kind: "GadgetList",
        plural: "gadgets",
        singular: "gadget",
        scope: Scope::Namespaced,
        short_names: &[],
        categories: &[],
        verbs: &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        status_subresource: true,
        scale: None,
        subresources: &[],
        printer_columns: &[],
        field_selectors: &[],
        storage_version: true,
        strategic_merge_patch: false,
        allow_unconditional_update: false,
        allow_create_on_update: false,
        tracks_generation: true,
        create_only: false,
        proto_package: "",
        name_format: "dns1123-subdomain",
    };

    /// A namespaced `example.dev/v1` `Gadget` with a status subresource.
    pub fn widget_info() -> &'static ResourceInfo {
        &GADGET
    }
}

#[cfg(test)]
mod tests;
