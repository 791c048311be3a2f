//! The plaintext portable payload of a household export: the collections
//! of the sync snapshot, read in one read transaction through the same
//! store (`sync::snapshot_store`), without the change-feed cursor.
//!
//! v1 (`service.portable.v1`) carries neither health events (the spec keeps
//! them out of the migration payload) nor the v2 collections; v2
//! (`service.portable.v2`) adds health events, pause periods and persisted
//! dose outcomes.

use std::io::Write;

use rusqlite::Connection;

use crate::auth::Actor;
use crate::db::instance;
use crate::domain::json_object::JsonObject;
use crate::error::Result;
use crate::sync::snapshot::{FORMAT_V1, FORMAT_V2};
use crate::sync::snapshot_store::{self, Reader, Scope};

/// Which plaintext format an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn format(self) -> &'static str {
        match self {
            Version::V1 => FORMAT_V1,
            Version::V2 => FORMAT_V2,
        }
    }
}

/// Writes the plaintext payload of every record the actor may see.
pub fn write_payload(
    conn: &Connection,
    actor: &Actor,
    version: Version,
    out: &mut dyn Write,
) -> Result<()> {
    write_payload_as(conn, actor, version.format(), version, out)
}

/// The payload of `version`'s collections under another format name (the
/// health-data export is the v2 collections as `service.health_data.v1`).
pub fn write_payload_as(
    conn: &Connection,
    actor: &Actor,
    format: &str,
    version: Version,
    out: &mut dyn Write,
) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    let read = Reader::new(&tx, actor);
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
    top.field("format", format)?;
    top.field("scope", &scope)?;
    top.field("exported_at", &crate::domain::Timestamp::now())?;
    top.field("source_instance_id", &source_instance_id)?;
    let mut records = top.object("records")?;
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
    if version == Version::V2 {
        records.array("health_events", |sink| read.health_events(sink))?;
        records.array("medication_pause_periods", |sink| read.pause_periods(sink))?;
        records.array("dose_occurrences", |sink| read.dose_occurrences(sink))?;
    }
    records.end()?;
    top.end()?;
    tx.commit()?;
    Ok(())
}

/// The payload as bytes (encryption needs the whole of it).
pub fn payload(conn: &Connection, actor: &Actor, version: Version) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_payload(conn, actor, version, &mut out)?;
    Ok(out)
}
