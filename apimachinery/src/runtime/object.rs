//! [`Object`]: one API object of a kind at a version, as the server handles it (Kubernetes'
//! `runtime.Object`), and [`TypedObject`], the static facts the generated code states for each
//! kind's struct, from which [`Object`] is implemented once for every kind.

use std::any::Any;
use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::errors::FieldError;
use crate::meta::ObjectMeta;
use crate::resource::ResourceInfo;
use crate::scheme::CodecError;

/// The hub form of an object: the value every version of its kind converts through, as an
/// opaque box (its type is the group's hub struct, known only to the kind's codecs).
pub type Hub = Box<dyn Any + Send + Sync>;

/// What the generated code states about the struct of one kind at one version. Everything
/// else (encoding, decoding, conversion, validation) is generic code over these facts.
pub trait TypedObject:
    crate::object::Object
    + Clone
    + fmt::Debug
    + PartialEq
    + Default
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The REST facts of this kind at this version.
    const INFO: &'static ResourceInfo;

    /// The structure of the kind at this version, for patches and server-side apply.
    const SHAPE: &'static crate::structure::StructShape;

    /// The protobuf field number of `metadata` in the kind's message, if it has one (1 in every
    /// Kubernetes kind).
    const METADATA_FIELD: Option<u32>;

    /// The group's hub struct of this kind (its `internal` version, or the storage version).
    type Hub: Send + Sync + 'static;

    /// Converts to the hub.
    fn to_hub(&self) -> Self::Hub;

    /// Converts from the hub.
    fn from_hub(hub: &Self::Hub) -> Self;

    /// Runs the hand-written defaulting hooks of the struct and of the structs inside it
    /// (marker defaults are already applied when the object is decoded or constructed).
    fn run_default_hooks(&mut self) {}

    /// Checks the `#[validate]` markers, CEL rules and the kind's validation hook (not
    /// `metadata`, which the registry validates for every kind).
    fn validate_fields(&self, errors: &mut Vec<FieldError>);

    /// Checks what an update may not change (`#[validate(immutable)]`), after
    /// [`TypedObject::validate_fields`] has checked the new object.
    fn validate_fields_update(&self, old: &Self, errors: &mut Vec<FieldError>);

    /// Appends the protobuf message of the object (without the `k8s\0` envelope); an error
    /// for kinds without a protobuf encoding.
    fn encode_protobuf(&self, out: &mut Vec<u8>) -> Result<(), CodecError>;

    /// Decodes the protobuf message of an object (without the envelope).
    fn decode_protobuf(bytes: &[u8]) -> Result<Self, CodecError>;

    /// Whether everything but `metadata` (and `status`, when the kind has a status
    /// subresource) is equal: what decides whether `metadata.generation` moves.
    fn spec_eq(&self, other: &Self) -> bool;

    /// Clears the status (a create through the main resource of a kind with a status
    /// subresource does not set it).
    fn reset_status(&mut self) {}

    /// Takes the status of `from` (an update of the main resource keeps the stored status; an
    /// update of `/status` keeps everything else).
    fn copy_status(&mut self, _from: &Self) {}
}

/// One API object of some kind at some version, as the server moves it from decoding through
/// admission and the registry to storage and back to encoding.
pub trait Object: Any + Send + Sync + fmt::Debug {
    /// The REST facts of the object's kind at its version.
    fn info(&self) -> &'static ResourceInfo;

    /// The structure of the object's kind at its version.
    fn shape(&self) -> &'static crate::structure::StructShape;

    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// The object's metadata, mutably.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;

    /// Appends the object's JSON (`apiVersion` and `kind` first).
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), CodecError>;

    /// The object's JSON as a tree (for patches, server-side apply, Tables and CEL).
    fn to_value(&self) -> Result<Value, CodecError>;

    /// Reports the object's JSON structure to `visitor` (see [`super::walk`]): what
    /// [`Object::to_value`] would build, without building it.
    fn walk_json(&self, visitor: &mut dyn super::walk::JsonVisitor) -> Result<(), CodecError>;

    /// Appends the object's protobuf message (without the envelope).
    fn write_protobuf(&self, out: &mut Vec<u8>) -> Result<(), CodecError>;

    /// A deep copy.
    fn clone_object(&self) -> Box<dyn Object>;

    /// Whether `other` is the same kind and version and equal.
    fn eq_object(&self, other: &dyn Object) -> bool;

    /// [`TypedObject::spec_eq`]; false for objects of another type.
    fn spec_eq(&self, other: &dyn Object) -> bool;

    /// [`TypedObject::reset_status`].
    fn reset_status(&mut self);

    /// [`TypedObject::copy_status`]; nothing for an object of another type.
    fn copy_status(&mut self, from: &dyn Object);

    /// [`TypedObject::validate_fields`].
    fn validate(&self) -> Vec<FieldError>;

    /// [`TypedObject::validate_fields`] of the new object plus
    /// [`TypedObject::validate_fields_update`] against `old` (of the same type).
    fn validate_update(&self, old: &dyn Object) -> Vec<FieldError>;

    /// [`TypedObject::run_default_hooks`].
    fn run_default_hooks(&mut self);

    /// The hub form of the object.
    fn to_hub(&self) -> Hub;

    /// The object as [`Any`], for downcasts to its struct.
    fn as_any(&self) -> &dyn Any;

    /// The object as mutable [`Any`].
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// The boxed object as [`Any`].
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send + Sync>;
}

impl dyn Object {
    /// The object as its struct `T`, if it is one.
    pub fn downcast_ref<T: Object>(&self) -> Option<&T> {
        self.as_any().downcast_ref()
    }

    /// The object as its struct `T`, mutably, if it is one.
    pub fn downcast_mut<T: Object>(&mut self) -> Option<&mut T> {
        self.as_any_mut().downcast_mut()
    }

    /// The boxed object as its struct `T`, or the box back.
    pub fn downcast<T: Object>(self: Box<Self>) -> Result<Box<T>, Box<dyn Object>> {
        if self.as_any().is::<T>() {
            Ok(self
                .into_any()
                .downcast()
                .expect("the type was just checked"))
        } else {
            Err(self)
        }
    }

    /// The object's JSON bytes.
    pub fn to_json(&self) -> Result<Vec<u8>, CodecError> {
        // Objects are rarely under a kilobyte: one allocation instead of regrowths.
        let mut out = Vec::with_capacity(1024);
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// The `apiVersion` of the object.
    pub fn api_version(&self) -> String {
        self.info().api_version()
    }

    /// `metadata.name`, or empty.
    pub fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or("")
    }

    /// `metadata.namespace`, or empty.
    pub fn namespace(&self) -> &str {
        self.metadata().namespace.as_deref().unwrap_or("")
    }
}

impl Clone for Box<dyn Object> {
    fn clone(&self) -> Self {
        self.clone_object()
    }
}

impl PartialEq for dyn Object {
    fn eq(&self, other: &Self) -> bool {
        self.eq_object(other)
    }
}

fn json_error(e: serde_json::Error) -> CodecError {
    CodecError::Json(e.to_string())
}

impl<T: TypedObject> Object for T {
    fn info(&self) -> &'static ResourceInfo {
        T::INFO
    }

    fn shape(&self) -> &'static crate::structure::StructShape {
        T::SHAPE
    }

    fn metadata(&self) -> &ObjectMeta {
        crate::object::Object::metadata(self)
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        crate::object::Object::metadata_mut(self)
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

    fn write_protobuf(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.encode_protobuf(out)
    }

    fn clone_object(&self) -> Box<dyn Object> {
        Box::new(self.clone())
    }

    fn eq_object(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }

    fn spec_eq(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<T>()
            .is_some_and(|o| TypedObject::spec_eq(self, o))
    }

    fn reset_status(&mut self) {
        TypedObject::reset_status(self)
    }

    fn copy_status(&mut self, from: &dyn Object) {
        if let Some(from) = from.as_any().downcast_ref::<T>() {
            TypedObject::copy_status(self, from)
        }
    }

    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.validate_fields(&mut errors);
        errors
    }

    fn validate_update(&self, old: &dyn Object) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.validate_fields(&mut errors);
        if let Some(old) = old.as_any().downcast_ref::<T>() {
            self.validate_fields_update(old, &mut errors);
        }
        errors
    }

    fn run_default_hooks(&mut self) {
        TypedObject::run_default_hooks(self)
    }

    fn to_hub(&self) -> Hub {
        Box::new(TypedObject::to_hub(self))
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
