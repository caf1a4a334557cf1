//! [`Kind`]: the table of one kind's served versions, its [`Strategy`] and its selectable
//! fields, as the generated code states it; and [`VersionCodec`], the decoding entry points of
//! one version, implemented once for every generated struct by [`Codec`].

use std::marker::PhantomData;

use serde_json::Value;

use super::decode::{self, DecodeError, Tracker};
use super::object::{Hub, Object, TypedObject};
use crate::resource::ResourceInfo;
use crate::scheme::CodecError;
use crate::strategy::Strategy;

/// An object decoded from a request and what the decode saw.
#[derive(Debug)]
pub struct DecodedObject {
    /// The object, defaulted.
    pub object: Box<dyn Object>,
    /// Unknown and duplicate fields, the top-level `apiVersion` and `kind`.
    pub tracker: Tracker,
}

/// The decoding entry points of one kind at one version.
pub trait VersionCodec: Send + Sync + 'static {
    /// The REST facts of this version.
    fn info(&self) -> &'static ResourceInfo;

    /// The structure of this version, for patches and server-side apply.
    fn shape(&self) -> &'static crate::structure::StructShape;

    /// The protobuf field number of `metadata` in this version's message, if it has one.
    fn metadata_field(&self) -> Option<u32>;

    /// Whether decoding an object of this version stored as JSON may change it, so that a
    /// reader must decode it rather than serve the stored JSON as it is: a schema read at run
    /// time prunes and defaults on every read (a custom resource written before its CRD
    /// gained a default reads back with it). A compiled kind's stored JSON is served as is.
    fn changes_stored_json_on_read(&self) -> bool {
        false
    }

    /// Decodes JSON bytes (see [`decode::decode_json`]) and applies the defaults.
    fn decode_json(&self, bytes: &[u8]) -> Result<DecodedObject, DecodeError>;

    /// Decodes a JSON tree (see [`decode::decode_value`]) and applies the defaults.
    fn decode_value(&self, value: &Value) -> Result<DecodedObject, DecodeError>;

    /// Decodes a protobuf message (without the envelope) and applies the defaults.
    fn decode_protobuf(&self, bytes: &[u8]) -> Result<Box<dyn Object>, CodecError>;

    /// Converts a hub object of the kind into this version.
    fn convert_from_hub(&self, hub: &Hub) -> Result<Box<dyn Object>, CodecError>;

    /// Converts the hub objects of a list's items into this version, in order. By default one
    /// at a time; a run-time kind whose conversion is a webhook sends them in one review.
    fn convert_all_from_hub(&self, hubs: Vec<Hub>) -> Result<Vec<Box<dyn Object>>, CodecError> {
        hubs.iter().map(|h| self.convert_from_hub(h)).collect()
    }

    /// A new object of this version with every default applied.
    fn new_object(&self) -> Box<dyn Object>;
}

/// The [`VersionCodec`] of the struct `T`.
pub struct Codec<T>(PhantomData<fn() -> T>);

impl<T> Codec<T> {
    /// The codec (a constant, so tables of codecs can be statics).
    pub const NEW: Self = Codec(PhantomData);
}

fn defaulted<T: TypedObject>(mut object: T) -> Box<dyn Object> {
    object.run_default_hooks();
    Box::new(object)
}

impl<T: TypedObject> VersionCodec for Codec<T> {
    fn info(&self) -> &'static ResourceInfo {
        T::INFO
    }

    fn shape(&self) -> &'static crate::structure::StructShape {
        T::SHAPE
    }

    fn metadata_field(&self) -> Option<u32> {
        T::METADATA_FIELD
    }

    fn decode_json(&self, bytes: &[u8]) -> Result<DecodedObject, DecodeError> {
        let d = decode::decode_json::<T>(bytes)?;
        Ok(DecodedObject {
            object: defaulted(d.object),
            tracker: d.tracker,
        })
    }

    fn decode_value(&self, value: &Value) -> Result<DecodedObject, DecodeError> {
        let d = decode::decode_value::<T>(value)?;
        Ok(DecodedObject {
            object: defaulted(d.object),
            tracker: d.tracker,
        })
    }

    fn decode_protobuf(&self, bytes: &[u8]) -> Result<Box<dyn Object>, CodecError> {
        T::decode_protobuf(bytes).map(defaulted)
    }

    fn convert_from_hub(&self, hub: &Hub) -> Result<Box<dyn Object>, CodecError> {
        let hub = hub.downcast_ref::<T::Hub>().ok_or_else(|| {
            CodecError::Conversion(format!(
                "the hub object is not of the hub type of {}",
                T::INFO.kind
            ))
        })?;
        Ok(Box::new(T::from_hub(hub)))
    }

    fn new_object(&self) -> Box<dyn Object> {
        defaulted(T::default())
    }
}

/// Appends the selectable fields of an object beyond `metadata.name` and
/// `metadata.namespace`: `(label, value)` pairs.
pub type SelectableFieldsFn = fn(&dyn Object, &mut Vec<(&'static str, String)>);

/// Everything the server knows about one kind: its versions (preferred first), its strategy
/// and its selectable fields.
pub struct Kind {
    versions: &'static [&'static dyn VersionCodec],
    strategy: &'static dyn Strategy,
    fields: SelectableFieldsFn,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = self.storage_info();
        f.debug_struct("Kind")
            .field("group", &info.group)
            .field("kind", &info.kind)
            .finish_non_exhaustive()
    }
}

/// Selectable fields of a kind with none beyond name and namespace.
pub fn no_selectable_fields(_: &dyn Object, _: &mut Vec<(&'static str, String)>) {}

impl Kind {
    /// A kind from its served versions in priority order (exactly one the storage version),
    /// its strategy and its selectable fields.
    pub const fn new(
        versions: &'static [&'static dyn VersionCodec],
        strategy: &'static dyn Strategy,
        fields: SelectableFieldsFn,
    ) -> Self {
        Self {
            versions,
            strategy,
            fields,
        }
    }

    /// The codecs of the served versions, preferred first.
    pub fn codecs(&self) -> &'static [&'static dyn VersionCodec] {
        self.versions
    }

    /// The REST facts of the served versions, preferred first.
    pub fn versions(&self) -> impl Iterator<Item = &'static ResourceInfo> + '_ {
        self.versions.iter().map(|c| c.info())
    }

    /// The codec of a served version.
    pub fn codec(&self, version: &str) -> Option<&'static dyn VersionCodec> {
        self.versions
            .iter()
            .copied()
            .find(|c| c.info().version == version)
    }

    /// The REST facts of a served version.
    pub fn info(&self, version: &str) -> Option<&'static ResourceInfo> {
        self.codec(version).map(|c| c.info())
    }

    /// The codec of the storage version.
    pub fn storage(&self) -> &'static dyn VersionCodec {
        self.versions
            .iter()
            .copied()
            .find(|c| c.info().storage_version)
            .unwrap_or(self.versions[0])
    }

    /// The REST facts of the storage version.
    pub fn storage_info(&self) -> &'static ResourceInfo {
        self.storage().info()
    }

    /// The kind's strategy.
    pub fn strategy(&self) -> &'static dyn Strategy {
        self.strategy
    }

    /// The codec of a served version to convert to, or `UnknownVersion`.
    fn target_codec(&self, version: &str) -> Result<&'static dyn VersionCodec, CodecError> {
        self.codec(version)
            .ok_or_else(|| CodecError::UnknownVersion {
                kind: self.storage_info().kind.to_string(),
                version: version.to_string(),
            })
    }

    /// Converts an object of this kind to `version` through the hub (nothing to do when it is
    /// of that version already).
    pub fn convert(
        &self,
        object: Box<dyn Object>,
        version: &str,
    ) -> Result<Box<dyn Object>, CodecError> {
        if object.info().version == version {
            return Ok(object);
        }
        let codec = self.target_codec(version)?;
        codec.convert_from_hub(&object.to_hub())
    }

    /// Converts the items of a list to `version`, in order: the items not of that version go
    /// to the codec together ([`VersionCodec::convert_all_from_hub`]: one conversion webhook
    /// review for a list of custom resources), the others stay as they are.
    pub fn convert_all(
        &self,
        mut objects: Vec<Box<dyn Object>>,
        version: &str,
    ) -> Result<Vec<Box<dyn Object>>, CodecError> {
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i].info().version != version)
            .collect();
        if pending.is_empty() {
            return Ok(objects);
        }
        let codec = self.target_codec(version)?;
        let hubs = pending.iter().map(|&i| objects[i].to_hub()).collect();
        let converted = codec.convert_all_from_hub(hubs)?;
        if converted.len() != pending.len() {
            return Err(CodecError::Conversion(format!(
                "{} objects converted, {} expected",
                converted.len(),
                pending.len()
            )));
        }
        for (i, object) in pending.into_iter().zip(converted) {
            objects[i] = object;
        }
        Ok(objects)
    }

    /// The selectable fields of an object of this kind: `metadata.name`,
    /// `metadata.namespace`, those of the definition's `field_selectors` and those the
    /// strategy adds.
    pub fn selectable_fields(&self, object: &dyn Object) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("metadata.name", object.name().to_string()),
            ("metadata.namespace", object.namespace().to_string()),
        ];
        (self.fields)(object, &mut out);
        self.strategy.selectable_fields(object, &mut out);
        out
    }

    /// The field labels accepted in field selectors of this kind.
    pub fn field_labels(&self) -> Vec<&'static str> {
        let mut labels = vec!["metadata.name", "metadata.namespace"];
        labels.extend(self.storage_info().field_selectors.iter().copied());
        labels.extend(self.strategy.field_labels().iter().copied());
        labels
    }
}
