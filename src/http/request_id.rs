//! Every request gets an id: returned in `X-Request-Id` and inside every error
//! envelope, so a user can quote it and an operator can find the log line.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being handled, or a fresh one outside a request.
pub fn current() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| uuid::Uuid::now_v7().to_string())
}

pub async fn middleware(request: Request, next: Next) -> Response {
    let id = uuid::Uuid::now_v7().to_string();
    let mut response = REQUEST_ID.scope(id.clone(), next.run(request)).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
