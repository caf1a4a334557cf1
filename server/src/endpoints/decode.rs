//! Decoding a write's body into the typed object of the requested version, as Kubernetes'
//! codec does: by `Content-Type` (JSON, YAML, protobuf), in one pass into the typed form of the
//! version the body names (converted to the requested version when they differ), defaulted,
//! with `apiVersion` and `kind` checked and unknown or duplicate fields handled per
//! the request's `fieldValidation` (refused with `Strict`, warned about with `Warn`, the
//! default).

use apimachinery::GroupVersion;
pub use apimachinery::meta::options::FieldValidation;
use apimachinery::runtime::decode::{DecodeError, Tracker};
use apimachinery::runtime::{DecodedObject, Object, VersionCodec};
use apimachinery::status::ApiError;
use serde_json::Value;

use super::scope::RequestScope;
use crate::negotiate::body::{
    BodyFormat, MAX_DEPTH, body_format, json_depth_message, json_too_deep,
};

/// The typed object a body decoded to (of the requested version), and the warnings.
pub struct Body {
    /// The object.
    pub object: Box<dyn Object>,
    /// `Warning` headers (unknown and duplicate fields).
    pub warnings: Vec<String>,
}

/// Decodes the request body, with the request's `fieldValidation`.
pub fn decode_body(scope: &RequestScope, validation: FieldValidation) -> Result<Body, ApiError> {
    let format = body_format(scope.header("content-type"), scope.protobuf())?;
    if format != BodyFormat::Protobuf && scope.body.is_empty() {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    let body = match format {
        BodyFormat::Json => decode_json(scope, &scope.body, validation),
        BodyFormat::Yaml => {
            let value = crate::negotiate::yaml_to_json(&scope.body)?;
            decode_value(scope, &value, validation)
        }
        BodyFormat::Protobuf => decode_protobuf(scope),
    }?;
    if let Some(note) = &scope.audit_note {
        note.record(&*body.object);
    }
    Ok(body)
}

/// Decodes a JSON tree (a YAML body, a patched object, a merged apply) as a body.
pub fn decode_tree(
    scope: &RequestScope,
    value: &Value,
    validation: FieldValidation,
) -> Result<Body, ApiError> {
    decode_value(scope, value, validation)
}

fn unrecognized(scope: &RequestScope) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {})",
        scope.version.kind
    ))
}

/// The scheme kube-apiserver names when a body's version and kind are not registered (every
/// built-in kind is in its legacy scheme).
const SCHEME_NAME: &str = "pkg/api/legacyscheme/scheme.go:30";

/// The decoder's answer to a body of another version and kind than any the resource serves:
/// Kubernetes decodes a registered version and kind and then fails to convert it to the
/// resource's internal type; a version and kind it does not know fail the lookup.
fn not_this_kind(scope: &RequestScope, api_version: &str, kind: &str) -> ApiError {
    let gv = GroupVersion::parse(api_version);
    let registered = scope
        .scheme
        .by_kind(&gv.group, kind)
        .and_then(|k| k.info(&gv.version))
        .is_some();
    let detail = if registered {
        let group = scope.version.group;
        let internal = if group.is_empty() {
            "core"
        } else {
            group.split('.').next().unwrap_or(group)
        };
        format!(
            "converting ({}.{kind}) to ({internal}.{}): unknown conversion",
            gv.version, scope.version.kind
        )
    } else {
        format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme {SCHEME_NAME:?}"
        )
    };
    ApiError::bad_request(format!(
        "{kind} in version {:?} cannot be handled as a {}: {detail}",
        gv.version, scope.version.kind
    ))
}

/// The codec of the version a body names (its `apiVersion`), or of the requested version
/// when it names none. A body of another group, an unserved version or another kind is 400.
fn codec_for(
    scope: &RequestScope,
    api_version: Option<&str>,
    kind: Option<&str>,
) -> Result<&'static dyn VersionCodec, ApiError> {
    let given = api_version.filter(|v| !v.is_empty());
    let own_kind = scope.version.kind;
    let kind = kind.filter(|k| !k.is_empty()).unwrap_or(own_kind);
    let Some(given) = given.filter(|v| !scope.version.is_api_version(v)) else {
        if kind != own_kind {
            return Err(not_this_kind(scope, &scope.version.api_version(), kind));
        }
        return scope
            .kind
            .codec(scope.version.version)
            .ok_or_else(ApiError::not_found_path);
    };
    let gv = GroupVersion::parse(given);
    match scope.kind.codec(&gv.version) {
        Some(codec) if gv.group == scope.version.group && kind == own_kind => Ok(codec),
        _ => Err(not_this_kind(scope, given, kind)),
    }
}

fn cannot_handle(scope: &RequestScope, version: &str, detail: impl std::fmt::Display) -> ApiError {
    let kind = scope.version.kind;
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {detail}"
    ))
}

fn type_error(scope: &RequestScope, version: &str, e: &DecodeError) -> ApiError {
    if e.syntax {
        return ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {}",
            e.message
        ));
    }
    cannot_handle(scope, version, e)
}

fn decode_json(
    scope: &RequestScope,
    bytes: &[u8],
    validation: FieldValidation,
) -> Result<Body, ApiError> {
    // Nesting is bounded before any parsing, as for every other JSON the server reads.
    if let Some(bracket) = json_too_deep(bytes, MAX_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {}",
            json_depth_message(bracket)
        )));
    }
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() {
            let e = serde_json::from_slice::<Value>(bytes).err();
            return Err(ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: {}",
                e.map(|e| e.to_string()).unwrap_or_default()
            )));
        }
        return Err(unrecognized(scope));
    }
    // Most bodies are of the requested version: decode as it, and again only when the body
    // names another one.
    let requested = scope
        .kind
        .codec(scope.version.version)
        .ok_or_else(ApiError::not_found_path)?;
    let first = requested.decode_json(bytes);
    let (api_version, kind) = match &first {
        Ok(d) => (d.tracker.api_version.clone(), d.tracker.kind.clone()),
        Err(_) => peek_type_meta(bytes),
    };
    let codec = codec_for(scope, api_version.as_deref(), kind.as_deref())?;
    let decoded = if std::ptr::addr_eq(codec, requested) {
        first
    } else {
        codec.decode_json(bytes)
    }
    .map_err(|e| type_error(scope, codec.info().version, &e))?;
    finish(scope, codec, decoded, validation)
}

fn decode_value(
    scope: &RequestScope,
    value: &Value,
    validation: FieldValidation,
) -> Result<Body, ApiError> {
    let Some(map) = value.as_object() else {
        return Err(unrecognized(scope));
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str);
    let codec = codec_for(scope, text("apiVersion"), text("kind"))?;
    let decoded = codec
        .decode_value(value)
        .map_err(|e| type_error(scope, codec.info().version, &e))?;
    finish(scope, codec, decoded, validation)
}

/// The top-level `apiVersion` and `kind` of a JSON document, if it has them as strings.
fn peek_type_meta(bytes: &[u8]) -> (Option<String>, Option<String>) {
    #[derive(serde::Deserialize)]
    struct TypeMeta {
        #[serde(rename = "apiVersion", default)]
        api_version: Option<Value>,
        #[serde(default)]
        kind: Option<Value>,
    }
    match serde_json::from_slice::<TypeMeta>(bytes) {
        Ok(t) => (
            t.api_version.and_then(|v| v.as_str().map(str::to_string)),
            t.kind.and_then(|v| v.as_str().map(str::to_string)),
        ),
        Err(_) => (None, None),
    }
}

/// Applies `fieldValidation` to what the decode saw, and converts to the requested version.
fn finish(
    scope: &RequestScope,
    codec: &'static dyn VersionCodec,
    decoded: DecodedObject,
    validation: FieldValidation,
) -> Result<Body, ApiError> {
    let version = codec.info().version;
    let problems = problems(&decoded.tracker);
    let mut warnings = Vec::new();
    match validation {
        FieldValidation::Strict if !problems.is_empty() => {
            return Err(cannot_handle(
                scope,
                version,
                format!("strict decoding error: {}", problems.join(", ")),
            ));
        }
        FieldValidation::Strict | FieldValidation::Warn => warnings = problems,
        FieldValidation::Ignore => {}
    }
    let object = scope.to_request_version(decoded.object)?;
    Ok(Body { object, warnings })
}

/// The unknown and duplicate fields a decode saw, in document order, worded as Kubernetes'
/// strict decoder words them.
fn problems(tracker: &Tracker) -> Vec<String> {
    tracker.problems.iter().map(ToString::to_string).collect()
}

/// Decodes a protobuf body: the `k8s\0` envelope names the version and kind, which are checked
/// as a JSON body's `apiVersion` and `kind` are.
fn decode_protobuf(scope: &RequestScope) -> Result<Body, ApiError> {
    let unknown = apimachinery::protobuf::decode_envelope(&scope.body)
        .map_err(|e| ApiError::bad_request(format!("protobuf: {e}")))?;
    let type_meta = unknown.type_meta;
    let codec = codec_for(
        scope,
        Some(type_meta.api_version.as_str()),
        Some(type_meta.kind.as_str()),
    )?;
    let object = codec
        .decode_protobuf(unknown.raw.as_deref().unwrap_or(&[]))
        .map_err(|e| cannot_handle(scope, codec.info().version, e))?;
    let object = scope.to_request_version(object)?;
    Ok(Body {
        object,
        warnings: Vec::new(),
    })
}
