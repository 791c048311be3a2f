//! Delegated sign-in with OpenID Connect: the authorization code flow with
//! PKCE (S256) and a nonce to the configured provider, its ID token
//! verified against the provider's JWKS (`jwt`), and the identity matched
//! to an account: one linked before (issuer and subject), or else the
//! account of the token's email when the provider says it is verified,
//! linked once that sign-in completes. An identity no account matched is
//! linked only by the browser that came back from the provider, after the
//! account's password, its second factor and an explicit confirmation. The
//! account's second factor is asked after the provider too unless the
//! provider says it performed one. A sign-in that succeeds lands where a
//! password sign-in does: a code of our own authorization server for the
//! app, or the acceptance of an invitation. Every outcome is audited, and
//! every link and unlink is told to the account's email.

pub mod identity_routes;
pub mod jwt;
pub mod model;
mod notice;
pub mod routes;
pub mod store;

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::identity::events;
use crate::identity::settings::OidcSettings;
use crate::state::AppState;
use model::{Claims, Discovery, Jwks};

/// Where the provider sends the browser back, outside the API.
pub const CALLBACK_PATH: &str = "/oidc/callback";
/// The cookies of a sign-in in progress are scoped to the callback.
pub const COOKIE_PATH: &str = "/oidc";
pub const STATE_COOKIE: &str = "pillbox_oidc_state";
pub const INVITATION_COOKIE: &str = "pillbox_oidc_invitation";
/// A sign-in must come back from the provider within ten minutes.
const PENDING_SECS: i64 = 10 * 60;

pub fn redirect_uri(base: &str) -> String {
    format!("{base}{CALLBACK_PATH}")
}

/// Why a delegated sign-in did not go through; each is a page of its own
/// and the `reason` of the `sign_in.failed` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Discovery, token or key endpoint down, failing or answering nonsense.
    Unavailable,
    /// The provider sent an error back (the user cancelled, consent refused).
    Cancelled,
    /// Unknown, used or expired state, or one started in another browser.
    Expired,
    Invalid(jwt::Invalid),
    EmailNotVerified,
    NoAccount,
    /// The account has a second factor the provider did not check, on a
    /// page that cannot ask for it (the invitation's).
    SecondFactorRequired,
}

impl Failure {
    pub fn reason(self) -> &'static str {
        match self {
            Failure::Unavailable => "provider_unavailable",
            Failure::Cancelled => "provider_error",
            Failure::Expired => "state_mismatch",
            Failure::Invalid(invalid) => invalid.as_str(),
            Failure::EmailNotVerified => "email_not_verified",
            Failure::NoAccount => "no_matching_account",
            Failure::SecondFactorRequired => "second_factor_required",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Failure::Unavailable => StatusCode::BAD_GATEWAY,
            Failure::Cancelled | Failure::Invalid(_) => StatusCode::UNAUTHORIZED,
            Failure::Expired => StatusCode::BAD_REQUEST,
            Failure::EmailNotVerified | Failure::NoAccount | Failure::SecondFactorRequired => {
                StatusCode::FORBIDDEN
            }
        }
    }

    pub fn message(self, provider: &str) -> String {
        match self {
            Failure::Unavailable => format!(
                "{provider} is not answering right now, so signing in with it is not possible. Try again in a few minutes, or sign in with your password."
            ),
            Failure::Cancelled => format!("Signing in with {provider} was cancelled or refused."),
            Failure::Expired => {
                "This sign-in has expired or was started in another browser. Please start again."
                    .into()
            }
            Failure::Invalid(_) => format!(
                "The answer from {provider} could not be verified, so you are not signed in. Please start again."
            ),
            Failure::EmailNotVerified => format!(
                "{provider} has not verified your email address, so it cannot be matched to a Pillbox account. Verify it there, or sign in with your password."
            ),
            Failure::NoAccount => format!(
                "No Pillbox account has the email address {provider} gave. Sign in with your password, or ask your household's administrator for an invitation."
            ),
            Failure::SecondFactorRequired => format!(
                "Your Pillbox account has two-step verification, and {provider} did not say it checked a second factor. Open the invitation link again and sign in with your password and your code."
            ),
        }
    }
}

fn random() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("operating system random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn digest(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes()).to_vec()
}

/// A new sign-in's secrets: the state (the browser keeps it in a cookie
/// too), the nonce the ID token must carry, and the PKCE verifier.
#[derive(Clone)]
pub struct Started {
    pub state: String,
    pub nonce: String,
    pub code_verifier: String,
}

impl Started {
    pub fn generate() -> Started {
        Started {
            state: random(),
            nonce: random(),
            code_verifier: random(),
        }
    }

    /// The provider's authorization URL for this sign-in.
    pub fn authorization_url(
        &self,
        discovery: &Discovery,
        settings: &OidcSettings,
        base: &str,
    ) -> String {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(self.code_verifier.as_bytes()));
        let query = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", settings.client_id.as_str()),
            ("redirect_uri", redirect_uri(base).as_str()),
            ("scope", "openid email profile"),
            ("state", self.state.as_str()),
            ("nonce", self.nonce.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ])
        .unwrap_or_default();
        let separator = if discovery.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        format!("{}{separator}{query}", discovery.authorization_endpoint)
    }

    /// Keeps the sign-in for the callback, found by the digest of its state.
    pub fn save(&self, tx: &WriteTx, purpose: &model::Purpose) -> Result<()> {
        let purpose = serde_json::to_string(purpose).map_err(crate::error::ApiError::internal)?;
        let expires = Timestamp::now().plus(jiff::SignedDuration::from_secs(PENDING_SECS));
        store::insert_pending(
            tx,
            &digest(&self.state),
            &self.nonce,
            &self.code_verifier,
            &purpose,
            &expires,
        )
    }
}

/// The verified identity, matched to an account or not.
pub enum Matched {
    Account {
        account_id: i64,
        email: String,
        /// Whether the identity is linked already, or matched by its email
        /// (then linked once the sign-in completes).
        linked: bool,
    },
    /// No linked account and none of the token's (verified) email.
    Unknown { verified_email: Option<String> },
}

/// Finds the account of a verified ID token: the linked one, else that of
/// its email if the provider verified it. Links nothing: a match by email
/// is linked by `link_identity` once the whole sign-in has succeeded.
pub fn match_account(
    tx: &WriteTx,
    claims: &Claims,
) -> Result<std::result::Result<Matched, Failure>> {
    if let Some(account_id) = store::linked_account(tx, &claims.iss, &claims.sub)? {
        store::touch(tx, &claims.iss, &claims.sub)?;
        let email = crate::auth::accounts::email_of(tx, account_id)?;
        return Ok(Ok(Matched::Account {
            account_id,
            email,
            linked: true,
        }));
    }
    let email = claims
        .email
        .as_deref()
        .map(|e| e.trim().to_lowercase())
        .filter(|e| !e.is_empty());
    let Some(email) = email else {
        return Ok(Err(Failure::NoAccount));
    };
    if !claims.email_verified() {
        return Ok(Err(Failure::EmailNotVerified));
    }
    match crate::auth::accounts::find_by_email(tx, &email)? {
        Some(account_id) => Ok(Ok(Matched::Account {
            account_id,
            email,
            linked: false,
        })),
        None => Ok(Ok(Matched::Unknown {
            verified_email: Some(email),
        })),
    }
}

/// Whether signing in with the provider must still ask for the account's
/// own second factor: the account has one and the provider does not say
/// it performed one.
pub fn needs_second_factor(
    conn: &rusqlite::Connection,
    settings: &OidcSettings,
    claims: &Claims,
    account_id: i64,
) -> Result<bool> {
    Ok(crate::identity::mfa::enabled(conn, account_id)?
        && !claims.second_factor_done(&settings.mfa_acr_values))
}

/// The identity a link joins to an account, and how it came to be linked
/// (`email`: the provider's verified email; `password`: the account's
/// owner confirmed it after signing in; `invitation`: a new account).
pub struct NewLink<'a> {
    pub issuer: &'a str,
    pub subject: &'a str,
    pub label: &'a str,
    pub via: &'static str,
}

/// Links an identity to an account, audited and told to the account's
/// email when mail is on. An identity linked already stays as it is.
pub fn link_identity(
    tx: &WriteTx,
    link: &NewLink<'_>,
    account_id: i64,
    address: &str,
    mail_on: bool,
) -> Result<()> {
    if store::link(tx, link.issuer, link.subject, account_id, link.label)?.is_none() {
        return Ok(());
    }
    tracing::info!(account_id, via = link.via, "provider identity linked");
    events::record(
        tx,
        Some(account_id),
        "oidc.linked",
        address,
        json!({"issuer": link.issuer, "via": link.via}),
    )?;
    if mail_on {
        notice::linked(tx, account_id, link.label, address)?;
    }
    Ok(())
}

/// The account's linked identities.
pub fn linked_identities(
    conn: &rusqlite::Connection,
    account_id: i64,
    page: crate::domain::Page,
) -> Result<(Vec<model::LinkedIdentity>, i64)> {
    store::list_linked(conn, account_id, page)
}

/// Removes one of the account's linked identities (another account's is
/// not found), audited and told to the account's email when mail is on.
pub fn unlink_identity(
    tx: &WriteTx,
    account_id: i64,
    id: i64,
    address: &str,
    mail_on: bool,
) -> Result<()> {
    let removed = store::unlink(tx, account_id, id)?
        .ok_or_else(|| crate::error::ApiError::not_found("linked identity"))?;
    tracing::info!(account_id, "provider identity unlinked");
    events::record(
        tx,
        Some(account_id),
        "oidc.unlinked",
        address,
        json!({"issuer": removed.issuer, "linked_identity_id": removed.id}),
    )?;
    if mail_on {
        notice::unlinked(tx, account_id, &removed.name, address)?;
    }
    Ok(())
}

/// Records a refused delegated sign-in.
pub fn record_failure(
    tx: &WriteTx,
    account_id: Option<i64>,
    failure: Failure,
    address: &str,
    via: &str,
) -> Result<()> {
    tracing::info!(reason = failure.reason(), "delegated sign-in refused");
    events::record(
        tx,
        account_id,
        "sign_in.failed",
        address,
        json!({"step": "oidc", "reason": failure.reason(), "via": via}),
    )
}

/// The verified claims of the token the provider's token endpoint gives
/// for `code`, or why there are none.
pub async fn redeem(
    http: &reqwest::Client,
    settings: &OidcSettings,
    base: &str,
    code: &str,
    pending: &store::Pending,
) -> std::result::Result<Claims, Failure> {
    let discovery = discover(http, settings).await?;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &redirect_uri(base)),
        ("code_verifier", &pending.code_verifier),
    ];
    let body = serde_urlencoded::to_string(form).map_err(|_| Failure::Unavailable)?;
    // RFC 6749 2.3.1: client_secret_basic, each part form-encoded first.
    let encode =
        |s: &str| serde_urlencoded::to_string([("", s)]).unwrap_or_default()[1..].to_string();
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        encode(&settings.client_id),
        encode(&settings.client_secret)
    ));
    let response = http
        .post(&discovery.token_endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .header("Authorization", format!("Basic {credentials}"))
        .body(body)
        .send()
        .await
        .map_err(|e| unavailable("token endpoint", &e.to_string()))?;
    let status = response.status();
    if status.is_server_error() {
        return Err(unavailable("token endpoint", status.as_str()));
    }
    if !status.is_success() {
        // A 400 is the provider refusing this code (RFC 6749 5.2).
        tracing::info!(status = status.as_u16(), "the provider refused the code");
        return Err(Failure::Cancelled);
    }
    let tokens: model::TokenResponse = json_body(response, "token endpoint").await?;
    let id_token = tokens
        .id_token
        .ok_or(Failure::Invalid(jwt::Invalid::Malformed))?;
    let jwks = keys(http, &discovery).await?;
    let now = jiff::Timestamp::now().as_second();
    jwt::verify(
        &id_token,
        &jwks,
        &settings.issuer,
        &settings.client_id,
        &pending.nonce,
        now,
    )
    .map_err(Failure::Invalid)
}

fn unavailable(what: &str, why: &str) -> Failure {
    tracing::warn!("OpenID Connect provider's {what} failed: {why}");
    Failure::Unavailable
}

async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    what: &str,
) -> std::result::Result<T, Failure> {
    let response = http
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| unavailable(what, &e.to_string()))?;
    if !response.status().is_success() {
        return Err(unavailable(what, response.status().as_str()));
    }
    json_body(response, what).await
}

async fn json_body<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    what: &str,
) -> std::result::Result<T, Failure> {
    let bytes = response
        .bytes()
        .await
        .map_err(|e| unavailable(what, &e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| unavailable(what, &e.to_string()))
}

/// The provider's discovery document; its issuer must be the configured one
/// (Discovery 4.3), or its endpoints cannot be trusted.
pub async fn discover(
    http: &reqwest::Client,
    settings: &OidcSettings,
) -> std::result::Result<Discovery, Failure> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        settings.issuer.trim_end_matches('/')
    );
    let discovery: Discovery = get_json(http, &url, "discovery document").await?;
    if discovery.issuer != settings.issuer {
        return Err(unavailable(
            "discovery document",
            "its issuer is not the configured one",
        ));
    }
    Ok(discovery)
}

async fn keys(http: &reqwest::Client, discovery: &Discovery) -> std::result::Result<Jwks, Failure> {
    get_json(http, &discovery.jwks_uri, "key set").await
}

/// The provider's origin, which pages with its button must allow as a
/// form target (browsers apply `form-action` to the redirect after a form).
pub fn provider_origin(state: &AppState) -> Option<String> {
    state
        .try_part::<OidcSettings>()
        .and_then(|o| origin(&o.issuer))
}

/// The scheme and host (with port) of a URL, for a page's `form-action`.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?;
    let origin = format!("{scheme}://{host}");
    origin
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'\'')
        .then_some(origin)
}

/// The prefix of a link token (`pbx_oidcl_<selector>_<secret>`).
pub const LINK_PREFIX: &str = "pbx_oidcl_";

/// The cookie that binds a pending link to the browser the provider sent
/// back: a link is only ever taken by a form that names the same token.
pub const LINK_COOKIE: &str = "pillbox_oidc_link";

/// A link token for an identity no account matched (ten minutes, once).
pub fn offer_link(tx: &WriteTx, claims: &Claims) -> Result<String> {
    let link = crate::auth::token::generate(LINK_PREFIX);
    let expires = Timestamp::now().plus(jiff::SignedDuration::from_secs(PENDING_SECS));
    store::insert_pending_link(
        tx,
        &link,
        &claims.iss,
        &claims.sub,
        &claims.label(),
        &expires,
    )?;
    Ok(link.token)
}

/// Whether this browser holds the link token its form names (the cookie
/// set when the provider answered), compared in constant time.
pub fn held_by_browser(headers: &axum::http::HeaderMap, sent: Option<&str>) -> bool {
    let held = crate::identity::csrf::cookie(headers, LINK_COOKIE);
    crate::identity::csrf::matches(held.as_deref(), sent)
}

/// What the confirmation page shows and its form sends back.
pub struct Confirmation {
    /// The confirmation's secret (its digest is kept with the link).
    pub secret: String,
    /// The identity's name at the provider.
    pub label: String,
}

fn pending_link(tx: &WriteTx, link_token: &str) -> Result<Option<store::PendingLink>> {
    match crate::auth::token::parse_with(LINK_PREFIX, link_token) {
        Some(presented) => store::find_pending_link(tx, &presented),
        None => Ok(None),
    }
}

/// After an account signed in on the link's page (password, and second
/// factor where it has one): the link waits for that account's explicit
/// "yes". `None` when the link is unknown, spent or expired.
pub fn ask_to_confirm(
    tx: &WriteTx,
    link_token: &str,
    account_id: i64,
    step: &str,
) -> Result<Option<Confirmation>> {
    let Some(link) = pending_link(tx, link_token)? else {
        return Ok(None);
    };
    let secret = random();
    store::await_confirmation(tx, link.id, account_id, step, &digest(&secret))?;
    Ok(Some(Confirmation {
        secret,
        label: link.label,
    }))
}

/// A confirmation answered: the account that signed in and its step.
pub struct Answered {
    pub account_id: i64,
    pub step: String,
}

/// The account's answer to the confirmation page: the pending link is
/// spent either way, and linked only on a "yes". `None` when the link or
/// the confirmation is unknown, spent or expired.
pub fn answer(
    tx: &WriteTx,
    link_token: &str,
    secret: &str,
    yes: bool,
    address: &str,
    mail_on: bool,
) -> Result<Option<Answered>> {
    let Some(link) = pending_link(tx, link_token)? else {
        return Ok(None);
    };
    let confirmed = link
        .confirm_sha256
        .as_deref()
        .is_some_and(|stored| bool::from(stored.ct_eq(&digest(secret))));
    let (Some(account_id), Some(step), true) = (link.account_id, link.step.clone(), confirmed)
    else {
        return Ok(None);
    };
    store::delete_pending_link(tx, link.id)?;
    if yes {
        let new = NewLink {
            issuer: &link.issuer,
            subject: &link.subject,
            label: &link.label,
            via: "password",
        };
        link_identity(tx, &new, account_id, address, mail_on)?;
    }
    Ok(Some(Answered { account_id, step }))
}
