//! SQL of the change feed: one streaming query per page, joined to people
//! for portable ids and current visibility.

use crate::db::PrepareKept;
use rusqlite::{Connection, named_params};

use crate::auth::Actor;
use crate::auth::store::VISIBLE_PERSON;
use crate::error::Result;

/// One scanned entry, with whether the actor may currently see it.
pub struct FeedRow {
    pub seq: i64,
    pub record_type: String,
    pub record_id: i64,
    pub record_portable_id: String,
    pub action: String,
    pub occurred_at: crate::domain::Timestamp,
    pub person_portable_id: Option<String>,
}

/// What one scan found.
pub struct Scan {
    /// The visible entries, ascending.
    pub rows: Vec<FeedRow>,
    /// The seq of the last entry scanned (visible or not); `after` if none.
    pub last_scanned: i64,
    /// Entries remain after `last_scanned`.
    pub has_more: bool,
}

/// The household's highest seq (0 before its first entry).
pub fn max_seq(conn: &Connection, household_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_kept("SELECT coalesce(max(seq), 0) FROM change_feed WHERE household_id = ?1")?
        .query_row([household_id], |r| r.get(0))?)
}

/// Entries after `after`, ascending: stops at `limit` visible ones or after
/// `budget` scanned ones, whichever comes first. Entries the actor may not
/// see are passed over (and counted as scanned) so they are never read again.
pub fn scan(
    conn: &Connection,
    actor: &Actor,
    after: i64,
    limit: usize,
    budget: usize,
) -> Result<Scan> {
    let mut stmt = conn.prepare_kept(crate::db::sql!(
        "SELECT c.seq, c.record_type, c.record_id, c.record_portable_id, c.action,
                c.occurred_at, p.portable_id,
                CASE WHEN c.person_id IS NULL THEN 1 ELSE {VISIBLE_PERSON} END
         FROM change_feed c LEFT JOIN people p ON p.id = c.person_id
         WHERE c.household_id = :household_id AND c.seq > :after
         ORDER BY c.seq
         LIMIT :scan"
    ))?;
    // One row past the budget tells whether more remain.
    let scan_limit = i64::try_from(budget).unwrap_or(i64::MAX).saturating_add(1);
    let mut rows = stmt.query(named_params! {
        ":household_id": actor.household_id,
        ":after": after,
        ":membership_id": actor.membership_id,
        ":is_manager": actor.is_manager(),
        ":now": crate::domain::Timestamp::now(),
        ":scan": scan_limit,
    })?;
    let mut found = Vec::new();
    let mut scanned = 0usize;
    let mut last_scanned = after;
    let mut has_more = false;
    while let Some(row) = rows.next()? {
        if found.len() >= limit || scanned >= budget {
            has_more = true;
            break;
        }
        scanned += 1;
        last_scanned = row.get(0)?;
        if row.get::<_, bool>(7)? {
            found.push(FeedRow {
                seq: last_scanned,
                record_type: row.get(1)?,
                record_id: row.get(2)?,
                record_portable_id: row.get(3)?,
                action: row.get(4)?,
                occurred_at: row.get(5)?,
                person_portable_id: row.get(6)?,
            });
        }
    }
    Ok(Scan {
        rows: found,
        last_scanned,
        has_more,
    })
}
