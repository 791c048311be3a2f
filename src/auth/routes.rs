//! Account-level operations: what the credential itself may reach.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::{Authenticated, store};
use crate::error::Result;
use crate::http::extract::QueryParams;
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

fn household_summary_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["id", "portable_id", "name", "time_zone", "role", "membership_id", "person_id"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "name": {"type": "string"},
            "time_zone": {"type": "string", "description": "IANA time zone name"},
            "role": {"type": "string", "enum": ["owner", "administrator", "member"]},
            "membership_id": {"$ref": "#/components/schemas/NumericId"},
            "person_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
        },
    })
}

pub fn routes(api: Api) -> Api {
    api.resource_schema("HouseholdSummary", household_summary_schema())
        .route(
            Op::get("/auth/households", "listHouseholds", "Households")
                .summary("Households the credential is currently authorised for")
                .paginated()
                .ok_named("HouseholdSummaryCollection"),
            get(list),
        )
}

async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    query: QueryParams,
) -> Result<Response> {
    let page = query.page()?;
    let (items, total) = state
        .db
        .read(move |conn| store::households(conn, &auth, page))
        .await?;
    Ok(respond::collection(items, page, total))
}
