//! A retried take: a client_uuid the household already recorded is
//! answered with the take it names, or refused when the retry states other
//! facts.

use rusqlite::Connection;

use super::model::{MedicationTake, NewMedicationTake};
use super::{Recorded, require_record, source_plan, store, warnings};
use crate::auth::Actor;
use crate::domain::{self, ResourceId};
use crate::error::{ApiError, Result};

/// The take a repeated client_uuid already recorded, answered again with
/// its warnings as they stand now; 409 `client_uuid_reused` when the retry
/// states other facts. Access to the saved take's person is checked first.
pub(super) fn replay(
    conn: &Connection,
    actor: &Actor,
    input: &NewMedicationTake,
    taken_at: &domain::Timestamp,
) -> Result<Option<Recorded>> {
    let Some(client_uuid) = &input.client_uuid else {
        return Ok(None);
    };
    let Some(saved) = store::find_by_client_uuid(conn, actor.household_id, &client_uuid.0)? else {
        return Ok(None);
    };
    require_record(conn, actor, saved.person_id, saved.source_type.noun())?;
    if !same_facts(&saved, input, taken_at) {
        return Err(ApiError::conflict(
            "client_uuid_reused",
            "this client_uuid was already used for a different take; \
             use a new client_uuid for a new take",
        ));
    }
    let plan = source_plan::find(
        conn,
        actor.household_id,
        saved.source_type,
        &ResourceId::Numeric(saved.source_id),
    )?
    .ok_or_else(|| ApiError::internal("the source of a saved take is missing"))?;
    let (warnings, next_dose_allowed_at) =
        warnings::warnings(conn, actor.household_id, &plan, &saved, None)?;
    Ok(Some(Recorded {
        take: saved,
        warnings,
        next_dose_allowed_at,
        replayed: true,
    }))
}

fn matches(id: &ResourceId, numeric: Option<i64>, portable: Option<&str>) -> bool {
    match id {
        ResourceId::Numeric(n) => numeric == Some(*n),
        ResourceId::Portable(p) => portable == Some(p.as_str()),
    }
}

/// Whether a retry states the same facts as the saved take. Attributes the
/// retry leaves out that default from the source (dose, medication) are
/// not compared; the others must match what was saved.
fn same_facts(
    saved: &MedicationTake,
    input: &NewMedicationTake,
    taken_at: &domain::Timestamp,
) -> bool {
    let optional = |sent: &Option<ResourceId>, numeric: Option<i64>, portable: Option<&str>| {
        sent.as_ref()
            .is_none_or(|id| matches(id, numeric, portable))
    };
    saved.source_type == input.source_type
        && matches(
            &input.source_id,
            Some(saved.source_id),
            Some(&saved.source_portable_id),
        )
        && saved.taken_at == *taken_at
        && input
            .dose_amount
            .is_none_or(|a| a.get() == saved.dose_amount)
        && input.dose_unit.is_none_or(|u| u == saved.dose_unit)
        && optional(
            &input.taken_from_medication_id,
            saved.taken_from_medication_id,
            saved.taken_from_medication_portable_id.as_deref(),
        )
        && match &input.taken_from_location_id {
            None => saved.taken_from_location_id.is_none(),
            Some(id) => matches(
                id,
                saved.taken_from_location_id,
                saved.taken_from_location_portable_id.as_deref(),
            ),
        }
        && input.occurrence_key == saved.occurrence_key
}
