//! What the host operator does to an account from the server's shell
//! (`pillbox account password|reset-mfa`), for a member who is locked out.

use serde_json::json;

use crate::db::WriteTx;
use crate::error::{ApiError, Result};
use crate::identity::{events, mfa, sessions};

/// The account of an email (any letter case), or an error naming it.
pub fn account_by_email(tx: &WriteTx, email: &str) -> Result<i64> {
    crate::auth::accounts::find_by_email(tx, email.trim())?
        .ok_or_else(|| ApiError::not_found(&format!("an account with the email {}", email.trim())))
}

/// Sets a new password hash and signs every device of the account out (the
/// old password may be what leaked). Answers how many sessions ended.
pub fn set_password(tx: &WriteTx, email: &str, password_hash: &str) -> Result<usize> {
    let account_id = account_by_email(tx, email)?;
    let now = crate::domain::Timestamp::now();
    crate::auth::accounts::set_password_hash(tx, account_id, password_hash)?;
    events::clear(tx, &events::account_key(email))?;
    let ended = sessions::store::revoke_all_of_account(tx, account_id, "password_reset", &now)?;
    events::record(
        tx,
        Some(account_id),
        "password.reset",
        "cli",
        json!({"via": "cli", "sessions_revoked": ended}),
    )?;
    Ok(ended)
}

/// Removes the account's second factor and recovery codes; false when it had none.
pub fn reset_mfa(tx: &WriteTx, email: &str) -> Result<bool> {
    let account_id = account_by_email(tx, email)?;
    events::clear(tx, &events::account_key(email))?;
    mfa::reset(tx, account_id)
}
