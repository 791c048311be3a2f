//! Person access grant handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, post};
use schemars::JsonSchema;
use serde::Deserialize;

use super::model::{GrantBody, PersonAccessGrant};
use super::store::Filter;
use crate::auth::Actor;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathNumericId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{NumericRef, Paged, Reference, reference};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Person access grants";
const COLLECTION: &str = "/households/{household_id}/admin/person_access_grants";
const MEMBER: &str = "/households/{household_id}/admin/person_access_grants/{id}";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listPersonAccessGrants", TAG)
                .summary("List the household's live person access grants")
                .description("Revoked grants are not listed; expired ones are, until deleted.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<PersonAccessGrant>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createPersonAccessGrant", TAG)
                .summary("Give a member access to a person")
                .description("A member holds at most one live grant per person (409 grant_exists); a grant past its expires_at no longer counts and is closed. relationship_type self only on the member's own linked person. Only an owner may grant to, or revoke the grants of, an owner (403).")
                .body::<GrantBody>()
                .errors(&[409])
                .created::<PersonAccessGrant>(),
            post(create),
        )
        .route_numeric(
            Op::delete(MEMBER, "deletePersonAccessGrant", TAG)
                .summary("Revoke a person access grant at once")
                .no_content(),
            delete(revoke),
        )
}

/// The filters of a list of grants.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only grants held by this membership; 404 when it names no membership of the household
    membership_id: Option<NumericRef>,
    /// Only grants on this person (numeric or portable id); 404 when it names no person of the household
    person_id: Option<Reference>,
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let filter = Filter {
        membership_id: query.membership_id.map(|NumericRef(id)| id),
        person_id: reference(query.person_id),
    };
    let (grants, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, &filter, page))
        .await?;
    Ok(respond::collection(grants, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<GrantBody>,
) -> Result<Response> {
    let grant = state
        .db
        .write(move |conn| super::create(conn, &actor, body.person_access_grant))
        .await?;
    Ok(respond::created(grant))
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
