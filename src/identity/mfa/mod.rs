//! Multi-factor: one TOTP authenticator per account (RFC 6238), its secret
//! encrypted at rest with the server's key, and ten one-time recovery codes
//! stored as SHA-256 digests. Enrolment shows the secret once and takes
//! effect only when a first code confirms it. Every change needs the
//! password in the same request (`proof`); new recovery codes and turning
//! the factor off need a current code as well, and turning it on or off
//! signs the account's other devices out.

pub mod crypt;
pub mod model;
pub mod proof;
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
fn require_session(auth: &Authenticated) -> Result<i64> {
    match auth.credential {
        Credential::Session { id } => Ok(id),
        Credential::AppToken { .. } => Err(ApiError::forbidden(
            "second factors are managed by a signed-in user, not with an app token",
        )),
    }
}

/// A signed-in user who has just given the account's password. Only
/// `proof::password` makes one (the fields are private to this module), so
/// no rule below changes a second factor on a bearer token alone.
#[derive(Debug)]
pub struct Proven {
    account_id: i64,
    session_id: i64,
    email: String,
    address: String,
}

/// What a rule that checks a code answers. A wrong code is counted like a
/// failed sign-in, and that count must be kept although the change is
/// refused, so the rule answers `Ok(Err(..))` (the transaction commits) and
/// the handler turns it into the 422 afterwards.
pub type Checked<T> = std::result::Result<T, ApiError>;

fn wrong_code<T>(tx: &WriteTx, proven: &Proven, message: &str) -> Result<Checked<T>> {
    events::failed(
        tx,
        Some(proven.account_id),
        &proven.email,
        &proven.address,
        "mfa_code",
    )?;
    Ok(Err(ApiError::invalid("mfa.code", message)))
}

/// Turning the factor on or off ends every other session of the account
/// (one of them may be the stolen one); the caller's own stays.
fn sign_out_others(tx: &WriteTx, proven: &Proven, reason: &str) -> Result<usize> {
    crate::identity::sessions::store::revoke_others_of_account(
        tx,
        proven.account_id,
        proven.session_id,
        reason,
        &crate::domain::Timestamp::now(),
    )
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
pub fn begin(tx: &WriteTx, key: &MfaKey, proven: &Proven, issuer: &str) -> Result<TotpEnrolment> {
    let account_id = proven.account_id;
    if enabled(tx, account_id)? {
        return Err(ApiError::conflict(
            "mfa_already_enabled",
            "a TOTP authenticator is already enabled; disable it first to enrol another",
        ));
    }
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut secret).expect("operating system random source");
    store::put_unconfirmed(
        tx,
        account_id,
        &key.encrypt(&secret)?,
        &crate::domain::Timestamp::now(),
    )?;
    Ok(TotpEnrolment {
        secret: totp::base32(&secret),
        otpauth_uri: totp::otpauth_uri(issuer, &proven.email, &secret),
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
    proven: &Proven,
    code: &str,
) -> Result<Checked<RecoveryCodes>> {
    let account_id = proven.account_id;
    let stored = match store::find(tx, account_id)? {
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
        return wrong_code(tx, proven, "is not the authenticator's current code");
    };
    store::confirm(tx, account_id, step, &crate::domain::Timestamp::now())?;
    let recovery_codes = new_recovery_codes(tx, account_id)?;
    let ended = sign_out_others(tx, proven, "mfa_enabled")?;
    events::record(
        tx,
        Some(account_id),
        "mfa.enabled",
        &proven.address,
        json!({"method": "totp", "sessions_revoked": ended}),
    )?;
    Ok(Ok(RecoveryCodes { recovery_codes }))
}

/// Ten new recovery codes in place of the old ones (all of them, used or
/// not), for a user who gives the password and a current code.
pub fn regenerate(
    tx: &WriteTx,
    key: &MfaKey,
    proven: &Proven,
    code: &str,
) -> Result<Checked<RecoveryCodes>> {
    let account_id = proven.account_id;
    require_enabled(tx, account_id)?;
    if check(tx, key, account_id, code)?.is_none() {
        return wrong_code(tx, proven, NOT_A_CODE);
    }
    let recovery_codes = new_recovery_codes(tx, account_id)?;
    events::record(
        tx,
        Some(account_id),
        "mfa.recovery_codes_replaced",
        &proven.address,
        json!({"count": RECOVERY_CODE_COUNT}),
    )?;
    Ok(Ok(RecoveryCodes { recovery_codes }))
}

const NOT_A_CODE: &str = "is neither the authenticator's current code nor an unused recovery code";

fn require_enabled(tx: &WriteTx, account_id: i64) -> Result<()> {
    if enabled(tx, account_id)? {
        Ok(())
    } else {
        Err(ApiError::conflict(
            "mfa_not_enabled",
            "no TOTP authenticator is enabled",
        ))
    }
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

/// Turns the second factor off for a user who gives the password and a
/// current code or recovery code.
pub fn disable(tx: &WriteTx, key: &MfaKey, proven: &Proven, code: &str) -> Result<Checked<()>> {
    let account_id = proven.account_id;
    require_enabled(tx, account_id)?;
    if check(tx, key, account_id, code)?.is_none() {
        return wrong_code(tx, proven, NOT_A_CODE);
    }
    store::remove(tx, account_id)?;
    let ended = sign_out_others(tx, proven, "mfa_disabled")?;
    events::record(
        tx,
        Some(account_id),
        "mfa.disabled",
        &proven.address,
        json!({"via": "account", "sessions_revoked": ended}),
    )?;
    Ok(Ok(()))
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
