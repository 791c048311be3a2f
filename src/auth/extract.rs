//! The request extractors that name the caller: the credential is verified
//! (or taken from the rate limiter, which already verified it) and, for a
//! household route, the current membership; both from the access view
//! (`super::view`), without a database read of their own. The rate limiter
//! is here too, since it is where most requests' credentials are verified.

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::model::{Actor, Authenticated, Credential, Verified};
use super::view::AccessView;
use super::{store, token};
use crate::domain::numeric_id;
use crate::error::{ApiError, Result};
use crate::http::extract::raw_param;
use crate::http::rate_limit::client_key;
use crate::state::AppState;

/// Verifies a presented credential. `Err` only for a failure of the server
/// itself; a credential that does not verify is an `Ok(Verified(Err(..)))`.
async fn verify(state: &AppState, presented: String) -> Result<Verified> {
    let view = state.db.attached::<AccessView>();
    match view.authenticate(&state.db, &presented) {
        Ok(authenticated) => Ok(Verified(Ok(authenticated))),
        Err(ApiError::Unauthorized(why)) => Ok(Verified(Err(why))),
        Err(other) => Err(other),
    }
}

fn limited(retry_after_secs: u64) -> Response {
    let mut response = ApiError::RateLimited { retry_after_secs }.into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

/// Rate limits keyed on what was verified. A request with a bearer
/// credential is verified here, once, and counts against that credential's
/// bucket only when the secret matched; the outcome travels to the `Actor`
/// extractor in the request's extensions. Requests without a credential,
/// and every failed authentication, count against the client's address,
/// failures in a stricter bucket of their own: once an address has used it
/// up, every further failure from it is a 429 instead of a 401. A verified
/// credential is never held back by its address's failures: behind one
/// home router or reverse proxy, a phone with a stale token must not lock
/// out the rest of the family (a guess at a 256-bit secret gains nothing
/// from learning which answer it got). A selector alone proves
/// nothing, so it never chooses a bucket (else anyone could drain a
/// victim's bucket, or escape every limit with a fresh selector each time).
/// The buckets themselves are `crate::limits`; the address key is
/// `crate::http::rate_limit::client_key`.
pub async fn rate_limit(
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
    let Some(presented) = token::bearer(request.headers()).map(str::to_string) else {
        return match limits.requests.check(&address(&request), now) {
            Ok(()) => next.run(request).await,
            Err(wait) => limited(wait),
        };
    };
    let verified = match verify(&state, presented).await {
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

/// The verification the rate limiter already made for this request, if any.
fn verified(parts: &Parts) -> Option<Result<Authenticated>> {
    parts
        .extensions
        .get::<Verified>()
        .map(|Verified(outcome)| outcome.clone().map_err(ApiError::Unauthorized))
}

/// Verifies the bearer credential of a request (401 on any failure).
async fn authenticate(parts: &Parts, state: &AppState) -> Result<Authenticated> {
    let authenticated = match verified(parts) {
        Some(outcome) => outcome?,
        None => {
            let presented = token::bearer(&parts.headers)
                .ok_or(ApiError::Unauthorized("a bearer credential is required"))?;
            let view = state.db.attached::<AccessView>();
            view.authenticate(&state.db, presented)?
        }
    };
    note_use(state, &authenticated);
    Ok(authenticated)
}

/// Records when an app token or sign-in session was last used, at most
/// every few minutes so that reads do not turn into writes.
fn note_use(state: &AppState, authenticated: &Authenticated) {
    const EVERY_MINUTES: i64 = 10;
    let credential = authenticated.credential;
    let stale_before = crate::domain::Timestamp::from_jiff(
        jiff::Timestamp::now() - jiff::SignedDuration::from_mins(EVERY_MINUTES),
    );
    if authenticated
        .last_used_at
        .as_deref()
        .is_some_and(|at| at > stale_before.as_str())
    {
        return;
    }
    let db = state.db.clone();
    tokio::spawn(async move {
        let now = crate::domain::Timestamp::now();
        if let Err(e) = db
            .write(move |conn| store::touch(conn, credential, &now))
            .await
        {
            tracing::warn!("could not record credential use: {e}");
        }
    });
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        authenticate(parts, state).await
    }
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = ApiError;

    /// The credential (unless the rate limiter already verified it) and
    /// the membership, both from the access view.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        if verified(parts).is_none() && token::bearer(&parts.headers).is_none() {
            return Err(ApiError::Unauthorized("a bearer credential is required"));
        }
        let raw = raw_param(parts, state, "household_id").await?;
        let authenticated = authenticate(parts, state).await?;
        // Anything that is not a household id names no household.
        let household_id = numeric_id(&raw).ok_or_else(|| ApiError::not_found("household"))?;
        let view = state.db.attached::<AccessView>();
        view.household_actor(&state.db, &authenticated, household_id)
    }
}

/// The actor of a request made with a household app token, in the
/// household of the token's membership (the MCP endpoint, whose path names
/// no household): verified and resolved exactly as a household route's
/// `Actor`, from current data.
pub async fn app_token_actor(parts: &Parts, state: &AppState) -> Result<Actor> {
    let authenticated = authenticate(parts, state).await?;
    let Credential::AppToken { membership_id, .. } = authenticated.credential else {
        return Err(ApiError::Unauthorized(
            "this endpoint needs a household app token",
        ));
    };
    state
        .db
        .read(move |conn| {
            let household_id = store::membership_household(conn, membership_id)?
                .ok_or(ApiError::Unauthorized("the app token is no longer active"))?;
            // A suspended or revoked membership: the token no longer works.
            store::household_actor(conn, &authenticated, household_id).map_err(|e| match e {
                ApiError::NotFound(_) => {
                    ApiError::Unauthorized("the app token's membership is no longer active")
                }
                other => other,
            })
        })
        .await
}
