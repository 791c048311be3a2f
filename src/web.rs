//! The few pages served outside the API: a landing page telling a
//! self-hoster the server is up and where the API lives. Embedded in the binary.
//! Pages carry a strict Content-Security-Policy (added for every text/html
//! response in `http::cache_headers`), so styles and scripts live in their
//! own files, never inline.

use axum::Router;
use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::Embed;

use crate::state::AppState;

#[derive(Embed)]
#[folder = "assets/"]
struct Assets;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { asset("index.html") }))
        .route(
            "/{file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
}

fn asset(name: &str) -> Response {
    match Assets::get(name) {
        Some(file) => {
            let mime = match name.rsplit('.').next() {
                Some("html") => "text/html; charset=utf-8",
                Some("svg") => "image/svg+xml",
                Some("css") => "text/css",
                Some("js") => "text/javascript",
                Some("png") => "image/png",
                _ => "application/octet-stream",
            };
            ([(header::CONTENT_TYPE, mime)], file.data).into_response()
        }
        None => crate::error::ApiError::NotFound("no such route".into()).into_response(),
    }
}
