//! The `k8s\0` envelope, watch events and frames, byte for byte as Kubernetes writes them.

use apimachinery::protobuf::{
    Decoder, MAGIC, ProtoError, ProtoMessage, WatchEvent, WireType, decode_envelope,
    encode_envelope, encode_watch_event, encode_watch_frame, split_frame,
};

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A ConfigMap message `0a 00` (empty metadata) in the envelope:
///
/// ```text
/// 6b 38 73 00                      magic "k8s\0"
/// 0a 0f                            Unknown.typeMeta (field 1, length 15)
///    0a 02 76 31                     TypeMeta.apiVersion (1) = "v1"
///    12 09 43 6f 6e 66 69 67 4d 61 70  TypeMeta.kind (2) = "ConfigMap"
/// 12 02 0a 00                      Unknown.raw (2) = the ConfigMap message
/// 1a 00                            Unknown.contentEncoding (3) = "" (always written)
/// 22 00                            Unknown.contentType (4) = "" (always written)
/// ```
const CONFIG_MAP_ENVELOPE: &str =
    "6b 38 73 00 0a 0f 0a 02 76 31 12 09 43 6f 6e 66 69 67 4d 61 70 12 02 0a 00 1a 00 22 00";

#[test]
fn envelope_bytes_match_kubernetes() {
    let bytes = encode_envelope("v1", "ConfigMap", &[0x0a, 0x00]);
    assert_eq!(hex(&bytes), CONFIG_MAP_ENVELOPE);
}

#[test]
fn envelope_round_trips() {
    let bytes = encode_envelope("example.dev/v1", "Widget", b"\x0a\x03\x0a\x01a");
    let unknown = decode_envelope(&bytes).expect("decodes");
    assert_eq!(unknown.type_meta.api_version, "example.dev/v1");
    assert_eq!(unknown.type_meta.kind, "Widget");
    assert_eq!(unknown.raw.as_deref(), Some(&b"\x0a\x03\x0a\x01a"[..]));
    assert_eq!(unknown.content_encoding, "");
    assert_eq!(unknown.content_type, "");
}

#[test]
fn envelope_without_magic_is_rejected() {
    assert_eq!(decode_envelope(b"\x0a\x00"), Err(ProtoError::BadMagic));
    assert_eq!(decode_envelope(&MAGIC[..3]), Err(ProtoError::BadMagic));
}

#[test]
fn truncated_envelope_is_an_error_not_a_panic() {
    let bytes = encode_envelope("v1", "ConfigMap", &[0x0a, 0x00]);
    for cut in MAGIC.len()..bytes.len() {
        let result = decode_envelope(&bytes[..cut]);
        // Every prefix either fails cleanly or (at a field boundary) decodes a partial message.
        if let Err(err) = result {
            assert!(
                matches!(err, ProtoError::UnexpectedEof),
                "cut at {cut}: {err}"
            );
        }
    }
}

/// A watch event: `WatchEvent{type = 1 "ADDED", object = 2 RawExtension{raw = 1 <envelope>}}`.
///
/// ```text
/// 0a 05 41 44 44 45 44     type (1) = "ADDED"
/// 12 1f                    object (2), length 31
///    0a 1d <29 bytes>        RawExtension.raw (1) = the envelope above (29 bytes)
/// ```
/// The frame puts the message length (7 + 2 + 31 = 40) first, as 4 big-endian bytes.
#[test]
fn watch_event_bytes_match_kubernetes() {
    let envelope = encode_envelope("v1", "ConfigMap", &[0x0a, 0x00]);
    assert_eq!(envelope.len(), 29);
    let event = encode_watch_event("ADDED", &envelope);
    let expected = format!("0a 05 41 44 44 45 44 12 1f 0a 1d {CONFIG_MAP_ENVELOPE}");
    assert_eq!(hex(&event), expected);

    let frame = encode_watch_frame("ADDED", &envelope);
    assert_eq!(&frame[..4], &[0, 0, 0, 40]);
    assert_eq!(&frame[4..], &event[..]);
    let (message, rest) = split_frame(&frame).expect("one whole frame");
    assert!(rest.is_empty());
    let decoded = WatchEvent::decode(message).expect("decodes");
    assert_eq!(decoded.type_, "ADDED");
    assert_eq!(decoded.object.raw.as_deref(), Some(&envelope[..]));
    assert!(split_frame(&frame[..frame.len() - 1]).is_none());
}

#[test]
fn decoder_rejects_hostile_input() {
    // Eleven continuation bytes: a varint longer than 64 bits.
    let mut dec = Decoder::new(&[0xff; 11]);
    assert_eq!(dec.varint(), Err(ProtoError::VarintOverflow));
    // Field number zero.
    assert_eq!(
        WatchEvent::decode(&[0x00, 0x00]),
        Err(ProtoError::ZeroField)
    );
    // A length running past the end.
    assert_eq!(
        WatchEvent::decode(&[0x0a, 0x05, b'A']),
        Err(ProtoError::UnexpectedEof)
    );
    // Wire type 3 (start group) is not supported.
    assert_eq!(WatchEvent::decode(&[0x0b]), Err(ProtoError::BadWireType(3)));
    // A string field sent as a varint.
    assert!(matches!(
        WatchEvent::decode(&[0x08, 0x01]),
        Err(ProtoError::WrongWireType { field: 1, .. })
    ));
    // Nested messages deeper than the limit fail instead of overflowing the stack.
    let mut nested: Vec<u8> = Vec::new();
    for _ in 0..200 {
        let mut outer = vec![0x12];
        apimachinery::protobuf::put_varint(&mut outer, nested.len() as u64);
        outer.extend_from_slice(&nested);
        nested = outer;
    }
    assert_eq!(Nest::decode(&nested).err(), Some(ProtoError::TooDeep));
}

/// A message that contains itself, to exercise the nesting limit.
#[derive(Default)]
struct Nest {
    child: Option<Box<Nest>>,
}

impl ProtoMessage for Nest {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        if let Some(child) = &self.child {
            apimachinery::protobuf::put_message(buf, 2, child.as_ref());
        }
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            2 => dec.merge_message(
                field,
                wire,
                self.child.get_or_insert_with(Box::default).as_mut(),
            ),
            _ => dec.skip(wire),
        }
    }
}
