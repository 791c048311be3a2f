//! What schedules and direct assignments (the two kinds of dose source)
//! share in their lists: the query filter, and one paged query of the live
//! sources of the people the actor may view.

use rusqlite::{Connection, Row, named_params};

use crate::auth::Actor;
use crate::auth::store::VISIBLE_PERSON;
use crate::error::Result;
use crate::http::extract::{Page, QueryParams, ResourceId};

/// Which sources to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub person_id: Option<ResourceId>,
    pub medication_id: Option<ResourceId>,
    pub updated_since: Option<String>,
}

impl Filter {
    /// `person_id`, `medication_id` and `updated_since` from the query string.
    pub fn from_query(query: &QueryParams) -> Result<Filter> {
        Ok(Filter {
            person_id: query.reference("person_id")?,
            medication_id: query.reference("medication_id")?,
            updated_since: query.updated_since()?,
        })
    }
}

/// How one kind of source is read: its row alias (people join as `p`,
/// medications as `m`), selected columns, joins and list order.
pub struct ListSql {
    pub alias: &'static str,
    pub columns: &'static str,
    pub from: &'static str,
    pub order_by: &'static str,
}

/// One page of the live sources of people the actor may view, and the
/// total: two queries whatever the page holds.
pub fn list_visible<T>(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
    sql: &ListSql,
    from_row: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<(Vec<T>, i64)> {
    let (person_numeric, person_portable) = ResourceId::filter_parts(filter.person_id.as_ref());
    let (medication_numeric, medication_portable) =
        ResourceId::filter_parts(filter.medication_id.as_ref());
    let ListSql {
        alias: x,
        columns,
        from,
        order_by,
    } = sql;
    let condition = format!(
        "{x}.household_id = :household_id AND {x}.retired_at IS NULL AND {VISIBLE_PERSON}
         AND (:updated_since IS NULL OR {x}.updated_at >= :updated_since)
         AND (:person_numeric IS NULL OR {x}.person_id = :person_numeric)
         AND (:person_portable IS NULL OR p.portable_id = :person_portable)
         AND (:medication_numeric IS NULL OR {x}.medication_id = :medication_numeric)
         AND (:medication_portable IS NULL OR m.portable_id = :medication_portable)"
    );
    let now = crate::time::now();
    let is_manager = actor.is_manager();
    let params = named_params! {
        ":household_id": actor.household_id,
        ":membership_id": actor.membership_id,
        ":is_manager": is_manager,
        ":now": now,
        ":updated_since": filter.updated_since,
        ":person_numeric": person_numeric,
        ":person_portable": person_portable,
        ":medication_numeric": medication_numeric,
        ":medication_portable": medication_portable,
    };
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM {from} WHERE {condition}"))?
        .query_row(params, |r| r.get(0))?;
    let (limit, offset) = (page.limit(), page.offset());
    let mut paged = params.to_vec();
    paged.push((":limit", &limit));
    paged.push((":offset", &offset));
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {columns} FROM {from} WHERE {condition}
             ORDER BY {order_by} LIMIT :limit OFFSET :offset"
        ))?
        .query_map(paged.as_slice(), from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}
