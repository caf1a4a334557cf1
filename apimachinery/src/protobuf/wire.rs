//! The protobuf wire format as Kubernetes' gogo-protobuf marshallers write it.
//!
//! Messages implement [`ProtoMessage`]; their fields implement [`ProtoField`]. The encoding
//! rules follow the Go code generated for Kubernetes' `generated.proto` files:
//!
//! - fields are written in ascending field-number order;
//! - a non-optional scalar, string or embedded message (a non-pointer Go field) is always
//!   written, even when empty or zero;
//! - an `Option` (a Go pointer) is written only when set;
//! - repeated fields write one record per element (never packed);
//! - maps write one entry message `{key = 1, value = 2}` per key, in sorted key order (a
//!   `BTreeMap`'s order is Go's `sort.Strings` order), with both key and value always present.
//!
//! Decoding accepts any field order, skips unknown fields, accepts packed repeated scalars and
//! bounds message nesting so that hostile input cannot exhaust the stack.

use std::collections::BTreeMap;

/// How deeply messages may nest before decoding fails.
pub const MAX_DEPTH: u32 = 100;

/// Why protobuf bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The input ended inside a field.
    #[error("unexpected end of input")]
    UnexpectedEof,
    /// A varint was longer than ten bytes.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A wire type that protobuf does not define (or the deprecated groups).
    #[error("unsupported wire type {0}")]
    BadWireType(u32),
    /// A field had another wire type than its declared type needs.
    #[error("field {field}: wire type {found} where {expected} was expected")]
    WrongWireType {
        /// The field number.
        field: u32,
        /// The wire type read.
        found: u32,
        /// The wire type the field's type uses.
        expected: u32,
    },
    /// Field number 0, which protobuf reserves.
    #[error("invalid field number 0")]
    ZeroField,
    /// A string was not UTF-8.
    #[error("field {0}: string is not valid UTF-8")]
    Utf8(u32),
    /// Messages nested deeper than [`MAX_DEPTH`].
    #[error("messages nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The bytes did not start with Kubernetes' `k8s\0` prefix.
    #[error("missing the k8s protobuf magic prefix")]
    BadMagic,
    /// A value decoded but is not valid for its type (a bad time, quantity, ...).
    #[error("{0}")]
    Invalid(String),
}

/// The protobuf wire types Kubernetes uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    /// Varint (0): integers, booleans, enums.
    Varint,
    /// 64-bit little endian (1): `double`, `fixed64`.
    Fixed64,
    /// Length-delimited (2): strings, bytes, messages, packed repeated scalars.
    Len,
    /// 32-bit little endian (5): `float`, `fixed32`.
    Fixed32,
}

impl WireType {
    /// The wire type's number in a field key.
    pub fn number(self) -> u32 {
        match self {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::Fixed32 => 5,
        }
    }

    fn from_number(n: u32) -> Result<Self, ProtoError> {
        match n {
            0 => Ok(WireType::Varint),
            1 => Ok(WireType::Fixed64),
            2 => Ok(WireType::Len),
            5 => Ok(WireType::Fixed32),
            other => Err(ProtoError::BadWireType(other)),
        }
    }
}

/// A protobuf message: a struct whose fields have protobuf numbers.
pub trait ProtoMessage: Default {
    /// Appends the message's fields, without a length prefix, to `buf`.
    fn encode_raw(&self, buf: &mut Vec<u8>);

    /// Merges one field read from `dec` into `self`; unknown fields must be skipped with
    /// [`Decoder::skip`].
    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError>;

    /// Encodes the message into a new buffer.
    fn encode_to_vec(&self) -> Vec<u8> {
        // Most objects take a few hundred bytes: a few doublings less than from empty.
        let mut buf = Vec::with_capacity(256);
        self.encode_raw(&mut buf);
        buf
    }

    /// Decodes a message from its bytes.
    fn decode(bytes: &[u8]) -> Result<Self, ProtoError> {
        let mut msg = Self::default();
        Decoder::new(bytes).merge_all(&mut msg)?;
        Ok(msg)
    }
}

/// Appends a varint.
pub fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Appends a field key (field number and wire type).
pub fn put_key(buf: &mut Vec<u8>, field: u32, wire: WireType) {
    put_varint(buf, (u64::from(field) << 3) | u64::from(wire.number()));
}

/// Appends a length-delimited field.
pub fn put_len_delimited(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, WireType::Len);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends an embedded message field (always, even when the message is empty).
pub fn put_message<M: ProtoMessage>(buf: &mut Vec<u8>, field: u32, msg: &M) {
    put_key(buf, field, WireType::Len);
    // The message is encoded in place behind a one-byte length, which is widened afterwards
    // when the message is 128 bytes or longer: no buffer of its own to grow and copy.
    let at = buf.len();
    buf.push(0);
    msg.encode_raw(buf);
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        put_varint(&mut prefix, len as u64);
        buf.splice(at..=at, prefix);
    }
}

/// Appends a field as an empty embedded message (`field, 0`): what gogo writes for a zero
/// `metav1.Time` held by value.
pub fn put_empty_message(buf: &mut Vec<u8>, field: u32) {
    put_len_delimited(buf, field, &[]);
}

/// Reads protobuf fields from a byte slice.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: u32,
}

impl<'a> Decoder<'a> {
    /// Creates a decoder over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            depth: 0,
        }
    }

    /// How many bytes were read so far (the offset of the next field).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads every field of the input into `msg`.
    pub fn merge_all<M: ProtoMessage>(&mut self, msg: &mut M) -> Result<(), ProtoError> {
        while let Some((field, wire)) = self.key()? {
            msg.merge_field(field, wire, self)?;
        }
        Ok(())
    }

    /// Reads the next field key, or `None` at the end of the input.
    pub fn key(&mut self) -> Result<Option<(u32, WireType)>, ProtoError> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = u32::try_from(key >> 3)
            .map_err(|_| ProtoError::Invalid(format!("field number {} too large", key >> 3)))?;
        if field == 0 {
            return Err(ProtoError::ZeroField);
        }
        let wire = WireType::from_number((key & 7) as u32)?;
        Ok(Some((field, wire)))
    }

    /// Reads a varint.
    pub fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = *self.buf.get(self.pos).ok_or(ProtoError::UnexpectedEof)?;
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(ProtoError::VarintOverflow);
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(ProtoError::VarintOverflow)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self.pos.checked_add(n).ok_or(ProtoError::UnexpectedEof)?;
        let bytes = self
            .buf
            .get(self.pos..end)
            .ok_or(ProtoError::UnexpectedEof)?;
        self.pos = end;
        Ok(bytes)
    }

    /// Reads the payload of a length-delimited field.
    pub fn len_delimited(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| ProtoError::UnexpectedEof)?;
        self.take(len)
    }

    /// Reads eight little-endian bytes.
    pub fn fixed64(&mut self) -> Result<u64, ProtoError> {
        let bytes = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(array))
    }

    /// Reads four little-endian bytes.
    pub fn fixed32(&mut self) -> Result<u32, ProtoError> {
        let bytes = self.take(4)?;
        let mut array = [0u8; 4];
        array.copy_from_slice(bytes);
        Ok(u32::from_le_bytes(array))
    }

    /// Skips the payload of a field of wire type `wire`.
    pub fn skip(&mut self, wire: WireType) -> Result<(), ProtoError> {
        match wire {
            WireType::Varint => self.varint().map(|_| ()),
            WireType::Fixed64 => self.take(8).map(|_| ()),
            WireType::Len => self.len_delimited().map(|_| ()),
            WireType::Fixed32 => self.take(4).map(|_| ()),
        }
    }

    /// Reads the payload of field `field` as an embedded message merged into `msg`.
    pub fn merge_message<M: ProtoMessage>(
        &mut self,
        field: u32,
        wire: WireType,
        msg: &mut M,
    ) -> Result<(), ProtoError> {
        expect(field, wire, WireType::Len)?;
        let bytes = self.len_delimited()?;
        if self.depth + 1 > MAX_DEPTH {
            return Err(ProtoError::TooDeep);
        }
        let mut inner = Decoder {
            buf: bytes,
            pos: 0,
            depth: self.depth + 1,
        };
        inner.merge_all(msg)
    }
}

/// Checks that a field has the wire type its type needs.
pub fn expect(field: u32, found: WireType, expected: WireType) -> Result<(), ProtoError> {
    if found == expected {
        Ok(())
    } else {
        Err(ProtoError::WrongWireType {
            field,
            found: found.number(),
            expected: expected.number(),
        })
    }
}

/// A type that can be the type of a message field.
///
/// `encode_field` writes the value as field `field` following the module's rules (a plain value
/// is always written; `Option`, `Vec` and maps write nothing when unset or empty);
/// `merge_field_value` reads one record of the field.
pub trait ProtoField {
    /// Writes the value as field `field`.
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>);

    /// Merges one record of field `field` into the value.
    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError>;

    /// Merges one record of field `field` into an optional value. By default the value is
    /// created if absent; types whose empty encoding means "unset" (such as `Time`, whose Go
    /// zero value encodes as an empty message) override this to leave it `None`.
    fn merge_optional(
        slot: &mut Option<Self>,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError>
    where
        Self: Sized + Default,
    {
        slot.get_or_insert_with(Self::default)
            .merge_field_value(field, wire, dec)
    }
}

/// A type that can be an element of a repeated field (a `Vec`).
pub trait ProtoRepeated: Sized {
    /// Writes one element as a record of field `field`.
    fn encode_element(&self, field: u32, buf: &mut Vec<u8>);

    /// Reads one record of field `field` (for numbers, possibly a packed run) into `out`.
    fn decode_elements(
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
        out: &mut Vec<Self>,
    ) -> Result<(), ProtoError>;
}

/// A type that can be the value of a map field (`map<string, V>`).
pub trait ProtoMapValue: Default {
    /// Writes the value as field 2 of a map entry.
    fn encode_map_value(&self, buf: &mut Vec<u8>);

    /// Reads field 2 of a map entry.
    fn merge_map_value(&mut self, wire: WireType, dec: &mut Decoder<'_>) -> Result<(), ProtoError>;
}

impl ProtoField for String {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        put_len_delimited(buf, field, self.as_bytes());
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        expect(field, wire, WireType::Len)?;
        let bytes = dec.len_delimited()?;
        *self = std::str::from_utf8(bytes)
            .map_err(|_| ProtoError::Utf8(field))?
            .to_string();
        Ok(())
    }
}

impl ProtoRepeated for String {
    fn encode_element(&self, field: u32, buf: &mut Vec<u8>) {
        self.encode_field(field, buf);
    }

    fn decode_elements(
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
        out: &mut Vec<Self>,
    ) -> Result<(), ProtoError> {
        let mut s = String::new();
        s.merge_field_value(field, wire, dec)?;
        out.push(s);
        Ok(())
    }
}

impl ProtoMapValue for String {
    fn encode_map_value(&self, buf: &mut Vec<u8>) {
        self.encode_field(2, buf);
    }

    fn merge_map_value(&mut self, wire: WireType, dec: &mut Decoder<'_>) -> Result<(), ProtoError> {
        self.merge_field_value(2, wire, dec)
    }
}

/// Kubernetes' `ExtraValue` (`message ExtraValue { repeated string items = 1; }`): a list of
/// strings as a map value.
impl ProtoMapValue for Vec<String> {
    fn encode_map_value(&self, buf: &mut Vec<u8>) {
        let mut inner = Vec::new();
        for item in self {
            item.encode_field(1, &mut inner);
        }
        put_len_delimited(buf, 2, &inner);
    }

    fn merge_map_value(&mut self, wire: WireType, dec: &mut Decoder<'_>) -> Result<(), ProtoError> {
        expect(2, wire, WireType::Len)?;
        let bytes = dec.len_delimited()?;
        let mut inner = Decoder::new(bytes);
        while let Some((field, wire)) = inner.key()? {
            if field == 1 {
                String::decode_elements(1, wire, &mut inner, self)?;
            } else {
                inner.skip(wire)?;
            }
        }
        Ok(())
    }
}

/// Implements the traits for a number type written as a varint.
macro_rules! varint_type {
    ($ty:ty, $to:expr, $from:expr) => {
        impl ProtoField for $ty {
            fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
                put_key(buf, field, WireType::Varint);
                put_varint(buf, $to(*self));
            }

            fn merge_field_value(
                &mut self,
                field: u32,
                wire: WireType,
                dec: &mut Decoder<'_>,
            ) -> Result<(), ProtoError> {
                expect(field, wire, WireType::Varint)?;
                *self = $from(dec.varint()?);
                Ok(())
            }
        }

        impl ProtoMapValue for $ty {
            fn encode_map_value(&self, buf: &mut Vec<u8>) {
                self.encode_field(2, buf);
            }

            fn merge_map_value(
                &mut self,
                wire: WireType,
                dec: &mut Decoder<'_>,
            ) -> Result<(), ProtoError> {
                self.merge_field_value(2, wire, dec)
            }
        }

        impl ProtoRepeated for $ty {
            fn encode_element(&self, field: u32, buf: &mut Vec<u8>) {
                self.encode_field(field, buf);
            }

            fn decode_elements(
                field: u32,
                wire: WireType,
                dec: &mut Decoder<'_>,
                out: &mut Vec<Self>,
            ) -> Result<(), ProtoError> {
                if wire == WireType::Len {
                    let bytes = dec.len_delimited()?;
                    let mut packed = Decoder::new(bytes);
                    while !packed.is_empty() {
                        out.push($from(packed.varint()?));
                    }
                    return Ok(());
                }
                let mut value = <$ty>::default();
                value.merge_field_value(field, wire, dec)?;
                out.push(value);
                Ok(())
            }
        }
    };
}

varint_type!(bool, |v: bool| u64::from(v), |v: u64| v != 0);
// Go converts a negative int32 to uint64 by sign extension: ten bytes on the wire.
varint_type!(i32, |v: i32| i64::from(v) as u64, |v: u64| v as i32);
varint_type!(i64, |v: i64| v as u64, |v: u64| v as i64);
varint_type!(u32, |v: u32| u64::from(v), |v: u64| v as u32);
varint_type!(u64, |v: u64| v, |v: u64| v);

impl ProtoField for f64 {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        put_key(buf, field, WireType::Fixed64);
        buf.extend_from_slice(&self.to_le_bytes());
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        expect(field, wire, WireType::Fixed64)?;
        *self = f64::from_bits(dec.fixed64()?);
        Ok(())
    }
}

impl ProtoRepeated for f64 {
    fn encode_element(&self, field: u32, buf: &mut Vec<u8>) {
        self.encode_field(field, buf);
    }

    fn decode_elements(
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
        out: &mut Vec<Self>,
    ) -> Result<(), ProtoError> {
        if wire == WireType::Len {
            let bytes = dec.len_delimited()?;
            let mut packed = Decoder::new(bytes);
            while !packed.is_empty() {
                out.push(f64::from_bits(packed.fixed64()?));
            }
            return Ok(());
        }
        let mut value = 0.0;
        value.merge_field_value(field, wire, dec)?;
        out.push(value);
        Ok(())
    }
}

impl<T: ProtoField + Default> ProtoField for Option<T> {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        if let Some(value) = self {
            value.encode_field(field, buf);
        }
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        T::merge_optional(self, field, wire, dec)
    }
}

/// A boxed field (a struct that contains itself, such as a JSON schema's `not`) is encoded as
/// the value it holds.
impl<T: ProtoField> ProtoField for Box<T> {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        (**self).encode_field(field, buf);
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        (**self).merge_field_value(field, wire, dec)
    }
}

impl<T: ProtoRepeated> ProtoField for Vec<T> {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        for element in self {
            element.encode_element(field, buf);
        }
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        T::decode_elements(field, wire, dec, self)
    }
}

impl<V: ProtoMapValue> ProtoField for BTreeMap<String, V> {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        let mut entry = Vec::new();
        for (key, value) in self {
            entry.clear();
            key.encode_field(1, &mut entry);
            value.encode_map_value(&mut entry);
            put_len_delimited(buf, field, &entry);
        }
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        expect(field, wire, WireType::Len)?;
        let bytes = dec.len_delimited()?;
        let mut inner = Decoder::new(bytes);
        let mut key = String::new();
        let mut value = V::default();
        while let Some((entry_field, entry_wire)) = inner.key()? {
            match entry_field {
                1 => key.merge_field_value(1, entry_wire, &mut inner)?,
                2 => value.merge_map_value(entry_wire, &mut inner)?,
                _ => inner.skip(entry_wire)?,
            }
        }
        self.insert(key, value);
        Ok(())
    }
}

/// Implements [`ProtoField`], [`ProtoRepeated`] and [`ProtoMapValue`] for message types: a
/// message field is an embedded, length-delimited message.
#[macro_export]
macro_rules! proto_message_field {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::protobuf::ProtoField for $ty {
            fn encode_field(&self, field: u32, buf: &mut ::std::vec::Vec<u8>) {
                $crate::protobuf::put_message(buf, field, self);
            }

            fn merge_field_value(
                &mut self,
                field: u32,
                wire: $crate::protobuf::WireType,
                dec: &mut $crate::protobuf::Decoder<'_>,
            ) -> ::std::result::Result<(), $crate::protobuf::ProtoError> {
                dec.merge_message(field, wire, self)
            }
        }

        impl $crate::protobuf::ProtoRepeated for $ty {
            fn encode_element(&self, field: u32, buf: &mut ::std::vec::Vec<u8>) {
                $crate::protobuf::put_message(buf, field, self);
            }

            fn decode_elements(
                field: u32,
                wire: $crate::protobuf::WireType,
                dec: &mut $crate::protobuf::Decoder<'_>,
                out: &mut ::std::vec::Vec<Self>,
            ) -> ::std::result::Result<(), $crate::protobuf::ProtoError> {
                let mut value = <$ty as ::std::default::Default>::default();
                dec.merge_message(field, wire, &mut value)?;
                out.push(value);
                Ok(())
            }
        }

        impl $crate::protobuf::ProtoMapValue for $ty {
            fn encode_map_value(&self, buf: &mut ::std::vec::Vec<u8>) {
                $crate::protobuf::put_message(buf, 2, self);
            }

            fn merge_map_value(
                &mut self,
                wire: $crate::protobuf::WireType,
                dec: &mut $crate::protobuf::Decoder<'_>,
            ) -> ::std::result::Result<(), $crate::protobuf::ProtoError> {
                dec.merge_message(2, wire, self)
            }
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message of one string field.
    #[derive(Default)]
    struct Text(String);

    impl ProtoMessage for Text {
        fn encode_raw(&self, buf: &mut Vec<u8>) {
            put_len_delimited(buf, 1, self.0.as_bytes());
        }

        fn merge_field(
            &mut self,
            field: u32,
            wire: WireType,
            dec: &mut Decoder<'_>,
        ) -> Result<(), ProtoError> {
            match field {
                1 => self.0.merge_field_value(field, wire, dec),
                _ => dec.skip(wire),
            }
        }
    }

    #[test]
    fn put_message_writes_the_length_delimited_encoding_at_every_length_width() {
        // Messages of 0, 127 (one-byte length), 128 and 16383 (two) and 16384 bytes (three).
        for text_len in [0, 125, 126, 16380, 16381, 20000] {
            let msg = Text("x".repeat(text_len));
            let mut buf = vec![0xff];
            put_message(&mut buf, 3, &msg);
            let mut want = vec![0xff];
            put_len_delimited(&mut want, 3, &msg.encode_to_vec());
            assert_eq!(buf, want, "text of {text_len} bytes");
            let mut dec = Decoder::new(&buf[1..]);
            assert_eq!(dec.key().unwrap(), Some((3, WireType::Len)));
            assert_eq!(Text::decode(dec.len_delimited().unwrap()).unwrap().0, msg.0);
        }
    }
}
