//! Success bodies: `{"data": ...}`, collections add `meta`; single resources
//! carry a strong ETag.

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rusqlite::Connection;
use serde::Serialize;

use crate::domain::{Page, PageMeta, Versioned};
use crate::error::{ApiError, Result};

/// `{"data": ...}`, serialised straight from the value (no JSON tree in between).
#[derive(Serialize)]
struct Data<T> {
    data: T,
}

#[derive(Serialize)]
struct Collection<T> {
    data: Vec<T>,
    meta: PageMeta,
}

/// Bytes a serialised item usually takes, for sizing a body's buffer up
/// front: growing a list of a hundred items from a few bytes would copy it
/// again and again.
const ITEM_BYTES: usize = 1024;

/// The first buffer of a body of one item. glibc serves a block of up to
/// 1,008 bytes from its small bins; asked for more, it first merges every
/// small block the thread freed since (`malloc_consolidate`), which with
/// its per-thread cache off (as `pillbox serve` runs it) was once per
/// response. A larger body grows the buffer once.
const ONE_ITEM_BYTES: usize = 1000;

/// `value` as a JSON body, in a buffer sized for `items` items.
pub fn json<T: Serialize>(status: StatusCode, value: &T, items: usize) -> Response {
    Rendered::json(status, value, items).into_response()
}

/// A success response written out once: status, JSON body and ETag. A read
/// whose answer depends only on the data (and today's date) keeps it on
/// its reader thread until the next commit (`Rendered::kept`), so the
/// phones and browsers that ask again and again get the same bytes without
/// the queries and the JSON being done again.
#[derive(Clone)]
pub struct Rendered {
    status: StatusCode,
    body: Bytes,
    etag: Option<HeaderValue>,
}

impl Rendered {
    fn json<T: Serialize>(status: StatusCode, value: &T, items: usize) -> Result<Rendered> {
        let capacity = match items {
            0 | 1 => ONE_ITEM_BYTES,
            _ => 128 + items * ITEM_BYTES,
        };
        let mut body = Vec::with_capacity(capacity);
        super::json::to_writer(&mut body, value)
            .map_err(|e| ApiError::internal(format!("cannot write the response body: {e}")))?;
        #[cfg(debug_assertions)]
        {
            // Every body the tests see is also checked against serde_json's.
            let expected = serde_json::to_vec(value).expect("serde_json writes what we wrote");
            assert_eq!(
                String::from_utf8_lossy(&body),
                String::from_utf8_lossy(&expected),
                "the response JSON differs from serde_json's"
            );
        }
        Ok(Rendered {
            status,
            body: Bytes::from(body),
            etag: None,
        })
    }

    /// `{"data": ...}` with the resource's ETag (as `ok_tagged`).
    pub fn ok_tagged<T: Serialize + Versioned>(data: T) -> Result<Rendered> {
        let mut rendered = Rendered::json(StatusCode::OK, &Data { data: &data }, 1)?;
        rendered.etag = HeaderValue::from_str(&data.etag()).ok();
        Ok(rendered)
    }

    /// A page of a collection (as `collection`).
    pub fn collection<T: Serialize>(
        items: Vec<T>,
        page: Page,
        total_count: i64,
    ) -> Result<Rendered> {
        let meta = page.meta(total_count);
        let count = items.len();
        Rendered::json(StatusCode::OK, &Collection { data: items, meta }, count)
    }

    /// What `make` renders for `key`, kept on a reader thread until the
    /// next commit ([`crate::db::kept`]); made every time anywhere else. The
    /// key must name everything the answer depends on besides the data:
    /// the household, today's date where a forecast is in it, the query.
    pub fn kept<K: PartialEq + 'static>(
        conn: &Connection,
        key: K,
        make: impl FnOnce() -> Result<Rendered>,
    ) -> Result<Rendered> {
        crate::db::kept(conn, key, make).map(|kept| Rendered::clone(&kept))
    }
}

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.body,
        )
            .into_response();
        if let Some(etag) = self.etag {
            response.headers_mut().insert(header::ETAG, etag);
        }
        response
    }
}

pub fn ok<T: Serialize>(data: T) -> Response {
    json(StatusCode::OK, &Data { data }, 1)
}

pub fn created<T: Serialize>(data: T) -> Response {
    json(StatusCode::CREATED, &Data { data }, 1)
}

pub fn ok_tagged<T: Serialize + Versioned>(data: T) -> Response {
    Rendered::ok_tagged(data).into_response()
}

pub fn created_tagged<T: Serialize + Versioned>(data: T) -> Response {
    with_etag(created(&data), &data.etag())
}

pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub fn collection<T: Serialize>(items: Vec<T>, page: Page, total_count: i64) -> Response {
    Rendered::collection(items, page, total_count).into_response()
}

/// `response` with `etag` as its ETag header.
pub fn with_etag(mut response: Response, etag: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}
