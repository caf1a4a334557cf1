//! Deterministic random instances of API types, for property tests.
//!
//! The generated code implements [`Sample`] for every struct of `api-defs` (the meta structs
//! of [`crate::meta`] included); this module for the scalars. Property tests
//! draw a seed from `proptest` and build objects with a [`Sampler`]. Values are chosen so that
//! JSON round trips are exact (times whole seconds or microseconds, floats dyadic) and nesting
//! stays shallow.

use std::collections::BTreeMap;

use chrono::DateTime;

use crate::meta::{
    Bytes, Duration, FieldsV1, IntOrString, MicroTime, Quantity, RawExtension, Time,
};

/// A small deterministic random source (SplitMix64) with a nesting depth guard.
#[derive(Clone, Debug)]
pub struct Sampler {
    state: u64,
    depth: u32,
}

/// Nesting deeper than this yields `None` options and empty collections.
const MAX_DEPTH: u32 = 4;

impl Sampler {
    /// A sampler from a seed.
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed,
            depth: 0,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// A short lowercase string, possibly empty.
    pub fn word(&mut self) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-";
        let len = self.below(8);
        (0..len)
            .map(|_| char::from(ALPHABET[self.below(ALPHABET.len() as u64) as usize]))
            .collect()
    }

    /// Runs `f` one nesting level deeper.
    pub fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    /// Whether nesting is too deep for more optional content.
    pub fn too_deep(&self) -> bool {
        self.depth >= MAX_DEPTH
    }
}

/// A type with random instances.
pub trait Sample: Sized {
    /// A random instance.
    fn sample(s: &mut Sampler) -> Self;
}

impl Sample for bool {
    fn sample(s: &mut Sampler) -> Self {
        s.coin()
    }
}

impl Sample for i32 {
    fn sample(s: &mut Sampler) -> Self {
        (s.next_u64() as i32) >> s.below(31)
    }
}

impl Sample for i64 {
    fn sample(s: &mut Sampler) -> Self {
        (s.next_u64() as i64) >> s.below(63)
    }
}

impl Sample for f64 {
    fn sample(s: &mut Sampler) -> Self {
        (s.below(1 << 20) as f64 - (1 << 19) as f64) / 4.0
    }
}

impl Sample for String {
    fn sample(s: &mut Sampler) -> Self {
        s.word()
    }
}

impl<T: Sample> Sample for Option<T> {
    fn sample(s: &mut Sampler) -> Self {
        if s.too_deep() || s.coin() {
            None
        } else {
            Some(s.nested(T::sample))
        }
    }
}

/// A boxed value (a struct that contains itself) samples the value it holds; the nesting
/// guard of its `Option` or `Vec` ends the recursion.
impl<T: Sample> Sample for Box<T> {
    fn sample(s: &mut Sampler) -> Self {
        Box::new(T::sample(s))
    }
}

impl<T: Sample> Sample for Vec<T> {
    fn sample(s: &mut Sampler) -> Self {
        if s.too_deep() {
            return Vec::new();
        }
        let n = s.below(3);
        s.nested(|s| (0..n).map(|_| T::sample(s)).collect())
    }
}

impl<T: Sample> Sample for BTreeMap<String, T> {
    fn sample(s: &mut Sampler) -> Self {
        if s.too_deep() {
            return BTreeMap::new();
        }
        let n = s.below(3);
        s.nested(|s| (0..n).map(|_| (s.word(), T::sample(s))).collect())
    }
}

impl Sample for Bytes {
    fn sample(s: &mut Sampler) -> Self {
        let n = s.below(6);
        Bytes((0..n).map(|_| s.next_u64() as u8).collect())
    }
}

impl Sample for Time {
    fn sample(s: &mut Sampler) -> Self {
        Time::from_timestamp(s.below(4_000_000_000) as i64)
    }
}

impl Sample for MicroTime {
    fn sample(s: &mut Sampler) -> Self {
        let micros = s.below(4_000_000_000_000_000) as i64;
        MicroTime(DateTime::from_timestamp_micros(micros).unwrap_or_default())
    }
}

impl Sample for Quantity {
    fn sample(s: &mut Sampler) -> Self {
        const SUFFIXES: [&str; 5] = ["", "m", "Ki", "Mi", "G"];
        Quantity(format!(
            "{}{}",
            s.below(1000),
            SUFFIXES[s.below(5) as usize]
        ))
    }
}

impl Sample for IntOrString {
    fn sample(s: &mut Sampler) -> Self {
        if s.coin() {
            IntOrString::Int(i32::sample(s))
        } else {
            IntOrString::String(format!("{}%", s.below(100)))
        }
    }
}

impl Sample for RawExtension {
    fn sample(s: &mut Sampler) -> Self {
        RawExtension(serde_json::Value::sample(s))
    }
}

impl Sample for serde_json::Value {
    fn sample(s: &mut Sampler) -> Self {
        let mut map = serde_json::Map::new();
        for _ in 0..s.below(3) {
            let v = if s.coin() {
                serde_json::Value::from(s.word())
            } else {
                serde_json::Value::from(i64::sample(s))
            };
            map.insert(s.word(), v);
        }
        serde_json::Value::Object(map)
    }
}

impl Sample for Duration {
    fn sample(s: &mut Sampler) -> Self {
        Duration(format!("{}s", s.below(10_000)))
    }
}

impl Sample for FieldsV1 {
    fn sample(s: &mut Sampler) -> Self {
        FieldsV1::from_value(&serde_json::Value::sample(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::meta::ObjectMeta;

    #[test]
    fn samples_round_trip_through_json() {
        for seed in 0..200 {
            let mut s = Sampler::new(seed);
            let meta = ObjectMeta::sample(&mut s);
            let json = serde_json::to_value(&meta).unwrap_or_default();
            assert_eq!(serde_json::from_value::<ObjectMeta>(json).ok(), Some(meta));
        }
    }
}
