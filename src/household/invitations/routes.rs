//! Invitation handlers: the administrators' collection and the
//! account-level acceptance.

use crate::http::origin::BaseUrl;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, post};

use super::Policy;
use super::model::{AcceptBody, AcceptedInvitation, CreatedInvitation, Invitation, InvitationBody};
use crate::auth::{Actor, Authenticated};
use crate::error::Result;
use crate::http::extract::{ApiJson, PathNumericId};
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Invitations";
const COLLECTION: &str = "/households/{household_id}/admin/invitations";
const MEMBER: &str = "/households/{household_id}/admin/invitations/{id}";
const RESEND: &str = "/households/{household_id}/admin/invitations/{id}/resend";
const ACCEPT: &str = "/invitations/accept";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(COLLECTION, "listInvitations", TAG)
            .summary("List the household's invitations that have not been revoked")
            .paginated()
            .page::<Invitation>(),
        get(list),
    )
    .route(
        Op::post(COLLECTION, "createInvitation", TAG)
            .summary("Invite an email into the household")
            .description("Owners and administrators invite an email with a role, permission flags, exactly one of an existing unlinked person (person_id) or a new person to create (person), and person access grants. The invitation expires after the server's invitation lifetime (7 days by default). With email delivery on, the link is mailed (delivery queued) and never shown; with it off, the link is returned once in accept_url (delivery link) for the administrator to pass on. Only an owner may invite an owner (403).")
            .body::<InvitationBody>()
            .created::<CreatedInvitation>(),
        post(create),
    )
    .route_numeric(
        Op::delete(MEMBER, "deleteInvitation", TAG)
            .summary("Revoke an invitation; its link stops working at once")
            .no_content(),
        delete(revoke),
    )
    .route_numeric(
        Op::post(RESEND, "resendInvitation", TAG)
            .summary("Send the invitation again with a new link")
            .description("Needs administrator authority and a signed-in user session (an app token is 403). Rotates the token and queues the email; the answer reports queued and never shows the token. When queueing fails (409 email_delivery_unavailable when email delivery is off) nothing changes and the old link stays valid.")
            .ok::<super::model::ResentInvitation>()
            .errors(&[403, 409]),
        post(resend),
    )
    .route(
        Op::post(ACCEPT, "acceptInvitation", TAG)
            .summary("Accept an invitation as the signed-in account")
            .description("Needs a signed-in user session (an app token is 403) whose account email is the invited one. Creates the membership, links or creates the member's person and gives the invited grants in one transaction; accepting again returns the same active membership. An expired, revoked, mismatched or already-used invitation, or an existing membership, is 422 invitation_unavailable. No new credential is issued: reload /auth/households.")
            .body::<AcceptBody>()
            .ok::<AcceptedInvitation>()
            .errors(&[403, 422]),
        post(accept),
    )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (items, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    BaseUrl(base): BaseUrl,
    ApiJson(body): ApiJson<InvitationBody>,
) -> Result<Response> {
    let policy = policy(&state);
    let created = state
        .db
        .write(move |conn| super::create(conn, &actor, body.household_invitation, policy, &base))
        .await?;
    Ok(respond::created(created))
}

fn policy(state: &AppState) -> Policy {
    **state.part::<Policy>()
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

async fn resend(
    State(state): State<AppState>,
    actor: Actor,
    BaseUrl(base): BaseUrl,
    PathNumericId(id): PathNumericId,
) -> Result<Response> {
    let policy = policy(&state);
    let resent = state
        .db
        .write(move |conn| super::resend(conn, &actor, id, policy, &base))
        .await?;
    Ok(respond::ok(resent))
}

async fn accept(
    State(state): State<AppState>,
    auth: Authenticated,
    ApiJson(body): ApiJson<AcceptBody>,
) -> Result<Response> {
    let accepted = state
        .db
        .write(move |conn| super::accept(conn, &auth, &body.token))
        .await?;
    Ok(respond::ok(accepted))
}
