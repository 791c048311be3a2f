//! The HTTP toolkit every area's routes are written with: extractors,
//! responses, JSON, the contract builder, and the envelope every request
//! goes through (id, cache headers, log line). It names no area; the
//! Router is assembled above it, in `crate::app`.

pub mod extract;
mod json;
pub mod openapi;
pub mod origin;
pub mod page;
pub mod query;
pub mod rate_limit;
pub mod replace;
pub mod replay;
pub mod respond;
pub mod server;
pub mod stream;

use crate::domain::request_id;

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::Response;

pub const API_PREFIX: &str = "/api/v1";
/// Largest JSON body accepted.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// What every request goes through, around `inner` (which the composition
/// root makes the rate limit): it gets an id, is answered, gets the cache
/// and page headers, and is logged. One layer rather than one each: a layer
/// costs every request a clone of the service behind it and a boxed future.
pub async fn around<F, Fut>(request: Request, inner: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let id = request_id::new();
    let answered = async {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let started = std::time::Instant::now();
        let mut response = inner(request).await;
        cache_headers(&path, response.headers_mut());
        log_request(&id, &method, &path, &response, started);
        response
    };
    let mut response = request_id::scope(id.clone(), answered).await;
    request_id::stamp(&mut response, &id);
    response
}

/// Health data must never sit in a shared or browser cache, and pages get
/// the browser protections that pages (unlike JSON) need.
fn cache_headers(path: &str, headers: &mut axum::http::HeaderMap) {
    let public = matches!(path, "/api/v1/capabilities" | "/api/v1/openapi.json")
        || !path.starts_with(API_PREFIX);
    // A public file may say how long it keeps (the web app's versioned assets).
    if !public || !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(if public { "no-cache" } else { "no-store" }),
        );
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"));
    if html {
        page_headers(headers);
    }
}

/// Pages load only this server's own files: no inline script or style, no
/// framing (clickjacking), no plugins, and no address leaks to other sites.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; font-src 'self'; connect-src 'self'; manifest-src 'self'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A page that sets its own policy keeps it (the sign-in page must allow
/// its form's redirect to the client's registered redirect URI).
fn page_headers(headers: &mut axum::http::HeaderMap) {
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_CSP),
        );
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

/// One line per request: method, route path, status, time. Never the query
/// string, headers or body (they can hold tokens or clinical values).
fn log_request(
    request_id: &str,
    method: &axum::http::Method,
    path: &str,
    response: &Response,
    started: std::time::Instant,
) {
    tracing::info!(
        %request_id,
        %method,
        %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
}
