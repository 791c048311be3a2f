//! `getSyncSnapshot` and `getMobileSnapshot`: every portable collection the
//! caller may see, read in one read transaction so the records and the
//! cursor describe the same moment.
//!
//! The sync snapshot is `service.portable.v2` (with pause periods, persisted
//! dose outcomes and a change-feed cursor); the mobile snapshot is the
//! plaintext `service.portable.v1` (neither of those collections, no cursor).
//! Household-wide collections (locations, medications, dosage options) go to
//! every member; person records and everything of a person only while the
//! caller may view that person. Relationships are portable ids; numeric ids
//! never appear. Both are plaintext: sent with `Cache-Control: no-store`
//! (every non-public response is) and never logged. The body is written
//! while it is read (streamed in chunks), so years of takes are never held
//! in memory at once.

use std::io::Write;

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use rusqlite::Connection;

use super::changes_store;
use super::snapshot_model::{MobileSnapshot, Scope, SyncSnapshot};
use super::snapshot_store::{self, Reader};
use crate::auth::Actor;
use crate::db::instance;
use crate::domain::json_object::JsonObject;
use crate::error::Result;
use crate::http::openapi::{Api, Op};
use crate::http::stream;
use crate::state::AppState;

const TAG: &str = "Sync";
const SYNC_PATH: &str = "/households/{household_id}/sync/snapshot";
const MOBILE_PATH: &str = "/households/{household_id}/mobile_snapshot";

pub use super::snapshot_model::{FORMAT_V1, FORMAT_V2};

/// The cursor a snapshot carries: the change feed's own cursor encoding.
pub use super::changes::encode_cursor;

/// Writes `{"data": <snapshot>}` inside one read transaction, each
/// collection row by row as it is read. `v2` adds pause periods, dose
/// outcomes and the cursor (the feed position at the same moment).
pub fn write_snapshot(
    conn: &Connection,
    actor: &Actor,
    v2: bool,
    out: &mut dyn Write,
) -> Result<()> {
    // A deferred read transaction: every query below sees the same snapshot
    // of the database (WAL), whatever the writer commits meanwhile.
    let tx = crate::db::read_transaction(conn)?;
    let read = Reader::new(conn, actor);
    let cursor = if v2 {
        Some(encode_cursor(
            actor.household_id,
            changes_store::max_seq(conn, actor.household_id)?,
        ))
    } else {
        None
    };
    // People are few and name the scope, so they are read first.
    let people = snapshot_store::collect(|sink| read.people(sink))?;
    let scope = Scope {
        household_portable_id: read.household_portable_id()?,
        person_portable_ids: people
            .iter()
            .map(|p| p.common.portable_id.clone())
            .collect(),
    };
    let source_instance_id = instance::get(conn, instance::INSTANCE_ID)?;

    let mut top = JsonObject::begin(out)?;
    let mut data = top.object("data")?;
    data.field("format", if v2 { FORMAT_V2 } else { FORMAT_V1 })?;
    data.field("scope", &scope)?;
    data.field("exported_at", &crate::domain::Timestamp::now())?;
    data.field("source_instance_id", &source_instance_id)?;
    let mut records = data.object("records")?;
    records.field("people", &people)?;
    records.array("locations", |sink| read.locations(sink))?;
    records.array("medications", |sink| read.medications(sink))?;
    records.array("dosage_options", |sink| read.dosage_options(sink))?;
    records.array("schedules", |sink| read.schedules(sink))?;
    records.array("person_medications", |sink| read.person_medications(sink))?;
    records.array("medication_takes", |sink| read.medication_takes(sink))?;
    records.array("notification_preferences", |sink| {
        read.notification_preferences(sink)
    })?;
    records.array("health_events", |sink| read.health_events(sink))?;
    if v2 {
        records.array("medication_pause_periods", |sink| read.pause_periods(sink))?;
        records.array("dose_occurrences", |sink| read.dose_occurrences(sink))?;
    }
    records.end()?;
    if let Some(cursor) = &cursor {
        data.field("cursor", cursor)?;
    }
    data.end()?;
    top.end()?;
    if let Some(tx) = tx {
        tx.commit()?;
    }
    Ok(())
}

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(SYNC_PATH, "getSyncSnapshot", TAG)
            .summary("Read a sync snapshot (portable v2) with a change-feed cursor")
            .description(
                "Every portable collection the caller may see, in the service.portable.v2 \
                     format, read at one moment: people the caller may currently view and their \
                     schedules and direct assignments (retired ones included, with retired_at), \
                     medication takes, notification preferences, health events, pause periods \
                     and persisted dose outcomes (open occurrences are never projected); \
                     household-wide locations, medications and dosage options (deleted ones \
                     excluded) for every member. Each record carries portable_id, updated_at \
                     and etag (the value the single-resource ETag header carries and sync batch \
                     preconditions use); relationships are portable ids and numeric ids never \
                     appear. `cursor` is the change-feed position at the moment of the \
                     snapshot: read getSyncChanges from it. Refresh the snapshot after access \
                     changes. Plaintext: sent with Cache-Control no-store and never logged.",
            )
            .ok::<SyncSnapshot>(),
        get(sync_snapshot),
    )
    .route(
        Op::get(MOBILE_PATH, "getMobileSnapshot", TAG)
            .summary("Read a mobile snapshot (plaintext portable v1)")
            .description(
                "The same records as the sync snapshot in the service.portable.v1 format: \
                     without the v2 collections (medication_pause_periods, dose_occurrences) \
                     and without a cursor. Only people the caller may currently view and their \
                     records are included. Plaintext: sent with Cache-Control no-store and \
                     never logged.",
            )
            .ok::<MobileSnapshot>(),
        get(mobile_snapshot),
    )
}

async fn sync_snapshot(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    stream::json(&state.db, move |conn, out| {
        write_snapshot(conn, &actor, true, out)
    })
    .await
}

async fn mobile_snapshot(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    stream::json(&state.db, move |conn, out| {
        write_snapshot(conn, &actor, false, out)
    })
    .await
}
