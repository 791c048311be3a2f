//! Medications of a household: the rules for reading and changing them,
//! their stock (inventory counts, orders, receipts) and derived fields.

pub mod inventory;
pub mod model;
pub mod routes;
pub mod store;

use std::collections::HashMap;

use jiff::civil::Date;
use rusqlite::Connection;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use crate::auth::Actor;
use crate::db::change_feed::{self, Action, Change};
use crate::decimal::Dec;
use crate::error::{ApiError, Problems, Result};
use crate::household::locations;
use crate::http::extract::{IfMatch, Page, ResourceId, trimmed};
use crate::http::respond::etag;
use model::{Medication, MedicationAttributes, MedicationRow};

pub const RECORD_TYPE: &str = "Medication";

/// Stock changes need the inventory-management permission (owners and
/// administrators hold it implicitly).
pub fn require_inventory(actor: &Actor) -> Result<()> {
    if actor.can_manage_inventory() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "managing medicines and stock needs the inventory management permission",
        ))
    }
}

/// Whole days until `supply` falls to `level` at `daily_use` a day.
pub fn days_until(supply: Dec, level: Dec, daily_use: Dec) -> Option<i64> {
    if !daily_use.is_positive() {
        return None;
    }
    let above = supply.checked_sub(level)?;
    if !above.is_positive() {
        return Some(0);
    }
    // Rounded to 12 places first: a use such as 2/7 a day is a repeating
    // decimal, and 4 ÷ (2/7) must be 14 days, not 13.999….
    (above.0 / daily_use.0).round_dp(12).floor().to_i64()
}

/// Adds the derived fields. `daily_use` is the routine consumption drawn
/// from this medication by active schedules and assignments, when known.
pub fn to_api(row: MedicationRow, daily_use: Option<Dec>) -> Medication {
    let threshold = row.reorder_threshold;
    let low_stock = threshold.is_some_and(|t| row.current_supply <= t);
    let out_of_stock = !row.current_supply.is_positive();
    let (days_until_low_stock, days_until_out_of_stock) = match daily_use {
        Some(use_per_day) => (
            threshold.and_then(|t| days_until(row.current_supply, t, use_per_day)),
            days_until(row.current_supply, Dec::ZERO, use_per_day),
        ),
        None => (None, None),
    };
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
        low_stock,
        out_of_stock,
        days_until_low_stock,
        days_until_out_of_stock,
        lock_version: row.lock_version,
    }
}

/// Expected doses a day of one routine source drawing on a medication, as
/// `dose amount × doses a day`, or `None` when it does not count (prn, a
/// dose in another unit than the medication's, no taper step today).
///
/// - schedules: the number of times plus slots (a taper step with its own
///   times: those) × the dose (a taper step's: the one covering today), for
///   `daily` and `multiple_daily`; halved for `every_other_day`; × the
///   number of weekdays ÷ 7 for `weekly`; × the number of its dates in the
///   30 days from today ÷ 30 for `specific_dates`;
/// - routine person medications: `max_daily_doses` (default 1) doses per
///   dose-cycle window, ÷ 1 (daily), 7 (weekly) or 30 (monthly: an exact
///   30-day month rather than the average 30.4375, so the figure stays a
///   short exact decimal and errs towards running out sooner).
///
/// Slots count whether or not the person has a time for them (the forecast
/// is per medication, not per person's preferences).
fn source_daily_use(source: &store::DrawingSource, today: Date) -> Option<Decimal> {
    use crate::medicine::vocab::{DoseCycle, ScheduleType as T};
    let counts =
        |unit: crate::medicine::vocab::DoseUnit| source.medication_unit.is_none_or(|m| m == unit);
    // (dose amount, doses in the period, days in the period); checked
    // arithmetic, so an absurd dose or count is left out, never a panic.
    let per_day = |amount: Decimal, doses: i64, days: i64| {
        amount
            .checked_mul(Decimal::from(doses))?
            .checked_div(Decimal::from(days))
    };
    let Some((schedule_type, config)) = &source.schedule else {
        if !counts(source.dose_unit) {
            return None;
        }
        let doses = source.max_daily_doses.unwrap_or(1).max(1);
        let days = match source.dose_cycle {
            None | Some(DoseCycle::Daily) => 1,
            Some(DoseCycle::Weekly) => 7,
            Some(DoseCycle::Monthly) => 30,
        };
        return per_day(source.dose_amount.0, doses, days);
    };
    let config = crate::care::schedule_config::parse(*schedule_type, config).ok()?;
    let moments = (config.times.len() + config.slots.len()) as i64;
    let amount = source.dose_amount.0;
    let (amount, doses, days) = match schedule_type {
        T::Prn => return None,
        T::Daily | T::MultipleDaily => (amount, moments, 1),
        T::EveryOtherDay => (amount, moments, 2),
        T::Weekly => (amount, moments * config.weekdays.len() as i64, 7),
        T::SpecificDates => {
            let until = today.saturating_add(jiff::Span::new().days(29));
            let upcoming = config
                .dates
                .iter()
                .filter(|d| today <= **d && **d <= until)
                .count() as i64;
            (amount, moments * upcoming, 30)
        }
        T::Tapering => {
            let step = config.taper_step_on(today)?;
            if !counts(step.dose_unit.unwrap_or(source.dose_unit)) {
                return None;
            }
            let moments = if step.times.is_empty() {
                moments
            } else {
                step.times.len() as i64
            };
            return per_day(step.dose_amount.0, moments, 1);
        }
    };
    if !counts(source.dose_unit) {
        return None;
    }
    per_day(amount, doses, days)
}

/// Routine daily use of each of `medication_ids` drawn by live, running
/// (not paused), unfinished routine schedules and routine person
/// medications (see [`source_daily_use`]); a medication nothing draws on
/// is absent. One query for any number of medications.
pub fn daily_uses(
    conn: &Connection,
    household_id: i64,
    medication_ids: &[i64],
) -> Result<HashMap<i64, Dec>> {
    if medication_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let today = crate::household::store::today(conn, household_id)?;
    let mut totals: HashMap<i64, Decimal> = HashMap::new();
    for source in store::drawing_sources(conn, medication_ids, today)? {
        if let Some(use_per_day) = source_daily_use(&source, today) {
            let total = totals.entry(source.medication_id).or_default();
            *total = total.checked_add(use_per_day).unwrap_or(Decimal::MAX);
        }
    }
    Ok(totals
        .into_iter()
        .filter(|(_, total)| *total > Decimal::ZERO)
        .map(|(id, total)| (id, Dec(total)))
        .collect())
}

fn shape(conn: &Connection, actor: &Actor, row: MedicationRow) -> Result<Medication> {
    let use_per_day = daily_uses(conn, actor.household_id, &[row.id])?.remove(&row.id);
    Ok(to_api(row, use_per_day))
}

pub fn find(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<MedicationRow> {
    store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("medication"))
}

pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Medication> {
    let row = find(conn, actor, id)?;
    shape(conn, actor, row)
}

pub fn list(
    conn: &Connection,
    actor: &Actor,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<Medication>, i64)> {
    let (rows, total) = store::list(conn, actor.household_id, updated_since, page)?;
    let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
    let mut uses = daily_uses(conn, actor.household_id, &ids)?;
    let items = rows
        .into_iter()
        .map(|row| {
            let use_per_day = uses.remove(&row.id);
            to_api(row, use_per_day)
        })
        .collect();
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
            Some(id) => match locations::store::find(conn, actor.household_id, &id)? {
                Some(location) => {
                    row.location_id = Some(location.id);
                    row.location_portable_id = Some(location.portable_id);
                }
                None => return Err(ApiError::not_found("location")),
            },
        }
    }
    // Lengths are checked as sent (as the schema states them); text is saved trimmed.
    match attrs.name {
        Some(None) => add("name", "must not be null"),
        Some(Some(name)) if name.chars().count() > 200 => {
            add("name", "must be at most 200 characters")
        }
        Some(Some(name)) => match trimmed(Some(name)) {
            Some(name) => row.name = name,
            None => add("name", "must not be blank"),
        },
        None => {}
    }
    let mut text =
        |field: &str, value: Option<Option<String>>, max: usize, target: &mut Option<String>| {
            if let Some(value) = value {
                if value.as_ref().is_some_and(|v| v.chars().count() > max) {
                    add(field, &format!("must be at most {max} characters"));
                } else {
                    *target = trimmed(value);
                }
            }
        };
    text(
        "friendly_name",
        attrs.friendly_name,
        200,
        &mut row.friendly_name,
    );
    text("category", attrs.category, 100, &mut row.category);
    text("description", attrs.description, 2000, &mut row.description);
    text("dmd_system", attrs.dmd_system, 200, &mut row.dmd_system);
    // Codes are digits only, exactly as sent.
    let mut digits = |field: &str,
                      value: Option<Option<String>>,
                      lengths: (usize, usize),
                      target: &mut Option<String>| {
        if let Some(value) = value {
            match &value {
                Some(v)
                    if !(v.len() >= lengths.0
                        && v.len() <= lengths.1
                        && v.bytes().all(|b| b.is_ascii_digit())) =>
                {
                    add(
                        field,
                        &format!("must be {} to {} digits", lengths.0, lengths.1),
                    )
                }
                _ => *target = value,
            }
        }
    };
    digits("barcode", attrs.barcode, (13, 14), &mut row.barcode);
    digits("dmd_code", attrs.dmd_code, (6, 18), &mut row.dmd_code);
    if let Some(amount) = attrs.dose_amount {
        match amount {
            Some(a) if !a.is_positive() => add("dose_amount", "must be greater than zero"),
            _ => row.dose_amount = amount,
        }
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
        Some(Some(s)) if s.is_negative() => add("current_supply", "must not be negative"),
        Some(Some(s)) => row.current_supply = s,
        None => {}
    }
    if let Some(threshold) = attrs.reorder_threshold {
        match threshold {
            Some(t) if t.is_negative() => add("reorder_threshold", "must not be negative"),
            _ => row.reorder_threshold = threshold,
        }
    }
    problems.check("the medication's attributes are invalid")
}

fn record_change(
    conn: &Connection,
    actor: &Actor,
    row: &MedicationRow,
    action: Action,
) -> Result<()> {
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

pub fn create(conn: &Connection, actor: &Actor, attrs: MedicationAttributes) -> Result<Medication> {
    require_inventory(actor)?;
    if attrs.name.is_none() {
        return Err(ApiError::invalid("name", "is required"));
    }
    let now = crate::time::now();
    let mut row = MedicationRow {
        portable_id: crate::db::new_portable_id(),
        lock_version: 1,
        created_at: now.clone(),
        updated_at: now,
        ..MedicationRow::default()
    };
    apply(conn, actor, &mut row, attrs)?;
    row.id = store::insert(conn, actor.household_id, &row)?;
    record_change(conn, actor, &row, Action::Create)?;
    shape(conn, actor, row)
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

fn save(conn: &Connection, actor: &Actor, mut row: MedicationRow) -> Result<Medication> {
    row.lock_version += 1;
    row.updated_at = crate::time::now();
    store::update(conn, &row)?;
    record_change(conn, actor, &row, Action::Update)?;
    shape(conn, actor, row)
}

/// PATCH: the given attributes change; the rest stay.
pub fn update(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: MedicationAttributes,
) -> Result<Medication> {
    let mut row = for_change(conn, actor, id, if_match)?;
    apply(conn, actor, &mut row, attrs)?;
    save(conn, actor, row)
}

/// PUT: the descriptive attributes are replaced (omitted ones become null).
/// Stock and reorder state change only through their own operations, so an
/// omitted current_supply keeps the count.
pub fn replace(
    conn: &Connection,
    actor: &Actor,
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
        created_at: current.created_at,
        updated_at: current.updated_at,
        ..MedicationRow::default()
    };
    apply(conn, actor, &mut row, attrs)?;
    save(conn, actor, row)
}

/// Removes a medication from the household's lists; past records that name
/// it keep working. Refused with 409 `medication_in_use` while a live
/// (unretired, paused or not) schedule or direct assignment still uses it:
/// retire those first.
pub fn delete(conn: &Connection, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    let row = for_change(conn, actor, id, if_match)?;
    let schedules = crate::care::schedules::store::count_live_for_medication(conn, row.id)?;
    let assignments =
        crate::care::person_medications::store::count_live_for_medication(conn, row.id)?;
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
    let now = crate::time::now();
    store::soft_delete(conn, row.id, &now)?;
    record_change(conn, actor, &row, Action::Delete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(s: &str) -> Dec {
        s.parse().unwrap()
    }

    fn source(schedule: Option<(&str, serde_json::Value)>) -> store::DrawingSource {
        use crate::medicine::vocab::{DoseUnit, ScheduleType};
        store::DrawingSource {
            medication_id: 1,
            medication_unit: Some(DoseUnit::Tablet),
            dose_amount: d("1"),
            dose_unit: DoseUnit::Tablet,
            schedule: schedule.map(|(t, c)| (ScheduleType::parse(t).unwrap(), c)),
            dose_cycle: None,
            max_daily_doses: None,
        }
    }

    #[test]
    fn daily_use_of_each_source_kind() {
        use crate::medicine::vocab::{DoseCycle, DoseUnit};
        let today: Date = "2027-03-10".parse().unwrap();
        let use_of =
            |s: &store::DrawingSource| source_daily_use(s, today).map(|u| Dec(u).to_string());
        let times = json!({"times": ["08:00", "20:00"]});
        assert_eq!(
            use_of(&source(Some(("daily", times.clone())))).as_deref(),
            Some("2")
        );
        assert_eq!(
            use_of(&source(Some(("every_other_day", times.clone())))).as_deref(),
            Some("1")
        );
        let weekly = source(Some((
            "weekly",
            json!({"times": ["08:00"], "weekdays": ["monday", "thursday"]}),
        )));
        // 2/7 a day: 4 tablets last exactly 14 days.
        let weekly_use = Dec(source_daily_use(&weekly, today).unwrap());
        assert_eq!(days_until(d("4"), d("0"), weekly_use), Some(14));
        let dates = source(Some((
            "specific_dates",
            json!({"times": ["08:00"], "dates": ["2027-03-01", "2027-03-10", "2027-04-08", "2027-04-09"]}),
        )));
        // 2027-03-10 and 2027-04-08 fall in the 30 days from today.
        assert_eq!(
            source_daily_use(&dates, today).map(|u| (u * Decimal::from(30)).round_dp(12)),
            Some(Decimal::from(2))
        );
        let taper = source(Some((
            "tapering",
            json!({"times": ["08:00"], "taper_steps": [
                {"start_date": "2027-03-01", "end_date": "2027-03-09", "dose_amount": "3"},
                {"start_date": "2027-03-10", "end_date": "2027-03-20", "dose_amount": "0.5",
                 "times": ["08:00", "12:00", "18:00"]}]}),
        )));
        assert_eq!(use_of(&taper).as_deref(), Some("1.5"));
        assert_eq!(use_of(&source(Some(("prn", json!({}))))), None);
        let mut monthly = source(None);
        monthly.dose_cycle = Some(DoseCycle::Monthly);
        monthly.max_daily_doses = Some(3);
        assert_eq!(use_of(&monthly).as_deref(), Some("0.1"));
        let mut other_unit = source(Some(("daily", times)));
        other_unit.dose_unit = DoseUnit::Mg;
        assert_eq!(use_of(&other_unit), None);
        other_unit.medication_unit = None;
        assert_eq!(use_of(&other_unit).as_deref(), Some("2"));
    }

    #[test]
    fn days_until_counts_whole_days() {
        assert_eq!(days_until(d("30"), d("0"), d("2")), Some(15));
        assert_eq!(days_until(d("31"), d("0"), d("2")), Some(15));
        assert_eq!(days_until(d("30"), d("10"), d("2")), Some(10));
        assert_eq!(days_until(d("5"), d("10"), d("2")), Some(0));
        assert_eq!(days_until(d("5"), d("0"), d("0")), None);
        assert_eq!(days_until(d("10"), d("0"), d("0.5")), Some(20));
    }

    #[test]
    fn derived_fields() {
        let row = MedicationRow {
            name: "Paracetamol 500mg".into(),
            current_supply: d("4"),
            reorder_threshold: Some(d("5")),
            ..MedicationRow::default()
        };
        let m = to_api(row.clone(), Some(d("2")));
        assert_eq!(m.display_name, "Paracetamol 500mg");
        assert!(m.low_stock && !m.out_of_stock);
        assert_eq!(m.days_until_low_stock, Some(0));
        assert_eq!(m.days_until_out_of_stock, Some(2));
        let empty = to_api(
            MedicationRow {
                current_supply: d("0"),
                friendly_name: Some("Calpol".into()),
                ..row
            },
            None,
        );
        assert!(empty.out_of_stock);
        assert_eq!(empty.display_name, "Calpol");
        assert_eq!(empty.days_until_out_of_stock, None);
    }
}
