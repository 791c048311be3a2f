//! Sign-in sessions: one per sign-in of a device, holding its access and
//! refresh tokens. Revoking a session revokes all of them at once.

pub mod model;
pub mod routes;
pub mod store;

use rusqlite::Connection;
use serde_json::json;

use crate::auth::token::{self, ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX};
use crate::auth::{Authenticated, Credential};
use crate::db::WriteTx;
use crate::domain::Page;
use crate::error::{ApiError, Result};
use crate::identity::settings::OAuthSettings;
use model::Session;

/// A freshly issued pair; the token strings exist only here, never stored.
#[derive(Debug)]
pub struct Issued {
    pub session_id: i64,
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
}

/// Token lifetimes from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    pub access_secs: u64,
    pub refresh_days: u64,
}

impl From<&OAuthSettings> for Lifetimes {
    fn from(o: &OAuthSettings) -> Self {
        Lifetimes {
            access_secs: o.access_token_ttl_secs,
            refresh_days: o.refresh_token_ttl_days,
        }
    }
}

fn after(secs: u64) -> crate::domain::Timestamp {
    crate::domain::Timestamp::from_jiff(
        jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs.min(i64::MAX as u64) as i64),
    )
}

/// Starts a session for a device and issues its first tokens.
pub fn start(
    tx: &WriteTx,
    account_id: i64,
    client_id: &str,
    device_label: &str,
    lifetimes: Lifetimes,
) -> Result<Issued> {
    let now = crate::domain::Timestamp::now();
    let ends = after(lifetimes.refresh_days * 86_400);
    let session_id = store::insert_session(tx, account_id, client_id, device_label, &now, &ends)?;
    issue(tx, session_id, lifetimes)
}

/// A new access and refresh token for the session; the session's end moves
/// to a full refresh lifetime from now (sliding).
pub fn issue(tx: &WriteTx, session_id: i64, lifetimes: Lifetimes) -> Result<Issued> {
    let now = crate::domain::Timestamp::now();
    let access = token::generate(ACCESS_TOKEN_PREFIX);
    let refresh = token::generate(REFRESH_TOKEN_PREFIX);
    let refresh_ends = after(lifetimes.refresh_days * 86_400);
    store::delete_expired(tx, session_id, &now)?;
    store::insert_token(
        tx,
        session_id,
        "access",
        &access,
        &now,
        &after(lifetimes.access_secs),
    )?;
    store::insert_token(tx, session_id, "refresh", &refresh, &now, &refresh_ends)?;
    store::slide(tx, session_id, &now, &refresh_ends)?;
    Ok(Issued {
        session_id,
        access_token: access.token,
        refresh_token: refresh.token,
        expires_in: lifetimes.access_secs,
    })
}

/// Revokes a session (its access and refresh tokens stop working at once)
/// and records why.
pub fn revoke(
    tx: &WriteTx,
    account_id: i64,
    session_id: i64,
    reason: &'static str,
    address: &str,
) -> Result<bool> {
    let revoked = store::revoke(tx, session_id, reason, &crate::domain::Timestamp::now())?;
    if revoked {
        crate::identity::events::record(
            tx,
            Some(account_id),
            "session.revoked",
            address,
            json!({"session_id": session_id, "reason": reason}),
        )?;
    }
    Ok(revoked)
}

/// Managing sign-in sessions (and the account's other ways in) needs a
/// signed-in user: an app token is an integration's credential and may not
/// sign the user's devices out. Answers the session's id.
pub fn require_session(auth: &Authenticated) -> Result<i64> {
    match auth.credential {
        Credential::Session { id } => Ok(id),
        Credential::AppToken { .. } => Err(ApiError::forbidden(
            "sign-in sessions are managed by a signed-in user, not with an app token",
        )),
    }
}

pub fn list(conn: &Connection, auth: &Authenticated, page: Page) -> Result<(Vec<Session>, i64)> {
    let current = require_session(auth)?;
    store::list_live(
        conn,
        auth.account_id,
        Some(current),
        &crate::domain::Timestamp::now(),
        page,
    )
}

/// Signs one of the account's devices out; another account's session, or
/// one already ended, is not found.
pub fn delete(tx: &WriteTx, auth: &Authenticated, id: i64, address: &str) -> Result<()> {
    require_session(auth)?;
    if store::live_owner(tx, id, &crate::domain::Timestamp::now())? != Some(auth.account_id) {
        return Err(ApiError::not_found("session"));
    }
    revoke(tx, auth.account_id, id, "deleted", address)?;
    Ok(())
}

/// Ends the credential of the request: its session, or the app token itself.
pub fn logout(tx: &WriteTx, auth: &Authenticated, address: &str) -> Result<()> {
    match auth.credential {
        Credential::Session { id } => {
            revoke(tx, auth.account_id, id, "logout", address)?;
        }
        Credential::AppToken { id, membership_id } => {
            let household_id: i64 = tx.query_row(
                "SELECT household_id FROM memberships WHERE id = ?1",
                [membership_id],
                |r| r.get(0),
            )?;
            crate::household::app_tokens::store::revoke(tx, id)?;
            crate::household::audit::record(
                tx,
                household_id,
                Some(membership_id),
                "app_token.revoked",
                ("app_token", id),
                json!({"membership_id": membership_id, "via": "logout"}),
            )?;
        }
    }
    Ok(())
}
