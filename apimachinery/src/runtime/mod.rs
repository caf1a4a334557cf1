//! The typed object model: [`Object`] (Kubernetes' `runtime.Object`), implemented for every
//! generated kind through [`TypedObject`]; [`Kind`], the table of one kind's versions with its
//! strategy; [`walk`], which reports an object's JSON structure without building its tree; and [`decode`], which decodes request bodies straight into typed objects while
//! noting unknown and duplicate fields.

pub mod decode;
mod kind;
mod object;
pub mod unstructured;
pub mod walk;

pub use kind::{
    Codec, DecodedObject, Kind, SelectableFieldsFn, VersionCodec, no_selectable_fields,
};
pub use object::{Hub, Object, TypedObject};
