//! Rate limits keyed on what was verified. A request with a bearer
//! credential is verified here, once, and counts against that credential's
//! bucket only when the secret matched; the outcome travels to the `Actor`
//! extractor in the request's extensions. Requests without a credential,
//! and every failed authentication, count against the client's address,
//! failures in a stricter bucket of their own: once an address has used it
//! up, every further failure from it is a 429 instead of a 401. A verified
//! credential is never held back by its address's failures: behind one
//! home router or reverse proxy, a phone with a stale token must not lock
//! out the rest of the family (a guess at a 256-bit secret gains nothing
//! from learning which answer it got). A selector alone proves
//! nothing, so it never chooses a bucket (else anyone could drain a
//! victim's bucket, or escape every limit with a fresh selector each time).
//! The buckets themselves are `crate::limits`; the address key is
//! `crate::http::rate_limit::client_key`.
use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::http::rate_limit::client_key;
use crate::state::AppState;

fn limited(retry_after_secs: u64) -> Response {
    let mut response = ApiError::RateLimited { retry_after_secs }.into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

pub async fn middleware(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let limits = &state.rate_limits;
    if !limits.requests.is_on() && !limits.auth_failures.is_on() {
        return next.run(request).await;
    }
    let now = Instant::now();
    // Worked out only when a bucket needs it: most requests carry a
    // credential that verifies, and never ask.
    let address = |request: &Request| {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        client_key(request.headers(), peer, limits.trusted_proxies)
    };
    let Some(presented) = super::token::bearer(request.headers()).map(str::to_string) else {
        return match limits.requests.check(&address(&request), now) {
            Ok(()) => next.run(request).await,
            Err(wait) => limited(wait),
        };
    };
    let verified = match super::verify(&state, presented).await {
        Ok(verified) => verified,
        Err(e) => return e.into_response(),
    };
    match &verified.0 {
        Ok(authenticated) => {
            if limits.requests.is_on()
                && let Err(wait) = limits
                    .requests
                    .check(&authenticated.credential.bucket(), now)
            {
                return limited(wait);
            }
        }
        Err(_) => {
            if let Err(wait) = limits.auth_failures.check(&address(&request), now) {
                return limited(wait);
            }
        }
    }
    request.extensions_mut().insert(verified);
    next.run(request).await
}
