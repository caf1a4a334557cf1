//! Serde helpers shared by the meta types and the generated types.

use serde::{Deserialize, Deserializer};

/// Deserializes `null` as the type's default, as Go's JSON decoder leaves a zero value.
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Deserializes `null` (or an absent value) as `default()`: the `#[default]` marker of a
/// field, which Kubernetes' defaulting applies to a missing or null field alike.
pub fn null_or<'de, D, T>(d: D, default: fn() -> T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_else(default))
}

/// Deserializes `null`, or the zero value of the type inside the `Option`, as `None`: a
/// by-value field whose zero JSON leaves out (Go's `omitempty`), so that decoding and encoding
/// agree.
pub fn zero_as_none<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + PartialEq,
{
    match Option::<T>::deserialize(d)? {
        Some(v) if v != T::default() => Ok(Some(v)),
        _ => Ok(None),
    }
}

/// Deserializes `null`, or the zero value of the type inside the `Option`, as `default()`: a
/// by-value field's default (Go defaults a zero value it cannot tell from an unset one).
pub fn null_or_zero<'de, D, T>(d: D, default: fn() -> Option<T>) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + PartialEq,
{
    match Option::<T>::deserialize(d)? {
        Some(v) if v != T::default() => Ok(Some(v)),
        _ => Ok(default()),
    }
}

/// A `float64` as Go's `encoding/json` writes it: a whole number without a fraction (`1`, not
/// `1.0`), so that a `minimum: 0` read from JSON is written back as `0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoFloat(pub f64);

impl serde::Serialize for GoFloat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        // Whole numbers within i64's range print as integers, as Go prints them (Go switches
        // to exponent form only from 1e21).
        if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 {
            serializer.serialize_i64(v as i64)
        } else {
            serializer.serialize_f64(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GoFloat;

    #[test]
    fn go_float_writes_whole_numbers_without_a_fraction() {
        assert_eq!(serde_json::to_string(&GoFloat(0.0)).unwrap(), "0");
        assert_eq!(serde_json::to_string(&GoFloat(-3.0)).unwrap(), "-3");
        assert_eq!(serde_json::to_string(&GoFloat(1.5)).unwrap(), "1.5");
        assert_eq!(serde_json::to_string(&GoFloat(0.1)).unwrap(), "0.1");
    }
}
