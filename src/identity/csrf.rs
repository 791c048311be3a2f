//! Double-submit CSRF tokens of the server's own forms: a random value in
//! an HttpOnly cookie scoped to the form's path, and the same value in a
//! hidden field; a POST whose two differ did not come from our page.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq;

/// A cookie's value as sent.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(cookie, _)| *cookie == name)
        .map(|(_, value)| value.to_string())
}

/// The cookie's value, if it is one we could have set.
pub fn from_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    cookie(headers, name).filter(|v| {
        v.len() == 43
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    })
}

pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("operating system random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The form's field equals the cookie, compared in constant time.
pub fn matches(cookie: Option<&str>, sent: Option<&str>) -> bool {
    match (cookie, sent) {
        (Some(cookie), Some(sent)) => bool::from(cookie.as_bytes().ct_eq(sent.as_bytes())),
        _ => false,
    }
}

/// Sets the cookie (`SameSite=Lax`, so the top-level navigation back from
/// an identity provider still carries it; `Secure` when `https`, the server
/// being reached over https: `http::origin::is_https` of the base URL).
pub fn set(mut response: Response, name: &str, path: &str, value: &str, https: bool) -> Response {
    let secure = if https { "; Secure" } else { "" };
    let cookie = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Lax{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Removes a cookie set by `set`.
pub fn clear(mut response: Response, name: &str, path: &str) -> Response {
    let cookie = format!("{name}=; Path={path}; Max-Age=0; HttpOnly; SameSite=Lax");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}
