//! Submitted text and optional attributes as the rules keep them.

use crate::error::Problems;

/// Submitted text as kept: trimmed, and blank text is no text.
pub fn trimmed(value: Option<String>) -> Option<String> {
    value
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Deserialize helper for PATCH fields where "absent" and "null" differ:
/// `#[serde(default, deserialize_with = "present")] field: Option<Option<T>>`.
pub fn present<'de, D, T>(de: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(de).map(Some)
}

/// Trims text; blank becomes `None`; longer than `max` is a problem.
pub fn bounded_text(
    field: &str,
    value: Option<String>,
    max: usize,
    problems: &mut Problems,
) -> Option<Option<String>> {
    let value = trimmed(value);
    if value.as_ref().is_some_and(|v| v.chars().count() > max) {
        problems.add(field, format!("must be at most {max} characters"));
        None
    } else {
        Some(value)
    }
}
