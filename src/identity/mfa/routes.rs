//! Multi-factor handlers: status, TOTP enrolment and confirmation, disabling.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};

use super::model::{
    MfaStatus, RecoveryCodes, TotpConfirmRequest, TotpDisableRequest, TotpEnrolment,
};
use crate::auth::Authenticated;
use crate::error::{ApiError, Result};
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::identity::{BaseUrl, ClientAddress};
use crate::state::AppState;

const TAG: &str = "Multi-factor";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get("/auth/mfa", "getMfaStatus", TAG)
            .summary("The account's second factors")
            .errors(&[403])
            .ok::<MfaStatus>(),
        get(show),
    )
    .route(
        Op::post("/auth/mfa/totp", "createTotpEnrolment", TAG)
            .summary("Start enrolling a TOTP authenticator: the secret is shown once")
            .description("The secret takes effect only once confirmed with a first code. Needs a signed-in user's access token.")
            .errors(&[403, 409])
            .created::<TotpEnrolment>(),
        post(begin),
    )
    .route(
        Op::post("/auth/mfa/totp/confirm", "createTotpConfirmation", TAG)
            .summary("Confirm the TOTP enrolment with a first code; answers ten one-time recovery codes, shown once")
            .body::<TotpConfirmRequest>()
            .errors(&[403, 409])
            .ok::<RecoveryCodes>(),
        post(confirm),
    )
    .route(
        Op::post("/auth/mfa/totp/disable", "deleteTotpAuthenticator", TAG)
            .summary("Turn the TOTP second factor off (needs the password and a code or recovery code)")
            .body::<TotpDisableRequest>()
            .errors(&[403, 409])
            .no_content(),
        post(disable),
    )
}

async fn show(State(state): State<AppState>, auth: Authenticated) -> Result<Response> {
    let status = state
        .db
        .read(move |conn| super::status(conn, &auth))
        .await?;
    Ok(respond::ok(status))
}

async fn begin(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    auth: Authenticated,
) -> Result<Response> {
    let key = state.mfa_key()?;
    let issuer = issuer_label(&base);
    let enrolment = state
        .db
        .write(move |tx| super::begin(tx, &key, &auth, &issuer))
        .await?;
    Ok(respond::created(enrolment))
}

/// The name an authenticator app shows: "Pillbox (host)".
fn issuer_label(base: &str) -> String {
    let host = base.split("://").nth(1).unwrap_or(base);
    format!("Pillbox ({host})")
}

async fn confirm(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<TotpConfirmRequest>,
) -> Result<Response> {
    let key = state.mfa_key()?;
    let codes = state
        .db
        .write(move |tx| super::confirm(tx, &key, &auth, &body.mfa.code, &address))
        .await?;
    Ok(respond::ok(codes))
}

async fn disable(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<TotpDisableRequest>,
) -> Result<Response> {
    let key = state.mfa_key()?;
    let account_id = auth.account_id;
    let hash: String = state
        .db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT password_hash FROM accounts WHERE id = ?1",
                [account_id],
                |r| r.get(0),
            )?)
        })
        .await?;
    let password = body.mfa.password;
    let password_ok =
        tokio::task::spawn_blocking(move || crate::auth::password::verify(&password, &hash))
            .await
            .map_err(|e| ApiError::internal(format!("password check failed: {e}")))?;
    let code = body.mfa.code;
    state
        .db
        .write(move |tx| super::disable(tx, &key, &auth, password_ok, &code, &address))
        .await?;
    Ok(respond::no_content())
}
