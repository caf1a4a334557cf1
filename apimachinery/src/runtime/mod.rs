//! The typed object model: [`Object`] (Kubernetes' `runtime.Object`), implemented for every
//! generated kind through [`TypedObject`]; [`Kind`], the table of one kind's versions with its
//! strategy; and [`decode`], which decodes request bodies straight into typed objects while
//! noting unknown and duplicate fields.

pub mod decode;
mod kind;
mod object;

pub use kind::{
    Codec, DecodedObject, Kind, SelectableFieldsFn, VersionCodec, no_selectable_fields,
};
pub use object::{Hub, Object, TypedObject};
