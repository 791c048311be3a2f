//! A household and everything administered inside it.

pub mod app_tokens;
pub mod audit;
pub mod grants;
pub mod locations;
pub mod me;
pub mod memberships;
pub mod people;
pub mod profile;
pub mod settings;
pub mod store;

use rusqlite::Connection;

use crate::auth::{Role, accounts};
use crate::error::{ApiError, Result};
use crate::http::openapi::Api;
use grants::Relationship;

pub fn routes(api: Api) -> Api {
    let api = people::routes::routes(api);
    let api = me::routes(api);
    let api = profile::routes::routes(api);
    let api = locations::routes::routes(api);
    let api = settings::routes::routes(api);
    let api = memberships::routes::routes(api);
    let api = grants::routes::routes(api);
    let api = audit::routes::routes(api);
    app_tokens::routes::routes(api)
}

/// A new member as the command line describes them.
pub struct NewMember<'a> {
    pub email: &'a str,
    pub password_hash: &'a str,
    /// When given, a person with this name is created and linked to the member.
    pub person_name: Option<&'a str>,
    pub role: Role,
}

pub struct SetUp {
    pub household_id: i64,
    pub membership_id: i64,
}

/// Checks an IANA time zone name against the bundled database, for the
/// command line: the operator sees their own input named back. API answers
/// use `canonical_time_zone`, whose message never repeats it.
pub fn check_time_zone(name: &str) -> Result<()> {
    canonical_time_zone(name).map(|_| ()).map_err(|_| {
        ApiError::invalid("time_zone", format!("{name} is not a known IANA time zone"))
    })
}

/// The bundled database's own spelling of a time zone name: the lookup
/// forgives case (`europe/london`), and what is stored and answered is
/// always the canonical `Europe/London`. The message never repeats the input.
pub fn canonical_time_zone(name: &str) -> Result<String> {
    jiff::tz::TimeZone::get(name.trim())
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .ok_or_else(|| ApiError::invalid("time_zone", "must be a known IANA time zone name"))
}

/// Creates a household with its owner, in one transaction.
pub fn set_up(
    conn: &Connection,
    name: &str,
    time_zone: &str,
    owner: &NewMember<'_>,
) -> Result<SetUp> {
    if name.trim().is_empty() {
        return Err(ApiError::invalid("household", "name must not be blank"));
    }
    let time_zone = canonical_time_zone(time_zone)?;
    let household_id = store::insert(conn, name.trim(), &time_zone, &crate::time::now())?;
    let membership_id = add_member(conn, household_id, owner)?;
    Ok(SetUp {
        household_id,
        membership_id,
    })
}

/// Creates an account and its membership (and, if named, its own person
/// with a `self` manage grant).
pub fn add_member(conn: &Connection, household_id: i64, member: &NewMember<'_>) -> Result<i64> {
    if !store::exists(conn, household_id)? {
        return Err(ApiError::not_found("household"));
    }
    if !people::plausible_email(member.email) {
        return Err(ApiError::invalid("email", "must be an email address"));
    }
    let account_id =
        accounts::create(conn, member.email, member.password_hash, member.person_name)?;
    let membership_id =
        memberships::store::insert(conn, household_id, account_id, None, member.role)?;
    if let Some(person_name) = member.person_name {
        let person_id = people::create_linked(conn, household_id, person_name)?;
        memberships::store::link_person(conn, membership_id, person_id)?;
        grants::grant_manage(
            conn,
            household_id,
            membership_id,
            person_id,
            Relationship::Myself,
            None,
        )?;
    }
    Ok(membership_id)
}
