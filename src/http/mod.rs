//! Cross-cutting HTTP: extractors, responses, request ids, rate limit, cache
//! headers, the OpenAPI document and the assembly of the Router.

pub mod extract;
mod json;
pub mod openapi;
pub mod origin;
pub mod rate_limit;
pub mod replace;
pub mod request_id;
pub mod respond;
pub mod server;
pub mod stream;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;
use openapi::{Api, Op};

pub const API_PREFIX: &str = "/api/v1";
/// Largest JSON body accepted.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// Every operation of the service, documented as it is routed.
pub fn api() -> Api {
    let api = Api::new();
    let api = crate::capabilities::routes(api);
    let api = openapi_route(api);
    let api = crate::auth::routes::routes(api);
    let api = crate::identity::routes(api);
    let api = crate::household::routes(api);
    let api = crate::medicine::routes(api);
    let api = crate::care::routes(api);
    let api = crate::reminders::routes::routes(api);
    let api = crate::sync::routes(api);
    let api = crate::reports::routes(api);
    let api = crate::lookup::routes::routes(api);
    crate::portable::routes(api)
}

fn openapi_route(api: Api) -> Api {
    api.schema(
        "OpenApiDocument",
        serde_json::json!({"type": "object", "required": ["openapi", "paths"]}),
    )
    .route(
        Op::get("/openapi.json", "getOpenApiDocument", "Contract")
            .summary("This OpenAPI 3.1 document")
            .public()
            .ok_named("OpenApiDocument"),
        get(|State(state): State<AppState>| async move {
            (
                [(header::CONTENT_TYPE, "application/json")],
                state.openapi.clone(),
            )
        }),
    )
}

/// The whole service as one Router (tests call this directly).
pub fn app(mut state: AppState) -> Router {
    let (routes, doc) = api().finish();
    state.shared_mut().openapi = serde_json::to_vec(&doc)
        .expect("OpenAPI document serialises")
        .into();
    let v1 = routes
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed);
    let routes = Router::new()
        .nest(API_PREFIX, v1)
        .merge(crate::identity::root_router())
        .merge(crate::web::router())
        .merge(crate::mcp::routes::router(&state))
        .fallback(route_not_found)
        .with_state(state.clone());
    // Layers go around the whole Router, not each of its routes
    // (`Router::layer`): axum clones a route's stack of layers for every
    // request, and each layer clones the rest again (about 40 allocations a
    // request for four layers). A route that takes larger bodies (imports,
    // pictures) sets its own limit, which wins over this one.
    let around = tower::ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(state, every_request))
        .layer(DefaultBodyLimit::max(MAX_JSON_BODY));
    Router::new().fallback_service(around.service(routes))
}

async fn route_not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// What every request goes through, in this order: it gets an id, passes
/// the rate limit, is answered, gets the cache and page headers, and is
/// logged. One layer rather than one each: a layer costs every request a
/// clone of the service behind it and a boxed future.
async fn every_request(state: State<AppState>, request: Request, next: Next) -> Response {
    let id = request_id::new();
    let answered = async {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let started = std::time::Instant::now();
        let mut response = rate_limit::middleware(state, request, next).await;
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
