//! Server-rendered pages that post their forms onward: each answer carries
//! its own Content-Security-Policy, the strict page policy with
//! `form-action` widened to where its forms lead (browsers apply it to the
//! redirect that follows a form too), which `page_headers` then keeps.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// An HTML response with its own Content-Security-Policy: the strict page
/// policy, with `form-action` widened to the client's redirect target
/// (browsers apply it to the redirect that follows the form).
pub fn html(status: StatusCode, body: String, redirect_to: Option<&str>) -> Response {
    html_to(status, body, redirect_to.as_slice())
}

/// `html` for a page whose forms may lead to several places (the client
/// and the identity provider).
pub fn html_to(status: StatusCode, body: String, targets: &[&str]) -> Response {
    let mut form_action = "form-action 'self'".to_string();
    for origin in targets.iter().filter_map(|t| origin_of(t)) {
        form_action.push(' ');
        form_action.push_str(&origin);
    }
    let csp = super::PAGE_CSP.replace("form-action 'self'", &form_action);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// The CSP source of a redirect URI: its origin, or its scheme for a
/// custom-scheme app URI (`pillbox:`).
fn origin_of(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once(':')?;
    if !scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return None;
    }
    let source = match rest.strip_prefix("//") {
        Some(authority) if scheme == "http" || scheme == "https" => {
            let host = authority.split(['/', '?', '#']).next()?;
            format!("{scheme}://{host}")
        }
        _ => format!("{scheme}:"),
    };
    source
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'\'')
        .then_some(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            origin_of("pillbox://oauth/callback").as_deref(),
            Some("pillbox:")
        );
        assert_eq!(
            origin_of("https://home.example:8443/app/cb?x=1").as_deref(),
            Some("https://home.example:8443")
        );
        assert_eq!(origin_of("https://a; script-src *"), None);
    }
}
