//! Dosage options: the ways a medication is taken (an amount and unit,
//! with defaults a schedule can start from). An option with a
//! `current_supply` keeps its own stock and is then a tracked dosage stock
//! source that a stock removal may name.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;

use crate::auth::Actor;
use crate::auth::access::require_inventory;
use crate::db::change_feed::{self, Action, Change};
use crate::decimal::{Dec, NonNegativeDecimal};
use crate::domain::{AtLeast, IfMatch, Page, ResourceId, Text, Timestamp, etag, trimmed};
use crate::error::{ApiError, Problems, Result};
use crate::medicine::forecast::{Holder, PlannedUse, StockStatus};
use crate::medicine::medications::store as medications_store;
use model::{DosageOption, DosageOptionAttributes, DosageOptionView};

pub const RECORD_TYPE: &str = crate::domain::record_type::DOSAGE_OPTION;

/// How absent attributes are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// POST: medication_id, amount and unit are required.
    Create,
    /// PATCH: absent attributes keep their values.
    Update,
    /// PUT: amount and unit are required; the row starts from the defaults.
    Replace,
}

pub fn find(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<DosageOption> {
    store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("dosage option"))
}

/// Adds the derived stock fields to options, planning the stock of all
/// their medications at once (a bounded number of queries for a page).
fn shape(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    rows: Vec<DosageOption>,
) -> Result<Vec<DosageOptionView>> {
    let mut medication_ids: Vec<i64> = rows
        .iter()
        .filter(|o| o.current_supply.is_some())
        .map(|o| o.medication_id)
        .collect();
    medication_ids.sort_unstable();
    medication_ids.dedup();
    let planned = plan.plan(conn, actor.household_id, &medication_ids)?;
    Ok(rows
        .into_iter()
        .map(|option| {
            let stock = match option.current_supply {
                Some(supply) => planned.status(
                    Holder::DosageOption(option.id),
                    supply,
                    option.reorder_threshold,
                ),
                None => StockStatus::default(),
            };
            DosageOptionView { option, stock }
        })
        .collect())
}

fn shape_one(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    row: DosageOption,
) -> Result<DosageOptionView> {
    shape(conn, actor, plan, vec![row])?
        .pop()
        .ok_or_else(|| ApiError::internal("shaped dosage option is missing"))
}

pub fn get(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
) -> Result<DosageOptionView> {
    let row = find(conn, actor, id)?;
    shape_one(conn, actor, plan, row)
}

/// The household's dosage options in id order, optionally of one medication.
/// A medication filter that names no live medication of the household is a 422.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    plan: &dyn PlannedUse,
    medication: Option<&ResourceId>,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<DosageOptionView>, i64)> {
    let medication_id = match medication {
        None => None,
        Some(id) => Some(
            medications_store::find(conn, actor.household_id, id)?
                .map(|m| m.id)
                .ok_or_else(|| ApiError::not_found("medication"))?,
        ),
    };
    let (rows, total) = store::list(conn, actor.household_id, medication_id, updated_since, page)?;
    Ok((shape(conn, actor, plan, rows)?, total))
}

/// Whether a body reference names the option's own medication.
fn names_medication(id: &ResourceId, row: &DosageOption) -> bool {
    match id {
        ResourceId::Numeric(n) => *n == row.medication_id,
        ResourceId::Portable(p) => *p == row.medication_portable_id,
    }
}

/// Applies attributes to a row, collecting every problem. The medication
/// is settled before this (it is set on creation and never changes).
fn apply(row: &mut DosageOption, attrs: DosageOptionAttributes, mode: Mode) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    let whole = mode != Mode::Update;
    match attrs.amount {
        None if whole => add("amount", "is required"),
        None => {}
        Some(None) => add("amount", "must not be null"),
        Some(Some(a)) => row.amount = a.get(),
    }
    match attrs.unit {
        None if whole => add("unit", "is required"),
        None => {}
        Some(None) => add("unit", "must not be null"),
        Some(Some(unit)) => row.unit = unit,
    }
    if let Some(frequency) = attrs.frequency {
        row.frequency = trimmed(frequency.map(Text::into_inner));
    }
    if let Some(description) = attrs.description {
        row.description = trimmed(description.map(Text::into_inner));
    }
    let mut flag = |field: &str, value: Option<Option<bool>>, target: &mut bool| match value {
        Some(None) => add(field, "must be true or false, not null"),
        Some(Some(v)) => *target = v,
        None => {}
    };
    flag(
        "default_for_adults",
        attrs.default_for_adults,
        &mut row.default_for_adults,
    );
    flag(
        "default_for_children",
        attrs.default_for_children,
        &mut row.default_for_children,
    );
    if let Some(value) = attrs.default_max_daily_doses {
        row.default_max_daily_doses = value.map(AtLeast::get);
    }
    if let Some(cycle) = attrs.default_dose_cycle {
        row.default_dose_cycle = cycle;
    }
    let quantity = |value: Option<Option<NonNegativeDecimal>>, target: &mut Option<Dec>| {
        if let Some(value) = value {
            *target = value.map(NonNegativeDecimal::get);
        }
    };
    quantity(
        attrs.default_min_hours_between_doses,
        &mut row.default_min_hours_between_doses,
    );
    quantity(attrs.current_supply, &mut row.current_supply);
    quantity(attrs.reorder_threshold, &mut row.reorder_threshold);
    problems.check("the dosage option's attributes are invalid")
}

fn record_change(conn: &WriteTx, actor: &Actor, row: &DosageOption, action: Action) -> Result<()> {
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

/// The medication `medication_id` is being deleted, and its options stop
/// existing with it (no read reaches them): each gets its deletion marker
/// in the caller's transaction, so a client following the feed drops them
/// (and their stock) just as a fresh snapshot leaves them out.
pub fn tombstone_all_of_medication(
    conn: &WriteTx,
    actor: &Actor,
    medication_id: i64,
) -> Result<()> {
    for (id, portable_id) in store::ids_of_medication(conn, medication_id)? {
        change_feed::append(
            conn,
            Change {
                household_id: actor.household_id,
                record_type: RECORD_TYPE,
                record_id: id,
                record_portable_id: &portable_id,
                action: Action::Delete,
                person_id: None,
            },
        )?;
    }
    Ok(())
}

/// Adds a dosage option to a live medication of the household.
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    mut attrs: DosageOptionAttributes,
) -> Result<DosageOptionView> {
    require_inventory(actor)?;
    let medication = match attrs.medication_id.take() {
        None => return Err(ApiError::invalid("medication_id", "is required")),
        Some(None) => return Err(ApiError::invalid("medication_id", "must not be null")),
        Some(Some(id)) => medications_store::find(conn, actor.household_id, &id)?
            .ok_or_else(|| ApiError::not_found("medication"))?,
    };
    let mut row = DosageOption {
        portable_id: crate::db::new_portable_id(),
        ..DosageOption::blank(medication.id, medication.portable_id, Timestamp::now())
    };
    apply(&mut row, attrs, Mode::Create)?;
    row.id = store::insert(conn, actor.household_id, &row)?;
    record_change(conn, actor, &row, Action::Create)?;
    shape_one(conn, actor, plan, row)
}

/// Loads the option for a change: permission, then the precondition, then
/// the medication (which an update may repeat but not change).
fn for_change(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: &mut DosageOptionAttributes,
) -> Result<DosageOption> {
    require_inventory(actor)?;
    let row = find(conn, actor, id)?;
    if_match.check(&etag(&row.portable_id, row.lock_version))?;
    match attrs.medication_id.take() {
        Some(Some(medication)) if names_medication(&medication, &row) => Ok(row),
        Some(_) => Err(ApiError::invalid(
            "medication_id",
            "cannot be changed; create a dosage option for the other medication instead",
        )),
        None => Ok(row),
    }
}

fn save(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    mut row: DosageOption,
) -> Result<DosageOptionView> {
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::update(conn, &row)?;
    record_change(conn, actor, &row, Action::Update)?;
    shape_one(conn, actor, plan, row)
}

/// PATCH: the given attributes change; the rest stay.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    mut attrs: DosageOptionAttributes,
) -> Result<DosageOptionView> {
    let mut row = for_change(conn, actor, id, if_match, &mut attrs)?;
    apply(&mut row, attrs, Mode::Update)?;
    save(conn, actor, plan, row)
}

/// PUT: amount and unit are required; every omitted attribute returns to
/// its default (null, or false for the default_for_* flags), including
/// current_supply, so an option stops tracking its own stock unless the
/// body repeats it.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    mut attrs: DosageOptionAttributes,
) -> Result<DosageOptionView> {
    let current = for_change(conn, actor, id, if_match, &mut attrs)?;
    let mut row = DosageOption {
        id: current.id,
        portable_id: current.portable_id,
        lock_version: current.lock_version,
        ..DosageOption::blank(
            current.medication_id,
            current.medication_portable_id,
            current.created_at,
        )
    };
    apply(&mut row, attrs, Mode::Replace)?;
    save(conn, actor, plan, row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(json: serde_json::Value) -> DosageOptionAttributes {
        serde_json::from_value(json).unwrap()
    }

    fn blank() -> DosageOption {
        DosageOption::blank(
            1,
            "0192a5b0-0000-7000-8000-000000000000".into(),
            Timestamp::now(),
        )
    }

    fn fields(err: ApiError) -> Vec<String> {
        match err {
            ApiError::Validation { errors, .. } => errors.into_keys().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn whole_modes_require_amount_and_unit_and_report_every_problem() {
        let mut row = blank();
        let err = apply(
            &mut row,
            attrs(serde_json::json!({"default_for_adults": null})),
            Mode::Replace,
        )
        .unwrap_err();
        assert_eq!(fields(err), ["amount", "default_for_adults", "unit"]);
        let mut row = blank();
        apply(
            &mut row,
            attrs(serde_json::json!({"frequency": "  "})),
            Mode::Update,
        )
        .unwrap();
        assert_eq!(row.frequency, None);
    }

    // Ranges and lengths are the attribute types' own: the body is refused
    // while it is read, naming the field.
    #[test]
    fn limits() {
        for (field, value) in [
            ("amount", serde_json::json!("0")),
            ("default_max_daily_doses", serde_json::json!(0)),
            ("default_min_hours_between_doses", serde_json::json!("-0.5")),
            ("current_supply", serde_json::json!("-1")),
            ("reorder_threshold", serde_json::json!("-0.000001")),
            ("frequency", serde_json::json!("x".repeat(201))),
            ("description", serde_json::json!("x".repeat(2001))),
        ] {
            let body = serde_json::json!({ field: value });
            let err = crate::domain::body::typed::<DosageOptionAttributes>(Some(&body));
            assert_eq!(fields(err.unwrap_err()), [field]);
        }
    }
}
