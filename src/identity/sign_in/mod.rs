//! The sign-in page behind the authorize endpoint: checks the OAuth
//! request, then the email and password and, where the account has one,
//! the second factor, and sends the browser back to the client with a
//! code. Whether an email has an account is never revealed: an unknown
//! email costs the same password hash, fails with the same words and is
//! slowed by the same counters.

pub mod model;
pub mod page;
pub mod password;
pub mod routes;
pub mod store;

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension};
use serde_json::json;

use crate::auth::token;
use crate::db::WriteTx;
use crate::error::Result;
use crate::identity::clients::{self, Client, SCOPE};
use crate::identity::mfa::{self, Factor, crypt::MfaKey};
use crate::identity::oidc::{self, Confirmation};
use crate::identity::settings::OAuthSettings;
use crate::identity::{events, oauth};
pub use model::{AuthorizeParams, SignInForm};

/// A checked authorization request.
#[derive(Debug, Clone)]
pub struct Authorization {
    pub client: Client,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub scope: String,
    pub link_token: Option<String>,
}

/// Why a request cannot go on: a page of our own when the client or its
/// redirect URI cannot be trusted, else an error sent back to the client.
#[derive(Debug)]
pub enum Refusal {
    Page(&'static str),
    Redirect(String),
}

/// `redirect_uri` with these parameters added (and the issuer, RFC 9207).
pub fn redirect_with(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    format!("{redirect_uri}{separator}{query}")
}

/// RFC 6749 4.1.2.1: once the client and redirect URI are trusted, errors
/// go back to the client with `state`.
fn refuse(
    redirect_uri: &str,
    state: Option<&str>,
    issuer: &str,
    error: &str,
    description: &str,
) -> Refusal {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        params.push(("state", state));
    }
    params.push(("iss", issuer));
    Refusal::Redirect(redirect_with(redirect_uri, &params))
}

pub fn validate(
    oauth: &OAuthSettings,
    base: &str,
    params: &AuthorizeParams,
) -> std::result::Result<Authorization, Refusal> {
    let client = params
        .client_id
        .as_deref()
        .and_then(|id| clients::find(oauth, base, id))
        .ok_or(Refusal::Page(
            "This app is not registered with this Pillbox server.",
        ))?;
    let redirect_uri = client
        .redirect_uri(params.redirect_uri.as_deref())
        .ok_or(Refusal::Page(
            "The app asked to return to an address that is not registered for it.",
        ))?;
    let state = params.state.as_deref();
    let back = |error, description| refuse(&redirect_uri, state, base, error, description);
    if params.response_type.as_deref() != Some("code") {
        return Err(back(
            "unsupported_response_type",
            "response_type must be code",
        ));
    }
    let Some(code_challenge) = params.code_challenge.as_deref() else {
        return Err(back(
            "invalid_request",
            "code_challenge is required (PKCE with S256)",
        ));
    };
    if params.code_challenge_method.as_deref() != Some("S256") {
        return Err(back(
            "invalid_request",
            "code_challenge_method must be S256",
        ));
    }
    if !oauth::valid_challenge(code_challenge) {
        return Err(back(
            "invalid_request",
            "code_challenge must be the 43-character base64url SHA-256 of the verifier",
        ));
    }
    let scope = match params.scope.as_deref().map(str::trim) {
        None | Some("") => SCOPE.to_string(),
        Some(scope) if scope.split_whitespace().all(|s| s == SCOPE) => SCOPE.to_string(),
        Some(_) => return Err(back("invalid_scope", "the only scope is pillbox")),
    };
    Ok(Authorization {
        client,
        redirect_uri: redirect_uri.clone(),
        state: params.state.clone(),
        code_challenge: code_challenge.to_string(),
        scope,
        link_token: params.link_token.clone(),
    })
}

/// A short, printable device name: the client's, else the user agent's.
pub fn device_label(given: Option<&str>, user_agent: Option<&str>) -> String {
    let label: String = given
        .or(user_agent)
        .unwrap_or("Unknown device")
        .chars()
        .filter(|c| !c.is_control())
        .take(120)
        .collect();
    let label = label.trim();
    if label.is_empty() {
        "Unknown device".into()
    } else {
        label.to_string()
    }
}

/// A second-step wait of five minutes at most.
const PENDING_SECS: i64 = 5 * 60;
pub const PENDING_PREFIX: &str = "pbx_si_";

/// The account of an email and its password hash.
pub fn find_account(conn: &Connection, email: &str) -> Result<Option<(i64, String)>> {
    Ok(conn
        .prepare_kept("SELECT id, password_hash FROM accounts WHERE email = ?1")?
        .query_row([email.trim()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// What the password step leads to.
pub enum AfterPassword {
    /// Back to the client with this URL (code and state).
    Done(String),
    /// The second step, for the sign-in this token names.
    SecondStep(String),
    /// Signed in on a link's page: the account is asked to confirm the link.
    ConfirmLink(Confirmation),
}

/// A signed-in account, on its way back to the client.
pub struct SignedIn<'a> {
    pub account_id: i64,
    pub email: &'a str,
    pub step: &'a str,
}

/// The end of a sign-in that proved the account: back to the client, or,
/// on a link's page this browser holds, the link's confirmation first.
fn finish(
    tx: &WriteTx,
    request: &Authorization,
    issuer: &str,
    who: &SignedIn<'_>,
    device_label: &str,
    address: &str,
) -> Result<std::result::Result<String, Confirmation>> {
    if let Some(link) = request.link_token.as_deref()
        && let Some(confirmation) = oidc::ask_to_confirm(tx, link, who.account_id, who.step)?
    {
        return Ok(Err(confirmation));
    }
    complete(
        tx,
        request,
        issuer,
        who.account_id,
        who.email,
        device_label,
        address,
        who.step,
    )
    .map(Ok)
}

/// What the link's confirmation leads to.
pub enum AfterConfirmation {
    Done(String),
    /// The link or its confirmation is unknown, spent or expired.
    Expired,
}

/// The answer of the confirmation page: link (or not), then back to the
/// client as the account that signed in.
#[allow(clippy::too_many_arguments)]
pub fn answer_link(
    tx: &WriteTx,
    request: &Authorization,
    issuer: &str,
    secret: &str,
    yes: bool,
    device_label: &str,
    address: &str,
    mail_on: bool,
) -> Result<AfterConfirmation> {
    let Some(link) = request.link_token.as_deref() else {
        return Ok(AfterConfirmation::Expired);
    };
    let Some(answered) = oidc::answer(tx, link, secret, yes, address, mail_on)? else {
        return Ok(AfterConfirmation::Expired);
    };
    let email = crate::auth::accounts::email_of(tx, answered.account_id)?;
    complete(
        tx,
        request,
        issuer,
        answered.account_id,
        &email,
        device_label,
        address,
        &answered.step,
    )
    .map(AfterConfirmation::Done)
}

/// Records a successful sign-in (whatever it leads to) and forgets the
/// account's failures.
pub fn succeeded(
    tx: &WriteTx,
    account_id: i64,
    email: &str,
    address: &str,
    metadata: serde_json::Value,
) -> Result<()> {
    events::clear(tx, &events::account_key(email))?;
    tracing::info!(account_id, "signed in");
    events::record(tx, Some(account_id), "sign_in.succeeded", address, metadata)
}

/// The code for a completed sign-in, and the URL that hands it to the client.
#[allow(clippy::too_many_arguments)]
pub fn complete(
    tx: &WriteTx,
    request: &Authorization,
    issuer: &str,
    account_id: i64,
    email: &str,
    device_label: &str,
    address: &str,
    step: &str,
) -> Result<String> {
    succeeded(
        tx,
        account_id,
        email,
        address,
        json!({"step": step, "client_id": request.client.id}),
    )?;
    let code = oauth::issue_code(
        tx,
        &oauth::Grant {
            account_id,
            client_id: request.client.id.clone(),
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.code_challenge.clone(),
            scope: request.scope.clone(),
            device_label: device_label.to_string(),
        },
    )?;
    let mut params = vec![("code", code.as_str())];
    if let Some(state) = request.state.as_deref() {
        params.push(("state", state));
    }
    params.push(("iss", issuer));
    Ok(redirect_with(&request.redirect_uri, &params))
}

/// After a correct password: the token of a pending second step when the
/// account has one, else `None` (the account is verified).
pub fn begin_second_step(tx: &WriteTx, account_id: i64) -> Result<Option<String>> {
    if !mfa::enabled(tx, account_id)? {
        return Ok(None);
    }
    let pending = token::generate(PENDING_PREFIX);
    let expires = crate::domain::Timestamp::from_jiff(
        jiff::Timestamp::now() + jiff::SignedDuration::from_secs(PENDING_SECS),
    );
    store::insert_pending(tx, &pending, account_id, &expires)?;
    Ok(Some(pending.token))
}

/// After a correct password: done, or on to the second step.
#[allow(clippy::too_many_arguments)]
pub fn password_accepted(
    tx: &WriteTx,
    request: &Authorization,
    issuer: &str,
    account_id: i64,
    email: &str,
    device_label: &str,
    address: &str,
) -> Result<AfterPassword> {
    if let Some(pending) = begin_second_step(tx, account_id)? {
        return Ok(AfterPassword::SecondStep(pending));
    }
    let who = SignedIn {
        account_id,
        email,
        step: "password",
    };
    Ok(
        match finish(tx, request, issuer, &who, device_label, address)? {
            Ok(url) => AfterPassword::Done(url),
            Err(confirmation) => AfterPassword::ConfirmLink(confirmation),
        },
    )
}

/// What a second-step code proves.
pub enum SecondFactor {
    /// The pending sign-in's account, and the step that verified it.
    Verified {
        account_id: i64,
        email: String,
        step: &'static str,
    },
    /// The code was wrong (counted as a failure); the same pending sign-in may try again.
    WrongCode,
    /// The pending sign-in is unknown or expired: start again.
    Expired,
}

/// Checks a second-step code against the pending sign-in it names; a
/// verified one is spent.
pub fn verify_second_step(
    tx: &WriteTx,
    key: &MfaKey,
    pending: &str,
    code: &str,
    address: &str,
) -> Result<SecondFactor> {
    let Some(presented) = token::parse_with(PENDING_PREFIX, pending) else {
        return Ok(SecondFactor::Expired);
    };
    let Some(found) = store::find_pending(tx, presented.selector)? else {
        return Ok(SecondFactor::Expired);
    };
    if !presented.matches(&found.secret_sha256)
        || found.expires_at <= crate::domain::Timestamp::now()
    {
        return Ok(SecondFactor::Expired);
    }
    let (id, account_id) = (found.id, found.account_id);
    let email = crate::auth::accounts::email_of(tx, account_id)?;
    match mfa::check(tx, key, account_id, code)? {
        Some(factor) => {
            store::delete_pending(tx, id)?;
            let step = match factor {
                Factor::Totp => "totp",
                Factor::RecoveryCode => "recovery_code",
            };
            Ok(SecondFactor::Verified {
                account_id,
                email,
                step,
            })
        }
        None => {
            events::failed(tx, Some(account_id), &email, address, "second_factor")?;
            Ok(SecondFactor::WrongCode)
        }
    }
}

/// What the second step leads to.
pub enum AfterSecondStep {
    Done(String),
    /// Signed in on a link's page: the account is asked to confirm the link.
    ConfirmLink(Confirmation),
    /// The code was wrong; the same pending sign-in may try again.
    WrongCode,
    /// The pending sign-in is unknown or expired: start again.
    Expired,
}

#[allow(clippy::too_many_arguments)]
pub fn second_step(
    tx: &WriteTx,
    key: &MfaKey,
    request: &Authorization,
    issuer: &str,
    pending: &str,
    code: &str,
    device_label: &str,
    address: &str,
) -> Result<AfterSecondStep> {
    Ok(match verify_second_step(tx, key, pending, code, address)? {
        SecondFactor::Verified {
            account_id,
            email,
            step,
        } => {
            let who = SignedIn {
                account_id,
                email: &email,
                step,
            };
            match finish(tx, request, issuer, &who, device_label, address)? {
                Ok(url) => AfterSecondStep::Done(url),
                Err(confirmation) => AfterSecondStep::ConfirmLink(confirmation),
            }
        }
        SecondFactor::WrongCode => AfterSecondStep::WrongCode,
        SecondFactor::Expired => AfterSecondStep::Expired,
    })
}

/// The email of a pending sign-in, for its failure counter before the step.
pub fn pending_email(conn: &Connection, pending: &str) -> Result<Option<String>> {
    let Some(presented) = token::parse_with(PENDING_PREFIX, pending) else {
        return Ok(None);
    };
    Ok(conn
        .prepare_kept(
            "SELECT a.email FROM sign_in_pending p JOIN accounts a ON a.id = p.account_id
             WHERE p.selector = ?1",
        )?
        .query_row([presented.selector], |r| r.get(0))
        .optional()?)
}
