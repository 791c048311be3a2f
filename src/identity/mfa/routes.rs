//! Multi-factor handlers: status, TOTP enrolment and confirmation, new
//! recovery codes, disabling. Each change checks the password sent with it
//! first (`proof`), then runs its rule in one transaction.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};

use super::Checked;
use super::Proven;
use super::crypt::MfaKey;
use super::model::{
    MfaStatus, RecoveryCodes, RecoveryCodesRequest, TotpConfirmRequest, TotpDisableRequest,
    TotpEnrolment, TotpEnrolmentRequest,
};
use crate::auth::Authenticated;
use crate::db::WriteTx;
use crate::error::Result;
use crate::http::extract::{ApiJson, OptionalApiJson};
use crate::http::openapi::{Api, Op};
use crate::http::origin::{BaseUrl, ClientAddress};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Multi-factor";

/// A change's description, with what every change says about its proof.
macro_rules! concat_proof {
    ($text:literal) => {
        concat!($text, " Needs a signed-in user's access token and the account's current password in the same request (`mfa.password`; there is no remembered re-authentication). A missing or wrong password is a 422 naming `mfa.password`; wrong passwords and codes count in the sign-in form's per-address and per-account throttles, and while one of them must wait the answer is 429 with Retry-After, even for the right password.")
    };
}

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
            .description(concat_proof!("The secret takes effect only once confirmed with a first code."))
            .body::<TotpEnrolmentRequest>()
            .errors(&[403, 409])
            .created::<TotpEnrolment>(),
        post(begin),
    )
    .route(
        Op::post("/auth/mfa/totp/confirm", "createTotpConfirmation", TAG)
            .summary("Confirm the TOTP enrolment with a first code; answers ten one-time recovery codes, shown once")
            .description(concat_proof!("Turning the factor on signs every other session of the account out (their access and refresh tokens stop working); the caller's session stays."))
            .body::<TotpConfirmRequest>()
            .errors(&[403, 409])
            .ok::<RecoveryCodes>(),
        post(confirm),
    )
    .route(
        Op::post("/auth/mfa/recovery_codes", "generateRecoveryCodes", TAG)
            .summary("Replace the recovery codes with ten new ones, shown once (needs the password and a code or recovery code)")
            .description(concat_proof!("Every earlier recovery code, used or not, stops working."))
            .body::<RecoveryCodesRequest>()
            .errors(&[403, 409])
            .ok::<RecoveryCodes>(),
        post(regenerate),
    )
    .route(
        Op::post("/auth/mfa/totp/disable", "deleteTotpAuthenticator", TAG)
            .summary("Turn the TOTP second factor off (needs the password and a code or recovery code)")
            .description(concat_proof!("Turning the factor off signs every other session of the account out (their access and refresh tokens stop working); the caller's session stays."))
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

/// The body may be left out, as it could before a password was needed: it
/// then fails as a missing password, not as a missing body.
async fn begin(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    OptionalApiJson(body): OptionalApiJson<TotpEnrolmentRequest>,
) -> Result<Response> {
    let password = body.and_then(|b| b.mfa.password);
    let proven = super::proof::password(&state.db, &auth, &address, password).await?;
    let key = crate::identity::mfa::crypt::MfaKey::of(&state)?;
    let issuer = issuer_label(&base);
    let enrolment = state
        .db
        .write(move |tx| super::begin(tx, &key, &proven, &issuer))
        .await?;
    Ok(respond::created(enrolment))
}

/// The name an authenticator app shows: "Pillbox (host)".
fn issuer_label(base: &str) -> String {
    let host = base.split("://").nth(1).unwrap_or(base);
    format!("Pillbox ({host})")
}

/// A change of the second factor: the person proven by their password,
/// then `change` with the key, the proof and the code in one write (a wrong
/// code's failure is committed, the change is not).
async fn proven_change<T: Send + 'static>(
    state: &AppState,
    auth: &Authenticated,
    address: &str,
    (password, code): (Option<String>, String),
    change: fn(&WriteTx, &MfaKey, &Proven, &str) -> Result<Checked<T>>,
) -> Result<T> {
    let proven = super::proof::password(&state.db, auth, address, password).await?;
    let key = crate::identity::mfa::crypt::MfaKey::of(state)?;
    state
        .db
        .write(move |tx| change(tx, &key, &proven, &code))
        .await?
}

async fn confirm(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<TotpConfirmRequest>,
) -> Result<Response> {
    let given = (body.mfa.password, body.mfa.code);
    let codes = proven_change(&state, &auth, &address, given, super::confirm).await?;
    Ok(respond::ok(codes))
}

async fn regenerate(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<RecoveryCodesRequest>,
) -> Result<Response> {
    let given = (body.mfa.password, body.mfa.code);
    let codes = proven_change(&state, &auth, &address, given, super::regenerate).await?;
    Ok(respond::ok(codes))
}

async fn disable(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<TotpDisableRequest>,
) -> Result<Response> {
    let given = (body.mfa.password, body.mfa.code);
    proven_change(&state, &auth, &address, given, super::disable).await?;
    Ok(respond::no_content())
}
