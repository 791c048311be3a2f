//! The sync and mobile snapshots' reads: one query per collection (people
//! add one for their location links, health events one for their medication
//! links), all run on the caller's connection inside its read transaction.
//! Each collection's SQL is its owning area's read model
//! (`household::portable_rows`, `medicine::portable_rows`,
//! `care::portable_rows`), which streams its rows here one at a time, so a
//! snapshot of years of takes is written out as it is read, never held.
//!
//! Every relationship is a portable id; no numeric id leaves this module.
//! Person-scoped collections are limited to the people the actor may view
//! right now, and only their sources, takes, events, preferences, pause
//! periods and outcomes.

use std::collections::HashMap;

use rusqlite::Connection;

pub use super::snapshot_model::*;
use crate::auth::Actor;
use crate::auth::store::Visibility;
use crate::care::portable_rows as care_rows;
use crate::error::Result;
use crate::household::portable_rows as household_rows;
use crate::medicine::portable_rows as medicine_rows;

/// Collects a streamed collection (for the few callers that need a list).
pub fn collect<T>(
    read: impl FnOnce(&mut dyn FnMut(T) -> Result<()>) -> Result<()>,
) -> Result<Vec<T>> {
    let mut items = Vec::new();
    read(&mut |item| {
        items.push(item);
        Ok(())
    })?;
    Ok(items)
}

/// (owner, linked) portable-id pairs grouped by owner.
fn links_by_owner(
    read: impl FnOnce(&mut dyn FnMut(&rusqlite::Row<'_>) -> Result<()>) -> Result<()>,
) -> Result<HashMap<String, Vec<String>>> {
    let mut by_owner: HashMap<String, Vec<String>> = HashMap::new();
    read(&mut |r| {
        by_owner
            .entry(r.get::<_, String>(0)?)
            .or_default()
            .push(r.get(1)?);
        Ok(())
    })?;
    Ok(by_owner)
}

/// Reads every collection. `v2` adds pause periods and dose outcomes.
pub struct Reader<'a> {
    conn: &'a Connection,
    household_id: i64,
    vis: Visibility,
}

impl<'a> Reader<'a> {
    pub fn new(conn: &'a Connection, actor: &Actor) -> Reader<'a> {
        Reader {
            conn,
            household_id: actor.household_id,
            vis: Visibility::of(actor),
        }
    }

    pub fn household_portable_id(&self) -> Result<String> {
        household_rows::household_portable_id(self.conn, self.household_id)
    }

    pub fn people(&self, mut each: impl FnMut(PersonRecord) -> Result<()>) -> Result<()> {
        let mut by_person =
            links_by_owner(|sink| household_rows::location_links(self.conn, &self.vis, sink))?;
        care_rows::people(self.conn, &self.vis, |r| {
            let mut person = PersonRecord::from_row(r)?;
            person.location_portable_ids = by_person
                .remove(&person.common.portable_id)
                .unwrap_or_default();
            each(person)
        })
    }

    pub fn locations(&self, mut each: impl FnMut(LocationRecord) -> Result<()>) -> Result<()> {
        household_rows::locations(self.conn, self.household_id, |r| {
            each(LocationRecord::from_row(r)?)
        })
    }

    pub fn medications(&self, mut each: impl FnMut(MedicationRecord) -> Result<()>) -> Result<()> {
        medicine_rows::medications(self.conn, self.household_id, |r| {
            each(MedicationRecord::from_row(r)?)
        })
    }

    pub fn dosage_options(
        &self,
        mut each: impl FnMut(DosageOptionRecord) -> Result<()>,
    ) -> Result<()> {
        medicine_rows::dosage_options(self.conn, self.household_id, |r| {
            each(DosageOptionRecord::from_row(r)?)
        })
    }

    /// Schedules of visible people, retired ones included (with retired_at).
    pub fn schedules(&self, mut each: impl FnMut(ScheduleRecord) -> Result<()>) -> Result<()> {
        care_rows::schedules(self.conn, &self.vis, |r| each(ScheduleRecord::from_row(r)?))
    }

    /// Direct assignments of visible people, retired ones included.
    pub fn person_medications(
        &self,
        mut each: impl FnMut(PersonMedicationRecord) -> Result<()>,
    ) -> Result<()> {
        care_rows::person_medications(self.conn, &self.vis, |r| {
            each(PersonMedicationRecord::from_row(r)?)
        })
    }

    pub fn medication_takes(
        &self,
        mut each: impl FnMut(MedicationTakeRecord) -> Result<()>,
    ) -> Result<()> {
        care_rows::medication_takes(self.conn, &self.vis, |r| {
            each(MedicationTakeRecord::from_row(r)?)
        })
    }

    pub fn notification_preferences(
        &self,
        mut each: impl FnMut(NotificationPreferenceRecord) -> Result<()>,
    ) -> Result<()> {
        care_rows::notification_preferences(self.conn, &self.vis, |r| {
            each(NotificationPreferenceRecord::from_row(r)?)
        })
    }

    /// Live (not deleted) health events of visible people.
    pub fn health_events(
        &self,
        mut each: impl FnMut(HealthEventRecord) -> Result<()>,
    ) -> Result<()> {
        let mut by_event =
            links_by_owner(|sink| care_rows::health_event_medications(self.conn, &self.vis, sink))?;
        care_rows::health_events(self.conn, &self.vis, |r| {
            let mut event = HealthEventRecord::from_row(r)?;
            event.medication_portable_ids = by_event
                .remove(&event.common.portable_id)
                .unwrap_or_default();
            each(event)
        })
    }

    pub fn pause_periods(
        &self,
        mut each: impl FnMut(PausePeriodRecord) -> Result<()>,
    ) -> Result<()> {
        care_rows::pause_periods(self.conn, &self.vis, |r| {
            each(PausePeriodRecord::from_row(r)?)
        })
    }

    /// Persisted outcomes only: reads never project open occurrences.
    pub fn dose_occurrences(
        &self,
        mut each: impl FnMut(DoseOccurrenceRecord) -> Result<()>,
    ) -> Result<()> {
        care_rows::dose_occurrences(self.conn, &self.vis, None, |r| {
            each(DoseOccurrenceRecord::from_row(r)?)
        })
    }

    /// The current portable outcomes of `ids` (the visible ones), by row id:
    /// one query for a whole page of change-feed entries.
    pub fn dose_occurrences_by_id(
        &self,
        ids: &[i64],
    ) -> Result<HashMap<i64, DoseOccurrenceRecord>> {
        let mut found = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(found);
        }
        let ids = serde_json::to_string(ids)
            .map_err(|e| crate::error::ApiError::internal(format!("ids: {e}")))?;
        care_rows::dose_occurrences(self.conn, &self.vis, Some(&ids), |r| {
            found.insert(r.get(14)?, DoseOccurrenceRecord::from_row(r)?);
            Ok(())
        })?;
        Ok(found)
    }
}
