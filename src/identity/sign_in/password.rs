//! The password step shared by every page that signs someone in (the
//! sign-in page, the invitation page): the same counters, the same decoy
//! hash for an unknown email, the same events.

use std::sync::OnceLock;

use serde_json::json;

use crate::db::Db;
use crate::error::{ApiError, Result};
use crate::identity::events;

/// What a password attempt came to.
pub enum PasswordCheck {
    /// The address or the account must wait this many seconds first.
    Throttled(u64),
    /// Unknown email or wrong password (counted as a failure).
    Wrong,
    Right {
        account_id: i64,
    },
}

/// The hash an unknown email's password is checked against, so that an
/// unknown email takes as long as a known one.
fn decoy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        crate::auth::password::hash("a password no account has, for timing").unwrap_or_default()
    })
}

/// The longer of the waits the address and the account must sit out.
pub async fn wait(db: &Db, address: &str, email: &str) -> Result<Option<u64>> {
    let keys = [address.to_string(), events::account_key(email)];
    db.read(move |conn| {
        let mut longest = None;
        for key in &keys {
            longest = longest.max(events::wait_secs(conn, key)?);
        }
        Ok(longest)
    })
    .await
}

/// Records an attempt refused while waiting.
pub async fn throttled(db: &Db, address: &str, email: &str) -> Result<()> {
    let (address, email) = (address.to_string(), email.to_string());
    db.write(move |tx| {
        let account = super::find_account(tx, &email)?.map(|(id, _)| id);
        events::record(tx, account, "sign_in.throttled", &address, json!({}))
    })
    .await
}

/// Checks `password` for `email`, slowed and counted like every sign-in.
pub async fn check(db: &Db, address: &str, email: &str, password: String) -> Result<PasswordCheck> {
    check_as(db, address, email, password, "password").await
}

/// `check`, with the step a failure is recorded under (a second-factor
/// change asks for the password too, and its log should say so).
pub async fn check_as(
    db: &Db,
    address: &str,
    email: &str,
    password: String,
    step: &'static str,
) -> Result<PasswordCheck> {
    if let Some(wait) = wait(db, address, email).await? {
        throttled(db, address, email).await?;
        return Ok(PasswordCheck::Throttled(wait));
    }
    let lookup = email.to_string();
    let found = db
        .read(move |conn| super::find_account(conn, &lookup))
        .await?;
    let hash = found.as_ref().map(|(_, hash)| hash.clone());
    let verified = tokio::task::spawn_blocking(move || {
        let hash = hash.as_deref().unwrap_or_else(|| decoy_hash());
        crate::auth::password::verify(&password, hash)
    })
    .await
    .map_err(|e| ApiError::internal(format!("password check failed: {e}")))?;
    match found {
        Some((account_id, _)) if verified => Ok(PasswordCheck::Right { account_id }),
        other => {
            let account_id = other.map(|(id, _)| id);
            let (email, address) = (email.to_string(), address.to_string());
            db.write(move |tx| events::failed(tx, account_id, &email, &address, step))
                .await?;
            Ok(PasswordCheck::Wrong)
        }
    }
}
