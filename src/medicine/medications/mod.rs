//! Medications of a household: the rules for reading and changing them,
//! their stock (inventory counts, orders, receipts) and derived fields.

pub mod inventory;
pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;

use crate::auth::Actor;
use crate::auth::access::require_inventory;
use crate::db::change_feed::{self, Action, Change};
use crate::decimal::{NonNegativeDecimal, PositiveDecimal};
use crate::domain::{Digits, IfMatch, Page, ResourceId, Text, Timestamp, etag, trimmed};
use crate::error::{ApiError, Problems, Result};
use crate::household::locations::store as locations_store;
use crate::medicine::forecast::{Holder, Plan, PlannedUse};
use model::{Medication, MedicationAttributes, MedicationRow};

pub const RECORD_TYPE: &str = crate::domain::record_type::MEDICATION;

/// Adds the derived fields, from the plan of the medication's stock.
pub fn to_api(row: MedicationRow, plan: &Plan) -> Medication {
    let stock = plan.status(
        Holder::Medication(row.id),
        row.current_supply,
        row.reorder_threshold,
    );
    Medication {
        display_name: row
            .friendly_name
            .clone()
            .unwrap_or_else(|| row.name.clone()),
        id: row.id,
        portable_id: row.portable_id,
        created_at: row.created_at,
        updated_at: row.updated_at,
        location_id: row.location_id,
        location_portable_id: row.location_portable_id,
        name: row.name,
        friendly_name: row.friendly_name,
        category: row.category,
        description: row.description,
        dose_amount: row.dose_amount,
        dose_unit: row.dose_unit,
        default_schedule_type: row.default_schedule_type,
        current_supply: row.current_supply,
        reorder_threshold: row.reorder_threshold,
        barcode: row.barcode,
        dmd_code: row.dmd_code,
        dmd_system: row.dmd_system,
        dmd_concept_class: row.dmd_concept_class,
        reorder: row.reorder,
        stock,
        lock_version: row.lock_version,
    }
}

fn shape(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    row: MedicationRow,
) -> Result<Medication> {
    let planned = plan.plan(conn, actor.household_id, &[row.id])?;
    Ok(to_api(row, &planned))
}

pub fn find(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<MedicationRow> {
    store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("medication"))
}

pub fn get(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
) -> Result<Medication> {
    let row = find(conn, actor, id)?;
    shape(conn, actor, plan, row)
}

pub fn list(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<Medication>, i64)> {
    let (rows, total) = store::list(conn, actor.household_id, updated_since, page)?;
    let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
    let planned = plan.plan(conn, actor.household_id, &ids)?;
    let items = rows.into_iter().map(|row| to_api(row, &planned)).collect();
    Ok((items, total))
}

/// Applies attributes to a row, collecting every problem.
fn apply(
    conn: &Connection,
    actor: &Actor,
    row: &mut MedicationRow,
    attrs: MedicationAttributes,
) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    if let Some(location) = attrs.location_id {
        match location {
            None => {
                row.location_id = None;
                row.location_portable_id = None;
            }
            Some(id) => match locations_store::find(conn, actor.household_id, &id)? {
                Some(location) => {
                    row.location_id = Some(location.id);
                    row.location_portable_id = Some(location.portable_id);
                }
                None => return Err(ApiError::not_found("location")),
            },
        }
    }
    // Lengths are checked as sent, by the attribute types; text is saved trimmed.
    match attrs.name {
        Some(None) => add("name", "must not be null"),
        Some(Some(name)) => match trimmed(Some(name.into_inner())) {
            Some(name) => row.name = name,
            None => add("name", "must not be blank"),
        },
        None => {}
    }
    let text = |value: Option<Option<String>>, target: &mut Option<String>| {
        if let Some(value) = value {
            *target = trimmed(value);
        }
    };
    text(
        attrs.friendly_name.map(|v| v.map(Text::into_inner)),
        &mut row.friendly_name,
    );
    text(
        attrs.category.map(|v| v.map(Text::into_inner)),
        &mut row.category,
    );
    text(
        attrs.description.map(|v| v.map(Text::into_inner)),
        &mut row.description,
    );
    text(
        attrs.dmd_system.map(|v| v.map(Text::into_inner)),
        &mut row.dmd_system,
    );
    // Codes are digits only, exactly as sent.
    if let Some(barcode) = attrs.barcode {
        row.barcode = barcode.map(Digits::into_inner);
    }
    if let Some(code) = attrs.dmd_code {
        row.dmd_code = code.map(Digits::into_inner);
    }
    if let Some(amount) = attrs.dose_amount {
        row.dose_amount = amount.map(PositiveDecimal::get);
    }
    if let Some(unit) = attrs.dose_unit {
        row.dose_unit = unit;
    }
    if let Some(schedule_type) = attrs.default_schedule_type {
        row.default_schedule_type = schedule_type;
    }
    if let Some(class) = attrs.dmd_concept_class {
        row.dmd_concept_class = class;
    }
    match attrs.current_supply {
        Some(None) => add("current_supply", "must not be null"),
        Some(Some(s)) => row.current_supply = s.get(),
        None => {}
    }
    if let Some(threshold) = attrs.reorder_threshold {
        row.reorder_threshold = threshold.map(NonNegativeDecimal::get);
    }
    problems.check("the medication's attributes are invalid")
}

fn record_change(conn: &WriteTx, actor: &Actor, row: &MedicationRow, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action,
            person_id: None,
        },
    )
}

pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    attrs: MedicationAttributes,
) -> Result<Medication> {
    require_inventory(actor)?;
    if attrs.name.is_none() {
        return Err(ApiError::invalid("name", "is required"));
    }
    let mut row = MedicationRow {
        portable_id: crate::db::new_portable_id(),
        ..MedicationRow::new(Timestamp::now())
    };
    apply(conn, actor, &mut row, attrs)?;
    row.id = store::insert(conn, actor.household_id, &row)?;
    record_change(conn, actor, &row, Action::Create)?;
    shape(conn, actor, plan, row)
}

/// The location `location_id` is being deleted: every live medication kept
/// there no longer has a location in any read, so each moves to a new
/// version with a change-feed entry, in the caller's transaction.
pub fn location_deleted(conn: &WriteTx, actor: &Actor, location_id: i64) -> Result<()> {
    let now = Timestamp::now();
    for (id, portable_id) in store::ids_at_location(conn, location_id)? {
        store::touch(conn, id, &now)?;
        change_feed::append(
            conn,
            Change {
                household_id: actor.household_id,
                record_type: RECORD_TYPE,
                record_id: id,
                record_portable_id: &portable_id,
                action: Action::Update,
                person_id: None,
            },
        )?;
    }
    Ok(())
}

/// Loads the medication for a change: permission, then the precondition.
fn for_change(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<MedicationRow> {
    require_inventory(actor)?;
    let row = find(conn, actor, id)?;
    if_match.check(&etag(&row.portable_id, row.lock_version))?;
    Ok(row)
}

fn save(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    mut row: MedicationRow,
) -> Result<Medication> {
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::update(conn, &row)?;
    record_change(conn, actor, &row, Action::Update)?;
    shape(conn, actor, plan, row)
}

/// PATCH: the given attributes change; the rest stay.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: MedicationAttributes,
) -> Result<Medication> {
    let mut row = for_change(conn, actor, id, if_match)?;
    apply(conn, actor, &mut row, attrs)?;
    save(conn, actor, plan, row)
}

/// PUT: the descriptive attributes are replaced (omitted ones become null).
/// Stock and reorder state change only through their own operations, so an
/// omitted current_supply keeps the count.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: MedicationAttributes,
) -> Result<Medication> {
    if attrs.name.is_none() {
        return Err(ApiError::invalid("name", "is required"));
    }
    let current = for_change(conn, actor, id, if_match)?;
    let mut row = MedicationRow {
        id: current.id,
        portable_id: current.portable_id,
        current_supply: current.current_supply,
        reorder: current.reorder,
        lock_version: current.lock_version,
        ..MedicationRow::new(current.created_at)
    };
    apply(conn, actor, &mut row, attrs)?;
    save(conn, actor, plan, row)
}

/// Removes a medication from the household's lists, with its dosage
/// options (each gets a deletion marker too); past records that name it
/// keep working. Refused with 409 `medication_in_use` while a live
/// (unretired, paused or not) schedule or direct assignment still uses it:
/// retire those first.
pub fn delete(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<()> {
    let row = for_change(conn, actor, id, if_match)?;
    let (schedules, assignments) = plan.live_sources(conn, row.id)?;
    if schedules + assignments > 0 {
        let users: Vec<String> = [
            (schedules, "live schedule", "live schedules"),
            (
                assignments,
                "live person medication",
                "live person medications",
            ),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
        .collect();
        return Err(ApiError::conflict(
            "medication_in_use",
            format!(
                "this medication is still used by {}; delete (retire) them before deleting the medication",
                users.join(" and ")
            ),
        ));
    }
    let now = Timestamp::now();
    store::soft_delete(conn, row.id, &now)?;
    crate::medicine::dosage_options::tombstone_all_of_medication(conn, actor, row.id)?;
    record_change(conn, actor, &row, Action::Delete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decimal::Dec;

    fn d(s: &str) -> Dec {
        s.parse().unwrap()
    }

    #[test]
    fn derived_fields() {
        let row = MedicationRow {
            name: "Paracetamol 500mg".into(),
            current_supply: d("4"),
            reorder_threshold: Some(d("5")),
            ..MedicationRow::new(Timestamp::now())
        };
        let m = to_api(row.clone(), &Plan::default());
        assert_eq!(m.display_name, "Paracetamol 500mg");
        assert!(m.stock.low_stock && !m.stock.out_of_stock);
        assert_eq!(m.stock.days_until_low_stock, None);
        let empty = to_api(
            MedicationRow {
                current_supply: d("0"),
                friendly_name: Some("Calpol".into()),
                ..row
            },
            &Plan::default(),
        );
        assert!(empty.stock.out_of_stock);
        assert_eq!(empty.display_name, "Calpol");
        assert_eq!(empty.stock.days_until_out_of_stock, None);
    }
}
