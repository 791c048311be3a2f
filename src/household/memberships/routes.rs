//! Membership handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, patch, put};

use super::model::{Membership, MembershipBody};
use crate::auth::Actor;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathNumericId};
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Memberships";
const COLLECTION: &str = "/households/{household_id}/admin/memberships";
const MEMBER: &str = "/households/{household_id}/admin/memberships/{id}";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listMemberships", TAG)
                .summary("List the household's memberships (revoked ones are not listed)")
                .paginated()
                .page::<Membership>(),
            get(list),
        )
        .route_numeric(
            Op::patch(MEMBER, "updateMembership", TAG)
                .summary("Change some of a membership's role, status, person and permissions")
                .description("Only an owner may give the owner role or change an owner's membership; the last active owner cannot be demoted or suspended (409 last_owner). Suspending a member revokes the invitations they made that nobody has accepted; demoting one revokes those their new role could not make (a member invites nobody, an administrator no owner), each audited `invitation.revoked`. Reinstating the member does not bring them back.")
                .body::<MembershipBody>()
                .errors(&[409])
                .ok::<Membership>(),
            patch(update),
        )
        .route_numeric(
            Op::put(MEMBER, "replaceMembership", TAG)
                .summary("Replace a membership's role, status, person and permissions")
                .description("The whole membership: every attribute is required (person_id may be null to unlink); a missing one is a 422 naming it. The owner rules of updateMembership apply.")
                .create_body::<MembershipBody>("MembershipReplaceRequest", MembershipBody::FIELDS)
                .errors(&[409])
                .ok::<Membership>(),
            put(replace),
        )
        .route_numeric(
            Op::delete(MEMBER, "deleteMembership", TAG)
                .summary("Remove a member: revokes the membership, its app tokens, grants and pending invitations at once")
                .description("Only an owner may remove an owner; the last active owner cannot be removed (409 last_owner). The invitations the member made and nobody has accepted are revoked with it (each audited `invitation.revoked`, reason `inviter_removed`).")
                .errors(&[409])
                .no_content(),
            delete(revoke),
        )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (memberships, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, page))
        .await?;
    Ok(respond::collection(memberships, page, total))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
    ApiJson(body): ApiJson<MembershipBody>,
) -> Result<Response> {
    let membership = state
        .db
        .write(move |conn| super::update(conn, &actor, id, body.household_membership))
        .await?;
    Ok(respond::ok(membership))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
    ReplaceJson(body): ReplaceJson<MembershipBody>,
) -> Result<Response> {
    let membership = state
        .db
        .write(move |conn| super::replace(conn, &actor, id, body.household_membership))
        .await?;
    Ok(respond::ok(membership))
}

async fn revoke(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
) -> Result<Response> {
    state
        .db
        .write(move |conn| super::revoke(conn, &actor, id))
        .await?;
    Ok(respond::no_content())
}
