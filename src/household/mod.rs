//! A household and everything administered inside it.

pub mod app_tokens;
pub mod audit;
pub mod grants;
pub mod invitations;
pub mod locations;
pub mod me;
pub mod memberships;
pub mod model;
pub mod people;
pub mod portable_rows;
pub mod profile;
pub mod store;

use crate::db::WriteTx;

use crate::auth::{Role, accounts};
use crate::domain::canonical_time_zone;
use crate::error::{ApiError, Result};
use crate::http::openapi::Api;
use grants::Relationship;

pub use model::MAX_TOKEN_AGE_DAYS;

pub fn routes(api: Api) -> Api {
    let api = people::routes::routes(api);
    let api = me::routes(api);
    let api = profile::routes::routes(api);
    let api = locations::routes::routes(api);
    let api = memberships::routes::routes(api);
    let api = grants::routes::routes(api);
    let api = audit::routes::routes(api);
    let api = invitations::routes::routes(api);
    app_tokens::routes::routes(api)
}

/// A new member as the command line describes them.
pub struct NewMember<'a> {
    pub email: &'a str,
    pub password_hash: &'a str,
    /// The member's own person, created with them and linked to the
    /// membership, so every member has a profile and notification preferences.
    pub person_name: &'a str,
    pub role: Role,
}

pub struct SetUp {
    pub household_id: i64,
    pub membership_id: i64,
    /// The owner's account (the set-up page signs it in).
    pub account_id: i64,
}

/// Checks an IANA time zone name against the bundled database, for the
/// command line: the operator sees their own input named back. API answers
/// use `canonical_time_zone`, whose message never repeats it.
pub fn check_time_zone(name: &str) -> Result<()> {
    canonical_time_zone(name)
        .map(|_| ())
        .map_err(|_| ApiError::invalid("time_zone", "must be a known IANA time zone name"))
}

/// Creates a household with its owner, in one transaction.
pub fn set_up(conn: &WriteTx, name: &str, time_zone: &str, owner: &NewMember<'_>) -> Result<SetUp> {
    if name.trim().is_empty() {
        return Err(ApiError::invalid("household", "name must not be blank"));
    }
    let time_zone = canonical_time_zone(time_zone)?;
    let household_id = store::insert(
        conn,
        name.trim(),
        &time_zone,
        &crate::domain::Timestamp::now(),
    )?;
    let (membership_id, account_id) = enrol(conn, household_id, owner)?;
    Ok(SetUp {
        household_id,
        membership_id,
        account_id,
    })
}

/// Creates an account, its membership and the member's own person (linked,
/// with a `self` manage grant); the membership is audited with no acting
/// membership, since the command line acts as the server's administrator.
pub fn add_member(conn: &WriteTx, household_id: i64, member: &NewMember<'_>) -> Result<i64> {
    enrol(conn, household_id, member).map(|(membership_id, _)| membership_id)
}

/// `add_member`, answering the membership and the account.
fn enrol(conn: &WriteTx, household_id: i64, member: &NewMember<'_>) -> Result<(i64, i64)> {
    if !store::exists(conn, household_id)? {
        return Err(ApiError::not_found("household"));
    }
    if !people::plausible_email(member.email) {
        return Err(ApiError::invalid("email", "must be an email address"));
    }
    let account_id = accounts::create(
        conn,
        member.email,
        member.password_hash,
        Some(member.person_name.trim()),
    )?;
    let membership_id =
        memberships::store::insert(conn, household_id, account_id, None, member.role)?;
    let person_id = people::create_linked(conn, household_id, member.person_name)?;
    memberships::store::link_person(conn, membership_id, person_id)?;
    grants::grant_manage(
        conn,
        household_id,
        membership_id,
        person_id,
        Relationship::Myself,
        None,
    )?;
    audit::record(
        conn,
        household_id,
        None,
        "membership.created",
        ("membership", membership_id),
        serde_json::json!({ "role": member.role.as_str(), "person_id": person_id, "via": "cli" }),
    )?;
    Ok((membership_id, account_id))
}
