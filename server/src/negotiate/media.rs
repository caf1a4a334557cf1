//! Parsing `Accept` headers and choosing a response encoding.

use apimachinery::status::ApiError;

/// `application/json`.
pub const JSON: &str = "application/json";
/// `application/yaml`.
pub const YAML: &str = "application/yaml";
/// `application/vnd.kubernetes.protobuf`.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// One media range of an `Accept` header with its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lowercase.
    pub essence: String,
    /// Parameters in order, names lowercase.
    pub params: Vec<(String, String)>,
}

impl MediaType {
    /// Parses one media range such as `application/json;as=Table;v=v1;g=meta.k8s.io`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split(';');
        let essence = parts.next()?.trim().to_ascii_lowercase();
        if essence.is_empty() {
            return None;
        }
        let params = parts
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                ))
            })
            .collect();
        Some(Self { essence, params })
    }

    /// Returns a parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Parses a whole `Accept` header, dropping ranges with `q=0`.
    pub fn parse_accept(header: &str) -> Vec<Self> {
        header
            .split(',')
            .filter_map(Self::parse)
            .filter(|m| {
                m.param("q")
                    .is_none_or(|q| q.parse::<f32>().map(|q| q > 0.0).unwrap_or(true))
            })
            .collect()
    }
}

/// One media range of an `Accept` header, borrowed from the header: what negotiation reads
/// without copying (names compare case-insensitively, as [`MediaType::parse`] lowercases them).
#[derive(Clone, Copy, Debug)]
struct MediaRange<'a> {
    essence: &'a str,
    params: &'a str,
}

impl<'a> MediaRange<'a> {
    /// Parses one range as [`MediaType::parse`] does; `None` for an empty type.
    fn parse(s: &'a str) -> Option<Self> {
        let (essence, params) = s.split_once(';').unwrap_or((s, ""));
        let essence = essence.trim();
        (!essence.is_empty()).then_some(Self { essence, params })
    }

    /// The ranges of an `Accept` header, without those with `q=0`.
    fn accepted(header: &'a str) -> impl Iterator<Item = Self> {
        header.split(',').filter_map(Self::parse).filter(|m| {
            m.param("q")
                .is_none_or(|q| q.parse::<f32>().map(|q| q > 0.0).unwrap_or(true))
        })
    }

    /// The first value of the parameter `name` (lowercase).
    fn param(&self, name: &str) -> Option<&'a str> {
        self.params.split(';').find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().trim_matches('"'))
        })
    }

    fn is(&self, essence: &str) -> bool {
        self.essence.eq_ignore_ascii_case(essence)
    }
}

/// The wire encoding of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf (`k8s\0` envelope).
    Protobuf,
}

impl OutputFormat {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => JSON,
            Self::Yaml => YAML,
            Self::Protobuf => PROTOBUF,
        }
    }
}

/// A transform of the response object requested through `as=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transform {
    /// The object (or list) itself.
    None,
    /// A `meta.k8s.io` Table of the given version (`v1` or `v1beta1`).
    Table(String),
    /// `PartialObjectMetadata` of the given version.
    PartialObjectMetadata(String),
    /// `PartialObjectMetadataList` of the given version.
    PartialObjectMetadataList(String),
}

/// The outcome of negotiation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The wire encoding.
    pub format: OutputFormat,
    /// The transform.
    pub transform: Transform,
}

impl Negotiated {
    /// The `Content-Type` header value, including the transform parameters as Kubernetes
    /// echoes them.
    pub fn content_type(&self) -> String {
        let base = self.format.content_type();
        match &self.transform {
            Transform::None => base.to_string(),
            Transform::Table(v) => format!("{base};as=Table;v={v};g=meta.k8s.io"),
            Transform::PartialObjectMetadata(v) => {
                format!("{base};as=PartialObjectMetadata;v={v};g=meta.k8s.io")
            }
            Transform::PartialObjectMetadataList(v) => {
                format!("{base};as=PartialObjectMetadataList;v={v};g=meta.k8s.io")
            }
        }
    }
}

fn accepted_list(protobuf: bool) -> Vec<&'static str> {
    if protobuf {
        vec![JSON, YAML, PROTOBUF]
    } else {
        vec![JSON, YAML]
    }
}

fn plain_format(m: &MediaRange<'_>, protobuf: bool) -> Option<OutputFormat> {
    if m.is(JSON) || m.is("application/*") || m.is("*/*") {
        Some(OutputFormat::Json)
    } else if m.is(YAML) {
        Some(OutputFormat::Yaml)
    } else if protobuf && m.is(PROTOBUF) {
        Some(OutputFormat::Protobuf)
    } else {
        None
    }
}

/// Chooses the response encoding for a get (`list = false`) or list (`list = true`).
/// `protobuf` says whether the kind has a protobuf encoding. No acceptable range → 406.
pub fn negotiate_output(
    accept: Option<&str>,
    list: bool,
    protobuf: bool,
) -> Result<Negotiated, ApiError> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() || header.eq_ignore_ascii_case(JSON) {
        // No preference, or exactly JSON (what most clients send).
        return Ok(Negotiated {
            format: OutputFormat::Json,
            transform: Transform::None,
        });
    }
    for m in MediaRange::accepted(header) {
        let Some(format) = plain_format(&m, protobuf) else {
            continue;
        };
        let transform = match m.param("as") {
            None => Transform::None,
            Some(as_) => {
                if m.param("g") != Some("meta.k8s.io") {
                    continue;
                }
                let v = m.param("v").unwrap_or("");
                if v != "v1" && v != "v1beta1" {
                    continue;
                }
                match as_ {
                    "Table" if format != OutputFormat::Protobuf => Transform::Table(v.to_string()),
                    "PartialObjectMetadata" if !list => {
                        Transform::PartialObjectMetadata(v.to_string())
                    }
                    "PartialObjectMetadataList" if list => {
                        Transform::PartialObjectMetadataList(v.to_string())
                    }
                    _ => continue,
                }
            }
        };
        let format = if format == OutputFormat::Protobuf && transform != Transform::None {
            OutputFormat::Json
        } else {
            format
        };
        return Ok(Negotiated { format, transform });
    }
    Err(ApiError::not_acceptable(&accepted_list(protobuf)))
}

/// Chooses the encoding of a watch stream: JSON lines, or length-prefixed protobuf; a Table
/// transform is allowed (kubectl `get -w`).
pub fn negotiate_watch(accept: Option<&str>, protobuf: bool) -> Result<Negotiated, ApiError> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(Negotiated {
            format: OutputFormat::Json,
            transform: Transform::None,
        });
    }
    for m in MediaRange::accepted(header) {
        let format = match plain_format(&m, protobuf) {
            Some(OutputFormat::Protobuf) => OutputFormat::Protobuf,
            Some(_) => OutputFormat::Json,
            None => continue,
        };
        let transform = match (m.param("as"), m.param("v")) {
            (None, _) => Transform::None,
            (Some("Table"), Some(v @ ("v1" | "v1beta1"))) if format == OutputFormat::Json => {
                Transform::Table(v.to_string())
            }
            (Some("PartialObjectMetadata"), Some(v @ ("v1" | "v1beta1"))) => {
                Transform::PartialObjectMetadata(v.to_string())
            }
            _ => continue,
        };
        return Ok(Negotiated { format, transform });
    }
    Err(ApiError::not_acceptable(&accepted_list(protobuf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn kubectl_get_gets_a_table() {
        let n = negotiate_output(Some(KUBECTL_GET), true, true).unwrap();
        assert_eq!(n.transform, Transform::Table("v1".into()));
        assert_eq!(
            n.content_type(),
            "application/json;as=Table;v=v1;g=meta.k8s.io"
        );
    }

    #[test]
    fn plain_and_protobuf() {
        assert_eq!(
            negotiate_output(None, false, true).unwrap().format,
            OutputFormat::Json
        );
        assert_eq!(
            negotiate_output(
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false,
                true
            )
            .unwrap()
            .format,
            OutputFormat::Protobuf
        );
        assert_eq!(
            negotiate_output(
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false,
                false
            )
            .unwrap()
            .format,
            OutputFormat::Json
        );
        assert_eq!(
            negotiate_output(Some("application/yaml"), false, false)
                .unwrap()
                .format,
            OutputFormat::Yaml
        );
    }

    #[test]
    fn partial_metadata_list_mismatch_is_406() {
        let err = negotiate_output(
            Some("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"),
            false,
            false,
        )
        .unwrap_err();
        assert_eq!(err.code(), 406);
        assert_eq!(
            err.message(),
            "only the following media types are accepted: application/json, application/yaml"
        );
        let ok = negotiate_output(
            Some("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"),
            false,
            false,
        )
        .unwrap();
        assert_eq!(ok.transform, Transform::PartialObjectMetadata("v1".into()));
    }

    #[test]
    fn borrowed_ranges_read_like_parsed_media_types() {
        for header in [
            KUBECTL_GET,
            "Application/JSON ; AS=Table; V=\"v1\" ;g=meta.k8s.io, */*;q=0.5",
            "application/yaml;q=0, application/vnd.kubernetes.protobuf;q=0.9",
            " , ;x=1, text/plain;charset",
        ] {
            let parsed = MediaType::parse_accept(header);
            let borrowed: Vec<MediaRange<'_>> = MediaRange::accepted(header).collect();
            assert_eq!(parsed.len(), borrowed.len(), "{header}");
            for (p, b) in parsed.iter().zip(&borrowed) {
                assert!(b.is(&p.essence), "{header}");
                for name in ["as", "v", "g", "q", "charset"] {
                    assert_eq!(p.param(name), b.param(name), "{header} {name}");
                }
            }
        }
        assert_eq!(
            negotiate_output(Some("APPLICATION/YAML"), false, false)
                .unwrap()
                .format,
            OutputFormat::Yaml
        );
        assert_eq!(
            negotiate_watch(Some("application/yaml"), false)
                .unwrap()
                .format,
            OutputFormat::Json
        );
    }

    #[test]
    fn watch_formats() {
        assert_eq!(
            negotiate_watch(
                Some("application/vnd.kubernetes.protobuf;stream=watch"),
                true
            )
            .unwrap()
            .format,
            OutputFormat::Protobuf
        );
        assert_eq!(
            negotiate_watch(Some("application/json;stream=watch"), true)
                .unwrap()
                .format,
            OutputFormat::Json
        );
        assert_eq!(
            negotiate_watch(Some("text/html"), true).unwrap_err().code(),
            406
        );
    }
}
