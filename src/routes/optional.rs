//! How a request body's optional fields deserialize: absent, `null` and a value told apart
//! (`#[serde(deserialize_with = …)]`). A leaf: it imports nothing of the routes.

use serde::{Deserialize, Deserializer};

/// For PATCH fields where `null` (clear) differs from absent (keep): absent -> `None`,
/// `null` -> `Some(None)`. Use with `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// For optional fields that may be absent but not `null`: with `#[serde(default, deserialize_with
/// = "present")]`, `null` is a type error naming the field instead of silently meaning "absent".
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}
