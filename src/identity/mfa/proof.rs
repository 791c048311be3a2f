//! Proof of the person before a second-factor change. A bearer token alone
//! may be a stolen one, so enrolling, confirming, new recovery codes and
//! turning the factor off each carry the account's password in the request
//! itself (nothing to remember between requests, no window to steal), and
//! it is checked exactly as the sign-in form checks it: the same waits, the
//! same per-address and per-account counters, argon2 off the async threads.

use super::{Proven, require_session};
use crate::auth::Authenticated;
use crate::db::Db;
use crate::error::{ApiError, Result};
use crate::identity::sign_in::password::{self, PasswordCheck};

/// Checks the password sent with a second-factor change. While the address
/// or the account must wait, 429 with Retry-After (even for the right one);
/// a wrong one is counted and refused as a 422 naming `mfa.password`.
pub async fn password(
    db: &Db,
    auth: &Authenticated,
    address: &str,
    given: Option<String>,
) -> Result<Proven> {
    let session_id = require_session(auth)?;
    let Some(given) = given.filter(|p| !p.is_empty()) else {
        return Err(ApiError::invalid("mfa.password", "is required"));
    };
    let account_id = auth.account_id;
    let email: String = db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT email FROM accounts WHERE id = ?1",
                [account_id],
                |r| r.get(0),
            )?)
        })
        .await?;
    match password::check_as(db, address, &email, given, "mfa_password").await? {
        PasswordCheck::Throttled(wait) => Err(ApiError::RateLimited {
            retry_after_secs: wait,
        }),
        PasswordCheck::Wrong => Err(ApiError::invalid(
            "mfa.password",
            "is not the account's password",
        )),
        PasswordCheck::Right { account_id: found } if found == account_id => Ok(Proven {
            account_id,
            session_id,
            email,
            address: address.to_string(),
        }),
        PasswordCheck::Right { .. } => Err(ApiError::internal(
            "the password check answered another account",
        )),
    }
}
