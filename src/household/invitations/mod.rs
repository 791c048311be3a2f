//! Invitations: an administrator invites an email into the household with
//! a role, permissions, a person and access grants; the invitee accepts
//! with a signed-in user session of the same email. The token is random,
//! single-use, stored as a digest and expires.

pub mod model;
pub mod routes;
pub mod store;

use std::collections::HashSet;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::{Actor, Authenticated, Credential, Permissions, Role, token};
use crate::domain::{Page, Timestamp};
use crate::error::{ApiError, Problems, Result};
use crate::household::grants::{self, Relationship};
use crate::household::memberships::model::{Membership, MembershipStatus};
use crate::household::memberships::store as memberships_store;
use crate::household::{audit, people};
use model::{
    AcceptedInvitation, CreatedInvitation, Delivery, Invitation, InvitationAttributes,
    InvitationStatus,
};
use store::InvitationRow;

pub const TOKEN_PREFIX: &str = "pbx_inv_";

/// The spec's error for every invitation that cannot be accepted; one
/// message for all, so a token holder learns nothing about why.
pub const UNAVAILABLE: &str = "invitation_unavailable";

fn unavailable() -> ApiError {
    ApiError::unprocessable(
        UNAVAILABLE,
        "this invitation cannot be accepted: it has expired, was revoked, is for another email, or the account is already a member of the household",
    )
}

/// The landing page a token's link opens.
pub fn accept_url(base_url: &str, token: &str) -> String {
    format!("{base_url}/invitation?token={token}")
}

/// What the rules need from the server's configuration.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub ttl_days: u64,
    /// An SMTP server is configured: links go by email, never to the caller.
    pub email: bool,
}

impl Policy {
    fn expiry(&self) -> Timestamp {
        Timestamp::now().plus(jiff::SignedDuration::from_hours(self.ttl_days as i64 * 24))
    }
}

fn to_api(row: InvitationRow) -> Invitation {
    let status = match row.status.as_str() {
        "accepted" => InvitationStatus::Accepted,
        _ if row.expires_at <= Timestamp::now() => InvitationStatus::Expired,
        _ => InvitationStatus::Pending,
    };
    Invitation {
        id: row.id,
        email: row.email,
        role: row.role,
        permissions: row.permissions,
        person_id: row.person_id,
        person: row.new_person,
        person_access_grants: row.grants,
        status,
        created_by_membership_id: row.created_by_membership_id,
        accepted_membership_id: row.accepted_membership_id,
        created_at: row.created_at,
        expires_at: row.expires_at,
        accepted_at: row.accepted_at,
    }
}

pub fn list(conn: &Connection, actor: &Actor, page: Page) -> Result<(Vec<Invitation>, i64)> {
    actor.require_manager("list invitations")?;
    let (rows, total) = store::list_live(conn, actor.household_id, page)?;
    Ok((rows.into_iter().map(to_api).collect(), total))
}

/// Checks everything an invitation names against the household now; the
/// same things are checked again on acceptance, since they may change.
fn validate(conn: &Connection, actor: &Actor, attrs: &InvitationAttributes) -> Result<String> {
    let email = attrs.email.trim().to_lowercase();
    let mut problems = Problems::default();
    if !people::plausible_email(&email) {
        problems.add("email", "must be an email address");
    }
    match (attrs.person_id, &attrs.person) {
        (Some(_), Some(_)) | (None, None) => {
            problems.add("person", "exactly one of person_id and person is required")
        }
        (Some(id), None) => {
            if !crate::auth::store::person_in_household(conn, actor.household_id, id)? {
                return Err(ApiError::not_found("person"));
            }
            if memberships_store::person_linked_elsewhere(conn, id, 0)? {
                problems.add("person_id", "is already linked to a member");
            }
        }
        (None, Some(person)) => {
            if let Err(ApiError::Validation { errors, .. }) =
                people::check_new(conn, actor.household_id, &person.attributes())
            {
                for (field, messages) in errors {
                    for message in messages {
                        problems.add(&format!("person.{field}"), message);
                    }
                }
            }
        }
    }
    let mut seen = HashSet::new();
    for grant in &attrs.person_access_grants {
        if !crate::auth::store::person_in_household(conn, actor.household_id, grant.person_id)? {
            return Err(ApiError::not_found("person"));
        }
        if grant.relationship_type == Relationship::Myself {
            problems.add(
                "person_access_grants",
                "self is given with the member's own person; use another relationship_type",
            );
        }
        if Some(grant.person_id) == attrs.person_id || !seen.insert(grant.person_id) {
            problems.add(
                "person_access_grants",
                "name each person once, and not the member's own person",
            );
        }
    }
    if problems.is_empty()
        && memberships_store::active_by_email(conn, actor.household_id, &email)?.is_some()
    {
        problems.add("email", "already belongs to a member of the household");
    }
    problems.check("the invitation's attributes are invalid")?;
    Ok(email)
}

/// Creates a pending invitation. With email delivery off the link is in the
/// answer, once, for the administrator to pass on.
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    attrs: InvitationAttributes,
    policy: Policy,
    base_url: &str,
) -> Result<CreatedInvitation> {
    actor.require_manager("invite people")?;
    if attrs.role == Role::Owner && actor.role != Role::Owner {
        return Err(ApiError::forbidden("only an owner may invite an owner"));
    }
    let email = validate(conn, actor, &attrs)?;
    let new = token::generate(TOKEN_PREFIX);
    let expires_at = policy.expiry();
    let id = store::insert(
        conn,
        &store::NewInvitation {
            household_id: actor.household_id,
            email: &email,
            role: attrs.role,
            permissions: Permissions {
                inventory_management: attrs.inventory_management,
                location_management: attrs.location_management,
                adult_review: attrs.adult_review,
            },
            person_id: attrs.person_id,
            new_person: attrs.person.as_ref(),
            grants: &attrs.person_access_grants,
            selector: &new.selector,
            secret_sha256: &new.secret_sha256,
            created_by_membership_id: Some(actor.membership_id),
            expires_at: &expires_at,
        },
    )?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "invitation.created",
        ("invitation", id),
        json!({"role": attrs.role.as_str(), "expires_at": expires_at, "delivery": delivery(policy).as_str()}),
    )?;
    let row = store::find_live(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::internal("new invitation not found"))?;
    let link = accept_url(base_url, &new.token);
    if policy.email {
        queue_email(conn, &row, &link)?;
    }
    Ok(CreatedInvitation {
        invitation: to_api(row),
        delivery: delivery(policy),
        accept_url: (!policy.email).then_some(link),
    })
}

fn delivery(policy: Policy) -> Delivery {
    if policy.email {
        Delivery::Queued
    } else {
        Delivery::Link
    }
}

/// Puts the invitation email in the outbox, in the caller's transaction:
/// if it cannot be queued, nothing of the invitation change is kept.
fn queue_email(conn: &WriteTx, row: &InvitationRow, link: &str) -> Result<()> {
    let household = crate::household::store::find(conn, row.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?
        .name;
    let subject = format!("You are invited to {household} on Pillbox");
    let text = format!(
        "You have been invited to join the household \"{household}\" on Pillbox.\n\n\
         Open this link to accept (sign in, or create your account with this email address):\n{link}\n\n\
         The link works once and expires on {expires}. If you did not expect this, ignore this email.\n",
        expires = row.expires_at,
    );
    let html = format!(
        "<!doctype html><html lang=\"en\"><body><p>You have been invited to join the household \
         <strong>{h}</strong> on Pillbox.</p><p><a href=\"{l}\">Accept the invitation</a> \
         (sign in, or create your account with this email address).</p><p>The link works once and \
         expires on {e}. If you did not expect this, ignore this email.</p></body></html>",
        h = html_escape(&household),
        l = html_escape(link),
        e = row.expires_at,
    );
    crate::mail::enqueue(
        conn,
        &crate::mail::Email {
            to: &row.email,
            subject: &subject,
            text: &text,
            html: &html,
        },
    )?;
    Ok(())
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn find(conn: &Connection, actor: &Actor, id: i64) -> Result<InvitationRow> {
    store::find_live(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("invitation"))
}

/// A resend puts a new token in an email; it needs an administrator signed
/// in as a user (not an integration's app token) and email delivery, since
/// the token is never shown to the caller.
pub fn resend(
    conn: &WriteTx,
    actor: &Actor,
    id: i64,
    policy: Policy,
    base_url: &str,
) -> Result<model::ResentInvitation> {
    actor.require_manager("resend invitations")?;
    if actor.credential.session_id().is_none() {
        return Err(ApiError::forbidden(
            "resending an invitation needs a signed-in user session, not an app token",
        ));
    }
    let row = find(conn, actor, id)?;
    if row.status != "pending" {
        return Err(ApiError::conflict(
            "invitation_accepted",
            "this invitation was already accepted",
        ));
    }
    if !policy.email {
        return Err(ApiError::conflict(
            "email_delivery_unavailable",
            "email delivery is not configured on this server, so the new link could not be sent; the current link stays valid (or delete the invitation and create a new one to get a new link)",
        ));
    }
    let new = token::generate(TOKEN_PREFIX);
    store::rotate(
        conn,
        row.id,
        &new.selector,
        &new.secret_sha256,
        &policy.expiry(),
    )?;
    let row = find(conn, actor, id)?;
    queue_email(conn, &row, &accept_url(base_url, &new.token))?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "invitation.resent",
        ("invitation", row.id),
        json!({"expires_at": row.expires_at}),
    )?;
    Ok(model::ResentInvitation {
        invitation: to_api(row),
        delivery: Delivery::Queued,
    })
}

/// Revokes an invitation: its link stops working at once.
pub fn revoke(conn: &WriteTx, actor: &Actor, id: i64) -> Result<()> {
    actor.require_manager("revoke invitations")?;
    let row = find(conn, actor, id)?;
    if row.role == Role::Owner && actor.role != Role::Owner {
        return Err(ApiError::forbidden(
            "only an owner may revoke an owner's invitation",
        ));
    }
    store::revoke(conn, row.id)?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "invitation.revoked",
        ("invitation", row.id),
        json!({"role": row.role.as_str(), "was": row.status}),
    )
}

/// Whether a member of `role` may make an invitation that grants `invited`:
/// owners and administrators invite, and only an owner invites an owner.
fn may_invite(role: Role, invited: Role) -> bool {
    match role {
        Role::Owner => true,
        Role::Administrator => invited != Role::Owner,
        Role::Member => false,
    }
}

/// An invitation lives on the authority of the member who made it: when
/// that member is removed, suspended or demoted, their pending invitations
/// that they could no longer make are revoked, in the caller's transaction,
/// each audited. Every change of a membership's role or status calls this
/// with the membership as it now is; `acting` is the member who made the
/// change (`None` for the host operator). Answers how many were revoked.
pub fn revoke_outgrown(conn: &WriteTx, inviter: &Membership, acting: Option<i64>) -> Result<usize> {
    let reason = match inviter.status {
        MembershipStatus::Revoked => "inviter_removed",
        MembershipStatus::Suspended => "inviter_suspended",
        MembershipStatus::Active => "inviter_demoted",
    };
    let active = inviter.status == MembershipStatus::Active;
    let mut revoked = 0;
    for (id, role) in store::pending_of_inviter(conn, inviter.id)? {
        if active && may_invite(inviter.role, role) {
            continue;
        }
        store::revoke(conn, id)?;
        audit::record(
            conn,
            inviter.household_id,
            acting,
            "invitation.revoked",
            ("invitation", id),
            json!({"role": role.as_str(), "was": "pending", "reason": reason, "inviter_membership_id": inviter.id}),
        )?;
        revoked += 1;
    }
    Ok(revoked)
}

/// The same rule at acceptance, for invitations made before their
/// inviter's authority was tied to them: the inviter must still be an
/// active member who may make this invitation.
fn inviter_still_may(conn: &Connection, row: &InvitationRow) -> Result<bool> {
    let Some(inviter) = row.created_by_membership_id else {
        return Ok(true);
    };
    Ok(memberships_store::find(conn, row.household_id, inviter)?
        .is_some_and(|m| m.status == MembershipStatus::Active && may_invite(m.role, row.role)))
}

/// The pending invitation a token names, checked against its digest.
pub fn by_token(conn: &Connection, presented: &str) -> Result<Option<InvitationRow>> {
    let Some(parsed) = token::parse_with(TOKEN_PREFIX, presented.trim()) else {
        return Ok(None);
    };
    Ok(store::find_by_selector(conn, parsed.selector)?
        .filter(|row| parsed.matches(&row.secret_sha256)))
}

/// Accepts an invitation for the signed-in account: membership, person and
/// grants in the caller's one transaction. The same account presenting the
/// token again gets the membership it made, as long as it is active.
pub fn accept(conn: &WriteTx, auth: &Authenticated, presented: &str) -> Result<AcceptedInvitation> {
    if !matches!(auth.credential, Credential::Session { .. }) {
        return Err(ApiError::forbidden(
            "an invitation is accepted with a signed-in user session, not an app token",
        ));
    }
    accept_as(conn, auth.account_id, presented)
}

/// The invitation behind a link, as its landing page shows it: only while
/// it can still be accepted, and never its token.
#[derive(Debug, Clone)]
pub struct Invitee {
    pub email: String,
    pub household_name: String,
    pub role: Role,
}

pub fn invitee(conn: &Connection, presented: &str) -> Result<Option<Invitee>> {
    let Some(row) = by_token(conn, presented)? else {
        return Ok(None);
    };
    if row.status != "pending"
        || row.expires_at <= Timestamp::now()
        || !inviter_still_may(conn, &row)?
    {
        return Ok(None);
    }
    let Some(household) = crate::household::store::find(conn, row.household_id)? else {
        return Ok(None);
    };
    Ok(Some(Invitee {
        email: row.email,
        household_name: household.name,
        role: row.role,
    }))
}

/// Accepts for an account that has just proved who it is: a user session
/// (`accept`), or a sign-in or new account on the invitation's own page.
/// The one rule behind both.
pub fn accept_as(conn: &WriteTx, account_id: i64, presented: &str) -> Result<AcceptedInvitation> {
    let row = by_token(conn, presented)?.ok_or_else(unavailable)?;
    let email = store::account_email(conn, account_id)?.ok_or_else(unavailable)?;
    if !email.eq_ignore_ascii_case(&row.email) {
        return Err(unavailable());
    }
    let existing = store::membership_of(conn, row.household_id, account_id)?;
    match row.status.as_str() {
        "accepted" => {
            return match existing {
                Some((id, status))
                    if status == "active" && row.accepted_membership_id == Some(id) =>
                {
                    accepted(conn, &row, id)
                }
                _ => Err(unavailable()),
            };
        }
        "pending"
            if row.expires_at > Timestamp::now()
                && existing.is_none()
                && inviter_still_may(conn, &row)? => {}
        _ => return Err(unavailable()),
    }
    let membership_id =
        memberships_store::insert(conn, row.household_id, account_id, None, row.role)?;
    let mut membership = memberships_store::find(conn, row.household_id, membership_id)?
        .ok_or_else(|| ApiError::internal("new membership not found"))?;
    membership.permissions = row.permissions;
    memberships_store::update(conn, &membership)?;

    let person_id = match (&row.new_person, row.person_id) {
        (Some(person), _) => {
            people::create_unowned(conn, row.household_id, person.attributes())?.id
        }
        (None, Some(id)) => {
            let usable = crate::auth::store::person_in_household(conn, row.household_id, id)?
                && !memberships_store::person_linked_elsewhere(conn, id, membership_id)?;
            if !usable {
                return Err(unavailable());
            }
            id
        }
        (None, None) => return Err(ApiError::internal("invitation without a person")),
    };
    memberships_store::link_person(conn, membership_id, person_id)?;
    let inviter = row.created_by_membership_id;
    let own = grants::grant_manage(
        conn,
        row.household_id,
        membership_id,
        person_id,
        Relationship::Myself,
        inviter,
    )?;
    grants::audit_created(
        conn,
        row.household_id,
        Some(membership_id),
        own,
        "invitation",
    )?;
    for grant in &row.grants {
        // A person removed since the invitation was made is skipped rather
        // than failing the whole acceptance.
        if grant.person_id == person_id
            || !crate::auth::store::person_in_household(conn, row.household_id, grant.person_id)?
        {
            continue;
        }
        let id = grants::store::insert(
            conn,
            &grants::store::NewGrant {
                household_id: row.household_id,
                membership_id,
                person_id: grant.person_id,
                access_level: grant.access_level.as_str(),
                relationship_type: grant.relationship_type.as_str(),
                expires_at: None,
                created_by_membership_id: inviter,
            },
        )?;
        memberships_store::bump_permissions_version(conn, membership_id)?;
        grants::audit_created(
            conn,
            row.household_id,
            Some(membership_id),
            id,
            "invitation",
        )?;
    }
    store::mark_accepted(conn, row.id, membership_id)?;
    audit::record(
        conn,
        row.household_id,
        Some(membership_id),
        "membership.created",
        ("membership", membership_id),
        json!({"role": row.role.as_str(), "person_id": person_id, "via": "invitation", "invitation_id": row.id}),
    )?;
    audit::record(
        conn,
        row.household_id,
        Some(membership_id),
        "invitation.accepted",
        ("invitation", row.id),
        json!({"membership_id": membership_id}),
    )?;
    accepted(conn, &row, membership_id)
}

fn accepted(
    conn: &Connection,
    row: &InvitationRow,
    membership_id: i64,
) -> Result<AcceptedInvitation> {
    let membership =
        memberships_store::find(conn, row.household_id, membership_id)?.ok_or_else(unavailable)?;
    Ok(AcceptedInvitation {
        household_id: row.household_id,
        membership_id,
        role: membership.role,
        person_id: membership.person_id,
    })
}
