//! The OAuth 2.0 authorization server for public clients: authorization
//! codes bound to a PKCE S256 challenge, the token endpoint's two grants
//! and revocation. A code is single-use: presenting it again revokes the
//! session its first use started. A refresh token is single-use too:
//! presenting one that was already exchanged revokes its whole session
//! (RFC 6819 5.2.2.3, the stolen-token case).

pub mod model;
pub mod routes;
pub mod store;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::token::{self, ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX};
use crate::db::WriteTx;
use crate::error::Result;
use crate::identity::clients::Client;
use crate::identity::events;
use crate::identity::sessions::{self, Lifetimes};
use model::{OAuthError, TokenForm, TokenResponse};
pub use store::Grant;

pub const CODE_PREFIX: &str = "pbx_ac_";
/// A code is redeemed by the app right after the redirect; a minute is ample.
pub const CODE_LIFETIME_SECS: i64 = 60;

/// The token endpoint's answer: a token response or an RFC 6749 error. An
/// error is still an `Ok` of the write, so what it revoked is kept.
pub type Outcome = std::result::Result<TokenResponse, OAuthError>;

/// Issues a code for a signed-in account; the string exists only here.
pub fn issue_code(tx: &WriteTx, grant: &Grant) -> Result<String> {
    let code = token::generate(CODE_PREFIX);
    let now = jiff::Timestamp::now();
    let expires = now + jiff::SignedDuration::from_secs(CODE_LIFETIME_SECS);
    store::delete_expired(
        tx,
        &crate::domain::Timestamp::from_jiff(now - jiff::SignedDuration::from_hours(24)),
    )?;
    store::insert_code(
        tx,
        &code,
        grant,
        &crate::domain::Timestamp::from_jiff(now),
        &crate::domain::Timestamp::from_jiff(expires),
    )?;
    Ok(code.token)
}

/// RFC 7636 4.1: 43 to 128 unreserved characters.
pub fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// A S256 challenge is the unpadded base64url of a SHA-256 digest: 43 characters.
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
}

/// S256: BASE64URL(SHA256(verifier)) == challenge, compared in constant time.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

/// What the token endpoint needs to know of the server.
pub struct Context {
    pub clients: Vec<Client>,
    pub lifetimes: Lifetimes,
    pub address: String,
}

fn required<'a>(value: &'a Option<String>, name: &str) -> std::result::Result<&'a str, OAuthError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

/// The token endpoint.
pub fn exchange(tx: &WriteTx, context: &Context, form: &TokenForm) -> Result<Outcome> {
    let client_id = match required(&form.client_id, "client_id") {
        Ok(id) => id,
        Err(e) => return Ok(Err(e)),
    };
    let Some(client) = context.clients.iter().find(|c| c.id == client_id) else {
        return Ok(Err(OAuthError::new(
            "invalid_client",
            "the client is not registered with this server",
        )));
    };
    match form.grant_type.as_deref() {
        Some("authorization_code") => redeem_code(tx, context, client, form),
        Some("refresh_token") => refresh(tx, context, client, form),
        Some(_) => Ok(Err(OAuthError::new(
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token",
        ))),
        None => Ok(Err(OAuthError::invalid_request("grant_type is required"))),
    }
}

fn respond(issued: sessions::Issued, scope: String) -> Outcome {
    Ok(TokenResponse {
        access_token: issued.access_token,
        token_type: "Bearer",
        expires_in: issued.expires_in,
        refresh_token: issued.refresh_token,
        scope,
    })
}

fn redeem_code(
    tx: &WriteTx,
    context: &Context,
    client: &Client,
    form: &TokenForm,
) -> Result<Outcome> {
    let (code, redirect_uri, verifier) = match (
        required(&form.code, "code"),
        required(&form.redirect_uri, "redirect_uri"),
        required(&form.code_verifier, "code_verifier"),
    ) {
        (Ok(c), Ok(r), Ok(v)) => (c, r, v),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Ok(Err(e)),
    };
    const INVALID: &str = "the authorization code is invalid, expired or already used";
    let Some(presented) = token::parse_with(CODE_PREFIX, code) else {
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    };
    let Some(stored) = store::find_code(tx, presented.selector)? else {
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    };
    if !presented.matches(&stored.secret_sha256) {
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    }
    let now = crate::domain::Timestamp::now();
    if stored.used_at.is_some() {
        // Someone holds a copy of the code: whatever it issued is revoked.
        if let Some(session_id) = stored.session_id {
            sessions::revoke(
                tx,
                stored.grant.account_id,
                session_id,
                "code_reused",
                &context.address,
            )?;
        }
        events::record(
            tx,
            Some(stored.grant.account_id),
            "oauth.code_reused",
            &context.address,
            json!({"client_id": stored.grant.client_id}),
        )?;
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    }
    if stored.expires_at <= now {
        store::mark_used(tx, stored.id, &now, None)?;
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    }
    if stored.grant.client_id != client.id {
        // Another client holding this code saw its redirect: burnt, as a
        // wrong verifier burns it, so the right client cannot use it after.
        store::mark_used(tx, stored.id, &now, None)?;
        return Ok(Err(OAuthError::invalid_grant(
            "the authorization code was issued to another client",
        )));
    }
    if stored.grant.redirect_uri != redirect_uri {
        store::mark_used(tx, stored.id, &now, None)?;
        return Ok(Err(OAuthError::invalid_grant(
            "redirect_uri differs from the one the code was requested with",
        )));
    }
    if !valid_verifier(verifier) || !pkce_matches(verifier, &stored.grant.code_challenge) {
        store::mark_used(tx, stored.id, &now, None)?;
        return Ok(Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge",
        )));
    }
    let issued = sessions::start(
        tx,
        stored.grant.account_id,
        &client.id,
        &stored.grant.device_label,
        context.lifetimes,
    )?;
    store::mark_used(tx, stored.id, &now, Some(issued.session_id))?;
    Ok(respond(issued, stored.grant.scope))
}

fn refresh(tx: &WriteTx, context: &Context, client: &Client, form: &TokenForm) -> Result<Outcome> {
    let presented = match required(&form.refresh_token, "refresh_token") {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    const INVALID: &str = "the refresh token is invalid, expired or revoked";
    let Some(presented) = token::parse_with(REFRESH_TOKEN_PREFIX, presented) else {
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    };
    let stored = match sessions::store::find_token(tx, presented.selector)? {
        Some(t) if t.kind == "refresh" && presented.matches(&t.secret_sha256) => t,
        _ => return Ok(Err(OAuthError::invalid_grant(INVALID))),
    };
    let now = crate::domain::Timestamp::now();
    if stored.session_revoked || stored.expires_at <= now || stored.session_expires_at <= now {
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    }
    if stored.client_id != client.id {
        return Ok(Err(OAuthError::invalid_grant(
            "the refresh token was issued to another client",
        )));
    }
    if stored.rotated_at.is_some() {
        sessions::revoke(
            tx,
            stored.account_id,
            stored.session_id,
            "refresh_token_reused",
            &context.address,
        )?;
        return Ok(Err(OAuthError::invalid_grant(INVALID)));
    }
    sessions::store::mark_rotated(tx, stored.id, &now)?;
    let issued = sessions::issue(tx, stored.session_id, context.lifetimes)?;
    // There is one scope, so a refresh keeps it.
    Ok(respond(issued, crate::identity::clients::SCOPE.to_string()))
}

/// RFC 7009: revokes the session of an access or refresh token. A token
/// that is unknown, of another client or already revoked is no error.
/// RFC 7009: an unknown or invalid token is answered as revoked (nothing
/// to tell); a token issued to another client than the one naming itself
/// is refused (2.1) and stays valid.
pub fn revoke(
    tx: &WriteTx,
    token_text: &str,
    client_id: Option<&str>,
    address: &str,
) -> Result<std::result::Result<(), OAuthError>> {
    let presented = token::parse_with(ACCESS_TOKEN_PREFIX, token_text)
        .or_else(|| token::parse_with(REFRESH_TOKEN_PREFIX, token_text));
    let Some(presented) = presented else {
        return Ok(Ok(()));
    };
    let Some(stored) = sessions::store::find_token(tx, presented.selector)? else {
        return Ok(Ok(()));
    };
    if !presented.matches(&stored.secret_sha256) {
        return Ok(Ok(()));
    }
    if client_id.is_some_and(|id| id != stored.client_id) {
        return Ok(Err(OAuthError::new(
            "unauthorized_client",
            "the token was not issued to this client",
        )));
    }
    sessions::revoke(tx, stored.account_id, stored.session_id, "revoked", address)?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_verifier(verifier));
        assert!(valid_challenge(challenge));
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches(challenge, challenge));
        assert!(!valid_verifier("short"));
    }
}
