//! Form bodies and query strings of the OAuth endpoints and the server's
//! own pages, read strictly.

use axum::http::{HeaderMap, header};

/// Parses a form body: RFC 6749 3.2 wants the form media type and each
/// parameter at most once. The error is a sentence for the client.
pub fn parse_form<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T, String> {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form_type {
        return Err("the body must be sent as application/x-www-form-urlencoded".into());
    }
    parse_pairs(body)
}

/// Parses `a=1&b=2` (a form body or a query string) into `T`; a parameter
/// given twice is refused.
pub fn parse_pairs<T: serde::de::DeserializeOwned>(text: &[u8]) -> Result<T, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(text).map_err(|_| "the parameters are not a valid form")?;
    let mut map = serde_json::Map::new();
    for (name, value) in pairs {
        if map
            .insert(name.clone(), serde_json::Value::String(value))
            .is_some()
        {
            return Err(format!("{name} is given more than once"));
        }
    }
    serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|_| "a parameter has the wrong kind of value".to_string())
}
