//! Field validation with Kubernetes' exact messages: the name, label and qualified-name rules
//! (the one home of them in apiary), marker checks used by the generated code, and `ObjectMeta`
//! validation.
//!
//! Messages follow `k8s.io/apimachinery/pkg/util/validation` (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsQualifiedName`, `IsValidLabelValue`), `pkg/api/validation`
//! (`NameIsDNSSubdomain`, `NameIsDNSLabel`, `ValidateObjectMeta`), `pkg/api/validation/path`
//! (`ValidatePathSegmentName`) and the CRD schema validator (`… in body should match '…'`), so
//! clients and scripts that match on them keep working.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;
use serde_json::Value;

use crate::errors::{FieldError, FieldErrorType};

mod object_meta;

pub use object_meta::{
    validate_annotations, validate_labels, validate_object_meta, validate_object_meta_update,
};

/// Maximum length of a DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of the name part of a qualified name (the part after the optional `prefix/`).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Maximum total size of an object's annotations (keys plus values), in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Kubernetes' UUID format; matched by hand in [`matches_uuid`], kept for the test that checks it.
#[cfg(test)]
const UUID_FMT: &str = "^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";

/// Returns a compiled regular expression, cached by pattern, read with Go's `regexp` meaning
/// (`\d`, `\w`, `\s`, `\b` are ASCII, as in Kubernetes). `None` if it does not compile.
/// The `Arc` shares one regex (and its match caches) between callers; cloning a `Regex`
/// itself would build a fresh cache pool on every call.
pub(crate) fn cached_regex(pattern: &str) -> Option<Arc<Regex>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<Regex>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut guard = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(re) = guard.get(pattern) {
        return re.clone();
    }
    guard
        .entry(pattern.to_string())
        .or_insert_with(|| {
            Regex::new(&crate::schema::regex::ascii_classes(pattern))
                .ok()
                .map(Arc::new)
        })
        .clone()
}

/// Whether `s` matches [`DNS1123_LABEL_FMT`] entirely: lower-case alphanumerics and `-`,
/// starting and ending with an alphanumeric.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// Whether `s` matches [`DNS1123_SUBDOMAIN_FMT`] entirely: DNS-1123 labels joined by `.`.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Whether `s` matches [`QUALIFIED_NAME_FMT`] entirely: alphanumerics, `-`, `_` and `.`,
/// starting and ending with an alphanumeric.
fn matches_qualified_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Whether `s` matches [`LABEL_VALUE_FMT`] entirely: empty or a qualified name's format.
fn matches_label_value(s: &str) -> bool {
    s.is_empty() || matches_qualified_name(s)
}

/// Whether `s` matches Kubernetes' UUID format entirely: 8-4-4-4-12 lower-case hex digits, each `-`
/// optional.
fn matches_uuid(s: &str) -> bool {
    let mut rest = s.as_bytes();
    for (i, n) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if i > 0
            && let [b'-', tail @ ..] = rest
        {
            rest = tail;
        }
        if rest.len() < n
            || !rest[..n]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        {
            return false;
        }
        rest = &rest[n..];
    }
    rest.is_empty()
}

/// Kubernetes' `RegexError`: the message, examples and the regular expression used
/// (`msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')`).
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push_str(&format!("'{e}', "));
    }
    s.push_str(&format!("regex used for validation is '{fmt}')"));
    s
}

/// Kubernetes' `MaxLenError`: `must be no more than N characters`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Kubernetes' `EmptyError`: `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// Problems of `s` as a DNS-1123 label (`IsDNS1123Label`; empty when valid). A valid subdomain
/// that is not a label (it has dots) gets `must not contain dots`.
pub fn is_dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(s) {
        if matches_dns1123_subdomain(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/// Problems of `s` as a DNS-1035 label (`IsDNS1035Label`; empty when valid): at most 63
/// lower-case alphanumerics or `-`, starting with a letter and ending with an alphanumeric.
pub fn is_dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    let bytes = s.as_bytes();
    let valid = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.last().is_some_and(|b| *b != b'-');
    if !valid {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Problems of `s` as a DNS-1123 subdomain (`IsDNS1123Subdomain`; empty when valid).
pub fn is_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Problems of `s` as a qualified name (`[prefix/]name`, `IsQualifiedName`), such as a label
/// key: the prefix a DNS-1123 subdomain, the name at most 63 alphanumerics, `-`, `_` or `.`
/// starting and ending with an alphanumeric.
pub fn is_qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Problems of `s` as a label value (`IsValidLabelValue`): empty, or at most 63 characters of
/// a qualified name's name part.
pub fn is_valid_label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !matches_label_value(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Maximum length of a DNS-1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;

/// Problems of `s` as a name that appears in a URL path segment (`IsValidPathSegmentName`):
/// not `.` or `..`, and without `/` or `%`.
pub fn is_path_segment_name(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    is_path_segment_prefix(s)
}

/// Problems of `s` as the prefix of a path-segment name (`IsValidPathSegmentPrefix`): without
/// `/` or `%` (any suffix may make `.` or `..` valid).
pub fn is_path_segment_prefix(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// How a kind's `metadata.name` is validated (Kubernetes' `ValidateNameFunc` of the kind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NameFormat {
    /// `NameIsDNSSubdomain`: most kinds.
    #[default]
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: namespaces and the like.
    Dns1123Label,
    /// `NameIsDNS1035Label`: services (whose names become DNS labels that must start with a
    /// letter).
    Dns1035Label,
    /// `ValidatePathSegmentName`: kinds whose names only need to fit in a URL path segment.
    PathSegment,
}

impl NameFormat {
    /// The format of a marker name: `dns1123-subdomain`, `dns1123-label` or `path-segment`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "dns1123-subdomain" => Some(Self::Dns1123Subdomain),
            "dns1123-label" => Some(Self::Dns1123Label),
            "dns1035-label" => Some(Self::Dns1035Label),
            "path-segment" => Some(Self::PathSegment),
            _ => None,
        }
    }

    /// The marker name of the format.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dns1123Subdomain => "dns1123-subdomain",
            Self::Dns1123Label => "dns1123-label",
            Self::Dns1035Label => "dns1035-label",
            Self::PathSegment => "path-segment",
        }
    }

    /// The problems of `name` under this format; `prefix` says the name is a `generateName`
    /// that a random suffix will be appended to (Kubernetes' `ValidateNameFunc(name, prefix)`).
    pub fn problems(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            Self::Dns1123Subdomain => is_dns1123_subdomain(&mask_if_prefix(name, prefix)),
            Self::Dns1123Label => is_dns1123_label(&mask_if_prefix(name, prefix)),
            Self::Dns1035Label => is_dns1035_label(&mask_if_prefix(name, prefix)),
            Self::PathSegment if prefix => is_path_segment_prefix(name),
            Self::PathSegment => is_path_segment_name(name),
        }
    }
}

fn mask_if_prefix(name: &str, prefix: bool) -> std::borrow::Cow<'_, str> {
    if prefix {
        mask_trailing_dash(name)
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Kubernetes' `maskTrailingDash`, applied to a `generateName` before it is checked as a DNS
/// name: a name longer than one character that ends in `-` loses its last two characters and
/// gains an `a` (`name[:len-2] + "a"`, byte-wise, exactly as Kubernetes does).
pub fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() > 1 && name.ends_with('-') {
        let bytes = &name.as_bytes()[..name.len() - 2];
        let mut masked = String::from_utf8_lossy(bytes).into_owned();
        masked.push('a');
        std::borrow::Cow::Owned(masked)
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Problems of a name under a marker name format (`dns1123-subdomain`, `dns1123-label` or
/// `path-segment`; anything else is a subdomain).
pub fn name_problems(format: &str, name: &str) -> Vec<String> {
    NameFormat::from_name(format)
        .unwrap_or_default()
        .problems(name, false)
}

/// Validates a non-empty `metadata.name` under `format`: one `metadata.name: Invalid value`
/// error per problem, as `ValidateObjectMeta` reports them (a name too long and malformed gets
/// both `must be no more than 253 characters` and the format's message).
pub fn validate_name(name: &str, format: NameFormat) -> Vec<FieldError> {
    format
        .problems(name, false)
        .into_iter()
        .map(|m| FieldError::invalid("metadata.name", &Value::from(name), m))
        .collect()
}

/// Validates a non-empty `metadata.generateName` under `format`, as a prefix (see
/// [`NameFormat::problems`]): one `metadata.generateName: Invalid value` error per problem.
pub fn validate_generate_name(generate_name: &str, format: NameFormat) -> Vec<FieldError> {
    format
        .problems(generate_name, true)
        .into_iter()
        .map(|m| FieldError::invalid("metadata.generateName", &Value::from(generate_name), m))
        .collect()
}

/// What is wrong with `s` as a value of the string format `format` (`dns1123-label`,
/// `date-time`, `uuid`, …); `path` names the field in the messages that mention it.
pub fn format_problems(format: &str, s: &str, path: &dyn Fn() -> String) -> Vec<String> {
    match format {
        "dns1123-label" => is_dns1123_label(s),
        "dns1123-subdomain" => is_dns1123_subdomain(s),
        "qualified-name" => is_qualified_name(s),
        "label-value" => is_valid_label_value(s),
        "path-segment" => is_path_segment_name(s),
        "date-time" => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(_) => Vec::new(),
            Err(_) => vec![format!(
                "{} in body must be of type date-time: {:?}",
                path(),
                s
            )],
        },
        "uuid" => {
            if matches_uuid(&s.to_ascii_lowercase()) {
                Vec::new()
            } else {
                vec![format!("{} in body must be of type uuid: {:?}", path(), s)]
            }
        }
        "byte" => {
            use base64::Engine as _;
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(_) => Vec::new(),
                Err(_) => vec![format!("{} in body must be of type byte: {:?}", path(), s)],
            }
        }
        _ => Vec::new(),
    }
}

/// Renders validation errors as one Kubernetes message: `a; b` or `[a, b]` for several.
pub fn aggregate(errors: &[FieldError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn dns1035_labels_say_kubernetes_message() {
        assert!(super::is_dns1035_label("v1beta1").is_empty());
        assert_eq!(
            super::is_dns1035_label("1v"),
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(super::is_dns1035_label(&"a".repeat(64)).len(), 1);
        assert_eq!(super::is_dns1035_label("").len(), 1);
    }

    use super::*;

    #[test]
    fn format_matchers_agree_with_the_kubernetes_regexes() {
        let full = |fmt: &str| Regex::new(&format!("^(?:{fmt})$")).unwrap();
        type Matcher = fn(&str) -> bool;
        let checks: [(&str, Matcher); 5] = [
            (DNS1123_LABEL_FMT, matches_dns1123_label),
            (DNS1123_SUBDOMAIN_FMT, matches_dns1123_subdomain),
            (QUALIFIED_NAME_FMT, matches_qualified_name),
            (LABEL_VALUE_FMT, matches_label_value),
            (UUID_FMT, matches_uuid),
        ];
        let samples = [
            "",
            "a",
            "A",
            "0",
            "-",
            ".",
            "_",
            "a-",
            "-a",
            "a.b",
            "a..b",
            ".a",
            "a.",
            "a_b",
            "A_b",
            "my-name",
            "123-abc",
            "example.com",
            "Example.com",
            "a-b.c-d",
            "a.-b",
            "x/y",
            "a b",
            "é",
            "aé",
            "a\n",
            "abc_",
            "_abc",
            "a.b_c-d",
            "0123456789abcdef0123456789abcdef",
            "01234567-89ab-cdef-0123-456789abcdef",
            "01234567-89abcdef-0123-456789abcdef",
            "01234567--89ab-cdef-0123-456789abcdef",
            "01234567-89ab-cdef-0123-456789abcde",
            "01234567-89ab-cdef-0123-456789abcdef0",
            "0123456g-89ab-cdef-0123-456789abcdef",
            "-01234567-89ab-cdef-0123-456789abcdef",
            "01234567-89ab-cdef-0123-456789abcdef-",
        ];
        for (fmt, matcher) in checks {
            let re = full(fmt);
            for s in samples {
                assert_eq!(matcher(s), re.is_match(s), "{fmt} on {s:?}");
            }
        }
    }

    const LABEL_REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    pub(super) const SUBDOMAIN_REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    pub(super) const NAME_PART_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn regex_errors_are_kubernetes_regex_error() {
        assert_eq!(
            regex_error("msg", "fmt", &[]),
            "msg (regex used for validation is 'fmt')"
        );
        assert_eq!(
            regex_error("msg", "fmt", &["a"]),
            "msg (e.g. 'a', regex used for validation is 'fmt')"
        );
        assert_eq!(
            regex_error("msg", "fmt", &["a", "b"]),
            "msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')"
        );
    }

    #[test]
    fn dns1123_labels() {
        assert!(is_dns1123_label("my-name").is_empty());
        assert!(is_dns1123_label(&"a".repeat(63)).is_empty());
        assert_eq!(is_dns1123_label(""), [LABEL_REGEX]);
        assert_eq!(is_dns1123_label("Bad_Name"), [LABEL_REGEX]);
        assert_eq!(is_dns1123_label("-a"), [LABEL_REGEX]);
        // A valid subdomain that is not a label: Kubernetes says why.
        assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert_eq!(
            is_dns1123_label(&format!("{}.b", "a".repeat(70))),
            [
                "must be no more than 63 characters",
                "must not contain dots"
            ]
        );
        assert_eq!(
            is_dns1123_label(&"A".repeat(64)),
            ["must be no more than 63 characters", LABEL_REGEX]
        );
    }

    #[test]
    fn dns1123_subdomains() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(is_dns1123_subdomain(&"a".repeat(253)).is_empty());
        assert_eq!(is_dns1123_subdomain(""), [SUBDOMAIN_REGEX]);
        assert_eq!(is_dns1123_subdomain("a..b"), [SUBDOMAIN_REGEX]);
        assert_eq!(is_dns1123_subdomain("a.-b"), [SUBDOMAIN_REGEX]);
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(
            is_dns1123_subdomain(&format!("{}_", "a".repeat(254))),
            ["must be no more than 253 characters", SUBDOMAIN_REGEX]
        );
    }

    #[test]
    fn qualified_names() {
        for ok in ["a", "A", "my.name", "123-abc", "example.com/MyName", "a/b"] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        assert!(is_qualified_name(&format!("{}/{}", "a".repeat(253), "b".repeat(63))).is_empty());
        assert_eq!(
            is_qualified_name(""),
            ["name part must be non-empty", NAME_PART_REGEX]
        );
        assert_eq!(is_qualified_name("-a"), [NAME_PART_REGEX]);
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
        assert_eq!(
            is_qualified_name(&format!("{}_", "a".repeat(64))),
            [
                "name part must be no more than 63 characters",
                NAME_PART_REGEX
            ]
        );
        assert_eq!(is_qualified_name("/a"), ["prefix part must be non-empty"]);
        assert_eq!(
            is_qualified_name("a/"),
            ["name part must be non-empty", NAME_PART_REGEX]
        );
        assert_eq!(
            is_qualified_name("Example.com/a"),
            [format!("prefix part {SUBDOMAIN_REGEX}")]
        );
        assert_eq!(
            is_qualified_name(&format!("{}/a", "a".repeat(254))),
            ["prefix part must be no more than 253 characters"]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            [
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "MyValue", "my_value", "12345", "a.b-c_d"] {
            assert!(is_valid_label_value(ok).is_empty(), "{ok}");
        }
        assert!(is_valid_label_value(&"a".repeat(63)).is_empty());
        assert_eq!(is_valid_label_value("-a"), [LABEL_VALUE_REGEX]);
        assert_eq!(is_valid_label_value("a b"), [LABEL_VALUE_REGEX]);
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
    }

    #[test]
    fn path_segment_names() {
        assert!(is_path_segment_name("a:b c").is_empty());
        assert_eq!(is_path_segment_name("."), ["may not be '.'"]);
        assert_eq!(is_path_segment_name(".."), ["may not be '..'"]);
        assert_eq!(
            is_path_segment_name("a/b%c"),
            ["may not contain '/'", "may not contain '%'"]
        );
        assert!(is_path_segment_prefix("..").is_empty());
        assert_eq!(is_path_segment_prefix("a%"), ["may not contain '%'"]);
    }

    #[test]
    fn name_formats_and_prefixes() {
        assert_eq!(mask_trailing_dash("abc-"), "aba");
        assert_eq!(mask_trailing_dash("a-"), "a");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("abc"), "abc");
        for f in [
            NameFormat::Dns1123Subdomain,
            NameFormat::Dns1123Label,
            NameFormat::PathSegment,
        ] {
            assert_eq!(NameFormat::from_name(f.as_str()), Some(f));
        }
        assert_eq!(NameFormat::from_name("other"), None);
        let sub = NameFormat::Dns1123Subdomain;
        assert!(sub.problems("widget-", true).is_empty());
        assert_eq!(sub.problems("widget-", false), [SUBDOMAIN_REGEX]);
        assert_eq!(sub.problems("-", true), [SUBDOMAIN_REGEX]);
        assert_eq!(sub.problems("w.", true), [SUBDOMAIN_REGEX]);
        let label = NameFormat::Dns1123Label;
        assert!(label.problems("ns-", true).is_empty());
        assert_eq!(label.problems("a.b-", true), ["must not contain dots"]);
        let seg = NameFormat::PathSegment;
        assert!(seg.problems("..", true).is_empty());
        assert_eq!(seg.problems("..", false), ["may not be '..'"]);
        assert_eq!(
            name_problems("dns1123-label", "a.b"),
            ["must not contain dots"]
        );
        assert_eq!(name_problems("unknown", "a_b"), [SUBDOMAIN_REGEX]);
    }

    #[test]
    fn metadata_name_errors() {
        let msgs = |errs: Vec<FieldError>| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert!(validate_name("ok", NameFormat::Dns1123Subdomain).is_empty());
        assert_eq!(
            msgs(validate_name("Bad_Name", NameFormat::Dns1123Subdomain)),
            [format!(
                "metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_REGEX}"
            )]
        );
        let long = "a".repeat(254);
        assert_eq!(
            msgs(validate_name(&long, NameFormat::Dns1123Subdomain)),
            [format!(
                "metadata.name: Invalid value: \"{long}\": must be no more than 253 characters"
            )]
        );
        let long_bad = format!("{}_", "a".repeat(253));
        assert_eq!(
            msgs(validate_name(&long_bad, NameFormat::Dns1123Subdomain)),
            [
                format!(
                    "metadata.name: Invalid value: \"{long_bad}\": must be no more than 253 characters"
                ),
                format!("metadata.name: Invalid value: \"{long_bad}\": {SUBDOMAIN_REGEX}"),
            ]
        );
        assert_eq!(
            msgs(validate_name("a.b", NameFormat::Dns1123Label)),
            ["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        assert_eq!(
            msgs(validate_name(&"a".repeat(64), NameFormat::Dns1123Label)),
            [format!(
                "metadata.name: Invalid value: \"{}\": must be no more than 63 characters",
                "a".repeat(64)
            )]
        );
        assert_eq!(
            msgs(validate_name("a/b", NameFormat::PathSegment)),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
        assert_eq!(
            msgs(validate_generate_name("Gen-", NameFormat::Dns1123Subdomain)),
            [format!(
                "metadata.generateName: Invalid value: \"Gen-\": {SUBDOMAIN_REGEX}"
            )]
        );
        assert!(validate_generate_name("gen-", NameFormat::Dns1123Label).is_empty());
    }
}
