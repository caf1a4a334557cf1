//! Kubernetes protobuf: the wire format, the `k8s\0` envelope, watch frames and the codecs of
//! the `meta.k8s.io/v1` types.
//!
//! - [`wire`]: [`ProtoMessage`] (implemented by every generated type and the meta types),
//!   [`ProtoField`] and the encoding rules of Kubernetes' gogo-protobuf marshallers.
//! - [`envelope`]: [`encode_envelope`] / [`decode_envelope`] (`runtime.Unknown`),
//!   [`WatchEvent`] and [`encode_watch_frame`].
//! - [`meta`]: [`ProtoMessage`] for `ObjectMeta`, `ListMeta`, `Status`, `Condition`, … and
//!   [`ProtoField`] for `Time`, `MicroTime`, `Bytes`, `Quantity`, `IntOrString`.
//!
//! Field numbers are those of Kubernetes' `generated.proto` files, so that Go clients decode
//! what apiary writes and the other way round.

pub mod envelope;
pub mod meta;
pub mod wire;

pub use envelope::{
    MAGIC, MEDIA_TYPE, RawBytes, TypeMeta, Unknown, WATCH_MEDIA_TYPE, WatchEvent, decode_envelope,
    encode_envelope, encode_watch_event, encode_watch_frame, frame, split_frame,
};
pub use wire::{
    Decoder, MAX_DEPTH, ProtoError, ProtoField, ProtoMapValue, ProtoMessage, ProtoRepeated,
    WireType, expect, put_empty_message, put_key, put_len_delimited, put_message, put_varint,
};

impl From<ProtoError> for crate::scheme::CodecError {
    fn from(err: ProtoError) -> Self {
        crate::scheme::CodecError::Protobuf(err.to_string())
    }
}
