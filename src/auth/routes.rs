//! Account-level operations: what the credential itself may reach.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use rusqlite::{Connection, params};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Authenticated, Credential};
use crate::error::Result;
use crate::http::extract::{Page, QueryParams};
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

#[derive(Debug, Serialize)]
pub struct HouseholdSummary {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub time_zone: String,
    pub role: String,
    pub membership_id: i64,
    pub person_id: Option<i64>,
}

/// The households this credential is currently authorised for: an app
/// token reaches only the household of its membership.
pub fn households(
    conn: &Connection,
    auth: &Authenticated,
    page: Page,
) -> Result<(Vec<HouseholdSummary>, i64)> {
    let Credential::AppToken { membership_id, .. } = auth.credential;
    let filter = "m.account_id = ?1 AND m.status = 'active' AND m.id = ?2";
    let total = conn.query_row(
        &format!("SELECT count(*) FROM memberships m WHERE {filter}"),
        params![auth.account_id, membership_id],
        |r| r.get(0),
    )?;
    let rows = conn
        .prepare(&format!(
            "SELECT h.id, h.portable_id, h.name, h.time_zone, m.role, m.id, m.person_id
             FROM memberships m JOIN households h ON h.id = m.household_id
             WHERE {filter} ORDER BY h.id LIMIT ?3 OFFSET ?4"
        ))?
        .query_map(
            params![auth.account_id, membership_id, page.limit(), page.offset()],
            |r| {
                Ok(HouseholdSummary {
                    id: r.get(0)?,
                    portable_id: r.get(1)?,
                    name: r.get(2)?,
                    time_zone: r.get(3)?,
                    role: r.get(4)?,
                    membership_id: r.get(5)?,
                    person_id: r.get(6)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

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
                .ok("HouseholdSummaryCollection"),
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
        .read(move |conn| households(conn, &auth, page))
        .await?;
    Ok(respond::collection(items, page, total))
}
