//! Encoding at rest, as kube-apiserver's `--storage-media-type`: objects are written in their
//! storage version either as protobuf in the `k8s\0` envelope (the default) or as JSON. Reads
//! recognise both forms by their first bytes (as kube-apiserver's recognizing decoder does),
//! so a store written under one setting keeps working after a switch to the other.

use std::fmt;
use std::str::FromStr;

use apimachinery::protobuf::{Decoder, MAGIC, ProtoError, WireType};

/// The media type objects are written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StorageMediaType {
    /// `application/vnd.kubernetes.protobuf`: the storage version's protobuf message in the
    /// `k8s\0` + `runtime.Unknown` envelope. Kinds without a protobuf encoding are written as
    /// JSON.
    #[default]
    Protobuf,
    /// `application/json`.
    Json,
}

impl StorageMediaType {
    /// The media type's name, as the flag takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Protobuf => apimachinery::protobuf::MEDIA_TYPE,
            Self::Json => "application/json",
        }
    }
}

impl fmt::Display for StorageMediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--storage-media-type` this server cannot write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported storage media type {0:?}: use application/vnd.kubernetes.protobuf or application/json"
)]
pub struct UnsupportedMediaType(pub String);

impl FromStr for StorageMediaType {
    type Err = UnsupportedMediaType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "application/vnd.kubernetes.protobuf" => Ok(Self::Protobuf),
            "application/json" => Ok(Self::Json),
            other => Err(UnsupportedMediaType(other.to_string())),
        }
    }
}

/// An enveloped protobuf object, borrowed from the stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`: the version the object was written in.
    pub api_version: &'a str,
    /// `typeMeta.kind`.
    pub kind: &'a str,
    /// `raw`: the object's own message.
    pub raw: &'a [u8],
}

/// A stored value, recognised by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredForm<'a> {
    /// `k8s\0` followed by a `runtime.Unknown`.
    Protobuf(Envelope<'a>),
    /// A JSON object.
    Json(&'a [u8]),
}

/// Why stored bytes could not be recognised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    /// Neither the protobuf magic nor a JSON object.
    #[error("stored object is neither protobuf (k8s\\0) nor a JSON object")]
    Unrecognized,
    /// The envelope is malformed.
    #[error("stored protobuf envelope: {0}")]
    Envelope(String),
}

impl From<ProtoError> for EncodingError {
    fn from(e: ProtoError) -> Self {
        Self::Envelope(e.to_string())
    }
}

/// Recognises the form of a stored value by its first bytes: the `k8s\0` magic, or `{` (after
/// any whitespace).
pub fn recognize(data: &[u8]) -> Result<StoredForm<'_>, EncodingError> {
    if let Some(body) = data.strip_prefix(&MAGIC[..]) {
        return parse_envelope(body).map(StoredForm::Protobuf);
    }
    match data.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(StoredForm::Json(data)),
        _ => Err(EncodingError::Unrecognized),
    }
}

/// Parses `runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 }, raw = 2,
/// contentEncoding = 3, contentType = 4 }` without copying. A content encoding or type other
/// than empty (plain protobuf) is refused.
fn parse_envelope(body: &[u8]) -> Result<Envelope<'_>, EncodingError> {
    let mut envelope = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
    };
    let mut dec = Decoder::new(body);
    while let Some((field, wire)) = dec.key()? {
        match (field, wire) {
            (1, WireType::Len) => {
                let mut meta = Decoder::new(dec.len_delimited()?);
                while let Some((field, wire)) = meta.key()? {
                    match (field, wire) {
                        (1, WireType::Len) => envelope.api_version = utf8(meta.len_delimited()?)?,
                        (2, WireType::Len) => envelope.kind = utf8(meta.len_delimited()?)?,
                        _ => meta.skip(wire)?,
                    }
                }
            }
            (2, WireType::Len) => envelope.raw = dec.len_delimited()?,
            (3 | 4, WireType::Len) => {
                let value = dec.len_delimited()?;
                if !value.is_empty() {
                    return Err(EncodingError::Envelope(format!(
                        "unsupported content {} {:?}",
                        if field == 3 { "encoding" } else { "type" },
                        String::from_utf8_lossy(value)
                    )));
                }
            }
            _ => dec.skip(wire)?,
        }
    }
    if envelope.api_version.is_empty() {
        return Err(EncodingError::Envelope("no apiVersion".to_string()));
    }
    Ok(envelope)
}

fn utf8(bytes: &[u8]) -> Result<&str, EncodingError> {
    std::str::from_utf8(bytes).map_err(|e| EncodingError::Envelope(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_both_forms() {
        let enveloped = apimachinery::protobuf::encode_envelope("v1", "ConfigMap", b"\x0a\x00");
        assert_eq!(
            recognize(&enveloped).unwrap(),
            StoredForm::Protobuf(Envelope {
                api_version: "v1",
                kind: "ConfigMap",
                raw: b"\x0a\x00",
            })
        );
        assert_eq!(
            recognize(b" {\"a\":1}").unwrap(),
            StoredForm::Json(b" {\"a\":1}")
        );
        assert_eq!(recognize(b"[1]"), Err(EncodingError::Unrecognized));
        assert_eq!(recognize(b""), Err(EncodingError::Unrecognized));
        assert!(matches!(
            recognize(b"k8s\0\x0a\xff"),
            Err(EncodingError::Envelope(_))
        ));
    }

    #[test]
    fn media_types_parse() {
        assert_eq!(
            "application/vnd.kubernetes.protobuf".parse(),
            Ok(StorageMediaType::Protobuf)
        );
        assert_eq!("application/json".parse(), Ok(StorageMediaType::Json));
        assert!("application/yaml".parse::<StorageMediaType>().is_err());
        assert_eq!(StorageMediaType::default(), StorageMediaType::Protobuf);
        assert_eq!(StorageMediaType::Json.to_string(), "application/json");
    }
}
