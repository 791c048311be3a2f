//! SQL for credentials and access checks.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::{
    AccessLevel, Actor, Authenticated, Credential, HouseholdSummary, Permissions, Role,
};
use super::token;
use crate::domain::Page;
use crate::error::{ApiError, Result};

pub(super) const INVALID: ApiError = ApiError::Unauthorized("the bearer credential is not valid");

/// An app token as stored, with the status of its membership.
#[derive(Clone)]
pub struct AppTokenRow {
    id: i64,
    membership_id: i64,
    secret_sha256: Vec<u8>,
    expires_at: String,
    revoked: bool,
    last_used_at: Option<String>,
    account_id: i64,
    membership_active: bool,
}

pub fn app_token_row(conn: &Connection, selector: &str) -> Result<Option<AppTokenRow>> {
    Ok(conn
        .prepare_kept(
            "SELECT t.id, t.membership_id, t.secret_sha256, t.expires_at, t.revoked_at IS NOT NULL,
                    t.last_used_at, m.account_id, m.status = 'active'
             FROM app_tokens t JOIN memberships m ON m.id = t.membership_id
             WHERE t.selector = ?1",
        )?
        .query_row([selector], |r| {
            Ok(AppTokenRow {
                id: r.get(0)?,
                membership_id: r.get(1)?,
                secret_sha256: r.get(2)?,
                expires_at: r.get(3)?,
                revoked: r.get(4)?,
                last_used_at: r.get(5)?,
                account_id: r.get(6)?,
                membership_active: r.get(7)?,
            })
        })
        .optional()?)
}

/// Checked on every request, whether the row came from the database or the view.
pub fn check_app_token(
    presented: &token::Presented,
    row: Option<&AppTokenRow>,
) -> Result<Authenticated> {
    let Some(row) = row else {
        return Err(INVALID);
    };
    if !presented.matches(&row.secret_sha256) {
        return Err(INVALID);
    }
    if row.revoked {
        return Err(ApiError::Unauthorized("this app token has been revoked"));
    }
    if row.expires_at.as_str() <= crate::domain::Timestamp::now().as_str() {
        return Err(ApiError::Unauthorized("this app token has expired"));
    }
    if !row.membership_active {
        return Err(ApiError::Unauthorized(
            "the membership behind this credential is no longer active",
        ));
    }
    Ok(Authenticated {
        account_id: row.account_id,
        credential: Credential::AppToken {
            id: row.id,
            membership_id: row.membership_id,
        },
        last_used_at: row.last_used_at.clone(),
    })
}

/// An OAuth access token as stored, with its sign-in session.
#[derive(Clone)]
pub struct AccessTokenRow {
    secret_sha256: Vec<u8>,
    expires_at: String,
    session_id: i64,
    account_id: i64,
    revoked: bool,
    last_used_at: String,
}

pub fn access_token_row(conn: &Connection, selector: &str) -> Result<Option<AccessTokenRow>> {
    Ok(conn
        .prepare_kept(
            "SELECT t.secret_sha256, t.expires_at, s.id, s.account_id, s.revoked_at IS NOT NULL,
                    s.last_used_at
             FROM oauth_tokens t JOIN oauth_sessions s ON s.id = t.session_id
             WHERE t.selector = ?1 AND t.kind = 'access'",
        )?
        .query_row([selector], |r| {
            Ok(AccessTokenRow {
                secret_sha256: r.get(0)?,
                expires_at: r.get(1)?,
                session_id: r.get(2)?,
                account_id: r.get(3)?,
                revoked: r.get(4)?,
                last_used_at: r.get(5)?,
            })
        })
        .optional()?)
}

/// An OAuth access token: live only while it has not expired and its
/// session has not been revoked (signing out, reuse of a rotated refresh
/// token, or an administrator's password reset revoke the session).
pub fn check_access_token(
    presented: &token::Presented,
    row: Option<&AccessTokenRow>,
) -> Result<Authenticated> {
    let Some(row) = row else {
        return Err(INVALID);
    };
    if !presented.matches(&row.secret_sha256) {
        return Err(INVALID);
    }
    if row.revoked {
        return Err(ApiError::Unauthorized("this session has been signed out"));
    }
    if row.expires_at.as_str() <= crate::domain::Timestamp::now().as_str() {
        return Err(ApiError::Unauthorized("this access token has expired"));
    }
    Ok(Authenticated {
        account_id: row.account_id,
        credential: Credential::Session { id: row.session_id },
        last_used_at: Some(row.last_used_at.clone()),
    })
}

/// Records that a credential was used just now.
pub fn touch(conn: &WriteTx, credential: Credential, now: &str) -> Result<()> {
    match credential {
        Credential::AppToken { id, .. } => conn.execute(
            "UPDATE app_tokens SET last_used_at = ?2 WHERE id = ?1",
            params![id, now],
        )?,
        Credential::Session { id } => conn.execute(
            "UPDATE oauth_sessions SET last_used_at = ?2 WHERE id = ?1",
            params![id, now],
        )?,
    };
    Ok(())
}

/// The actor of `authenticated` in `household_id`. A household the account
/// has no active membership in is "not found", whether it exists or not.
pub fn household_actor(
    conn: &Connection,
    authenticated: &Authenticated,
    household_id: i64,
) -> Result<Actor> {
    let row = membership_row(conn, household_id, authenticated.account_id)?;
    actor_from(authenticated, household_id, row.as_ref())
}

/// An active membership as stored.
#[derive(Debug, Clone)]
pub struct MembershipRow {
    id: i64,
    role: String,
    person_id: Option<i64>,
    permissions: Permissions,
}

pub fn membership_row(
    conn: &Connection,
    household_id: i64,
    account_id: i64,
) -> Result<Option<MembershipRow>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, role, person_id, inventory_management, location_management, adult_review
             FROM memberships
             WHERE household_id = ?1 AND account_id = ?2 AND status = 'active'",
        )?
        .query_row(params![household_id, account_id], |r| {
            Ok(MembershipRow {
                id: r.get(0)?,
                role: r.get(1)?,
                person_id: r.get(2)?,
                permissions: Permissions {
                    inventory_management: r.get(3)?,
                    location_management: r.get(4)?,
                    adult_review: r.get(5)?,
                },
            })
        })
        .optional()?)
}

pub fn actor_from(
    authenticated: &Authenticated,
    household_id: i64,
    row: Option<&MembershipRow>,
) -> Result<Actor> {
    let Some(row) = row else {
        return Err(ApiError::not_found("household"));
    };
    if let Credential::AppToken {
        membership_id: bound,
        ..
    } = authenticated.credential
        && bound != row.id
    {
        return Err(ApiError::forbidden(
            "this app token is bound to another household",
        ));
    }
    Ok(Actor {
        account_id: authenticated.account_id,
        membership_id: row.id,
        household_id,
        role: Role::parse(&row.role).ok_or_else(|| ApiError::internal("unknown role"))?,
        person_id: row.person_id,
        permissions: row.permissions,
        credential: authenticated.credential,
    })
}

/// The household of a membership (an app token's), active or not.
pub fn membership_household(conn: &Connection, membership_id: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_kept("SELECT household_id FROM memberships WHERE id = ?1")?
        .query_row(params![membership_id], |r| r.get(0))
        .optional()?)
}

pub fn person_in_household(conn: &Connection, household_id: i64, person_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept("SELECT 1 FROM people WHERE id = ?1 AND household_id = ?2")?
        .query_row(params![person_id, household_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The highest live grant a member holds on a person.
pub fn granted_level(
    conn: &Connection,
    membership_id: i64,
    person_id: i64,
    now: &str,
) -> Result<Option<AccessLevel>> {
    let mut stmt = conn.prepare_kept(
        "SELECT g.access_level FROM person_access_grants g
         JOIN memberships m ON m.id = g.membership_id AND m.status = 'active'
         WHERE g.membership_id = ?1 AND g.person_id = ?2 AND g.revoked_at IS NULL
           AND (g.expires_at IS NULL OR g.expires_at > ?3)",
    )?;
    let levels = stmt
        .query_map(params![membership_id, person_id, now], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(levels.iter().filter_map(|l| AccessLevel::parse(l)).max())
}

/// The named parameters `VISIBLE_PERSON` (and a `:household_id` condition)
/// bind, for one actor at one moment.
pub struct Visibility {
    household_id: i64,
    membership_id: i64,
    is_manager: bool,
    now: crate::domain::Timestamp,
}

impl Visibility {
    pub fn of(actor: &Actor) -> Visibility {
        Visibility {
            household_id: actor.household_id,
            membership_id: actor.membership_id,
            is_manager: actor.is_manager(),
            now: crate::domain::Timestamp::now(),
        }
    }

    /// `:household_id`, `:membership_id`, `:is_manager` and `:now`.
    pub fn params(&self) -> [(&'static str, &dyn rusqlite::ToSql); 4] {
        [
            (":household_id", &self.household_id),
            (":membership_id", &self.membership_id),
            (":is_manager", &self.is_manager),
            (":now", &self.now),
        ]
    }

    /// These parameters followed by `extra`.
    pub fn with<'a>(
        &'a self,
        extra: &[(&'a str, &'a dyn rusqlite::ToSql)],
    ) -> Vec<(&'a str, &'a dyn rusqlite::ToSql)> {
        let mut all = self.params().to_vec();
        all.extend_from_slice(extra);
        all
    }
}

/// SQL condition (on a `people` alias `p`) true for the people an actor may
/// view. Binds: `:membership_id`, `:is_manager`, `:now`.
pub const VISIBLE_PERSON: &str = "(:is_manager = 1 OR EXISTS (
    SELECT 1 FROM person_access_grants g
    WHERE g.person_id = p.id AND g.membership_id = :membership_id AND g.revoked_at IS NULL
      AND (g.expires_at IS NULL OR g.expires_at > :now)))";

/// The households this credential is currently authorised for: an app
/// token reaches only the household of its membership, a sign-in session
/// every household the account is an active member of.
pub fn households(
    conn: &Connection,
    auth: &Authenticated,
    page: Page,
) -> Result<(Vec<HouseholdSummary>, i64)> {
    let membership_id = match auth.credential {
        Credential::AppToken { membership_id, .. } => Some(membership_id),
        Credential::Session { .. } => None,
    };
    let filter = "m.account_id = ?1 AND m.status = 'active' AND (?2 IS NULL OR m.id = ?2)";
    let total = conn.query_row(
        &format!("SELECT count(*) FROM memberships m WHERE {filter}"),
        params![auth.account_id, membership_id],
        |r| r.get(0),
    )?;
    let rows = conn
        .prepare(&format!(
            "SELECT h.id, h.portable_id, h.name, h.time_zone, m.role, m.id, m.person_id
             FROM memberships m JOIN households h ON h.id = m.household_id
             WHERE {filter} ORDER BY h.id LIMIT ?3 OFFSET ?4"
        ))?
        .query_map(
            params![auth.account_id, membership_id, page.limit(), page.offset()],
            |r| {
                Ok(HouseholdSummary {
                    id: r.get(0)?,
                    portable_id: r.get(1)?,
                    name: r.get(2)?,
                    time_zone: {
                        let stored: String = r.get(3)?;
                        crate::domain::canonical_time_zone(&stored).unwrap_or(stored)
                    },
                    role: r.get(4)?,
                    membership_id: r.get(5)?,
                    person_id: r.get(6)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// The role of a membership of the household, if it is one.
pub fn membership_role(conn: &Connection, household_id: i64, id: i64) -> Result<Option<Role>> {
    let role: Option<String> = conn
        .prepare_kept("SELECT role FROM memberships WHERE id = ?1 AND household_id = ?2")?
        .query_row(params![id, household_id], |r| r.get(0))
        .optional()?;
    Ok(role.as_deref().and_then(Role::parse))
}
