//! The `meta.k8s.io/v1` types, with serde JSON exactly as Kubernetes encodes them.
//!
//! The structs (`ObjectMeta`, `ListMeta`, `Status`, …) are generated from
//! `api-defs/meta.k8s.io/v1.rs` by this crate's build script: optional scalars are `Option` and
//! left out when `None`; lists and maps are left out when empty and accept `null` when
//! decoding, as Go's `omitempty` fields do. The scalar-like types with encodings of their own
//! are written here: times are RFC 3339 (`Time` to the second, `MicroTime` to the
//! microsecond), `Bytes` are base64, `Duration` and `Quantity` strings as written,
//! `IntOrString` either, `RawExtension` any JSON, `FieldsV1` raw JSON text. The request options
//! (`ListOptions`, `DeleteOptions`, …) are hand-written in [`options`].

use std::fmt;

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod options;

/// `metav1.Time`: an instant encoded as RFC 3339 with second precision (`2024-05-01T10:00:00Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub DateTime<Utc>);

impl Time {
    /// The current time, truncated to the second as it is stored.
    pub fn now() -> Self {
        Self::from_timestamp(Utc::now().timestamp())
    }

    /// The instant `secs` seconds after the Unix epoch (out-of-range values give the epoch).
    pub fn from_timestamp(secs: i64) -> Self {
        Self(DateTime::from_timestamp(secs, 0).unwrap_or_default())
    }

    /// The RFC 3339 text with second precision.
    pub fn to_rfc3339(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_rfc3339(&s)
            .map(|t| Self(DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)))
            .map_err(D::Error::custom)
    }
}

/// Parses RFC 3339 as Go's `time.RFC3339` does (any offset, optional fraction).
fn parse_rfc3339(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": {e}"))
}

/// `metav1.MicroTime`: an instant encoded as RFC 3339 with microseconds
/// (`2024-05-01T10:00:00.123456Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MicroTime(pub DateTime<Utc>);

impl MicroTime {
    /// The current time, truncated to the microsecond.
    pub fn now() -> Self {
        let now = Utc::now();
        Self(DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now))
    }

    /// The RFC 3339 text with six fractional digits.
    pub fn to_rfc3339(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let t = parse_rfc3339(&s).map_err(D::Error::custom)?;
        Ok(Self(
            DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t),
        ))
    }
}

/// `metav1.Duration`: a Go duration string such as `1h0m0s`, kept as written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Duration(pub String);

/// `resource.Quantity` in its string form (`500m`, `1Gi`), kept as written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Quantity(pub String);

impl<'de> Deserialize<'de> for Quantity {
    /// Accepts a string or a JSON number, as Kubernetes does.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Self(s)),
            serde_json::Value::Number(n) => Ok(Self(n.to_string())),
            other => Err(D::Error::custom(format!(
                "quantities must be strings or numbers, not {other}"
            ))),
        }
    }
}

/// `intstr.IntOrString`: a JSON integer or string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// An integer.
    Int(i32),
    /// A string, such as `25%`.
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        Self::Int(0)
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Int(i) => s.serialize_i32(*i),
            Self::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Self::String(s)),
            serde_json::Value::Number(n) => n
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .map(Self::Int)
                .ok_or_else(|| D::Error::custom(format!("{n} is not a 32-bit integer"))),
            other => Err(D::Error::custom(format!(
                "expected an integer or a string, not {other}"
            ))),
        }
    }
}

/// `runtime.RawExtension`: an embedded JSON document, kept as is.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawExtension(pub serde_json::Value);

/// `metav1.FieldsV1`: a managed field set, kept as the compact JSON text it was read as (it is
/// written back as it came, to JSON and to protobuf alike; only server-side apply reads inside
/// it).
#[derive(Clone, Debug)]
pub struct FieldsV1(Box<serde_json::value::RawValue>);

impl FieldsV1 {
    /// The field set of a JSON tree.
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self(serde_json::value::to_raw_value(value).expect("a JSON tree always serializes"))
    }

    /// The field set `value` serializes as, written once (not parsed again, as
    /// [`FieldsV1::from_json`] parses its text).
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Self)
    }

    /// The field set of JSON text (as protobuf carries it); an error if it is not JSON.
    pub fn from_json(text: String) -> Result<Self, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(Self)
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The JSON tree.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.0.get()).unwrap_or(serde_json::Value::Null)
    }
}

impl Default for FieldsV1 {
    fn default() -> Self {
        Self::from_value(&serde_json::Value::Object(Default::default()))
    }
}

impl PartialEq for FieldsV1 {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for FieldsV1 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FieldsV1 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Read as a tree so any deserializer works (a request body, a patched object).
        let value = serde_json::Value::deserialize(d)?;
        Ok(Self::from_value(&value))
    }
}

/// A `[]byte` field: base64 (standard alphabet, padded) in JSON.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Option::<String>::deserialize(d)?.unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(Self)
            .map_err(|e| D::Error::custom(format!("illegal base64 data: {e}")))
    }
}

// The structs of `api-defs/meta.k8s.io/v1.rs` (`TypeMeta`, `ObjectMeta`, `ListMeta`,
// `OwnerReference`, `ManagedFieldsEntry`, `LabelSelector`, `LabelSelectorRequirement`,
// `FieldSelectorRequirement`, `Condition`, `Status`, `StatusDetails`, `StatusCause`), generated
// by `build.rs` with the generator every other group goes through: serde as Kubernetes encodes
// them, `ProtoMessage` codecs, `Validate`/`MarkerValue`, the `SHAPE_<STRUCT>` structures of
// patches and server-side apply, and `Sample`.
#[allow(clippy::all, unused_mut, unused_variables, unused_imports)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/meta_k8s_io_v1.rs"));
}

pub use generated::*;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn time_encodes_seconds_and_micro_time_microseconds() {
        let t: Time = serde_json::from_value(json!("2024-05-01T10:00:00.987+02:00")).unwrap();
        assert_eq!(
            serde_json::to_value(t).unwrap(),
            json!("2024-05-01T08:00:00Z")
        );
        let m: MicroTime = serde_json::from_value(json!("2024-05-01T10:00:00.1234567Z")).unwrap();
        assert_eq!(
            serde_json::to_value(m).unwrap(),
            json!("2024-05-01T10:00:00.123456Z")
        );
        assert!(serde_json::from_value::<Time>(json!("yesterday")).is_err());
    }

    #[test]
    fn object_meta_round_trips_and_omits_empty() {
        let doc = json!({
            "name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "5", "generation": 2,
            "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"b": "2", "a": "1"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x", "controller": true}],
            "finalizers": ["f"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]
        });
        let meta: ObjectMeta = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(serde_json::to_value(&meta).unwrap(), doc);
        let empty: ObjectMeta =
            serde_json::from_value(json!({"labels": null, "finalizers": null})).unwrap();
        assert_eq!(serde_json::to_value(&empty).unwrap(), json!({}));
    }

    #[test]
    fn scalars_encode_as_kubernetes() {
        assert_eq!(
            serde_json::to_value(Bytes(b"hi".to_vec())).unwrap(),
            json!("aGk=")
        );
        assert_eq!(
            serde_json::from_value::<Bytes>(json!("aGk=")).unwrap(),
            Bytes(b"hi".to_vec())
        );
        assert_eq!(
            serde_json::from_value::<IntOrString>(json!(3)).unwrap(),
            IntOrString::Int(3)
        );
        assert_eq!(
            serde_json::from_value::<IntOrString>(json!("25%")).unwrap(),
            IntOrString::String("25%".into())
        );
        assert_eq!(
            serde_json::from_value::<Quantity>(json!(2)).unwrap(),
            Quantity("2".into())
        );
        let list = ListMeta {
            continue_: Some("c".into()),
            remaining_item_count: Some(3),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(list).unwrap(),
            json!({"continue": "c", "remainingItemCount": 3})
        );
    }
}
