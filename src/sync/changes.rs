//! `getSyncChanges`: the change feed after a cursor, filtered by current
//! access to each entry's person, in bounded pages.
//!
//! The cursor is opaque to clients: base64url (no padding) of
//! `v1:<household_id>:<seq>`. The feed's seq only grows, so a cursor never
//! skips an entry committed after it was issued (one writer commits in seq
//! order).

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Deserialize;

use super::changes_model::{ChangeEntry, ChangeMetadata, SyncChanges, Tombstone};
use super::changes_store;
use super::snapshot_store::Reader;
use crate::auth::Actor;
use crate::care::dose_occurrences::outcomes;
use crate::error::{ApiError, Result};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Count, Query, query_param};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Sync";
const PATH: &str = "/households/{household_id}/sync/changes";

pub const DEFAULT_LIMIT: usize = 500;
pub const MAX_LIMIT: usize = 1000;
/// Most entries one request looks at: a member who may see few entries
/// still moves forward through a long feed, a page at a time.
pub const SCAN_BUDGET: usize = 5000;

const CURSOR_VERSION: &str = "v1";

pub fn encode_cursor(household_id: i64, seq: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_VERSION}:{household_id}:{seq}"))
}

fn bad_cursor() -> ApiError {
    ApiError::invalid("cursor", "is an expired or foreign cursor")
}

/// The seq a cursor stands for, if it is well formed and of this household.
fn decode_cursor(text: &str, household_id: i64) -> Result<i64> {
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad_cursor())?;
    let text = String::from_utf8(bytes).map_err(|_| bad_cursor())?;
    let mut parts = text.split(':');
    let (Some(version), Some(household), Some(seq), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_cursor());
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if version != CURSOR_VERSION || !digits(household) || !digits(seq) {
        return Err(bad_cursor());
    }
    match (household.parse::<i64>(), seq.parse::<i64>()) {
        (Ok(h), Ok(seq)) if h == household_id => Ok(seq),
        _ => Err(bad_cursor()),
    }
}

/// The query of a page of the feed.
#[derive(Deserialize, JsonSchema)]
struct ChangesQuery {
    /// Opaque cursor from a snapshot or an earlier next_cursor
    cursor: Option<CursorText>,
    /// Most entries (changes and tombstones together) in one page, 1 to 1000
    limit: Count<{ MAX_LIMIT as u32 }, { DEFAULT_LIMIT as u32 }>,
}

query_param!(
    /// A cursor as sent; `changes` reads it.
    CursorText(String),
    |text| Some(text.to_string()),
    "is not a cursor",
    {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$"}
);

/// One page of the feed after `cursor` (the beginning when `None`).
pub fn changes(
    conn: &Connection,
    actor: &Actor,
    cursor: Option<&str>,
    limit: usize,
) -> Result<SyncChanges> {
    let after = match cursor {
        None => 0,
        Some(text) => {
            let seq = decode_cursor(text, actor.household_id)?;
            if seq > changes_store::max_seq(conn, actor.household_id)? {
                return Err(bad_cursor());
            }
            seq
        }
    };
    // One read transaction: the outcome records match the scanned page.
    let tx = crate::db::read_transaction(conn)?;
    let scan = changes_store::scan(conn, actor, after, limit, SCAN_BUDGET.max(limit))?;
    let outcome_ids: Vec<i64> = scan
        .rows
        .iter()
        .filter(|row| row.record_type == outcomes::RECORD_TYPE && row.action != "delete")
        .map(|row| row.record_id)
        .collect();
    let outcomes = Reader::new(conn, actor).dose_occurrences_by_id(&outcome_ids)?;
    let mut changes = Vec::new();
    let mut tombstones = Vec::new();
    for row in scan.rows {
        if row.action == "delete" {
            tombstones.push(Tombstone {
                id: row.seq,
                record_type: row.record_type,
                record_id: row.record_id.to_string(),
                record_portable_id: row.record_portable_id,
                occurred_at: row.occurred_at,
                person_portable_id: row.person_portable_id,
            });
        } else {
            // Several entries of one outcome carry the same (latest) state.
            let record = if row.record_type == outcomes::RECORD_TYPE {
                outcomes.get(&row.record_id).cloned()
            } else {
                None
            };
            changes.push(ChangeEntry {
                id: row.seq,
                record_type: row.record_type,
                record_id: row.record_id.to_string(),
                record_portable_id: row.record_portable_id,
                action: row.action,
                occurred_at: row.occurred_at,
                metadata: ChangeMetadata {
                    person_portable_id: row.person_portable_id,
                },
                record,
            });
        }
    }
    if let Some(tx) = tx {
        tx.commit()?;
    }
    Ok(SyncChanges {
        changes,
        tombstones,
        next_cursor: encode_cursor(actor.household_id, scan.last_scanned),
        has_more: scan.has_more,
    })
}

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(PATH, "getSyncChanges", TAG)
            .summary("Read changes and tombstones after a cursor")
            .description(
                "Entries after the cursor in the order they were written: creations and \
                     updates under `changes`, deletion markers (deleted records, retired \
                     schedules and assignments) under `tombstones`. Without a cursor the feed \
                     is read from its beginning. Entries about a person appear only while the \
                     caller may view that person; household-wide entries appear to every \
                     member. A page holds at most `limit` entries and looks at a bounded \
                     number of entries, so it can be short or even empty while `has_more` is \
                     true: keep reading from `next_cursor` until `has_more` is false. Metadata \
                     never carries clinical reasons or notes. A cursor that cannot be read, \
                     belongs to another household or points past the feed is refused with 422 \
                     naming `cursor`.",
            )
            .query_params::<ChangesQuery>()
            .ok::<SyncChanges>(),
        get(handler),
    )
}

async fn handler(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<ChangesQuery>,
) -> Result<Response> {
    let limit = query.limit.0 as usize;
    let cursor = query.cursor.map(|CursorText(text)| text);
    let page = state
        .db
        .read(move |conn| changes(conn, &actor, cursor.as_deref(), limit))
        .await?;
    Ok(respond::ok(page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_others() {
        let c = encode_cursor(7, 42);
        assert!(!c.contains('='));
        assert_eq!(decode_cursor(&c, 7).unwrap(), 42);
        assert!(decode_cursor(&c, 8).is_err());
        assert!(decode_cursor("not a cursor!", 7).is_err());
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("v2:7:1"), 7).is_err());
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("v1:7:-1"), 7).is_err());
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("v1:7:1:2"), 7).is_err());
    }
}
