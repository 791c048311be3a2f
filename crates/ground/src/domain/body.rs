//! A body already parsed as JSON, turned into its typed form with the 422
//! that names the field: shared by REST bodies and the operations of a sync
//! batch, which arrive as JSON values.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, FieldErrors, Result};

/// Turns an already parsed JSON body (kept as a `Value` so an
/// Idempotency-Key fingerprint can be taken of it) into its typed form, with
/// the same 422s as a body parsed directly. No body reads as `{}`.
pub fn typed<T: DeserializeOwned>(body: Option<&Value>) -> Result<T> {
    let mut value = body
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(json_error)
}

/// In JSON (and JSON Schema) `2.0` is the integer 2; serde would refuse it
/// for an integer field, so whole-valued numbers become integers first.
pub fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

pub fn json_error(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    let last = path.rsplit('.').next().unwrap_or_default().to_string();
    let at_field = !matches!(last.as_str(), "" | "." | "?");
    let (field, message) = if !inner.is_data() {
        if at_field {
            (last, "has an invalid value".to_string())
        } else {
            ("body".to_string(), "must be a JSON object".to_string())
        }
    } else {
        let text = inner.to_string();
        // serde_json appends the position; the field path says more to a user.
        let text = text
            .rfind(" at line ")
            .map_or(text.as_str(), |i| &text[..i]);
        let backticked = |s: &str| s.split('`').nth(1).map(str::to_string);
        if let Some(rest) = text.strip_prefix("unknown field ") {
            (
                backticked(rest).unwrap_or_default(),
                "is not a recognised attribute".to_string(),
            )
        } else if let Some(rest) = text.strip_prefix("missing field ") {
            (backticked(rest).unwrap_or_default(), "is required".into())
        } else {
            (last, describe_data_error(text))
        }
    };
    let field = if field.is_empty() {
        "body".to_string()
    } else {
        field
    };
    let location = if path.is_empty() || path == "." {
        String::new()
    } else {
        format!(" (in {path})")
    };
    let mut errors = FieldErrors::new();
    errors.insert(field.clone(), vec![message.clone()]);
    ApiError::Validation {
        message: format!("{field} {message}{location}"),
        errors,
    }
}

/// Rewords serde's messages so they state the rule without repeating the
/// submitted value (which may be a clinical value that must not be echoed).
/// A message raised by a library's own parser (jiff for dates, ...) often
/// quotes the value, so only messages in our own phrasing ("must ...",
/// "is ...", as every `Deserialize` of ours words them) pass through.
fn describe_data_error(text: &str) -> String {
    if let Some(rest) = text.strip_prefix("unknown variant ") {
        let expected = rest.split_once(", expected ").map_or("", |(_, e)| e);
        if expected.is_empty() {
            return "is not one of the supported values".into();
        }
        return format!("must be {expected}");
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let expected = rest.split_once(", expected ").map(|(_, e)| e);
            return format!("must be {}", plain_expected(expected));
        }
    }
    if text.starts_with("must ") || text.starts_with("is ") {
        return text.to_string();
    }
    let lower = text.to_ascii_lowercase();
    if ["date", "year", "month", "day"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return "must be a calendar date that exists, written YYYY-MM-DD".into();
    }
    "has an invalid value".into()
}

/// serde's "expected ..." in words a client understands (Rust type names
/// mean nothing to it).
fn plain_expected(expected: Option<&str>) -> String {
    let Some(expected) = expected else {
        return "a valid value".into();
    };
    match expected {
        e if e.starts_with("struct ") || e == "a map" => "a JSON object".into(),
        "a sequence" => "a JSON array".into(),
        "a boolean" => "true or false".into(),
        "a string" => "a string".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        e => e.to_string(),
    }
}
