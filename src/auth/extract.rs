//! The request extractors that name the caller: the credential is verified
//! (or taken from the rate limiter, which already verified it) and, for a
//! household route, the current membership; both from the access view
//! (`super::view`), without a database read of their own.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::view::AccessView;
use super::{Actor, Authenticated, Credential, Verified, store, token};
use crate::domain::numeric_id;
use crate::error::{ApiError, Result};
use crate::http::extract::raw_param;
use crate::state::AppState;

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
