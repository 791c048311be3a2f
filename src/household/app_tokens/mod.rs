//! Household app tokens for API and MCP integrations: bound to one
//! membership, with a maximum age, revocable, shown once.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::{Actor, access, token};
use crate::domain::Page;
use crate::domain::Timestamp;
use crate::error::{ApiError, Result};
use crate::household::audit;
use crate::household::memberships::model::MembershipStatus;
use crate::household::memberships::store as memberships_store;
use model::{AppToken, CreatedAppToken, MAX_NAME};

pub struct TokenRequest<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub name: &'a str,
    pub max_age_days: Option<i64>,
    /// The member issuing it; `None` when the host operator does, from the CLI.
    pub issued_by: Option<i64>,
}

/// Issues a token. The secret is in the result and nowhere else. A member
/// issues tokens only for their own membership: a token minted for someone
/// else would let its holder act, and be audited, as that member (an
/// administrator could become the owner that way). Only the host operator
/// (the command line) issues a token for a member.
pub fn issue(conn: &WriteTx, request: &TokenRequest<'_>) -> Result<CreatedAppToken> {
    if request
        .issued_by
        .is_some_and(|issuer| issuer != request.membership_id)
    {
        return Err(ApiError::forbidden(
            "an app token can only be created for your own membership",
        ));
    }
    let name = request.name.trim();
    if name.is_empty() || request.name.chars().count() > MAX_NAME {
        return Err(ApiError::invalid(
            "name",
            format!("must be 1 to {MAX_NAME} characters"),
        ));
    }
    let max = crate::household::store::find(conn, request.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?
        .app_token_max_age_days;
    let days = request.max_age_days.unwrap_or(max);
    if days < 1 || days > max {
        return Err(ApiError::invalid(
            "max_age_days",
            format!("must be from 1 to {max} (the household's app token maximum age)"),
        ));
    }
    let active = memberships_store::find(conn, request.household_id, request.membership_id)?
        .is_some_and(|m| m.status == MembershipStatus::Active);
    if !active {
        return Err(ApiError::NotFound(
            "no active membership with this id in the household".into(),
        ));
    }
    let new = token::generate(token::APP_TOKEN_PREFIX);
    let expires_at = Timestamp::now().plus(jiff::SignedDuration::from_hours(days * 24));
    let id = store::insert(
        conn,
        &store::NewAppToken {
            household_id: request.household_id,
            membership_id: request.membership_id,
            name,
            selector: &new.selector,
            secret_sha256: &new.secret_sha256,
            created_by_membership_id: request.issued_by,
            expires_at: &expires_at,
        },
    )?;
    audit::record(
        conn,
        request.household_id,
        request.issued_by,
        "app_token.created",
        ("app_token", id),
        json!({"membership_id": request.membership_id, "expires_at": expires_at,
               "via": if request.issued_by.is_some() { "api" } else { "cli" }}),
    )?;
    let app_token = store::find_live(conn, request.household_id, id)?
        .ok_or_else(|| ApiError::internal("new app token not found"))?;
    Ok(CreatedAppToken {
        app_token,
        token: new.token,
    })
}

/// Owners and administrators issue tokens for themselves.
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    attrs: model::AppTokenAttributes,
) -> Result<CreatedAppToken> {
    actor.require_manager("create app tokens")?;
    issue(
        conn,
        &TokenRequest {
            household_id: actor.household_id,
            membership_id: attrs.membership_id.unwrap_or(actor.membership_id),
            name: &attrs.name,
            max_age_days: attrs.max_age_days,
            issued_by: Some(actor.membership_id),
        },
    )
}

pub fn list(conn: &Connection, actor: &Actor, page: Page) -> Result<(Vec<AppToken>, i64)> {
    actor.require_manager("list app tokens")?;
    store::list_live(conn, actor.household_id, page)
}

/// Revokes at once: the next request with the token gets 401. An owner
/// revokes anyone's token; an administrator never an owner's.
pub fn revoke(conn: &WriteTx, actor: &Actor, id: i64) -> Result<()> {
    actor.require_manager("revoke app tokens")?;
    revoke_in(conn, actor.household_id, id, Some(actor))
}

/// The revocation itself, by a member (`acting`, who must rank over the
/// token's holder) or the host operator (`None`).
pub fn revoke_in(conn: &WriteTx, household_id: i64, id: i64, acting: Option<&Actor>) -> Result<()> {
    let found = store::find_live(conn, household_id, id)?
        .ok_or_else(|| ApiError::not_found("app token"))?;
    if let Some(actor) = acting {
        access::require_rank_over(conn, actor, found.membership_id, "revoke the app tokens of")?;
    }
    let acting = acting.map(|a| a.membership_id);
    store::revoke(conn, found.id)?;
    audit::record(
        conn,
        household_id,
        acting,
        "app_token.revoked",
        ("app_token", found.id),
        json!({"membership_id": found.membership_id}),
    )
}

/// Revokes every live app token of the account's memberships, in every
/// household, each audited there as revoked by the host operator with
/// `via`. Answers how many were revoked.
pub fn revoke_all_of_account(conn: &WriteTx, account_id: i64, via: &str) -> Result<usize> {
    let live = store::live_of_account(conn, account_id)?;
    for token in &live {
        store::revoke(conn, token.id)?;
        audit::record(
            conn,
            token.household_id,
            None,
            "app_token.revoked",
            ("app_token", token.id),
            json!({"membership_id": token.membership_id, "via": via}),
        )?;
    }
    Ok(live.len())
}
