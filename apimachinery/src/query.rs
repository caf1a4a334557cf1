//! Query strings as Kubernetes reads them: Go's `url.ParseQuery` ([`Query`]) and the parameter
//! codec that decodes a query into a typed options struct ([`from_query`], a
//! `serde::Deserializer`).
//!
//! Parsing: pairs are separated by `&`; `key=value` or a bare `key` (empty value); `+` is a
//! space; `%XX` escapes decode to bytes; repeated keys keep every value in order. A pair with a
//! malformed escape (`%zz`, a trailing `%`) or a `;` is dropped, and the first such problem is
//! reported by [`Query::parse_with_error`] as `url.ParseQuery` reports it — Kubernetes reads
//! queries through `URL.Query()`, which ignores it. Decoded bytes that are not UTF-8 are
//! replaced by U+FFFD.
//!
//! Decoding ([`from_query`]) follows `k8s.io/apimachinery/pkg/runtime`'s query conversions: a
//! field is set only when its key is present (unknown keys are ignored); strings and numbers
//! take the first value; lists (`dryRun`) take every value; numbers parse with
//! `strconv.ParseInt`, and a malformed one fails with its message
//! (`strconv.ParseInt: parsing "x": invalid syntax`); booleans follow [`query_bool`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use crate::strconv;

/// Why a query string did not parse cleanly; `Display` is Go's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// `url.EscapeError`: a `%` not followed by two hex digits (the text shows at most three
    /// characters from the `%`).
    #[error("invalid URL escape {}", strconv::quote(.0))]
    Escape(String),
    /// A pair containing `;`, which Go no longer treats as a separator.
    #[error("invalid semicolon separator in query")]
    Semicolon,
}

/// A parsed query string: its `(key, value)` pairs in order, decoded. Borrows the raw query
/// where a component has no escapes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// Go's `url.QueryUnescape`: `+` is a space and `%XX` a byte; a malformed escape is an error.
pub fn unescape(s: &str) -> Result<Cow<'_, str>, QueryError> {
    let bytes = s.as_bytes();
    let mut escaped = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if i + 2 >= bytes.len() || !is_hex(bytes[i + 1]) || !is_hex(bytes[i + 2]) {
                    let end = (i + 3).min(s.len());
                    // The slice may end inside a multi-byte character; show whole characters.
                    let shown = String::from_utf8_lossy(&bytes[i..end]).into_owned();
                    return Err(QueryError::Escape(shown));
                }
                escaped = true;
                i += 3;
            }
            b'+' => {
                escaped = true;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if !escaped {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                out.push(hex_value(bytes[i + 1]) << 4 | hex_value(bytes[i + 2]));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(Cow::Owned(match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// One `&`-separated piece of a raw query, decoded: `None` when it is empty, `Some(Err)` when
/// Go's `parseQuery` drops it with an error.
#[allow(clippy::type_complexity)]
fn parse_pair(piece: &str) -> Option<Result<(Cow<'_, str>, Cow<'_, str>), QueryError>> {
    if piece.contains(';') {
        return Some(Err(QueryError::Semicolon));
    }
    if piece.is_empty() {
        return None;
    }
    let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
    Some(unescape(k).and_then(|k| Ok((k, unescape(v)?))))
}

impl<'a> Query<'a> {
    /// Parses a raw query (without `?`) as `URL.Query()` does: malformed pairs are dropped.
    pub fn parse(raw: &'a str) -> Self {
        Self::parse_with_error(raw).0
    }

    /// Parses a raw query as `url.ParseQuery` does: the well-formed pairs, and the error it
    /// returns (a semicolon error replaces an earlier escape error, as in Go).
    pub fn parse_with_error(raw: &'a str) -> (Self, Option<QueryError>) {
        let mut pairs = Vec::new();
        let mut error = None;
        for piece in raw.split('&') {
            match parse_pair(piece) {
                None => {}
                Some(Ok(pair)) => pairs.push(pair),
                Some(Err(QueryError::Semicolon)) => error = Some(QueryError::Semicolon),
                Some(Err(e)) => {
                    error.get_or_insert(e);
                }
            }
        }
        (Self { pairs }, error)
    }

    /// Builds a query from decoded pairs.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<Cow<'a, str>>,
        V: Into<Cow<'a, str>>,
    {
        Self {
            pairs: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The first value of `key` (Go's `Values.Get`, but `None` when the key is absent).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Every value of `key`, in order.
    pub fn get_all<'s>(&'s self, key: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Whether `key` is present, with any value (Go's `Values.Has`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// The pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// A copy that owns its text.
    pub fn into_owned(self) -> Query<'static> {
        Query {
            pairs: self
                .pairs
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
        }
    }
}

/// The first value of `key` in a raw query, as `URL.Query().Get` finds it (malformed pairs
/// skipped), without collecting the other pairs.
pub fn first_value<'a>(raw: &'a str, key: &str) -> Option<Cow<'a, str>> {
    raw.split('&')
        .filter_map(parse_pair)
        .filter_map(Result::ok)
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// A boolean query parameter as Kubernetes' parameter codec reads it
/// (`runtime.Convert_Slice_string_To_bool`): `0` and `false` in any case are false, anything
/// else — `true`, `1`, `yes`, the empty string — is true. This is not `strconv.ParseBool`
/// (`?watch=f` watches).
pub fn query_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

/// A query parameter that could not be decoded into its field; `Display` is Kubernetes' message
/// (the `strconv` error), which becomes the message of a 400 `BadRequest`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryDecodeError(pub String);

impl de::Error for QueryDecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

impl From<strconv::NumError> for QueryDecodeError {
    fn from(e: strconv::NumError) -> Self {
        Self(e.to_string())
    }
}

impl From<QueryDecodeError> for crate::status::ApiError {
    fn from(e: QueryDecodeError) -> Self {
        crate::status::ApiError::bad_request(e.0)
    }
}

/// Decodes a query into `T` (a struct with serde field names such as `dryRun`), as Kubernetes'
/// parameter codec converts `url.Values` into an options struct; see the module documentation.
pub fn from_query<T: DeserializeOwned>(query: &Query<'_>) -> Result<T, QueryDecodeError> {
    T::deserialize(QueryDeserializer { query })
}

/// The `serde::Deserializer` of a whole query: a struct or a map of its keys.
pub struct QueryDeserializer<'q, 'a> {
    query: &'q Query<'a>,
}

impl<'q, 'a> QueryDeserializer<'q, 'a> {
    /// A deserializer over `query`.
    pub fn new(query: &'q Query<'a>) -> Self {
        Self { query }
    }
}

impl<'de> de::Deserializer<'de> for QueryDeserializer<'_, '_> {
    type Error = QueryDecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // Distinct keys in the order of their first appearance.
        let mut keys: Vec<&str> = Vec::new();
        for (k, _) in self.query.iter() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        visitor.visit_map(KeysAccess {
            query: self.query,
            keys: keys.into_iter(),
            current: None,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // The fields in declaration order, as the generated Go conversions visit them, so that
        // the first malformed field in that order is the one reported; keys the struct does
        // not name are never visited.
        let query = self.query;
        let present: Vec<&str> = fields
            .iter()
            .copied()
            .filter(|f| query.contains_key(f))
            .collect();
        visitor.visit_map(KeysAccess {
            query,
            keys: present.into_iter(),
            current: None,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit_struct seq tuple tuple_struct enum identifier
    }
}

/// Walks the keys of a query (the struct's present fields, or every distinct key).
struct KeysAccess<'q, 'a, I> {
    query: &'q Query<'a>,
    keys: I,
    current: Option<&'q str>,
}

impl<'de, 'q, I: Iterator<Item = &'q str>> de::MapAccess<'de> for KeysAccess<'q, '_, I> {
    type Error = QueryDecodeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some(key) = self.keys.next() else {
            return Ok(None);
        };
        self.current = Some(key);
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let key = self.current.take().unwrap_or_default();
        let values: Vec<&str> = self.query.get_all(key).collect();
        seed.deserialize(ValuesDeserializer { values: &values })
    }
}

/// The values of one key (at least one): scalars read the first, sequences all of them.
struct ValuesDeserializer<'v> {
    values: &'v [&'v str],
}

impl<'v> ValuesDeserializer<'v> {
    fn first(&self) -> &'v str {
        self.values.first().copied().unwrap_or("")
    }

    fn int(&self, bits: u32) -> Result<i64, QueryDecodeError> {
        Ok(strconv::parse_int(self.first(), bits)?)
    }

    fn uint(&self, bits: u32) -> Result<u64, QueryDecodeError> {
        Ok(strconv::parse_uint(self.first(), bits)?)
    }
}

impl<'de> de::Deserializer<'de> for ValuesDeserializer<'_> {
    type Error = QueryDecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.first())
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_bool(query_bool(self.first()))
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_i64(self.int(8)?)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_i64(self.int(16)?)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_i64(self.int(32)?)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_i64(self.int(64)?)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_u64(self.uint(8)?)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_u64(self.uint(16)?)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_u64(self.uint(32)?)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_u64(self.uint(64)?)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let s = self.first();
        match s.parse::<f64>() {
            Ok(f) => visitor.visit_f64(f),
            Err(_) => Err(QueryDecodeError(format!(
                "strconv.ParseFloat: parsing {}: invalid syntax",
                strconv::quote(s)
            ))),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.first())
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.first())
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.first())
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_bytes(self.first().as_bytes())
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_bytes(self.first().as_bytes())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // The key is present (a field is visited only then), so the value is set.
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(de::value::SeqDeserializer::new(self.values.iter().map(
            |v| ValuesDeserializer {
                values: std::slice::from_ref(v),
            },
        )))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(QueryDecodeError(
            "a query parameter cannot hold a map".to_string(),
        ))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        Err(QueryDecodeError(
            "a query parameter cannot hold a struct".to_string(),
        ))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_enum(self.first().into_deserializer())
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.first())
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }
}

impl<'de> IntoDeserializer<'de, QueryDecodeError> for ValuesDeserializer<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    fn pairs(raw: &str) -> Vec<(String, String)> {
        Query::parse(raw)
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn parses_as_url_parse_query() {
        assert_eq!(pairs(""), []);
        assert_eq!(pairs("a=1&b=2"), [p("a", "1"), p("b", "2")]);
        assert_eq!(
            pairs("a=1&a=2&b=&c&=d&&"),
            [p("a", "1"), p("a", "2"), p("b", ""), p("c", ""), p("", "d")]
        );
        assert_eq!(pairs("q=a+b%20c%2Bd"), [p("q", "a b c+d")]);
        assert_eq!(pairs("k%3Dx=v%26w"), [p("k=x", "v&w")]);
        assert_eq!(pairs("a=b=c"), [p("a", "b=c")]);
        assert_eq!(pairs("x=%e6%97%a5%E6%9C%AC"), [p("x", "日本")]);
        // Bytes that are not UTF-8 become U+FFFD.
        assert_eq!(pairs("x=%ff"), [p("x", "\u{fffd}")]);
    }

    #[test]
    fn malformed_pairs_are_dropped_with_go_errors() {
        let (q, err) = Query::parse_with_error("a=1&b=%zz&c=%4&d=%&e=3");
        assert_eq!(q.iter().collect::<Vec<_>>(), [("a", "1"), ("e", "3")]);
        assert_eq!(err.unwrap().to_string(), "invalid URL escape \"%zz\"");
        let (_, err) = Query::parse_with_error("c=%4");
        assert_eq!(err.unwrap().to_string(), "invalid URL escape \"%4\"");
        let (_, err) = Query::parse_with_error("%g1=x");
        assert_eq!(err.unwrap().to_string(), "invalid URL escape \"%g1\"");
        let (q, err) = Query::parse_with_error("a=%zz&b=1;c=2&d=4");
        assert_eq!(q.iter().collect::<Vec<_>>(), [("d", "4")]);
        assert_eq!(
            err.unwrap().to_string(),
            "invalid semicolon separator in query"
        );
        let (_, err) = Query::parse_with_error("a=1&b=2");
        assert_eq!(err, None);
        assert_eq!(
            unescape("%e6%97%").unwrap_err().to_string(),
            "invalid URL escape \"%\""
        );
    }

    #[test]
    fn lookups() {
        let q = Query::parse("dryRun=All&x=1&dryRun=x&flag");
        assert_eq!(q.get("dryRun"), Some("All"));
        assert_eq!(q.get_all("dryRun").collect::<Vec<_>>(), ["All", "x"]);
        assert_eq!(q.get("flag"), Some(""));
        assert!(q.contains_key("flag"));
        assert!(!q.contains_key("nope"));
        assert_eq!(q.get("nope"), None);
        assert_eq!(q.len(), 4);
        assert!(matches!(Query::parse("a=1").pairs[0].1, Cow::Borrowed("1")));
        assert_eq!(first_value("a=%zz&a=2&b=3", "a").as_deref(), Some("2"));
        assert_eq!(first_value("x+y=1", "x y").as_deref(), Some("1"));
        assert_eq!(first_value("a=1", "b"), None);
        assert_eq!(
            Query::parse("a=1").into_owned(),
            Query::from_pairs([("a", "1")])
        );
    }

    #[test]
    fn bools_are_the_parameter_codec_rule() {
        for f in ["0", "false", "False", "FALSE", "fAlSe"] {
            assert!(!query_bool(f), "{f}");
        }
        for t in ["1", "true", "t", "f", "F", "yes", "", "no", "00"] {
            assert!(query_bool(t), "{t:?}");
        }
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    struct Opts {
        name: String,
        limit: i64,
        timeout_seconds: Option<i64>,
        watch: bool,
        send: Option<bool>,
        dry_run: Vec<String>,
        small: u8,
        ratio: f64,
        #[serde(rename = "continue")]
        continue_: String,
        mode: Option<Mode>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn decodes_structs_as_the_parameter_codec() {
        let q = Query::parse(
            "name=a&name=b&limit=5&watch=f&send=0&dryRun=All&dryRun=x&unknown=1&continue=tok&mode=Slow&small=7&ratio=0.5",
        );
        let o: Opts = from_query(&q).unwrap();
        assert_eq!(
            o,
            Opts {
                name: "a".into(),
                limit: 5,
                timeout_seconds: None,
                watch: true,
                send: Some(false),
                dry_run: vec!["All".into(), "x".into()],
                small: 7,
                ratio: 0.5,
                continue_: "tok".into(),
                mode: Some(Mode::Slow),
            }
        );
        assert_eq!(
            from_query::<Opts>(&Query::parse("")).unwrap(),
            Opts::default()
        );
        let o: Opts = from_query(&Query::parse("watch&send=&timeoutSeconds=-3")).unwrap();
        assert!(o.watch);
        assert_eq!(o.send, Some(true));
        assert_eq!(o.timeout_seconds, Some(-3));
    }

    #[test]
    fn malformed_numbers_fail_with_strconv_messages_in_field_order() {
        let err = |raw: &str| from_query::<Opts>(&Query::parse(raw)).unwrap_err().0;
        assert_eq!(
            err("limit=abc"),
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            err("limit="),
            "strconv.ParseInt: parsing \"\": invalid syntax"
        );
        assert_eq!(
            err("timeoutSeconds=99999999999999999999"),
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        // `limit` is declared before `timeoutSeconds`: it is reported whatever the query order.
        assert_eq!(
            err("timeoutSeconds=x&limit=y"),
            "strconv.ParseInt: parsing \"y\": invalid syntax"
        );
        assert_eq!(
            err("small=300"),
            "strconv.ParseUint: parsing \"300\": value out of range"
        );
        assert_eq!(
            err("ratio=x"),
            "strconv.ParseFloat: parsing \"x\": invalid syntax"
        );
        assert!(err("mode=Medium").contains("unknown variant `Medium`"));
        // A malformed value of a key the struct does not name is never read.
        assert!(from_query::<Opts>(&Query::parse("other=abc")).is_ok());
    }

    #[test]
    fn decodes_maps_of_every_key() {
        let m: BTreeMap<String, Vec<String>> = from_query(&Query::parse("b=1&a=2&b=3")).unwrap();
        assert_eq!(m["b"], ["1", "3"]);
        assert_eq!(m["a"], ["2"]);
        let m: BTreeMap<String, String> = from_query(&Query::parse("b=1&a=2&b=3")).unwrap();
        assert_eq!(m["b"], "1");
        let api: crate::status::ApiError = from_query::<Opts>(&Query::parse("limit=x"))
            .unwrap_err()
            .into();
        assert_eq!(api.code(), 400);
        assert_eq!(
            api.message(),
            "strconv.ParseInt: parsing \"x\": invalid syntax"
        );
    }
}
