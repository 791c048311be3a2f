//! Every request gets an id: returned in `X-Request-Id` and inside every error
//! envelope, so a user can quote it and an operator can find the log line.

use axum::http::HeaderValue;
use axum::response::Response;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being handled, or a fresh one outside a request.
pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_else(|_| new())
}

/// A fresh id: time-ordered, so the log lines of one id sort together.
pub fn new() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Runs `answered` as the request `id`: [`current`] inside it returns `id`.
pub async fn scope<F: std::future::Future>(id: String, answered: F) -> F::Output {
    REQUEST_ID.scope(id, answered).await
}

/// Tells the client the request's id.
pub fn stamp(response: &mut Response, id: &str) {
    if let Ok(value) = HeaderValue::from_str(id) {
        response.headers_mut().insert(HEADER, value);
    }
}
