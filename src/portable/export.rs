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
use crate::portable::Progress;
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

/// The payload of `version`'s collections under another format name (the
/// health-data export is the v2 collections as `service.health_data.v1`).
pub fn write_payload_as(
    conn: &Connection,
    actor: &Actor,
    format: &str,
    version: Version,
    out: &mut dyn Write,
) -> Result<()> {
    write_payload_reporting(conn, actor, format, version, out, &super::quiet)
}

/// Hands each record read to `sink`, telling `progress` how many so far.
fn counted<T>(
    what: &str,
    progress: Progress<'_>,
    sink: &mut dyn FnMut(T) -> Result<()>,
    read: impl FnOnce(&mut dyn FnMut(T) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let mut done = 0;
    read(&mut |record| {
        sink(record)?;
        done += 1;
        progress(what, done, 0);
        Ok(())
    })
}

/// [`write_payload_as`], telling `progress` how many records of each
/// collection were read.
pub fn write_payload_reporting(
    conn: &Connection,
    actor: &Actor,
    format: &str,
    version: Version,
    out: &mut dyn Write,
    progress: Progress<'_>,
) -> Result<()> {
    let tx = crate::db::read_transaction(conn)?;
    let read = Reader::new(conn, actor);
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
    top.field("format", format)?;
    top.field("scope", &scope)?;
    top.field("exported_at", &crate::domain::Timestamp::now())?;
    top.field("source_instance_id", &source_instance_id)?;
    let mut records = top.object("records")?;
    records.field("people", &people)?;
    let p = progress;
    records.array("locations", |s| {
        counted("locations", p, s, |s| read.locations(s))
    })?;
    records.array("medications", |s| {
        counted("medications", p, s, |s| read.medications(s))
    })?;
    records.array("dosage_options", |s| {
        counted("dosage_options", p, s, |s| read.dosage_options(s))
    })?;
    records.array("schedules", |s| {
        counted("schedules", p, s, |s| read.schedules(s))
    })?;
    records.array("person_medications", |s| {
        counted("person_medications", p, s, |s| read.person_medications(s))
    })?;
    records.array("medication_takes", |s| {
        counted("medication_takes", p, s, |s| read.medication_takes(s))
    })?;
    records.array("notification_preferences", |s| {
        counted("notification_preferences", p, s, |s| {
            read.notification_preferences(s)
        })
    })?;
    if version == Version::V2 {
        records.array("health_events", |s| {
            counted("health_events", p, s, |s| read.health_events(s))
        })?;
        records.array("medication_pause_periods", |s| {
            counted("medication_pause_periods", p, s, |s| read.pause_periods(s))
        })?;
        records.array("dose_occurrences", |s| {
            counted("dose_occurrences", p, s, |s| read.dose_occurrences(s))
        })?;
    }
    records.end()?;
    top.end()?;
    if let Some(tx) = tx {
        tx.commit()?;
    }
    Ok(())
}

/// The payload as bytes (encryption needs the whole of it).
pub fn payload(conn: &Connection, actor: &Actor, version: Version) -> Result<Vec<u8>> {
    payload_reporting(conn, actor, version, &super::quiet)
}

/// [`payload`], telling `progress` how many records were read.
pub fn payload_reporting(
    conn: &Connection,
    actor: &Actor,
    version: Version,
    progress: Progress<'_>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_payload_reporting(conn, actor, version.format(), version, &mut out, progress)?;
    Ok(out)
}
