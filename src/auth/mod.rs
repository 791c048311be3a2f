//! Who is calling: credentials, the `Actor` of a household request, and the
//! permission checks every rule calls.

pub mod access;
pub mod accounts;
pub mod model;
pub mod password;
pub mod routes;
pub mod store;
pub mod token;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::numeric_id;
use crate::error::{ApiError, Result};
use crate::http::extract::raw_param;
use crate::medicine::vocab::vocabulary;
use crate::state::AppState;

pub use access::AccessLevel;

vocabulary!(
    /// A member's role in a household.
    Role {
        Owner => "owner",
        Administrator => "administrator",
        Member => "member",
    }
);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "MembershipPermissions", deny_unknown_fields)]
pub struct Permissions {
    pub inventory_management: bool,
    pub location_management: bool,
    pub adult_review: bool,
}

/// The credential a request was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A household app token, bound to one membership.
    AppToken { id: i64, membership_id: i64 },
    /// An OAuth access token of a sign-in session (`id` is the session's):
    /// it identifies the account and reaches every household the account is
    /// an active member of.
    Session { id: i64 },
}

impl Credential {
    /// The rate limiter's bucket for this credential.
    pub fn bucket(&self) -> String {
        match self {
            Credential::AppToken { id, .. } => format!("app_token:{id}"),
            Credential::Session { id } => format!("session:{id}"),
        }
    }

    /// The sign-in session behind the credential, if it is one.
    pub fn session_id(&self) -> Option<i64> {
        match self {
            Credential::Session { id } => Some(*id),
            Credential::AppToken { .. } => None,
        }
    }
}

/// A verified credential, before a household is chosen.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub account_id: i64,
    pub credential: Credential,
    pub last_used_at: Option<String>,
}

/// The member acting in one household, resolved from current data on every
/// request (never from anything cached in the token).
#[derive(Debug, Clone)]
pub struct Actor {
    pub account_id: i64,
    pub membership_id: i64,
    pub household_id: i64,
    pub role: Role,
    pub person_id: Option<i64>,
    pub permissions: Permissions,
    pub credential: Credential,
}

impl crate::db::idempotency::KeyOwner for Actor {
    fn household_id(&self) -> i64 {
        self.household_id
    }

    fn membership_id(&self) -> i64 {
        self.membership_id
    }
}

impl Actor {
    /// Owners and administrators manage the whole household.
    pub fn is_manager(&self) -> bool {
        matches!(self.role, Role::Owner | Role::Administrator)
    }

    pub fn require_manager(&self, doing: &str) -> Result<()> {
        if self.is_manager() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "only household owners and administrators may {doing}"
            )))
        }
    }

    pub fn can_manage_locations(&self) -> bool {
        self.is_manager() || self.permissions.location_management
    }

    pub fn can_manage_inventory(&self) -> bool {
        self.is_manager() || self.permissions.inventory_management
    }

    /// The permissions the member actually has: owners and administrators
    /// hold inventory and location management through their role, whatever
    /// their stored flags say. Adult review is never implied.
    pub fn effective_permissions(&self) -> Permissions {
        Permissions {
            inventory_management: self.can_manage_inventory(),
            location_management: self.can_manage_locations(),
            adult_review: self.permissions.adult_review,
        }
    }
}

/// The outcome of verifying a request's bearer credential, kept in the
/// request's extensions by the rate limiter (which must know it before it
/// can choose a bucket) so that a credential is verified once per request.
#[derive(Debug, Clone)]
pub struct Verified(pub std::result::Result<Authenticated, &'static str>);

/// Verifies a presented credential. `Err` only for a failure of the server
/// itself; a credential that does not verify is an `Ok(Verified(Err(..)))`.
pub async fn verify(state: &AppState, presented: String) -> Result<Verified> {
    let outcome = state
        .db
        .read(move |conn| Ok(store::authenticate(conn, &presented)))
        .await?;
    match outcome {
        Ok(authenticated) => Ok(Verified(Ok(authenticated))),
        Err(ApiError::Unauthorized(why)) => Ok(Verified(Err(why))),
        Err(other) => Err(other),
    }
}

/// The verification the rate limiter already made for this request, if any.
fn verified(parts: &Parts) -> Option<Result<Authenticated>> {
    parts
        .extensions
        .get::<Verified>()
        .map(|Verified(outcome)| outcome.clone().map_err(ApiError::Unauthorized))
}

/// Verifies the bearer credential of a request (401 on any failure).
async fn authenticate(parts: &Parts, state: &AppState) -> Result<Authenticated> {
    let authenticated = match verified(parts) {
        Some(outcome) => outcome?,
        None => {
            let presented = token::bearer(&parts.headers)
                .ok_or(ApiError::Unauthorized("a bearer credential is required"))?
                .to_string();
            state
                .db
                .read(move |conn| store::authenticate(conn, &presented))
                .await?
        }
    };
    note_use(state, &authenticated);
    Ok(authenticated)
}

/// Records when an app token or sign-in session was last used, at most
/// every few minutes so that reads do not turn into writes.
fn note_use(state: &AppState, authenticated: &Authenticated) {
    const EVERY_MINUTES: i64 = 10;
    let credential = authenticated.credential;
    let stale_before = crate::time::format(
        jiff::Timestamp::now() - jiff::SignedDuration::from_mins(EVERY_MINUTES),
    );
    if authenticated
        .last_used_at
        .as_deref()
        .is_some_and(|at| at > stale_before.as_str())
    {
        return;
    }
    let db = state.db.clone();
    tokio::spawn(async move {
        let now = crate::time::now();
        if let Err(e) = db
            .write(move |conn| store::touch(conn, credential, &now))
            .await
        {
            tracing::warn!("could not record credential use: {e}");
        }
    });
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        authenticate(parts, state).await
    }
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = ApiError;

    /// One read resolves both the credential (unless the rate limiter
    /// already verified it) and the membership.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let already = verified(parts).transpose()?;
        let presented = match &already {
            Some(_) => String::new(),
            None => token::bearer(&parts.headers)
                .ok_or(ApiError::Unauthorized("a bearer credential is required"))?
                .to_string(),
        };
        let raw = raw_param(parts, state, "household_id").await?;
        let (authenticated, actor) = state
            .db
            .read(move |conn| {
                let authenticated = match already {
                    Some(authenticated) => authenticated,
                    None => store::authenticate(conn, &presented)?,
                };
                // Anything that is not a household id names no household.
                let actor = match numeric_id(&raw) {
                    Some(household_id) => {
                        store::household_actor(conn, &authenticated, household_id)
                    }
                    None => Err(ApiError::not_found("household")),
                };
                Ok((authenticated, actor))
            })
            .await?;
        note_use(state, &authenticated);
        actor
    }
}
