//! People handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, patch, post, put};

use super::model::{Person, PersonBody};
use crate::auth::Actor;
use crate::domain::{IfMatch, ResourceId};
use crate::error::Result;
use crate::http::extract::{ApiJson, PathNumericId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Paged, Since};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "People";
const COLLECTION: &str = "/households/{household_id}/people";
const MEMBER: &str = "/households/{household_id}/people/{id}";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::get(COLLECTION, "listPeople", TAG)
                .summary("List the people you may view")
                .paginated()
                .query_params::<Since>()
                .page::<Person>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createPerson", TAG)
                .summary("Add a person to the household")
                .description("A member who is not an owner or administrator receives a manage grant on the person they create.")
                .create_body::<PersonBody>("PersonCreateRequest", &["name", "date_of_birth"])
                .created::<Person>()
                .etag(),
            post(create),
        )
        .route_numeric(
            Op::get(MEMBER, "getPerson", TAG)
                .summary("Get a person")
                .ok::<Person>()
                .etag(),
            get(show),
        )
        .route_numeric(
            Op::patch(MEMBER, "updatePerson", TAG)
                .summary("Update a person")
                .body::<PersonBody>()
                .if_match()
                .ok::<Person>()
                .etag(),
            patch(update),
        )
        .route_numeric(
            Op::put(MEMBER, "updatePersonWithPut", TAG)
                .summary("Update a person (PUT form of updatePerson)")
                .body::<PersonBody>()
                .if_match()
                .ok::<Person>()
                .etag(),
            put(update),
        )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, since): Paged<Since>,
) -> Result<Response> {
    let since = since.at();
    let (people, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, since.as_deref(), page))
        .await?;
    Ok(respond::collection(people, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<PersonBody>,
) -> Result<Response> {
    let person = state
        .db
        .write(move |conn| super::create(conn, &actor, body.person))
        .await?;
    Ok(respond::created_tagged(person))
}

async fn show(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
) -> Result<Response> {
    let id = ResourceId::Numeric(id);
    let person = state.db.read_here(|conn| super::get(conn, &actor, &id))?;
    Ok(respond::ok_tagged(person))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<PersonBody>,
) -> Result<Response> {
    let id = ResourceId::Numeric(id);
    let person = state
        .db
        .write(move |conn| super::update(conn, &actor, &id, &if_match, body.person))
        .await?;
    Ok(respond::ok_tagged(person))
}
