//! Multi-factor: one TOTP authenticator per account (RFC 6238), its secret
//! encrypted at rest with the server's key, and ten one-time recovery codes
//! stored as SHA-256 digests. Enrolment shows the secret once and takes
//! effect only when a first code confirms it; turning it off needs the
//! password and a code.

pub mod crypt;
pub mod model;
pub mod routes;
pub mod store;
pub mod totp;

use rusqlite::Connection;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::{Authenticated, Credential};
use crate::db::WriteTx;
use crate::error::{ApiError, Result};
use crate::identity::events;
use crypt::MfaKey;
use model::{MfaStatus, RecoveryCodes, TotpEnrolment};

pub const RECOVERY_CODE_COUNT: usize = 10;
const SECRET_BYTES: usize = 20;

/// Second factors are managed by the signed-in user, never with an app token.
fn require_session(auth: &Authenticated) -> Result<()> {
    match auth.credential {
        Credential::Session { .. } => Ok(()),
        Credential::AppToken { .. } => Err(ApiError::forbidden(
            "second factors are managed by a signed-in user, not with an app token",
        )),
    }
}

fn unix_now() -> u64 {
    jiff::Timestamp::now().as_second().max(0) as u64
}

/// Whether the account must give a second factor at sign-in.
pub fn enabled(conn: &Connection, account_id: i64) -> Result<bool> {
    Ok(store::find(conn, account_id)?.is_some_and(|t| t.confirmed))
}

pub fn status(conn: &Connection, auth: &Authenticated) -> Result<MfaStatus> {
    require_session(auth)?;
    Ok(MfaStatus {
        totp_enabled: enabled(conn, auth.account_id)?,
        recovery_codes_remaining: store::unused_recovery_codes(conn, auth.account_id)?.len() as i64,
    })
}

/// A new secret, replacing an enrolment never confirmed.
pub fn begin(
    tx: &WriteTx,
    key: &MfaKey,
    auth: &Authenticated,
    issuer: &str,
) -> Result<TotpEnrolment> {
    require_session(auth)?;
    if enabled(tx, auth.account_id)? {
        return Err(ApiError::conflict(
            "mfa_already_enabled",
            "a TOTP authenticator is already enabled; disable it first to enrol another",
        ));
    }
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut secret).expect("operating system random source");
    store::put_unconfirmed(
        tx,
        auth.account_id,
        &key.encrypt(&secret)?,
        &crate::domain::Timestamp::now(),
    )?;
    let email: String = tx.query_row(
        "SELECT email FROM accounts WHERE id = ?1",
        [auth.account_id],
        |r| r.get(0),
    )?;
    Ok(TotpEnrolment {
        secret: totp::base32(&secret),
        otpauth_uri: totp::otpauth_uri(issuer, &email, &secret),
        algorithm: "SHA1",
        digits: totp::DIGITS,
        period: totp::STEP_SECS,
    })
}

fn new_recovery_codes(tx: &WriteTx, account_id: i64) -> Result<Vec<String>> {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut codes = Vec::with_capacity(RECOVERY_CODE_COUNT);
    let mut digests = Vec::with_capacity(RECOVERY_CODE_COUNT);
    for _ in 0..RECOVERY_CODE_COUNT {
        let mut random = [0u8; 10];
        getrandom::fill(&mut random).expect("operating system random source");
        let chars: String = random
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        let code = format!("{}-{}", &chars[..5], &chars[5..]);
        digests.push(recovery_digest(&code));
        codes.push(code);
    }
    store::replace_recovery_codes(tx, account_id, &digests)?;
    Ok(codes)
}

/// Recovery codes are compared without case, spaces or hyphens.
fn recovery_digest(code: &str) -> Vec<u8> {
    let normal: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    Sha256::digest(normal.as_bytes()).to_vec()
}

/// Confirms the enrolment with a first code; answers the recovery codes.
pub fn confirm(
    tx: &WriteTx,
    key: &MfaKey,
    auth: &Authenticated,
    code: &str,
    address: &str,
) -> Result<RecoveryCodes> {
    require_session(auth)?;
    let stored = match store::find(tx, auth.account_id)? {
        Some(stored) if !stored.confirmed => stored,
        Some(_) => {
            return Err(ApiError::conflict(
                "mfa_already_enabled",
                "the TOTP authenticator is already confirmed",
            ));
        }
        None => {
            return Err(ApiError::conflict(
                "mfa_not_enrolling",
                "start an enrolment first (POST /auth/mfa/totp)",
            ));
        }
    };
    let secret = key.decrypt(&stored.secret_encrypted)?;
    let Some(step) = totp::verify(&secret, code, unix_now(), None) else {
        return Err(ApiError::invalid(
            "mfa.code",
            "is not the authenticator's current code",
        ));
    };
    store::confirm(tx, auth.account_id, step, &crate::domain::Timestamp::now())?;
    let recovery_codes = new_recovery_codes(tx, auth.account_id)?;
    events::record(
        tx,
        Some(auth.account_id),
        "mfa.enabled",
        address,
        json!({"method": "totp"}),
    )?;
    Ok(RecoveryCodes { recovery_codes })
}

/// Which second factor a sign-in or a disabling gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factor {
    Totp,
    RecoveryCode,
}

/// Checks a TOTP code or, failing that, an unused recovery code, and uses
/// it up (a TOTP step is good once; a recovery code once ever).
pub fn check(tx: &WriteTx, key: &MfaKey, account_id: i64, code: &str) -> Result<Option<Factor>> {
    let Some(stored) = store::find(tx, account_id)?.filter(|t| t.confirmed) else {
        return Ok(None);
    };
    let secret = key.decrypt(&stored.secret_encrypted)?;
    if let Some(step) = totp::verify(&secret, code, unix_now(), stored.last_step) {
        store::set_last_step(tx, account_id, step)?;
        return Ok(Some(Factor::Totp));
    }
    let digest = recovery_digest(code);
    let mut matched = None;
    for (id, stored) in store::unused_recovery_codes(tx, account_id)? {
        if bool::from(stored.ct_eq(&digest)) {
            matched = Some(id);
        }
    }
    match matched {
        Some(id) => {
            store::use_recovery_code(tx, id, &crate::domain::Timestamp::now())?;
            Ok(Some(Factor::RecoveryCode))
        }
        None => Ok(None),
    }
}

/// Turns the second factor off; the password was verified by the caller
/// (off the writer, argon2 being slow) and `password_ok` says how it went.
pub fn disable(
    tx: &WriteTx,
    key: &MfaKey,
    auth: &Authenticated,
    password_ok: bool,
    code: &str,
    address: &str,
) -> Result<()> {
    require_session(auth)?;
    if !enabled(tx, auth.account_id)? {
        return Err(ApiError::conflict(
            "mfa_not_enabled",
            "no TOTP authenticator is enabled",
        ));
    }
    if !password_ok {
        return Err(ApiError::invalid(
            "mfa.password",
            "is not the account's password",
        ));
    }
    if check(tx, key, auth.account_id, code)?.is_none() {
        return Err(ApiError::invalid(
            "mfa.code",
            "is neither the authenticator's current code nor an unused recovery code",
        ));
    }
    store::remove(tx, auth.account_id)?;
    events::record(
        tx,
        Some(auth.account_id),
        "mfa.disabled",
        address,
        json!({"via": "account"}),
    )
}

/// The host operator's reset of a locked-out account (`pillbox account reset-mfa`).
pub fn reset(tx: &WriteTx, account_id: i64) -> Result<bool> {
    let removed = store::remove(tx, account_id)?;
    events::record(
        tx,
        Some(account_id),
        "mfa.reset",
        "cli",
        json!({"via": "cli"}),
    )?;
    Ok(removed)
}
