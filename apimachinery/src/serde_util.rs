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
