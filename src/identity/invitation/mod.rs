//! The invitation landing page (`/invitation?token=…`, the emailed link):
//! it shows which household invites and as what, and lets the invitee
//! create an account for the invited email or sign in (password and second
//! factor, or the identity provider), then accepts through the same rule as
//! `POST /invitations/accept`. The link alone never acts: every way on
//! proves who the visitor is first.

pub mod page;
pub mod routes;

use serde::Deserialize;
use serde_json::json;

use crate::db::WriteTx;
use crate::error::Result;
use crate::household::invitations::{self, model::AcceptedInvitation};
use crate::identity::{events, sign_in};

/// Which form of the landing page was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Create,
    SignIn,
}

/// The landing page's forms: the token and CSRF token always; a password
/// (twice to create an account); or the second step's fields.
#[derive(Debug, Default, Deserialize)]
pub struct InvitationForm {
    pub token: Option<String>,
    pub csrf_token: Option<String>,
    /// `create` or `sign_in`
    pub step: Option<String>,
    pub password: Option<String>,
    pub password_confirmation: Option<String>,
    pub mfa_token: Option<String>,
    pub code: Option<String>,
    pub recovery_code: Option<String>,
}

/// Creates the invited email's account (the rule `setup` and `member add`
/// use) and accepts the invitation with it, in one transaction: if the
/// invitation cannot be accepted, no account is left behind.
pub fn create_account_and_accept(
    tx: &WriteTx,
    token: &str,
    email: &str,
    password_hash: &str,
    address: &str,
) -> Result<AcceptedInvitation> {
    let account_id = crate::auth::accounts::create(tx, email, password_hash, None)?;
    let accepted = invitations::accept_as(tx, account_id, token)?;
    events::record(
        tx,
        Some(account_id),
        "account.created",
        address,
        json!({"via": "invitation"}),
    )?;
    Ok(accepted)
}

/// After a correct password: the second step's token when the account has
/// a second factor, else the sign-in is recorded as complete.
pub fn password_accepted(
    tx: &WriteTx,
    account_id: i64,
    email: &str,
    address: &str,
) -> Result<Option<String>> {
    if let Some(pending) = sign_in::begin_second_step(tx, account_id)? {
        return Ok(Some(pending));
    }
    sign_in::succeeded(
        tx,
        account_id,
        email,
        address,
        json!({"step": "password", "via": "invitation"}),
    )?;
    Ok(None)
}
