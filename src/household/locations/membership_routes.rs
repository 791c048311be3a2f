//! Location membership handlers: parse, call the rule, shape the response.

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{delete, post};
use serde_json::Value;

use super::memberships;
use super::model::{LocationMembership, LocationMembershipBody};
use crate::auth::Actor;
use crate::db::idempotency::SavedResponse;
use crate::domain::body::typed;
use crate::domain::{ResourceId, numeric_id};
use crate::error::{ApiError, Result};
use crate::http::extract::{ApiJson, raw_param};
use crate::http::openapi::{Api, Op};
use crate::http::replay::Idempotent;
use crate::state::AppState;

const TAG: &str = "Location memberships";
const COLLECTION: &str = "/households/{household_id}/locations/{location_id}/location_memberships";
const MEMBER: &str =
    "/households/{household_id}/locations/{location_id}/location_memberships/{membership_id}";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::post(COLLECTION, "createLocationMembership", TAG)
                .summary("Assign a person to a location")
                .description("Adds the location to the person's location_ids. `{location_id}` is the numeric or portable id of a live location of the household. `person_id` names a person of the household by numeric id (number or numeric string) or portable id; one outside your scope is 404, a malformed one 422. Needs the location-management permission (owners and administrators hold it) and manage access to the person (403 when you may only view or record for them). A new assignment returns 201 and gives the person a new version (and ETag); repeating an existing assignment returns that membership with 200 and changes nothing. With an Idempotency-Key an identical retry gets the saved response (status and body), after the permission and access are checked again. Online only: not available in sync batches.")
                .body::<LocationMembershipBody>()
                .idempotency_key()
                .created::<LocationMembership>()
                .also_ok::<LocationMembership>(),
            post(create),
        )
        .route(
            Op::delete(MEMBER, "deleteLocationMembership", TAG)
                .summary("Remove a person from a location")
                .description("Removes the location from the person's location_ids. `{membership_id}` is the id returned when the membership was created; it must belong to this location (404 otherwise). Needs the location-management permission and manage access to the membership's person; the person gets a new version (and ETag). With an Idempotency-Key an identical retry gets 204 again instead of 404, after the permission and manage access to that person are checked again. Online only: not available in sync batches.")
                .numeric_path_param("membership_id")
                .idempotency_key()
                .no_content(),
            delete(remove),
        )
}

/// `{location_id}` as a numeric or portable id; anything else names no location (404).
pub struct LocationPathId(pub ResourceId);

impl<S: Send + Sync> FromRequestParts<S> for LocationPathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let raw = raw_param(parts, state, "location_id").await?;
        ResourceId::parse(&raw)
            .map(LocationPathId)
            .ok_or_else(|| ApiError::not_found("location"))
    }
}

/// `{membership_id}`: a numeric id; anything else names no membership (404).
pub struct MembershipPathId(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for MembershipPathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let raw = raw_param(parts, state, "membership_id").await?;
        numeric_id(&raw)
            .map(MembershipPathId)
            .ok_or_else(|| ApiError::not_found("location membership"))
    }
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    LocationPathId(location_id): LocationPathId,
    request: Idempotent,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let attrs = typed::<LocationMembershipBody>(Some(&body))?.location_membership;
    let person_id = attrs.person_id.clone();
    request
        .write(
            &state.db,
            (actor, location_id),
            Some(&body),
            move |conn, actor, location_id, _| {
                memberships::authorize(conn, actor, location_id, &person_id).map(drop)
            },
            move |conn, actor, location_id| {
                let assignment = memberships::create(conn, actor, location_id, attrs)?;
                let status = if assignment.created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                SavedResponse::data(status, &assignment.membership)
            },
        )
        .await
}

async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    LocationPathId(location_id): LocationPathId,
    MembershipPathId(membership_id): MembershipPathId,
    request: Idempotent,
) -> Result<Response> {
    request
        .write(
            &state.db,
            (actor, location_id),
            None,
            |conn, actor, location_id, saved| {
                memberships::recheck_removal(conn, actor, location_id, saved)
            },
            move |conn, actor, location_id| {
                let removed = memberships::delete(conn, actor, location_id, membership_id)?;
                SavedResponse::no_content(&removed)
            },
        )
        .await
}
