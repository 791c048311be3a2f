//! The one way a list reads a page: the total and the page's rows, two
//! queries over the same condition and parameters (never a query per row).

use rusqlite::{Connection, Row, ToSql};

use crate::domain::Page;
use crate::error::Result;

/// The parts of a paged list query. `count_from` may leave out joins only
/// the rows need.
pub struct PageQuery<'a> {
    pub columns: &'a str,
    pub from: &'a str,
    pub count_from: &'a str,
    pub condition: &'a str,
    pub order_by: &'a str,
}

/// One page of rows in `order_by` order, and how many rows match in all.
/// `params` are the condition's named parameters; `:limit` and `:offset`
/// are bound here.
pub fn read<T>(
    conn: &Connection,
    query: &PageQuery<'_>,
    params: &[(&str, &dyn ToSql)],
    page: Page,
    from_row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<(Vec<T>, i64)> {
    let PageQuery {
        columns,
        from,
        count_from,
        condition,
        order_by,
    } = query;
    let total: i64 = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM {count_from} WHERE {condition}"
        ))?
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
