//! Protobuf codecs of the `meta.k8s.io/v1` types (and `Quantity`, `IntOrString`,
//! `RawExtension`, `Bytes`), with the field numbers of Kubernetes' `generated.proto` files.
//!
//! Which fields are written when empty follows the Go types: a field Go declares by value
//! (`Name string`, `CreationTimestamp Time`) is always written even though the Rust type may
//! hold it as an `Option`; a Go pointer or slice is written only when set.

use chrono::DateTime;

use crate::duration::{format_go_duration, parse_go_duration};

use super::wire::{
    Decoder, ProtoError, ProtoField, ProtoMapValue, ProtoMessage, ProtoRepeated, WireType, expect,
    put_empty_message, put_len_delimited, put_message,
};
use crate::meta::{
    Bytes, Condition, Duration, IntOrString, LabelSelector, LabelSelectorRequirement, ListMeta,
    ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Quantity, RawExtension, Status,
    StatusCause, StatusDetails, Time, TypeMeta,
};

/// Writes an optional string the way Go writes a by-value string: always, empty when `None`.
fn put_str(buf: &mut Vec<u8>, field: u32, value: &Option<String>) {
    put_len_delimited(buf, field, value.as_deref().unwrap_or("").as_bytes());
}

/// Reads a string field into an `Option`, leaving it `None` when the string is empty (a Go
/// by-value string that was empty: the JSON form omits it), as `ObjectMeta` merges its
/// strings.
pub fn merge_str_nonempty(
    slot: &mut Option<String>,
    field: u32,
    wire: WireType,
    dec: &mut Decoder<'_>,
) -> Result<(), ProtoError> {
    let mut s = String::new();
    s.merge_field_value(field, wire, dec)?;
    *slot = if s.is_empty() { None } else { Some(s) };
    Ok(())
}

/// The `Timestamp { seconds = 1, nanos = 2 }` fields of a time.
#[derive(Default)]
struct Timestamp {
    seconds: i64,
    nanos: i32,
}

impl ProtoMessage for Timestamp {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.seconds.encode_field(1, buf);
        self.nanos.encode_field(2, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.seconds.merge_field_value(field, wire, dec),
            2 => self.nanos.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// Reads a `Timestamp`; `None` for an empty message (Go's zero time).
fn read_timestamp(
    field: u32,
    wire: WireType,
    dec: &mut Decoder<'_>,
) -> Result<Option<Timestamp>, ProtoError> {
    expect(field, wire, WireType::Len)?;
    let bytes = dec.len_delimited()?;
    if bytes.is_empty() {
        return Ok(None);
    }
    Timestamp::decode(bytes).map(Some)
}

/// `Time` is `Timestamp{seconds, nanos = 0}`: Kubernetes keeps second precision.
impl ProtoField for Time {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        put_message(
            buf,
            field,
            &Timestamp {
                seconds: self.0.timestamp(),
                nanos: 0,
            },
        );
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        let ts = read_timestamp(field, wire, dec)?.unwrap_or_default();
        *self = Time::from_timestamp(ts.seconds);
        Ok(())
    }

    fn merge_optional(
        slot: &mut Option<Self>,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        *slot = read_timestamp(field, wire, dec)?.map(|ts| Time::from_timestamp(ts.seconds));
        Ok(())
    }
}

fn micro_time(ts: &Timestamp) -> Result<MicroTime, ProtoError> {
    let micros_nanos = (ts.nanos.clamp(0, 999_999_999) / 1000) * 1000;
    DateTime::from_timestamp(ts.seconds, micros_nanos as u32)
        .map(MicroTime)
        .ok_or_else(|| ProtoError::Invalid(format!("time {}s out of range", ts.seconds)))
}

/// `MicroTime` is `Timestamp{seconds, nanos}` with nanos truncated to microseconds.
impl ProtoField for MicroTime {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        let nanos = (self.0.timestamp_subsec_nanos() / 1000 * 1000) as i32;
        put_message(
            buf,
            field,
            &Timestamp {
                seconds: self.0.timestamp(),
                nanos,
            },
        );
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        let ts = read_timestamp(field, wire, dec)?.unwrap_or_default();
        *self = micro_time(&ts)?;
        Ok(())
    }

    fn merge_optional(
        slot: &mut Option<Self>,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        *slot = match read_timestamp(field, wire, dec)? {
            Some(ts) => Some(micro_time(&ts)?),
            None => None,
        };
        Ok(())
    }
}

/// Writes a time Go holds by value: the time, or an empty message for the zero time.
pub fn put_value_time(buf: &mut Vec<u8>, field: u32, value: &Option<Time>) {
    match value {
        Some(t) => t.encode_field(field, buf),
        None => put_empty_message(buf, field),
    }
}

/// Writes a micro time Go holds by value: the time, or an empty message for the zero time.
pub fn put_value_micro_time(buf: &mut Vec<u8>, field: u32, value: &Option<MicroTime>) {
    match value {
        Some(t) => t.encode_field(field, buf),
        None => put_empty_message(buf, field),
    }
}

/// `Bytes` is a `bytes` field, always written when present.
impl ProtoField for Bytes {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        put_len_delimited(buf, field, &self.0);
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        expect(field, wire, WireType::Len)?;
        self.0 = dec.len_delimited()?.to_vec();
        Ok(())
    }
}

impl ProtoRepeated for Bytes {
    fn encode_element(&self, field: u32, buf: &mut Vec<u8>) {
        self.encode_field(field, buf);
    }

    fn decode_elements(
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
        out: &mut Vec<Self>,
    ) -> Result<(), ProtoError> {
        let mut b = Bytes::default();
        b.merge_field_value(field, wire, dec)?;
        out.push(b);
        Ok(())
    }
}

impl ProtoMapValue for Bytes {
    fn encode_map_value(&self, buf: &mut Vec<u8>) {
        self.encode_field(2, buf);
    }

    fn merge_map_value(&mut self, wire: WireType, dec: &mut Decoder<'_>) -> Result<(), ProtoError> {
        self.merge_field_value(2, wire, dec)
    }
}

/// `Quantity { string = 1 }`.
impl ProtoMessage for Quantity {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.0.encode_field(1, buf);
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

/// `IntOrString { type = 1, intVal = 2, strVal = 3 }`, all three always written.
impl ProtoMessage for IntOrString {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        let (kind, int, string) = match self {
            IntOrString::Int(i) => (0i64, *i, ""),
            IntOrString::String(s) => (1i64, 0, s.as_str()),
        };
        kind.encode_field(1, buf);
        int.encode_field(2, buf);
        put_len_delimited(buf, 3, string.as_bytes());
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        // The fields may come in any order; keep both values and let `type` choose.
        match field {
            1 => {
                let mut kind = 0i64;
                kind.merge_field_value(field, wire, dec)?;
                *self = match (kind, &*self) {
                    (1, IntOrString::String(_)) | (0, IntOrString::Int(_)) => self.clone(),
                    (1, IntOrString::Int(_)) => IntOrString::String(String::new()),
                    _ => IntOrString::Int(0),
                };
                Ok(())
            }
            2 => {
                let mut int = 0i32;
                int.merge_field_value(field, wire, dec)?;
                if let IntOrString::Int(i) = self {
                    *i = int;
                }
                Ok(())
            }
            3 => {
                let mut s = String::new();
                s.merge_field_value(field, wire, dec)?;
                if let IntOrString::String(v) = self {
                    *v = s;
                } else if !s.is_empty() {
                    *self = IntOrString::String(s);
                }
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// `RawExtension { raw = 1 }` holding the JSON bytes of the embedded document.
impl ProtoMessage for RawExtension {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        if !self.0.is_null() {
            put_len_delimited(buf, 1, self.0.to_string().as_bytes());
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
                expect(field, wire, WireType::Len)?;
                self.0 = json_from_bytes(dec.len_delimited()?)?;
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// An arbitrary JSON value is carried as a `RawExtension` of its JSON bytes.
impl ProtoField for serde_json::Value {
    fn encode_field(&self, field: u32, buf: &mut Vec<u8>) {
        put_message(buf, field, &RawExtension(self.clone()));
    }

    fn merge_field_value(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        let mut raw = RawExtension::default();
        dec.merge_message(field, wire, &mut raw)?;
        *self = raw.0;
        Ok(())
    }
}

fn json_from_bytes(bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
    if bytes.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| ProtoError::Invalid(format!("embedded JSON: {e}")))
}

/// `Duration { duration = 1 }` in nanoseconds; the Rust type keeps Go's duration string.
impl ProtoMessage for Duration {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        parse_go_duration(&self.0).unwrap_or(0).encode_field(1, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => {
                let mut nanos = 0i64;
                nanos.merge_field_value(field, wire, dec)?;
                self.0 = format_go_duration(nanos);
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// `metav1.TypeMeta { kind = 1, apiVersion = 2 }`.
impl ProtoMessage for TypeMeta {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.kind);
        put_str(buf, 2, &self.api_version);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.kind, field, wire, dec),
            2 => merge_str_nonempty(&mut self.api_version, field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `ObjectMeta`: fields 1–8 are Go values, always written; the rest when set.
impl ProtoMessage for ObjectMeta {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.name);
        put_str(buf, 2, &self.generate_name);
        put_str(buf, 3, &self.namespace);
        put_str(buf, 4, &self.self_link);
        put_str(buf, 5, &self.uid);
        put_str(buf, 6, &self.resource_version);
        self.generation.unwrap_or(0).encode_field(7, buf);
        put_value_time(buf, 8, &self.creation_timestamp);
        self.deletion_timestamp.encode_field(9, buf);
        self.deletion_grace_period_seconds.encode_field(10, buf);
        self.labels.encode_field(11, buf);
        self.annotations.encode_field(12, buf);
        self.owner_references.encode_field(13, buf);
        self.finalizers.encode_field(14, buf);
        self.managed_fields.encode_field(17, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.name, field, wire, dec),
            2 => merge_str_nonempty(&mut self.generate_name, field, wire, dec),
            3 => merge_str_nonempty(&mut self.namespace, field, wire, dec),
            4 => merge_str_nonempty(&mut self.self_link, field, wire, dec),
            5 => merge_str_nonempty(&mut self.uid, field, wire, dec),
            6 => merge_str_nonempty(&mut self.resource_version, field, wire, dec),
            7 => {
                let mut g = 0i64;
                g.merge_field_value(field, wire, dec)?;
                self.generation = (g != 0).then_some(g);
                Ok(())
            }
            8 => self.creation_timestamp.merge_field_value(field, wire, dec),
            9 => self.deletion_timestamp.merge_field_value(field, wire, dec),
            10 => self
                .deletion_grace_period_seconds
                .merge_field_value(field, wire, dec),
            11 => self.labels.merge_field_value(field, wire, dec),
            12 => self.annotations.merge_field_value(field, wire, dec),
            13 => self.owner_references.merge_field_value(field, wire, dec),
            14 => self.finalizers.merge_field_value(field, wire, dec),
            17 => self.managed_fields.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `ListMeta`: selfLink, resourceVersion and continue always; remainingItemCount when set.
impl ProtoMessage for ListMeta {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.self_link);
        put_str(buf, 2, &self.resource_version);
        put_str(buf, 3, &self.continue_);
        self.remaining_item_count.encode_field(4, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.self_link, field, wire, dec),
            2 => merge_str_nonempty(&mut self.resource_version, field, wire, dec),
            3 => merge_str_nonempty(&mut self.continue_, field, wire, dec),
            4 => self
                .remaining_item_count
                .merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `OwnerReference { kind = 1, name = 3, uid = 4, apiVersion = 5, controller = 6,
/// blockOwnerDeletion = 7 }`.
impl ProtoMessage for OwnerReference {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.kind.encode_field(1, buf);
        self.name.encode_field(3, buf);
        self.uid.encode_field(4, buf);
        self.api_version.encode_field(5, buf);
        self.controller.encode_field(6, buf);
        self.block_owner_deletion.encode_field(7, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.kind.merge_field_value(field, wire, dec),
            3 => self.name.merge_field_value(field, wire, dec),
            4 => self.uid.merge_field_value(field, wire, dec),
            5 => self.api_version.merge_field_value(field, wire, dec),
            6 => self.controller.merge_field_value(field, wire, dec),
            7 => self
                .block_owner_deletion
                .merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `FieldsV1 { Raw = 1 }`: the field set's JSON bytes, read without parsing them.
#[derive(Default)]
struct FieldsRaw(Vec<u8>);

impl ProtoMessage for FieldsRaw {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_len_delimited(buf, 1, &self.0);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => {
                expect(field, wire, WireType::Len)?;
                self.0 = dec.len_delimited()?.to_vec();
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// `ManagedFieldsEntry`; `fieldsV1` is `FieldsV1 { Raw = 1 }` holding the JSON bytes.
impl ProtoMessage for ManagedFieldsEntry {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.manager);
        put_str(buf, 2, &self.operation);
        put_str(buf, 3, &self.api_version);
        self.time.encode_field(4, buf);
        put_str(buf, 6, &self.fields_type);
        if let Some(fields) = &self.fields_v1 {
            // `FieldsV1 { Raw = 1 }`: the JSON text as kept.
            let raw = fields.as_str().as_bytes();
            let mut inner = Vec::with_capacity(raw.len() + 11);
            put_len_delimited(&mut inner, 1, raw);
            put_len_delimited(buf, 7, &inner);
        }
        put_str(buf, 8, &self.subresource);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.manager, field, wire, dec),
            2 => merge_str_nonempty(&mut self.operation, field, wire, dec),
            3 => merge_str_nonempty(&mut self.api_version, field, wire, dec),
            4 => self.time.merge_field_value(field, wire, dec),
            6 => merge_str_nonempty(&mut self.fields_type, field, wire, dec),
            7 => {
                let mut raw = FieldsRaw::default();
                dec.merge_message(field, wire, &mut raw)?;
                if raw.0.is_empty() {
                    return Ok(());
                }
                let text = String::from_utf8(raw.0).map_err(|_| ProtoError::Utf8(field))?;
                self.fields_v1 = Some(
                    crate::meta::FieldsV1::from_json(text)
                        .map_err(|e| ProtoError::Invalid(format!("fieldsV1: {e}")))?,
                );
                Ok(())
            }
            8 => merge_str_nonempty(&mut self.subresource, field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `LabelSelector { matchLabels = 1, matchExpressions = 2 }`.
impl ProtoMessage for LabelSelector {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.match_labels.encode_field(1, buf);
        self.match_expressions.encode_field(2, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.match_labels.merge_field_value(field, wire, dec),
            2 => self.match_expressions.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `LabelSelectorRequirement { key = 1, operator = 2, values = 3 }`.
impl ProtoMessage for LabelSelectorRequirement {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.key.encode_field(1, buf);
        self.operator.encode_field(2, buf);
        self.values.encode_field(3, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.key.merge_field_value(field, wire, dec),
            2 => self.operator.merge_field_value(field, wire, dec),
            3 => self.values.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `Condition { type = 1, status = 2, observedGeneration = 3, lastTransitionTime = 4,
/// reason = 5, message = 6 }`, all Go values, always written.
impl ProtoMessage for Condition {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        self.type_.encode_field(1, buf);
        self.status.encode_field(2, buf);
        self.observed_generation.unwrap_or(0).encode_field(3, buf);
        self.last_transition_time.encode_field(4, buf);
        self.reason.encode_field(5, buf);
        self.message.encode_field(6, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => self.type_.merge_field_value(field, wire, dec),
            2 => self.status.merge_field_value(field, wire, dec),
            3 => {
                let mut g = 0i64;
                g.merge_field_value(field, wire, dec)?;
                self.observed_generation = (g != 0).then_some(g);
                Ok(())
            }
            4 => self
                .last_transition_time
                .merge_field_value(field, wire, dec),
            5 => self.reason.merge_field_value(field, wire, dec),
            6 => self.message.merge_field_value(field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `Status { metadata = 1, status = 2, message = 3, reason = 4, details = 5, code = 6 }`.
impl ProtoMessage for Status {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_message(buf, 1, &self.metadata);
        put_str(buf, 2, &self.status);
        put_str(buf, 3, &self.message);
        put_str(buf, 4, &self.reason);
        self.details.encode_field(5, buf);
        self.code.unwrap_or(0).encode_field(6, buf);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => dec.merge_message(field, wire, &mut self.metadata),
            2 => merge_str_nonempty(&mut self.status, field, wire, dec),
            3 => merge_str_nonempty(&mut self.message, field, wire, dec),
            4 => merge_str_nonempty(&mut self.reason, field, wire, dec),
            5 => self.details.merge_field_value(field, wire, dec),
            6 => {
                let mut code = 0i32;
                code.merge_field_value(field, wire, dec)?;
                self.code = Some(code);
                Ok(())
            }
            _ => dec.skip(wire),
        }
    }
}

/// `StatusDetails { name = 1, group = 2, kind = 3, causes = 4, retryAfterSeconds = 5,
/// uid = 6 }`.
impl ProtoMessage for StatusDetails {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.name);
        put_str(buf, 2, &self.group);
        put_str(buf, 3, &self.kind);
        self.causes.encode_field(4, buf);
        self.retry_after_seconds.unwrap_or(0).encode_field(5, buf);
        put_str(buf, 6, &self.uid);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.name, field, wire, dec),
            2 => merge_str_nonempty(&mut self.group, field, wire, dec),
            3 => merge_str_nonempty(&mut self.kind, field, wire, dec),
            4 => self.causes.merge_field_value(field, wire, dec),
            5 => {
                let mut secs = 0i32;
                secs.merge_field_value(field, wire, dec)?;
                self.retry_after_seconds = (secs != 0).then_some(secs);
                Ok(())
            }
            6 => merge_str_nonempty(&mut self.uid, field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

/// `StatusCause { reason = 1, message = 2, field = 3 }`.
impl ProtoMessage for StatusCause {
    fn encode_raw(&self, buf: &mut Vec<u8>) {
        put_str(buf, 1, &self.reason);
        put_str(buf, 2, &self.message);
        put_str(buf, 3, &self.field);
    }

    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        dec: &mut Decoder<'_>,
    ) -> Result<(), ProtoError> {
        match field {
            1 => merge_str_nonempty(&mut self.reason, field, wire, dec),
            2 => merge_str_nonempty(&mut self.message, field, wire, dec),
            3 => merge_str_nonempty(&mut self.field, field, wire, dec),
            _ => dec.skip(wire),
        }
    }
}

crate::proto_message_field!(
    Quantity,
    IntOrString,
    RawExtension,
    Duration,
    TypeMeta,
    ObjectMeta,
    ListMeta,
    OwnerReference,
    ManagedFieldsEntry,
    LabelSelector,
    LabelSelectorRequirement,
    Condition,
    Status,
    StatusDetails,
    StatusCause,
);

/// Encodes a `Status` given in its JSON form (as `ApiError::to_status_json` renders it) as an
/// enveloped protobuf object (`k8s\0` + `Unknown{v1, Status, raw}`), the body of an error
/// answered to a protobuf request.
pub fn encode_status_envelope(status_json: &serde_json::Value) -> Result<Vec<u8>, ProtoError> {
    let status: Status = serde_json::from_value(status_json.clone())
        .map_err(|e| ProtoError::Invalid(format!("not a Status: {e}")))?;
    Ok(super::envelope::encode_envelope(
        "v1",
        "Status",
        &status.encode_to_vec(),
    ))
}

/// Encodes the `PartialObjectMetadata { metadata = 1 }` message of an object given in JSON
/// (only its `metadata` is read): the body of a metadata-only protobuf response, to be
/// enveloped as `meta.k8s.io/v1` `PartialObjectMetadata`.
pub fn encode_partial_object_metadata(object: &serde_json::Value) -> Result<Vec<u8>, ProtoError> {
    let mut buf = Vec::new();
    put_message(&mut buf, 1, &object_meta_of(object)?);
    Ok(buf)
}

/// Encodes the `PartialObjectMetadataList { metadata = 1, items = 2 }` message of a list given
/// in JSON (`metadata` and every item's `metadata` are read), to be enveloped as
/// `meta.k8s.io/v1` `PartialObjectMetadataList`.
pub fn encode_partial_object_metadata_list(
    list: &serde_json::Value,
) -> Result<Vec<u8>, ProtoError> {
    let list_meta: ListMeta = match list.get("metadata") {
        Some(m) => serde_json::from_value(m.clone())
            .map_err(|e| ProtoError::Invalid(format!("list metadata: {e}")))?,
        None => ListMeta::default(),
    };
    let mut buf = Vec::new();
    put_message(&mut buf, 1, &list_meta);
    for item in list
        .get("items")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        put_len_delimited(&mut buf, 2, &encode_partial_object_metadata(item)?);
    }
    Ok(buf)
}

fn object_meta_of(object: &serde_json::Value) -> Result<ObjectMeta, ProtoError> {
    match object.get("metadata") {
        Some(m) => serde_json::from_value(m.clone())
            .map_err(|e| ProtoError::Invalid(format!("metadata: {e}"))),
        None => Ok(ObjectMeta::default()),
    }
}
