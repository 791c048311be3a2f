//! Pages served outside the API: the web app (a client of the public API,
//! plain ES modules from `assets/`, embedded in the binary) and the
//! first-run set-up page. Pages carry a strict Content-Security-Policy
//! (added for every text/html response in `http::cache_headers`), so styles
//! and scripts live in their own files, never inline.

pub mod assets;
pub mod paths;
pub mod setup;
pub mod setup_link;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;
use assets::{Assets, VERSIONED};
pub use assets::{build_id, versioned_prefix};

pub use paths::APP_PATH;

const SHELL: &str = "index.html";
const SERVICE_WORKER: &str = "sw.js";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The app's page policy: the strict one, plus `blob:` images (an avatar
/// is fetched with the bearer token and shown from a blob URL).
const APP_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' blob: data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; \
    worker-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { shell() }))
        .route(APP_PATH, get(|| async { shell() }))
        .route(&format!("{APP_PATH}/"), get(|| async { shell() }))
        .route(&format!("{APP_PATH}/{{*view}}"), get(|| async { shell() }))
        .route(
            &format!("{VERSIONED}/{{build}}/{{*file}}"),
            get(|Path((build, file)): Path<(String, String)>| async move { versioned(&build, &file) }),
        )
        .route(&format!("/{SERVICE_WORKER}"), get(|| async { service_worker() }))
        .route(
            "/{file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
        .merge(setup::router())
}

/// The shell with this build's asset prefix filled in; never cached, so a
/// new build is picked up at the next load.
fn shell() -> Response {
    let Some(file) = Assets::get(SHELL) else {
        return not_found();
    };
    let text = String::from_utf8_lossy(&file.data).replace("{{v}}", &versioned_prefix());
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], text).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(APP_CSP),
    );
    response
}

/// The service worker sits at the root (its scope is the whole origin) and
/// names the build it caches, so a new build is a new worker.
fn service_worker() -> Response {
    let Some(file) = Assets::get(SERVICE_WORKER) else {
        return not_found();
    };
    let text = String::from_utf8_lossy(&file.data).replace("{{v}}", &versioned_prefix());
    let mut response = (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        text,
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A file of this build is immutable; a file asked for under an older
/// build's prefix (a page loaded before an upgrade) is served as it is now
/// but not cached, so the old prefix never pins new bytes.
fn versioned(build: &str, file: &str) -> Response {
    if file == SHELL || file == SERVICE_WORKER || file.split('/').any(|part| part == "..") {
        return not_found();
    }
    let mut response = asset(file);
    if build == build_id() && response.status().is_success() {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    }
    response
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("png") => "image/png",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn asset(name: &str) -> Response {
    match Assets::get(name) {
        Some(file) => ([(header::CONTENT_TYPE, content_type(name))], file.data).into_response(),
        None => not_found(),
    }
}

fn not_found() -> Response {
    crate::error::ApiError::NotFound("no such route".into()).into_response()
}
