//! Person access grant handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, post};
use serde_json::json;

use super::model::{GrantBody, PersonAccessGrant};
use super::store::Filter;
use crate::auth::Actor;
use crate::domain::numeric_id;
use crate::error::{ApiError, Result};
use crate::http::extract::{ApiJson, PathNumericId, QueryParams};
use crate::http::openapi::{Api, Op};
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
                .query(
                    "membership_id",
                    json!({"type": "integer", "minimum": 1, "maximum": i64::MAX}),
                    "Only grants held by this membership; 404 when it names no membership of the household",
                )
                .query(
                    "person_id",
                    json!({"$ref": "#/components/schemas/ResourceIdentifier"}),
                    "Only grants on this person (numeric or portable id); 404 when it names no person of the household",
                )
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

fn filter(query: &QueryParams) -> Result<Filter> {
    let membership_id = match query.get("membership_id") {
        None => None,
        Some(text) => match numeric_id(text) {
            Some(n) => Some(n),
            None => {
                return Err(ApiError::invalid(
                    "membership_id",
                    "must be a positive integer",
                ));
            }
        },
    };
    Ok(Filter {
        membership_id,
        person_id: query.reference("person_id")?,
    })
}

async fn list(State(state): State<AppState>, actor: Actor, query: QueryParams) -> Result<Response> {
    let page = query.page()?;
    let filter = filter(&query)?;
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
