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
use serde_json::{Map, Value, json};

use super::changes_store;
use super::snapshot_store::{self, Reader, Scope};
use crate::auth::Actor;
use crate::db::instance;
use crate::error::Result;
use crate::http::openapi::nullable;
use crate::http::openapi::{Api, Op};
use crate::http::stream::{self, JsonObject};
use crate::state::AppState;

const TAG: &str = "Sync";
const SYNC_PATH: &str = "/households/{household_id}/sync/snapshot";
const MOBILE_PATH: &str = "/households/{household_id}/mobile_snapshot";

pub const FORMAT_V1: &str = "service.portable.v1";
pub const FORMAT_V2: &str = "service.portable.v2";

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
    let tx = conn.unchecked_transaction()?;
    let read = Reader::new(&tx, actor);
    let cursor = if v2 {
        Some(encode_cursor(
            actor.household_id,
            changes_store::max_seq(&tx, actor.household_id)?,
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
    let source_instance_id = instance::get(&tx, instance::INSTANCE_ID)?;

    let mut top = JsonObject::begin(out)?;
    let mut data = top.object("data")?;
    data.field("format", if v2 { FORMAT_V2 } else { FORMAT_V1 })?;
    data.field("scope", &scope)?;
    data.field("exported_at", &crate::time::now())?;
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
    tx.commit()?;
    Ok(())
}

pub fn routes(api: Api) -> Api {
    let api = record_schemas(api);
    api.single_schema("SyncSnapshot", snapshot_schema(true))
        .single_schema("MobileSnapshot", snapshot_schema(false))
        .route(
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
                .ok_named("SyncSnapshotResponse"),
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
                .ok_named("MobileSnapshotResponse"),
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

// ---- OpenAPI schemas -------------------------------------------------------

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn boolean() -> Value {
    json!({"type": "boolean"})
}

fn integer() -> Value {
    json!({"type": "integer"})
}

fn strings(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

fn decimal() -> Value {
    crate::decimal::schema()
}

fn portable_ids() -> Value {
    json!({"type": "array", "items": r("PortableId")})
}

const CYCLES: &[&str] = &["daily", "weekly", "monthly"];
const SOURCE_TYPES: &[&str] = &["schedule", "person_medication"];

/// A record schema: the common fields plus `fields`, all required (nullable
/// ones are present with null), nothing else.
fn record(fields: Vec<(&str, Value)>) -> Value {
    let mut properties = Map::new();
    properties.insert("portable_id".into(), r("PortableId"));
    properties.insert("updated_at".into(), r("Timestamp"));
    properties.insert(
        "etag".into(),
        json!({"type": "string", "description": "The record's strong ETag, as the ETag header of its single-resource read"}),
    );
    for (name, schema) in fields {
        properties.insert(name.to_string(), schema);
    }
    let required: Vec<String> = properties.keys().cloned().collect();
    json!({
        "type": "object", "additionalProperties": false,
        "required": required, "properties": properties,
    })
}

fn record_schemas(api: Api) -> Api {
    api.schema(
        "PortablePerson",
        record(vec![
            ("name", string()),
            ("email", nullable(string())),
            ("date_of_birth", nullable(r("Date"))),
            (
                "person_type",
                strings(&["adult", "minor", "dependent_adult"]),
            ),
            ("has_capacity", boolean()),
            ("location_portable_ids", portable_ids()),
            (
                "notification_preference_portable_id",
                nullable(r("PortableId")),
            ),
        ]),
    )
    .schema(
        "PortableLocation",
        record(vec![
            ("name", string()),
            ("description", nullable(string())),
        ]),
    )
    .schema(
        "PortableMedication",
        record(vec![
            ("location_portable_id", nullable(r("PortableId"))),
            ("name", string()),
            ("friendly_name", nullable(string())),
            ("category", nullable(string())),
            ("description", nullable(string())),
            ("dose_amount", nullable(decimal())),
            ("dose_unit", nullable(string())),
            ("default_schedule_type", nullable(string())),
            ("current_supply", decimal()),
            ("reorder_threshold", nullable(decimal())),
            ("barcode", nullable(string())),
            ("dmd_code", nullable(string())),
            ("dmd_system", nullable(string())),
            ("dmd_concept_class", nullable(strings(&["VMP", "AMP"]))),
        ]),
    )
    .schema(
        "PortableDosageOption",
        record(vec![
            ("medication_portable_id", r("PortableId")),
            ("amount", decimal()),
            ("unit", string()),
            ("frequency", nullable(string())),
            ("description", nullable(string())),
            ("default_for_adults", boolean()),
            ("default_for_children", boolean()),
            ("default_max_daily_doses", nullable(integer())),
            ("default_min_hours_between_doses", nullable(decimal())),
            ("default_dose_cycle", nullable(strings(CYCLES))),
            ("current_supply", nullable(decimal())),
            ("reorder_threshold", nullable(decimal())),
        ]),
    )
    .schema(
        "PortableSchedule",
        record(vec![
            (
                "source_dosage_option_portable_id",
                nullable(r("PortableId")),
            ),
            ("retired_at", nullable(r("Timestamp"))),
            ("person_portable_id", r("PortableId")),
            ("medication_portable_id", r("PortableId")),
            ("dose_amount", decimal()),
            ("dose_unit", string()),
            ("frequency", nullable(string())),
            ("dose_cycle", nullable(strings(CYCLES))),
            ("max_daily_doses", nullable(integer())),
            ("min_hours_between_doses", nullable(decimal())),
            ("schedule_type", string()),
            ("schedule_config", json!({"type": "object"})),
            ("start_date", r("Date")),
            ("end_date", nullable(r("Date"))),
            ("active", boolean()),
            ("notes", nullable(string())),
        ]),
    )
    .schema(
        "PortablePersonMedication",
        record(vec![
            (
                "source_dosage_option_portable_id",
                nullable(r("PortableId")),
            ),
            ("retired_at", nullable(r("Timestamp"))),
            ("person_portable_id", r("PortableId")),
            ("medication_portable_id", r("PortableId")),
            ("dose_amount", decimal()),
            ("dose_unit", string()),
            ("dose_cycle", nullable(strings(CYCLES))),
            ("max_daily_doses", nullable(integer())),
            ("min_hours_between_doses", nullable(decimal())),
            ("administration_kind", strings(&["routine", "as_needed"])),
            ("active", boolean()),
            ("notes", nullable(string())),
            ("position", integer()),
        ]),
    )
    .schema(
        "PortableMedicationTake",
        record(vec![
            ("client_uuid", nullable(string())),
            ("source_type", strings(SOURCE_TYPES)),
            ("source_portable_id", nullable(r("PortableId"))),
            ("taken_at", r("Timestamp")),
            ("dose_amount", decimal()),
            ("dose_unit", string()),
            (
                "taken_from_medication_portable_id",
                nullable(r("PortableId")),
            ),
            ("taken_from_location_portable_id", nullable(r("PortableId"))),
        ]),
    )
    .schema(
        "PortableNotificationPreference",
        record(vec![
            ("person_portable_id", r("PortableId")),
            ("enabled", boolean()),
            ("dose_due_enabled", boolean()),
            ("missed_dose_enabled", boolean()),
            ("low_stock_enabled", boolean()),
            ("private_text_enabled", boolean()),
            ("morning_time", nullable(string())),
            ("afternoon_time", nullable(string())),
            ("evening_time", nullable(string())),
            ("night_time", nullable(string())),
        ]),
    )
    .schema(
        "PortableHealthEvent",
        record(vec![
            ("person_portable_id", r("PortableId")),
            ("event_kind", strings(&["illness", "suspected_side_effect"])),
            (
                "severity",
                nullable(strings(&["mild", "moderate", "severe"])),
            ),
            ("title", string()),
            ("notes", nullable(string())),
            ("started_on", r("Date")),
            ("ended_on", nullable(r("Date"))),
            ("medication_portable_ids", portable_ids()),
        ]),
    )
    .schema(
        "PortableMedicationPausePeriod",
        record(vec![
            ("source_type", strings(SOURCE_TYPES)),
            ("source_portable_id", nullable(r("PortableId"))),
            ("reason", string()),
            ("note", nullable(string())),
            ("started_at", nullable(r("Timestamp"))),
            ("ended_at", nullable(r("Timestamp"))),
            ("created_at", r("Timestamp")),
            ("legacy_context", boolean()),
            ("imported_context", boolean()),
            ("recorded_by_person_portable_id", nullable(r("PortableId"))),
            ("resumed_by_person_portable_id", nullable(r("PortableId"))),
        ]),
    )
    .schema(
        "PortableDoseOccurrence",
        record(vec![
            ("source_type", strings(SOURCE_TYPES)),
            ("source_portable_id", nullable(r("PortableId"))),
            ("window_starts_on", r("Date")),
            ("window_ends_on", r("Date")),
            ("position", json!({"type": "integer", "minimum": 1})),
            ("scheduled_at", nullable(r("Timestamp"))),
            ("outcome", string()),
            ("reason", nullable(string())),
            ("note", nullable(string())),
            ("resolved_at", nullable(r("Timestamp"))),
            ("medication_take_portable_id", nullable(r("PortableId"))),
        ]),
    )
}

fn snapshot_schema(v2: bool) -> Value {
    let mut collections = vec![
        ("people", "PortablePerson"),
        ("locations", "PortableLocation"),
        ("medications", "PortableMedication"),
        ("dosage_options", "PortableDosageOption"),
        ("schedules", "PortableSchedule"),
        ("person_medications", "PortablePersonMedication"),
        ("medication_takes", "PortableMedicationTake"),
        ("notification_preferences", "PortableNotificationPreference"),
        ("health_events", "PortableHealthEvent"),
    ];
    if v2 {
        collections.push(("medication_pause_periods", "PortableMedicationPausePeriod"));
        collections.push(("dose_occurrences", "PortableDoseOccurrence"));
    }
    let records: Map<String, Value> = collections
        .iter()
        .map(|(name, schema)| {
            (
                name.to_string(),
                json!({"type": "array", "items": r(schema)}),
            )
        })
        .collect();
    let record_names: Vec<&str> = collections.iter().map(|(name, _)| *name).collect();
    let mut properties = json!({
        "format": {"type": "string", "const": if v2 { FORMAT_V2 } else { FORMAT_V1 }},
        "scope": {
            "type": "object", "additionalProperties": false,
            "required": ["household_portable_id", "person_portable_ids"],
            "properties": {
                "household_portable_id": r("PortableId"),
                "person_portable_ids": portable_ids(),
            },
        },
        "exported_at": r("Timestamp"),
        "source_instance_id": {"type": "string", "description": "The id of this installation"},
        "records": {
            "type": "object", "additionalProperties": false,
            "required": record_names, "properties": records,
        },
    });
    let mut required = vec![
        "format",
        "scope",
        "exported_at",
        "source_instance_id",
        "records",
    ];
    if v2 {
        properties["cursor"] = json!({
            "type": "string", "pattern": "^[A-Za-z0-9_-]+$",
            "description": "Opaque change-feed position at the moment of the snapshot; pass it to getSyncChanges",
        });
        required.push("cursor");
    }
    json!({
        "type": "object", "additionalProperties": false,
        "required": required, "properties": properties,
    })
}
