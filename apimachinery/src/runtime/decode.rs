//! Decoding request bodies straight into typed objects, with what Kubernetes' strict decoder
//! reports on the way: unknown fields, duplicate fields and the top-level `apiVersion` and
//! `kind`.
//!
//! [`Track`] wraps any `serde` deserializer (of JSON bytes, or of a `serde_json::Value` for
//! YAML bodies and patched objects) and watches the typed decode pass through it, so the body
//! is parsed once:
//! - an object key the struct does not have is one whose value the struct asks to skip
//!   (`deserialize_ignored_any` in a struct's value position): its path is recorded;
//! - a key seen twice in one object is recorded as a duplicate; the derived decoder of a struct
//!   refuses a repeated known field, so [`decode_json`] then decodes again through a tree, which
//!   keeps the last value, as Go's decoder does;
//! - at the top level, `apiVersion` and `kind` (not fields of the generated structs) are
//!   captured;
//! - the path of the first failure is kept, so errors name the field (`spec.replicas`);
//! - `-0` (which the JSON parser reads as a float) reads as the integer 0, as Go reads it.
//!
//! Paths are written as Kubernetes' strict decoder prints them: `spec.foo`,
//! `spec.items[0].bar`, `metadata.labels.app` (map keys join like fields). At most
//! [`MAX_REPORTED`] of each are kept, each once.

use std::collections::HashSet;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::Value;

/// The most unknown or duplicate fields reported per decode, as Kubernetes' decoder keeps.
pub const MAX_REPORTED: usize = 100;

/// What a decode saw besides the object.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The path of the value being decoded.
    path: String,
    /// The key just read, before it joins the path.
    key: String,
    /// The key sets of the objects being decoded, one per nesting level (reused).
    seen: Vec<KeySet>,
    /// How many objects are open.
    depth: usize,
    /// Unknown fields and keys repeated within one object, in document order (as Kubernetes'
    /// strict decoder reports them).
    pub problems: Vec<FieldProblem>,
    /// The top-level `apiVersion`, if present.
    pub api_version: Option<String>,
    /// The top-level `kind`, if present.
    pub kind: Option<String>,
    /// The path where decoding failed first, if it did.
    pub error_path: Option<String>,
}

impl Tracker {
    /// A tracker for one decode.
    pub fn new() -> Self {
        Self::default()
    }

    fn open_object(&mut self) -> usize {
        let level = self.depth;
        self.depth += 1;
        if self.seen.len() <= level {
            self.seen.push(KeySet::default());
        }
        self.seen[level].clear();
        level
    }

    fn close_object(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Moves the path into the key just read; returns the length to truncate back to.
    fn enter_key(&mut self) -> usize {
        let mark = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(&self.key);
        mark
    }

    /// Records a problem at the current path (once, and at most [`MAX_REPORTED`] problems).
    fn report(&mut self, problem: fn(String) -> FieldProblem) {
        let new = problem(self.path.clone());
        if self.problems.len() < MAX_REPORTED && !self.problems.contains(&new) {
            self.problems.push(new);
        }
    }

    /// The paths of the unknown fields, in document order.
    pub fn unknown_fields(&self) -> Vec<&str> {
        self.problems
            .iter()
            .filter_map(|p| match p {
                FieldProblem::Unknown(path) => Some(path.as_str()),
                FieldProblem::Duplicate(_) => None,
            })
            .collect()
    }

    /// The paths of the keys repeated within one object, in document order.
    pub fn duplicate_fields(&self) -> Vec<&str> {
        self.problems
            .iter()
            .filter_map(|p| match p {
                FieldProblem::Duplicate(path) => Some(path.as_str()),
                FieldProblem::Unknown(_) => None,
            })
            .collect()
    }

    fn enter_index(&mut self, index: usize) -> usize {
        use fmt::Write as _;
        let mark = self.path.len();
        let _ = write!(self.path, "[{index}]");
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    fn fail_here(&mut self) {
        if self.error_path.is_none() {
            self.error_path = Some(self.path.clone());
        }
    }
}

/// A field a strict decode refuses (and a warning decode reports): its path, `.`-joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldProblem {
    /// A field the type does not have.
    Unknown(String),
    /// A key given more than once in one object.
    Duplicate(String),
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(path) => write!(f, "unknown field {path:?}"),
            Self::Duplicate(path) => write!(f, "duplicate field {path:?}"),
        }
    }
}

/// The keys of one object: a short list, or a set once the object is large.
#[derive(Debug, Default)]
struct KeySet {
    small: Vec<u64>,
    large: Option<HashSet<u64>>,
}

impl KeySet {
    const SMALL: usize = 32;

    fn clear(&mut self) {
        self.small.clear();
        self.large = None;
    }

    /// Inserts a key's hash; false if it was present. A hash collision can only report a
    /// duplicate that is not one, and [`decode_json`] then checks the document exactly.
    fn insert(&mut self, key: &str) -> bool {
        let h = fnv1a(key.as_bytes());
        if let Some(set) = &mut self.large {
            return set.insert(h);
        }
        if self.small.contains(&h) {
            return false;
        }
        self.small.push(h);
        if self.small.len() > Self::SMALL {
            self.large = Some(self.small.drain(..).collect());
        }
        true
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where a deserializer sits, which decides what skipping its value means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The document itself.
    Root,
    /// The value of a struct field.
    FieldValue,
    /// Anything else.
    Other,
}

/// A deserializer watched by a [`Tracker`].
pub struct Track<'t, D> {
    de: D,
    tracker: &'t mut Tracker,
    role: Role,
}

impl<'t, D> Track<'t, D> {
    /// Wraps the deserializer of a whole document.
    pub fn new(de: D, tracker: &'t mut Tracker) -> Self {
        Self {
            de,
            tracker,
            role: Role::Root,
        }
    }
}

/// Whether an object's keys are struct fields (`a.b`) or map keys (`a[k]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Struct,
    Map,
    Any,
}

struct TrackVisitor<'t, V> {
    visitor: V,
    tracker: &'t mut Tracker,
    container: Container,
    root: bool,
}

macro_rules! forward_deserialize {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.de.$method(TrackVisitor { visitor, tracker: self.tracker, container: Container::Any, root: self.role == Role::Root })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Track<'_, D> {
    type Error = D::Error;

    forward_deserialize!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_identifier,
    );

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let root = self.role == Role::Root;
        self.de.deserialize_map(TrackVisitor {
            visitor,
            tracker: self.tracker,
            container: Container::Map,
            root,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        let root = self.role == Role::Root;
        self.de.deserialize_struct(
            name,
            fields,
            TrackVisitor {
                visitor,
                tracker: self.tracker,
                container: Container::Struct,
                root,
            },
        )
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if self.role == Role::FieldValue {
            self.tracker.report(FieldProblem::Unknown);
        }
        self.de.deserialize_ignored_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_unit_struct(
            name,
            TrackVisitor {
                visitor,
                tracker: self.tracker,
                container: Container::Any,
                root: false,
            },
        )
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_newtype_struct(
            name,
            TrackVisitor {
                visitor,
                tracker: self.tracker,
                container: Container::Any,
                root: false,
            },
        )
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_tuple(
            len,
            TrackVisitor {
                visitor,
                tracker: self.tracker,
                container: Container::Any,
                root: false,
            },
        )
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.de.deserialize_tuple_struct(
            name,
            len,
            TrackVisitor {
                visitor,
                tracker: self.tracker,
                container: Container::Any,
                root: false,
            },
        )
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // Enums are plain strings in the API types; their contents are not walked.
        self.de.deserialize_enum(name, variants, visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for TrackVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.visitor.visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.visitor.visit_i64(v)
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        self.visitor.visit_i128(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.visitor.visit_u64(v)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        self.visitor.visit_u128(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // The JSON parser reads `-0` as a float; Go reads it as the integer 0.
        if v == 0.0 && v.is_sign_negative() {
            return self.visitor.visit_i64(0);
        }
        self.visitor.visit_f64(v)
    }
    fn visit_char<E: de::Error>(self, v: char) -> Result<Self::Value, E> {
        self.visitor.visit_char(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.visitor.visit_str(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.visitor.visit_borrowed_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.visitor.visit_string(v)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        self.visitor.visit_bytes(v)
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        self.visitor.visit_borrowed_bytes(v)
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
        self.visitor.visit_byte_buf(v)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let role = if self.root { Role::Root } else { Role::Other };
        self.visitor.visit_some(Track {
            de: d,
            tracker: self.tracker,
            role,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_newtype_struct(Track {
            de: d,
            tracker: self.tracker,
            role: Role::Other,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_seq(TrackSeq {
            seq,
            tracker: self.tracker,
            index: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let level = self.tracker.open_object();
        let result = self.visitor.visit_map(TrackMap {
            map,
            tracker: &mut *self.tracker,
            struct_fields: self.container != Container::Map,
            root: self.root,
            level,
            mark: None,
            capture: None,
        });
        self.tracker.close_object();
        result
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_enum(data)
    }
}

struct TrackSeq<'t, A> {
    seq: A,
    tracker: &'t mut Tracker,
    index: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for TrackSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        let mark = self.tracker.enter_index(self.index);
        self.index += 1;
        let result = self.seq.next_element_seed(TrackSeed {
            seed,
            tracker: &mut *self.tracker,
            role: Role::Other,
        });
        if result.is_err() {
            self.tracker.fail_here();
        }
        self.tracker.leave(mark);
        result
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// Which top-level member a value is, when it is captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    ApiVersion,
    Kind,
}

struct TrackMap<'t, A> {
    map: A,
    tracker: &'t mut Tracker,
    struct_fields: bool,
    root: bool,
    level: usize,
    /// The path length to return to after the current value.
    mark: Option<usize>,
    capture: Option<Capture>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for TrackMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.tracker.key.clear();
        let key = self.map.next_key_seed(KeySeed {
            seed,
            key: &mut self.tracker.key,
        });
        let key = match key {
            Ok(Some(k)) => k,
            other => return other,
        };
        let struct_fields = self.struct_fields;
        let fresh = self.tracker.seen[self.level].insert(&self.tracker.key);
        self.capture = None;
        if self.root && struct_fields {
            self.capture = match self.tracker.key.as_str() {
                "apiVersion" => Some(Capture::ApiVersion),
                "kind" => Some(Capture::Kind),
                _ => None,
            };
        }
        let mark = self.tracker.enter_key();
        if !fresh {
            self.tracker.report(FieldProblem::Duplicate);
        }
        self.mark = Some(mark);
        Ok(Some(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let result = match self.capture.take() {
            Some(which) => {
                // `apiVersion` and `kind` are read here and handed on as plain strings.
                let text = self.map.next_value::<Option<String>>()?;
                let slot = match which {
                    Capture::ApiVersion => &mut self.tracker.api_version,
                    Capture::Kind => &mut self.tracker.kind,
                };
                *slot = text.clone();
                match text {
                    Some(t) => seed.deserialize(de::value::StringDeserializer::new(t)),
                    None => seed.deserialize(de::value::UnitDeserializer::new()),
                }
            }
            None => {
                let role = if self.struct_fields {
                    Role::FieldValue
                } else {
                    Role::Other
                };
                self.map.next_value_seed(TrackSeed {
                    seed,
                    tracker: &mut *self.tracker,
                    role,
                })
            }
        };
        if result.is_err() {
            self.tracker.fail_here();
        }
        if let Some(mark) = self.mark.take() {
            self.tracker.leave(mark);
        }
        result
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

struct TrackSeed<'t, S> {
    seed: S,
    tracker: &'t mut Tracker,
    role: Role,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for TrackSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.seed.deserialize(Track {
            de: d,
            tracker: self.tracker,
            role: self.role,
        })
    }
}

/// Reads a key and copies it into `key` on the way to the real key visitor.
struct KeySeed<'k, S> {
    seed: S,
    key: &'k mut String,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.seed.deserialize(KeyDe {
            de: d,
            key: self.key,
        })
    }
}

struct KeyDe<'k, D> {
    de: D,
    key: &'k mut String,
}

macro_rules! forward_key {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.de.$method(KeyVisitor { visitor, key: self.key })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyDe<'_, D> {
    type Error = D::Error;

    forward_key!(
        deserialize_any,
        deserialize_str,
        deserialize_string,
        deserialize_identifier,
    );

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // Keys are always strings: read one, so that skipped keys are seen too.
        self.de.deserialize_str(KeyVisitor {
            visitor,
            key: self.key,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum
    }
}

struct KeyVisitor<'k, V> {
    visitor: V,
    key: &'k mut String,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.key.push_str(v);
        self.visitor.visit_str(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.key.push_str(v);
        self.visitor.visit_borrowed_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.key.push_str(&v);
        self.visitor.visit_string(v)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        self.key.push_str(&String::from_utf8_lossy(v));
        self.visitor.visit_bytes(v)
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        self.key.push_str(&String::from_utf8_lossy(v));
        self.visitor.visit_borrowed_bytes(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.visitor.visit_u64(v)
    }
}

/// Why a document could not be decoded into its typed form.
#[derive(Debug)]
pub struct DecodeError {
    /// The path of the field where it failed (empty at the top).
    pub path: String,
    /// The decoder's message without its position.
    pub message: String,
    /// Whether the document is not syntactically valid JSON (as opposed to a value that does
    /// not fit the type).
    pub syntax: bool,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for DecodeError {}

/// serde_json's message without the ` at line L column C` it appends.
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if e.line() == 0 {
        return text;
    }
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

fn decode_error(e: &serde_json::Error, tracker: &Tracker) -> DecodeError {
    DecodeError {
        path: tracker.error_path.clone().unwrap_or_default(),
        message: message_of(e),
        syntax: e.is_syntax() || e.is_eof(),
    }
}

/// The typed object of a JSON document and what the decode saw.
#[derive(Debug)]
pub struct Decoded<T> {
    /// The object (defaults of absent fields applied by its `Default`).
    pub object: T,
    /// What the decode saw besides it.
    pub tracker: Tracker,
}

/// Decodes JSON bytes into `T` in one pass (see the module documentation). Objects with a
/// repeated field are decoded again through a tree, so the last value wins, as in Go.
pub fn decode_json<T: de::DeserializeOwned>(bytes: &[u8]) -> Result<Decoded<T>, DecodeError> {
    let mut tracker = Tracker::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let first = T::deserialize(Track::new(&mut de, &mut tracker)).and_then(|o| {
        de.end()?;
        Ok(o)
    });
    match first {
        Ok(object) => Ok(Decoded { object, tracker }),
        Err(e) if tracker.duplicate_fields().is_empty() => Err(decode_error(&e, &tracker)),
        Err(_) => {
            // A struct's derived decoder refuses a repeated field; a tree keeps the last one.
            let value: Value = serde_json::from_slice(bytes).map_err(|e| DecodeError {
                path: String::new(),
                message: message_of(&e),
                syntax: true,
            })?;
            let mut decoded = decode_value::<T>(&value)?;
            let mut problems = duplicate_fields(bytes)
                .into_iter()
                .map(FieldProblem::Duplicate)
                .collect::<Vec<_>>();
            problems.append(&mut decoded.tracker.problems);
            problems.truncate(MAX_REPORTED);
            decoded.tracker.problems = problems;
            Ok(decoded)
        }
    }
}

/// Decodes a JSON tree (a YAML body, a patched object) into `T`. A tree has no duplicates.
pub fn decode_value<T: de::DeserializeOwned>(value: &Value) -> Result<Decoded<T>, DecodeError> {
    let mut tracker = Tracker::new();
    match T::deserialize(Track::new(value, &mut tracker)) {
        Ok(object) => Ok(Decoded { object, tracker }),
        Err(e) => Err(decode_error(&e, &tracker)),
    }
}

/// The paths of every key repeated within one object of a JSON document.
pub fn duplicate_fields(bytes: &[u8]) -> Vec<String> {
    let mut tracker = Tracker::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = AnyObject::deserialize_seed(Track::new(&mut de, &mut tracker));
    tracker
        .problems
        .into_iter()
        .filter_map(|p| match p {
            FieldProblem::Duplicate(path) => Some(path),
            FieldProblem::Unknown(_) => None,
        })
        .collect()
}

/// Walks any JSON value, treating every object as a struct whose every field is known.
struct AnyObject;

impl AnyObject {
    fn deserialize_seed<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

struct AnyVisitor;

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(AnySeed)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(AnySeed)?;
        }
        Ok(())
    }
}

struct AnySeed;

impl<'de> DeserializeSeed<'de> for AnySeed {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Root {
        metadata: Meta,
        spec: Spec,
        items: Vec<Spec>,
        data: BTreeMap<String, String>,
        nested: BTreeMap<String, Spec>,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Meta {
        name: Option<String>,
        labels: BTreeMap<String, String>,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Spec {
        replicas: i32,
        color: Option<String>,
    }

    #[test]
    fn known_document_decodes_with_nothing_to_report() {
        let d = decode_json::<Root>(
            br#"{"apiVersion":"v1","kind":"Root","metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2}}"#,
        )
        .unwrap();
        assert_eq!(d.object.spec.replicas, 2);
        assert_eq!(d.object.metadata.labels["x"], "1");
        assert!(d.tracker.unknown_fields().is_empty());
        assert!(d.tracker.duplicate_fields().is_empty());
        assert_eq!(d.tracker.api_version.as_deref(), Some("v1"));
        assert_eq!(d.tracker.kind.as_deref(), Some("Root"));
    }

    #[test]
    fn unknown_fields_are_named_by_path() {
        let d = decode_json::<Root>(
            br#"{"foo":1,"spec":{"bar":{"x":1},"replicas":1},"items":[{},{"baz":true}],"nested":{"k":{"qux":1}},"data":{"free":"form"}}"#,
        )
        .unwrap();
        assert_eq!(
            d.tracker.unknown_fields(),
            ["foo", "spec.bar", "items[1].baz", "nested.k.qux"]
        );
        // The same document as a tree reports the same paths.
        let v: Value = serde_json::from_slice(
            br#"{"foo":1,"spec":{"bar":{"x":1},"replicas":1},"items":[{},{"baz":true}],"nested":{"k":{"qux":1}}}"#,
        )
        .unwrap();
        let d = decode_value::<Root>(&v).unwrap();
        assert_eq!(
            d.tracker.unknown_fields(),
            ["foo", "spec.bar", "items[1].baz", "nested.k.qux"]
        );
    }

    #[test]
    fn duplicates_keep_the_last_value_and_are_reported() {
        let d = decode_json::<Root>(
            br#"{"spec":{"replicas":1,"replicas":3},"metadata":{"labels":{"a":"1","a":"2"}},"spec":{"replicas":4}}"#,
        )
        .unwrap();
        // The second `spec` replaces the first as a whole, as Go's decoder does.
        assert_eq!(d.object.spec.replicas, 4);
        assert_eq!(d.object.metadata.labels["a"], "2");
        assert_eq!(
            d.tracker.duplicate_fields(),
            ["spec.replicas", "metadata.labels.a", "spec"]
        );
        // Repeated map keys alone do not need the second pass.
        let d = decode_json::<Root>(br#"{"data":{"a":"1","a":"2"}}"#).unwrap();
        assert_eq!(d.object.data["a"], "2");
        assert_eq!(d.tracker.duplicate_fields(), ["data.a"]);
    }

    #[test]
    fn errors_name_the_failing_field() {
        let e = decode_json::<Root>(br#"{"spec":{"replicas":"x"}}"#).unwrap_err();
        assert_eq!(e.path, "spec.replicas");
        assert_eq!(e.message, "invalid type: string \"x\", expected i32");
        assert!(!e.syntax);
        let e = decode_json::<Root>(br#"{"items":[{},{"replicas":true}]}"#).unwrap_err();
        assert_eq!(e.path, "items[1].replicas");
        let e = decode_json::<Root>(br#"{"spec":"#).unwrap_err();
        assert!(e.syntax);
    }

    #[test]
    fn minus_zero_is_the_integer_zero() {
        let d = decode_json::<Root>(br#"{"spec":{"replicas":-0}}"#).unwrap();
        assert_eq!(d.object.spec.replicas, 0);
        assert!(decode_json::<Root>(br#"{"spec":{"replicas":1.5}}"#).is_err());
    }

    #[test]
    fn many_keys_switch_to_a_set() {
        let mut doc = String::from("{\"data\":{");
        for i in 0..100 {
            doc.push_str(&format!("\"k{i}\":\"v\","));
        }
        doc.push_str("\"k7\":\"again\"}}");
        let d = decode_json::<Root>(doc.as_bytes()).unwrap();
        assert_eq!(d.object.data.len(), 100);
        assert_eq!(d.tracker.duplicate_fields(), ["data.k7"]);
    }
}
