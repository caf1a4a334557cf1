//! Kubernetes' protobuf envelope (`k8s\0` + `runtime.Unknown`), `RawExtension`, `WatchEvent`
//! and the length-prefixed frames of protobuf watch streams.
//!
//! An object in `application/vnd.kubernetes.protobuf` is the four bytes `6b 38 73 00` followed
//! by `runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 }, raw = 2, contentEncoding = 3,
//! contentType = 4 }`, where `raw` holds the object's own message. Kubernetes always writes the
//! type meta and both content strings (empty) and writes `raw` when present.

use super::wire::{
    Decoder, ProtoError, ProtoField, ProtoMessage, WireType, put_len_delimited, put_message,
};

/// The four bytes that start every protobuf-encoded Kubernetes object.
pub const MAGIC: [u8; 4] = [0x6b, 0x38, 0x73, 0x00];

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// `runtime.TypeMeta`: the apiVersion and kind of the enveloped object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeMeta {
    /// `apiVersion = 1`, such as `v1` or `example.dev/v1`.
    pub api_version: String,
    /// `kind = 2`, such as `ConfigMap`.
    pub kind: String,
}

impl ProtoMessage for TypeMeta {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.api_version.encode_field(1, buf);
        self.kind.encode_field(2, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.api_version.merge_field_value(field, wire, dec),
            2 => self.kind.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

crate::proto_message_field!(TypeMeta);

/// `runtime.Unknown`: an object of some type, with its bytes in `raw`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unknown {
    /// `typeMeta = 1`.
    pub type_meta: TypeMeta,
    /// `raw = 2`: the object's message (absent when `None`).
    pub raw: Option<Vec<u8>>,
    /// `contentEncoding = 3`, empty for plain bytes.
    pub content_encoding: String,
    /// `contentType = 4`, empty for protobuf.
    pub content_type: String,
}

impl ProtoMessage for Unknown {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_message(buf, 1, &self.type_meta);
        if let Some(raw) = &self.raw {
            put_len_delimited(buf, 2, raw);
        }
        self.content_encoding.encode_field(3, buf);
        self.content_type.encode_field(4, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => dec.merge_message(field, wire, &mut self.type_meta),
            2 => {
                super::wire::expect(field, wire, WireType::Len)?;
                self.raw = Some(dec.len_delimited()?.to_vec());
                Ok(())
            }
            3 => self.content_encoding.merge_field_value(field, wire, dec),
            4 => self.content_type.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// Wraps an object's message bytes in the envelope: `k8s\0` + `Unknown{typeMeta, raw}`,
/// written as `Unknown::encode_raw` writes it (empty content encoding and type included)
/// without copying `raw` into an `Unknown` first.
pub fn encode_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 8);
    put_len_delimited(&mut type_meta, 1, api_version.as_bytes());
    put_len_delimited(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(MAGIC.len() + type_meta.len() + raw.len() + 24);
    out.extend_from_slice(&MAGIC);
    put_len_delimited(&mut out, 1, &type_meta);
    put_len_delimited(&mut out, 2, raw);
    put_len_delimited(&mut out, 3, b"");
    put_len_delimited(&mut out, 4, b"");
    out
}

/// Unwraps an enveloped object: checks the `k8s\0` prefix and decodes the `Unknown`.
pub fn decode_envelope(bytes: &[u8]) -> Result<Unknown, ProtoError> {
    let body = bytes.strip_prefix(&MAGIC[..]).ok_or(ProtoError::BadMagic)?;
    Unknown::decode(body)
}

/// `runtime.RawExtension { raw = 1 }`: embedded bytes (in a watch event, an enveloped object).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawBytes {
    /// `raw = 1`, written when present.
    pub raw: Option<Vec<u8>>,
}

impl ProtoMessage for RawBytes {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        if let Some(raw) = &self.raw {
            put_len_delimited(buf, 1, raw);
        }
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => {
                super::wire::expect(field, wire, WireType::Len)?;
                self.raw = Some(dec.len_delimited()?.to_vec());
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// `metav1.WatchEvent { type = 1, object = 2 (RawExtension) }`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchEvent {
    /// `type = 1`: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub type_: String,
    /// `object = 2`: the object, enveloped (`k8s\0` + `Unknown`).
    pub object: RawBytes,
}

impl ProtoMessage for WatchEvent {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.type_.encode_field(1, buf);
        put_message(buf, 2, &self.object);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.type_.merge_field_value(field, wire, dec),
            2 => dec.merge_message(field, wire, &mut self.object),
            _ => dec.skip(wire),
        }
    }
}

/// Encodes a watch event message whose object is `enveloped_object` (the bytes
/// [`encode_envelope`] returns).
pub fn encode_watch_event(event_type: &str, enveloped_object: &[u8]) -> Vec<u8> {
    WatchEvent {
        type_: event_type.to_string(),
        object: RawBytes {
            raw: Some(enveloped_object.to_vec()),
        },
    }
    .encode_to_vec()
}

/// Encodes one frame of a protobuf watch stream: the 4-byte big-endian length of the
/// `WatchEvent` message, then the message.
pub fn encode_watch_frame(event_type: &str, enveloped_object: &[u8]) -> Vec<u8> {
    frame(&encode_watch_event(event_type, enveloped_object))
}

/// Prefixes a message with its 4-byte big-endian length, as protobuf watch streams do.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 4);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Splits the first frame off a protobuf watch stream: `Some((message, rest))` when a whole
/// frame is present, `None` when more bytes are needed.
pub fn split_frame(stream: &[u8]) -> Option<(&[u8], &[u8])> {
    let len_bytes: [u8; 4] = stream.get(..4)?.try_into().ok()?;
    let len = u32::from_be_bytes(len_bytes) as usize;
    let end = 4usize.checked_add(len)?;
    let message = stream.get(4..end)?;
    Some((message, &stream[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_envelope_writes_what_unknown_encodes() {
        for raw_len in [0, 100, 200, 20000] {
            let raw = vec![7u8; raw_len];
            let unknown = Unknown {
                type_meta: TypeMeta {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                },
                raw: Some(raw.clone()),
                content_encoding: String::new(),
                content_type: String::new(),
            };
            let mut want = MAGIC.to_vec();
            unknown.encode_raw(&mut want);
            let got = encode_envelope("apps/v1", "Deployment", &raw);
            assert_eq!(got, want, "raw of {raw_len} bytes");
            assert_eq!(decode_envelope(&got).unwrap(), unknown);
        }
    }
}
