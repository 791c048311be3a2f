//! Success bodies: `{"data": ...}`, collections add `meta`; single resources
//! carry a strong ETag.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

use crate::http::extract::Page;

/// The strong ETag of a versioned record: changes with every write to it.
pub fn etag(portable_id: &str, lock_version: i64) -> String {
    format!("\"{portable_id}.{lock_version}\"")
}

/// A resource that has a version, so its responses carry an ETag.
pub trait Versioned {
    fn etag(&self) -> String;
}

pub fn ok<T: Serialize>(data: T) -> Response {
    Json(json!({ "data": data })).into_response()
}

pub fn created<T: Serialize>(data: T) -> Response {
    (StatusCode::CREATED, Json(json!({ "data": data }))).into_response()
}

pub fn ok_tagged<T: Serialize + Versioned>(data: T) -> Response {
    with_etag(ok(&data), &data.etag())
}

pub fn created_tagged<T: Serialize + Versioned>(data: T) -> Response {
    with_etag(created(&data), &data.etag())
}

pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub fn collection<T: Serialize>(items: Vec<T>, page: Page, total_count: i64) -> Response {
    Json(json!({ "data": items, "meta": page.meta(total_count) })).into_response()
}

fn with_etag(mut response: Response, etag: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

impl<T: Versioned> Versioned for &T {
    fn etag(&self) -> String {
        (*self).etag()
    }
}
